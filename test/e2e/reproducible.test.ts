/**
 * Reproducible release builds: one source gives byte-identical executables, SBOMs and SHA256SUMS
 * wherever and whenever it is built. The project's files (tracked and new, as `git ls-files` lists
 * them) are copied into two directories of different path lengths, and each runs the release build
 * as a user does (`node esbuild.config.mjs && node scripts/build-release.mjs`), at once, so their
 * PIDs, clocks and checkout paths all differ. No root needed; it lives in this tier because the
 * builds want the machine to themselves (the e2e tier runs alone).
 */
import { execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { realpathSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildInfo } from "../../scripts/build-info.mjs";
import { REPO_ROOT, TEST_PATH } from "../support/plexus-bin";

const home = mkdtempSync(join(tmpdir(), "plx-repro-"));

/** The project's files (what `git ls-files` lists, new ones included) copied into `dir`. */
function copyProject(dir: string): void {
  const listed = ["ls-files", "-z", "--cached", "--others", "--exclude-standard"];
  const files = execFileSync("git", listed, {
    cwd: REPO_ROOT,
    encoding: "utf8",
  })
    .split("\0")
    .filter((f) => f !== "" && f !== "node_modules" && !f.startsWith("node_modules/"));
  for (const f of files) {
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    try {
      cpSync(join(REPO_ROOT, f), join(dir, f));
    } catch (err) {
      // A file deleted in the work tree but still in the index is not part of this source.
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
  }
  // The one install (never `npm ci` here) and the checked Bun runtimes (no second download).
  symlinkSync(realpathSync(join(REPO_ROOT, "node_modules")), join(dir, "node_modules"));
  mkdirSync(join(REPO_ROOT, ".cache/bun-runtimes"), { recursive: true });
  mkdirSync(join(dir, ".cache"));
  const runtimes = realpathSync(join(REPO_ROOT, ".cache/bun-runtimes"));
  symlinkSync(runtimes, join(dir, ".cache/bun-runtimes"));
}

/** The release build in `dir`, as `npm run build:release` runs it; resolves with its stderr. */
function buildIn(dir: string, env: Record<string, string>): Promise<string> {
  const script = "node esbuild.config.mjs && node scripts/build-release.mjs";
  return new Promise((resolve, reject) => {
    const childEnv = { ...process.env, PATH: TEST_PATH, ...env };
    const child = spawn("sh", ["-c", script], { cwd: dir, env: childEnv });
    let stderr = "";
    child.stderr.on("data", (b: Buffer) => {
      stderr += b.toString();
    });
    child.stdout.resume();
    child.on("error", reject);
    child.on("close", (code) =>
      code === 0 ? resolve(stderr) : reject(new Error(`build in ${dir}: ${code}\n${stderr}`)),
    );
  });
}

const sha256 = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

/** Every file the release build wrote, with its SHA-256. */
function digests(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of ["dist/plexus.cjs", "dist/plexus-commands.cjs"]) out[f] = sha256(join(dir, f));
  for (const f of readdirSync(join(dir, "dist/release")).sort())
    out[`dist/release/${f}`] = sha256(join(dir, "dist/release", f));
  return out;
}

describe("reproducible release build", () => {
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it("two builds of one source in two places at once: byte-identical files", async () => {
    // The copies have no .git: they take the version and commit the checkout's build would.
    const info = buildInfo();
    const env = {
      PLEXUS_BUILD_VERSION: info.version,
      PLEXUS_BUILD_COMMIT: info.commit,
      SOURCE_DATE_EPOCH: String(info.time),
    };
    const dirs = [join(home, "a"), join(home, "a-longer-checkout-path", "b")];
    for (const d of dirs) copyProject(d);
    const started = performance.now();
    const logs = await Promise.all(dirs.map((d) => buildIn(d, env)));
    const ms = Math.round(performance.now() - started);
    process.stderr.write(`reproducible: two release builds at once ${ms} ms\n`);
    const [a, b] = dirs.map(digests);
    expect(Object.keys(a!)).toEqual(
      expect.arrayContaining([
        "dist/release/plexus-linux-amd64",
        "dist/release/plexus-linux-arm64",
        "dist/release/SHA256SUMS",
      ]),
    );
    expect(a, logs.join("\n")).toEqual(b);
    // Nothing of the build's place is in the bytes (a path would differ between the two anyway:
    // this names the cause).
    const exe = readFileSync(join(dirs[1]!, "dist/release/plexus-linux-amd64"));
    expect(exe.includes(Buffer.from(dirs[1]!)), "the checkout's path is embedded").toBe(false);
  }, 600_000);
});
