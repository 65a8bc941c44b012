/**
 * The log compressor and the leftover-process kill together, as only the executable has them
 * (log/rotate.ts, invoke/orphans.ts), run by Bun (log-and-run.ts): a CNI call that rotates its log
 * starts a detached compressor, a child of its own; after each delegate the runner kills every
 * child that is not a running delegate, and must leave the compressor be.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { runHarness, scratch } from "./bun-harness";

/** The compressed backup in `dir`, once the compressor has renamed it into place. */
async function compressedBackup(dir: string, withinMs = 30_000): Promise<string> {
  for (const until = Date.now() + withinMs; Date.now() < until; ) {
    const gz = readdirSync(dir).find((name) => name.endsWith(".log.gz"));
    if (gz) return join(dir, gz);
    await new Promise((res) => setTimeout(res, 20));
  }
  throw new Error(`no compressed backup in ${dir} within ${withinMs} ms: ${readdirSync(dir)}`);
}

describe("B74 the log compressor survives the delegates' leftover kill, run by Bun", () => {
  it("B74 B69 the compressor a rotating ADD started outlives its delegate's end", async () => {
    const s = scratch();
    const logFile = join(s.dir, "plexus.log");
    const text = `${'{"level":30,"msg":"an old line"}\n'.repeat(40_000)}`;
    writeFileSync(logFile, text);
    const path = s.script("delegate", `echo '{"cniVersion":"1.0.0"}'`);
    const reply = await runHarness("log-and-run", { logFile, maxSize: 1, path, env: s.env });
    expect(reply).toMatchObject({ ok: true });
    const gz = await compressedBackup(s.dir);
    expect(gunzipSync(readFileSync(gz)).toString()).toBe(text);
    expect(readdirSync(s.dir).filter((name) => name.endsWith(".log"))).toEqual(["plexus.log"]);
  });
});
