/**
 * The Dockerfile cannot be built here (no Docker engine); this checks what can be: every file its
 * build stage copies exists and is not excluded by .dockerignore, the final stage copies only
 * dist/plexus, which `npm run build` produced, and the binary (compiled by Bun) needs no library
 * beyond glibc (what gcr.io/distroless/base-debian12 ships: no libstdc++ there).
 */
import { spawnSync } from "node:child_process";
import { accessSync, constants, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PLEXUS_BIN, REPO_ROOT, requirePlexusBinary } from "../support/plexus-bin";

const dockerfile = readFileSync(join(REPO_ROOT, "Dockerfile"), "utf8");
const ignored = readFileSync(join(REPO_ROOT, ".dockerignore"), "utf8")
  .split("\n")
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith("#"));

/** COPY lines per stage: [{ from?: string, sources: string[], dest: string }]. */
function copies(): Array<{ stage: number; from?: string; sources: string[]; dest: string }> {
  const out: Array<{ stage: number; from?: string; sources: string[]; dest: string }> = [];
  let stage = -1;
  for (const line of dockerfile.split("\n")) {
    if (/^FROM\s/i.test(line)) stage++;
    const m = /^COPY\s+(?:--from=(\S+)\s+)?(.+)$/i.exec(line.trim());
    if (!m) continue;
    const parts = m[2]!.split(/\s+/);
    const copy: { stage: number; from?: string; sources: string[]; dest: string } = {
      stage,
      sources: parts.slice(0, -1),
      dest: parts.at(-1)!,
    };
    if (m[1]) copy.from = m[1];
    out.push(copy);
  }
  return out;
}

describe("Dockerfile", () => {
  it("M11 the build stage copies files that exist and that .dockerignore lets through", () => {
    const fromContext = copies().filter((c) => !c.from);
    expect(fromContext.length).toBeGreaterThan(0);
    for (const c of fromContext) {
      for (const src of c.sources) {
        expect(existsSync(join(REPO_ROOT, src)), src).toBe(true);
        expect(
          ignored.some((p) => src === p || src.startsWith(`${p}/`)),
          `${src} is excluded by .dockerignore`,
        ).toBe(false);
      }
    }
    // What `npm run build` reads is in the context: its scripts and their inputs.
    const sources = fromContext.flatMap((c) => c.sources);
    for (const needed of ["package.json", "package-lock.json", "esbuild.config.mjs", "bin", "scripts", "src"])
      expect(sources).toContain(needed);
  });

  it("M11 the final image holds only dist/plexus as /usr/local/bin/plexus, which the build produced and which runs without Node", () => {
    requirePlexusBinary();
    const finalStage = Math.max(...copies().map((c) => c.stage));
    const finalCopies = copies().filter((c) => c.stage === finalStage);
    expect(finalCopies).toEqual([
      { stage: finalStage, from: "build", sources: ["/src/dist/plexus"], dest: "/usr/local/bin/plexus" },
    ]);
    accessSync(PLEXUS_BIN, constants.X_OK);
    expect(dockerfile).toMatch(/^ENTRYPOINT \["\/usr\/local\/bin\/plexus"\]$/m);
    const ldd = spawnSync("ldd", [PLEXUS_BIN], { encoding: "utf8" });
    const libs = [...ldd.stdout.matchAll(/^\s*(\S+\.so[.\d]*)/gm)].map((m) => m[1]!.replace(/\.so.*$/, ""));
    const allowed = new Set([
      "linux-vdso",
      "libdl",
      "libm",
      "libpthread",
      "libc",
      "/lib64/ld-linux-x86-64",
      "ld-linux-x86-64",
      "ld-linux-aarch64",
      "/lib/ld-linux-aarch64",
    ]);
    expect(dockerfile).toMatch(/^FROM gcr\.io\/distroless\/base-debian12$/m);
    expect(libs).toContain("libc");
    expect(libs.filter((l) => !allowed.has(l))).toEqual([]);
  });
});
