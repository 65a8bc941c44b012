/**
 * The Dockerfile cannot be built here (its base image cannot be pulled); `npm run image` builds the
 * same file tree offline and test/e2e/image.test.ts runs it. This checks what can be: every file
 * the build stage copies exists and is not excluded by .dockerignore, the final stage is the tree
 * of scripts/image-rootfs.mjs on `scratch` (the script `npm run image` uses), and the binary
 * (compiled by Bun) needs no library beyond the glibc files that tree carries.
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
    for (const needed of [
      "package.json",
      "package-lock.json",
      "esbuild.config.mjs",
      "bin",
      "scripts",
      "src",
    ])
      expect(sources).toContain(needed);
  });

  it("M11 the final image is FROM scratch with only the tree scripts/image-rootfs.mjs assembles, the same one `npm run image` builds from", () => {
    const finalStage = Math.max(...copies().map((c) => c.stage));
    expect(copies().filter((c) => c.stage === finalStage)).toEqual([
      { stage: finalStage, from: "build", sources: ["/rootfs/"], dest: "/" },
    ]);
    expect(dockerfile.split(/^FROM /m).at(-1)).toMatch(/^scratch\n/);
    expect(dockerfile).toMatch(
      /^RUN npm run build:release \\\n && node scripts\/image-rootfs\.mjs --arch (?:.|\\\n)+? --out \/rootfs$/m,
    );
    expect(dockerfile).toMatch(/^ENTRYPOINT \["\/usr\/local\/bin\/plexus"\]$/m);
    const imageScript = readFileSync(join(REPO_ROOT, "scripts/image.mjs"), "utf8");
    expect(imageScript).toContain('import { ARCHES, assembleRootfs } from "./image-rootfs.mjs"');
    expect(imageScript).toContain('ENTRYPOINT ["/usr/local/bin/plexus"]');
    expect(dockerfile).toMatch(/^CMD \["install"\]$/m);
    expect(imageScript).toContain('CMD ["install"]');
  });

  it("M11 the Dockerfile's image: the OCI labels of `npm run image`, the license", async () => {
    const { ociLabels } = await import("../../scripts/image.mjs");
    const source = "https://example.test/x";
    const info = { version: "1.2.3", commit: "c".repeat(40), time: 0, source };
    const keys = Object.keys(ociLabels(info)).sort();
    expect(keys).toEqual(expect.arrayContaining(["org.opencontainers.image.created"]));
    const finalStage = dockerfile.split(/^FROM /m).at(-1)!;
    const label = /(org\.opencontainers\.image\.[a-z]+)=/g;
    const labelled = [...finalStage.matchAll(label)].map((m) => m[1]);
    expect(labelled.sort()).toEqual(keys);
    expect(copies().some((c) => !c.from && c.sources.includes("LICENSE"))).toBe(true);
  });

  it("M11 the executable links only glibc (what the image carries beside it: no libstdc++, no libgcc_s)", () => {
    requirePlexusBinary();
    accessSync(PLEXUS_BIN, constants.X_OK);
    const ldd = spawnSync("ldd", [PLEXUS_BIN], { encoding: "utf8" });
    const libs = [...ldd.stdout.matchAll(/^\s*(\S+\.so[.\d]*)/gm)].map((m) =>
      m[1]!.replace(/\.so.*$/, ""),
    );
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
    expect(libs).toContain("libc");
    expect(libs.filter((l) => !allowed.has(l))).toEqual([]);
  });
});
