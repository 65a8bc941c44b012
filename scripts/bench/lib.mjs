// Shared benchmark helpers: timed child processes with peak RSS, interleaved rounds, medians.
import { spawn, execFileSync } from "node:child_process";
import { existsSync } from "node:fs";

export const NODE = process.execPath;

/**
 * Runs a command, feeding `stdin`; resolves with wall time (ms), exit code, stdout and peak RSS
 * (KiB, from /usr/bin/time when present, else undefined).
 */
export function timed(cmd, args, { env = process.env, stdin = "" } = {}) {
  const useTime = existsSync("/usr/bin/time");
  const argv = useTime ? ["-f", "%M", "--", cmd, ...args] : args;
  const bin = useTime ? "/usr/bin/time" : cmd;
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const p = spawn(bin, argv, { env, stdio: ["pipe", "pipe", "pipe"] });
    const out = [];
    const err = [];
    p.stdout.on("data", (c) => out.push(c));
    p.stderr.on("data", (c) => err.push(c));
    p.on("error", reject);
    p.on("close", (code) => {
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      const errText = Buffer.concat(err).toString();
      let rssKiB;
      if (useTime) {
        const lines = errText.trim().split("\n");
        rssKiB = Number(lines.at(-1));
      }
      resolve({ ms, code, stdout: Buffer.concat(out).toString(), stderr: errText, rssKiB });
    });
    p.stdin.end(stdin);
  });
}

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export function max(xs) {
  return xs.reduce((a, b) => Math.max(a, b), 0);
}

export function fmt(ms) {
  return `${ms.toFixed(1)}`;
}

export function sh(cmd, args) {
  return execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

/** Prints a fixed-width table to stdout. */
export function table(headers, rows) {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => cells.map((c, i) => String(c).padStart(widths[i])).join("  ");
  console.log(line(headers));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const r of rows) console.log(line(r));
}
