// The file tree of a Plexus image for one architecture, assembled from one release executable
// (dist/release, `npm run build:release`) and the glibc files it links, for a `FROM scratch`
// image: `npm run image` (scripts/image.mjs, offline, podman) and the Dockerfile (online) both
// build from it, so both images have one layout:
//   /usr/local/bin/plexus        the one executable: on amd64 the build for CPUs with AVX2, or with
//                                --variant baseline the build for every x86-64 CPU; on arm64 the
//                                arm64 build (arm64 has one build, whatever the variant)
//   /lib/<triplet>/…, the dynamic loader at the path the executable names, glibc's copyright
//   /usr/share/doc/plexus/LICENSE        Plexus's license (Apache-2.0)
//   /usr/share/doc/plexus/sbom.cdx.json  the image's CycloneDX SBOM (scripts/sbom.mjs)
// One executable per image: each is a whole Bun runtime with the bundle, so a second one would
// double what every node pulls for a build most nodes never run (docs/install.md says which variant
// a node needs). The glibc files are those the executable names (readelf -d: NEEDED; readelf -l:
// its interpreter), from Debian's libc6 package at the version scripts/libc6.version pins
// (scripts/libc6.mjs): this machine's, or the package file --libc6-deb names.
//   node scripts/image-rootfs.mjs --arch amd64|arm64 [--variant baseline] [--libc6-deb FILE] \
//     --out DIR
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, relative } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { buildInfo } from "./build-info.mjs";
import { checkLibc6Pin, installedLibc6, packagedLibc6 } from "./libc6.mjs";
import { imageSbom, SBOM_SUFFIX } from "./sbom.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));

/**
 * Per architecture: glibc's multiarch triplet and the release executable of each variant ("" the
 * default one, "baseline" the build for x86-64 CPUs without AVX2, where the architecture has one).
 */
export const ARCHES = {
  amd64: {
    triplet: "x86_64-linux-gnu",
    builds: { "": "plexus-linux-amd64", baseline: "plexus-linux-amd64-baseline" },
  },
  arm64: { triplet: "aarch64-linux-gnu", builds: { "": "plexus-linux-arm64" } },
};

/** The release executable of `variant` for `arch` (one with a single build has no variants). */
function releaseBuild({ arch, variant = "" }) {
  const spec = ARCHES[arch];
  if (!spec) throw new Error(`--arch ${arch}: expected one of ${Object.keys(ARCHES).join(", ")}`);
  if (variant !== "" && variant !== "baseline")
    throw new Error(`--variant ${variant}: expected baseline or none`);
  return spec.builds[variant] ?? spec.builds[""];
}

function readelf(flag, file) {
  return execFileSync("readelf", [flag, "--wide", file], {
    encoding: "utf8",
    env: { ...process.env, LC_ALL: "C" },
  });
}

/** The shared libraries `file` names (NEEDED) and its dynamic loader (PT_INTERP). */
function linkedFiles(file) {
  const needed = [
    ...readelf("-d", file).matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g),
  ].map((m) => m[1]);
  const interp = /Requesting program interpreter: ([^\]]+)\]/.exec(readelf("-l", file))?.[1];
  if (!interp)
    throw new Error(`${file} names no program interpreter: not a dynamically linked executable?`);
  return { needed, interp };
}

function copyInto(out, src, dest, mode) {
  const to = join(out, dest);
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(src, to);
  chmodSync(to, mode);
}

const sha256 = (path) => createHash("sha256").update(readFileSync(path)).digest("hex");
const ENTRY = "/usr/local/bin/plexus";

/** Plexus's license and the image's SBOM, under /usr/share/doc/plexus. */
function writeDocs({ image, out, releaseDir, libc }) {
  const doc = "usr/share/doc/plexus";
  copyInto(out, join(root, "LICENSE"), `${doc}/LICENSE`, 0o644);
  const own = JSON.parse(readFileSync(join(releaseDir, `${image.file}${SBOM_SUFFIX}`), "utf8"));
  const runtime = own.components.find((c) => c.name.startsWith("@oven/bun-linux-"));
  const sha = sha256(join(releaseDir, image.file));
  const executable = { path: ENTRY, build: image.file, sha256: sha, runtime };
  const sbom = imageSbom({ info: buildInfo(), ...image, executable, libc });
  writeFileSync(join(out, doc, "sbom.cdx.json"), sbom, { mode: 0o644 });
  return [`/${doc}/LICENSE`, `/${doc}/sbom.cdx.json`];
}

