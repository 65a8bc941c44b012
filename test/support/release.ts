/**
 * The release executables (dist/release, `npm run build:release`) for the end-to-end tier: built
 * on demand by the build script itself (what ships is what is tested), and run, possibly under an
 * emulator (qemu-user), with a CNI environment and stdin.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT, TEST_PATH, type RunResult } from "./plexus-bin";

export const RELEASE_DIR = join(REPO_ROOT, "dist/release");
export const RELEASE_FILES = [
  "plexus-linux-amd64",
  "plexus-linux-amd64-baseline",
  "plexus-linux-arm64",
] as const;
export type ReleaseFile = (typeof RELEASE_FILES)[number];

export const releasePath = (file: ReleaseFile): string => join(RELEASE_DIR, file);

/**
 * Runs scripts/build-release.mjs unless every release file is newer than the bundle it is compiled
 * from (dist/plexus.cjs, which `npm test` builds first). Returns how long the build took (0: none).
 */
export function ensureRelease(): number {
  const bundle = join(REPO_ROOT, "dist/plexus.cjs");
  if (!existsSync(bundle))
    throw new Error(`${bundle} is missing: run \`node esbuild.config.mjs\` (npm test does)`);
  const since = statSync(bundle).mtimeMs;
  const fresh = [...RELEASE_FILES, "SHA256SUMS"].every((f) => {
    const p = join(RELEASE_DIR, f);
    return existsSync(p) && statSync(p).mtimeMs >= since;
  });
  if (fresh) return 0;
  const started = performance.now();
  const r = spawnSync(process.execPath, [join(REPO_ROOT, "scripts/build-release.mjs")], {
    cwd: REPO_ROOT,
    encoding: "utf8",
    env: { ...process.env, PATH: TEST_PATH },
    timeout: 300_000,
  });
  if (r.status !== 0)
    throw new Error(`scripts/build-release.mjs failed (${r.status ?? r.signal}): ${r.stderr}`);
  return performance.now() - started;
}

/**
 * Runs `argv` (an executable, or an emulator and the executable) with `env` and `stdin`, cwd `/`.
 */
export function runCommand(
  argv: readonly string[],
  options: { env: Record<string, string | undefined>; stdin?: string; timeoutMs?: number },
): Promise<RunResult> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(options.env)) if (v !== undefined) env[k] = v;
  const started = performance.now();
  const child = spawn(argv[0]!, argv.slice(1), { env, cwd: "/", stdio: ["pipe", "pipe", "pipe"] });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on("data", (b: Buffer) => out.push(b));
  child.stderr.on("data", (b: Buffer) => err.push(b));
  child.stdin.on("error", () => {});
  child.stdin.end(options.stdin ?? "");
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill("SIGKILL");
  }, options.timeoutMs ?? 60_000);
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({
        stdout: Buffer.concat(out).toString("utf8"),
        stderr: Buffer.concat(err).toString("utf8"),
        code,
        signal,
        durationMs: performance.now() - started,
        timedOut,
      });
    });
  });
}

/**
 * A 137-byte static x86-64 ELF that executes two AVX2 instructions (`vpxor`/`vpaddd` on ymm
 * registers) and exits 0: on a CPU (or an emulated CPU model) without AVX2 it dies of SIGILL. The
 * control that shows the emulator really withholds AVX2, so that a build passing there proves
 * something. Built here byte by byte: no compiler is needed on the test machine.
 */
export function avx2ProbeElf(): Buffer {
  const code = Buffer.from([
    ...[0xc5, 0xfd, 0xef, 0xc0], // vpxor ymm0, ymm0, ymm0
    ...[0xc5, 0xfd, 0xfe, 0xc8], // vpaddd ymm1, ymm0, ymm0
    ...[0xb8, 0x3c, 0, 0, 0], // mov eax, 60 (exit)
    ...[0x31, 0xff], // xor edi, edi
    ...[0x0f, 0x05], // syscall
  ]);
  const base = 0x400000n;
  const headers = 64 + 56;
  const size = BigInt(headers + code.length);
  const h = Buffer.alloc(headers);
  h.set([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]); // ELF, 64-bit, little-endian, version 1, SysV
  h.writeUInt16LE(2, 16); // ET_EXEC
  h.writeUInt16LE(0x3e, 18); // x86-64
  h.writeUInt32LE(1, 20);
  h.writeBigUInt64LE(base + BigInt(headers), 24); // entry: the code after the headers
  h.writeBigUInt64LE(64n, 32); // program headers right after the ELF header
  h.writeUInt16LE(64, 52);
  h.writeUInt16LE(56, 54);
  h.writeUInt16LE(1, 56); // one program header:
  h.writeUInt32LE(1, 64); // PT_LOAD
  h.writeUInt32LE(5, 68); // R+X
  h.writeBigUInt64LE(0n, 72); // the whole file…
  h.writeBigUInt64LE(base, 80); // …at 0x400000
  h.writeBigUInt64LE(base, 88);
  h.writeBigUInt64LE(size, 96);
  h.writeBigUInt64LE(size, 104);
  h.writeBigUInt64LE(0x1000n, 112);
  return Buffer.concat([h, code]);
}
