import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { ownExecutablePath } from "../sys/runtime";

/**
 * The file to copy into the CNI bin dir when `--bin-file` is not given: this process's own
 * executable, but only when it is the compiled Plexus (sys/runtime.ts). Under Node or `bun run`
 * the runtime is not Plexus, so there is no default.
 */
export function ownExecutable(): string | undefined {
  return ownExecutablePath();
}

/**
 * An image that holds both amd64 builds (one of an operator's own: the project's images hold one
 * executable each, scripts/image-rootfs.mjs) has the baseline build as its entry, so that the
 * installer and the daemon start on every x86-64 node, and the build for CPUs with AVX2 beside it
 * under this name.
 */
export const AVX2_BUILD_NAME = "plexus-avx2";

/** Whether every processor `/proc/cpuinfo` lists has the `avx2` flag (x86; arm64 lists none). */
export function cpuinfoHasAvx2(cpuinfo: string): boolean {
  const flagLines = [...cpuinfo.matchAll(/^flags\s*:(.*)$/gm)].map((m) =>
    m[1]!.trim().split(/\s+/),
  );
  return flagLines.length > 0 && flagLines.every((flags) => flags.includes("avx2"));
}

/**
 * The executable the installer copies to the node by default: the AVX2 build beside `own` when
 * there is one and the node's CPU has AVX2 (read from `cpuinfoPath`), else `own` (the build that
 * runs on any CPU of its architecture). An unreadable cpuinfo keeps `own`: it is the safe choice.
 */
export function executableToInstall(options: {
  own: string | undefined;
  cpuinfoPath?: string;
}): string | undefined {
  if (options.own === undefined) return undefined;
  const avx2Build = join(dirname(options.own), AVX2_BUILD_NAME);
  if (!existsSync(avx2Build)) return options.own;
  let cpuinfo: string;
  try {
    cpuinfo = readFileSync(options.cpuinfoPath ?? "/proc/cpuinfo", "utf8");
  } catch {
    return options.own;
  }
  return cpuinfoHasAvx2(cpuinfo) ? avx2Build : options.own;
}