/**
 * Copies the glibc files `exe` links from `libc6` into the tree: the libraries and the loader in
 * the multiarch directory, and a symlink at the path the executable names for its loader
 * (/lib64/ld-linux-x86-64.so.2, /lib/ld-linux-aarch64.so.1). Returns them with their SHA-256.
 */
function copyGlibc({ out, triplet, libc6, exe }) {
  const { needed, interp } = linkedFiles(exe);
  const files = [];
  for (const name of [...new Set([...needed, basename(interp)])].sort()) {
    const path = `/lib/${triplet}/${name}`;
    const from = libc6.find(name);
    copyInto(out, from, path.slice(1), 0o755);
    files.push({ path, sha256: sha256(from) });
  }
  const loaderInTree = `/lib/${triplet}/${basename(interp)}`;
  const links = [];
  if (interp !== loaderInTree) {
    mkdirSync(join(out, dirname(interp)), { recursive: true });
    symlinkSync(relative(dirname(interp), loaderInTree), join(out, interp));
    links.push(`${interp} -> ${loaderInTree}`);
  }
  if (existsSync(libc6.copyright))
    copyInto(out, libc6.copyright, "usr/share/doc/libc6/copyright", 0o644);
  return { files, links };
}

/**
 * Writes the file tree of the image of `variant` for `arch` into `out` (emptied first), its glibc
 * from this machine or from the package file `libc6Deb`; `updatePin` moves the libc6 pin to the
 * version found instead of failing. Returns the paths written.
 */
export function assembleRootfs(options) {
  const { arch, variant = "", out, releaseDir = join(root, "dist/release"), libc6Deb } = options;
  const file = releaseBuild({ arch, variant });
  const { triplet, builds } = ARCHES[arch];
  // An architecture without the variant builds its one image: the same bytes, the same SBOM.
  const image = { arch, variant: builds[variant] ? variant : "", file };
  const exe = join(releaseDir, file);
  if (!existsSync(exe)) throw new Error(`${exe} is missing: run \`npm run build:release\``);
  const scratch = libc6Deb ? mkdtempSync(join(tmpdir(), "plx-libc6-")) : undefined;
  try {
    const libc6 = scratch
      ? packagedLibc6({ arch, triplet, deb: libc6Deb, scratch })
      : installedLibc6({ arch, triplet });
    checkLibc6Pin({ found: libc6.version, arch, update: options.updatePin ?? false });
    rmSync(out, { recursive: true, force: true });
    mkdirSync(out, { recursive: true });
    copyInto(out, exe, ENTRY.slice(1), 0o755);
    const glibc = copyGlibc({ out, triplet, libc6, exe });
    const libc = { version: libc6.version, files: glibc.files };
    const docs = writeDocs({ image, out, releaseDir, libc });
    return [ENTRY, ...glibc.files.map((f) => f.path), ...glibc.links, ...docs];
  } finally {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }
}

const USAGE =
  "usage: node scripts/image-rootfs.mjs --arch amd64|arm64 [--variant baseline] " +
  "[--libc6-deb FILE] --out DIR";

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      arch: { type: "string" },
      variant: { type: "string", default: "" },
      "libc6-deb": { type: "string" },
      out: { type: "string" },
    },
  });
  try {
    if (!values.arch || !values.out) throw new Error(USAGE);
    const written = assembleRootfs({
      arch: values.arch,
      variant: values.variant,
      out: values.out,
      libc6Deb: values["libc6-deb"],
      updatePin: process.env.PLEXUS_LIBC6_UPDATE === "1",
    });
    for (const p of written) process.stderr.write(`image-rootfs: ${p}\n`);
  } catch (err) {
    process.stderr.write(`image-rootfs: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}
