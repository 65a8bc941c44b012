// The file tree of the Plexus image for one architecture, assembled from the release executables
// (dist/release, `npm run build:release`) and the glibc files they link, for a `FROM scratch`
// image: `npm run image` (scripts/image.mjs, offline, podman) and the Dockerfile (online) both
// build from it, so both images have one layout:
//   /usr/local/bin/plexus        the entry: on amd64 the baseline build, which starts on every
//                                x86-64 CPU (the installer and the daemon run it); on arm64 the arm64 build
//   /usr/local/bin/plexus-avx2   amd64 only: the build for CPUs with AVX2, which the installer
//                                copies to nodes whose CPUs all have AVX2 (src/install/self.ts)
//   /lib/<triplet>/…, the dynamic loader at the path the executables name, glibc's copyright
//   /usr/share/doc/plexus/LICENSE        Plexus's license (Apache-2.0)
//   /usr/share/doc/plexus/sbom.cdx.json  the image's CycloneDX SBOM (scripts/sbom.mjs)
// The glibc files come from this machine's Debian multiarch directories (libc6, libc6:arm64), the
// ones each executable names (readelf -d: NEEDED; readelf -l: its interpreter).
//   node scripts/image-rootfs.mjs --arch amd64|arm64 --out DIR
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { buildInfo } from "./build-info.mjs";
import { imageSbom, SBOM_SUFFIX } from "./sbom.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));

export const ARCHES = {
  amd64: {
    triplet: "x86_64-linux-gnu",
    executables: { plexus: "plexus-linux-amd64-baseline", "plexus-avx2": "plexus-linux-amd64" },
  },
  arm64: { triplet: "aarch64-linux-gnu", executables: { plexus: "plexus-linux-arm64" } },
};

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

function findLibrary(name, triplet) {
  for (const dir of [`/lib/${triplet}`, `/usr/lib/${triplet}`]) {
    const p = join(dir, name);
    if (existsSync(p)) return realpathSync(p);
  }
  const pkg = triplet.startsWith("aarch64") ? "libc6:arm64" : "libc6";
  throw new Error(`${name} for ${triplet} is not on this machine (install ${pkg})`);
}

function copyInto(out, src, dest, mode) {
  const to = join(out, dest);
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(src, to);
  chmodSync(to, mode);
}

/** The Debian version of this machine's glibc package for `arch` (the libraries' source). */
function libcVersion(arch) {
  const pkg = `libc6:${arch}`;
  const o = { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] };
  try {
    // Its default output: the package, a tab, the version.
    return execFileSync("dpkg-query", ["-W", pkg], o).trim().split("\t")[1] || "unknown";
  } catch {
    return "unknown";
  }
}

/** Plexus's license and the image's SBOM, under /usr/share/doc/plexus. */
function writeDocs({ arch, out, releaseDir, executables }) {
  const doc = "usr/share/doc/plexus";
  copyInto(out, join(root, "LICENSE"), `${doc}/LICENSE`, 0o644);
  const listed = Object.entries(executables).map(([name, file]) => {
    const own = JSON.parse(readFileSync(join(releaseDir, `${file}${SBOM_SUFFIX}`), "utf8"));
    const runtime = own.components.find((c) => c.name.startsWith("@oven/bun-linux-"));
    const sha256 = createHash("sha256")
      .update(readFileSync(join(releaseDir, file)))
      .digest("hex");
    return { path: `/usr/local/bin/${name}`, sha256, runtime };
  });
  const libc = { version: libcVersion(arch) };
  const sbom = imageSbom({ info: buildInfo(), arch, executables: listed, libc });
  writeFileSync(join(out, doc, "sbom.cdx.json"), sbom, { mode: 0o644 });
  return [`/${doc}/LICENSE`, `/${doc}/sbom.cdx.json`];
}

/** Writes the image's file tree for `arch` into `out` (emptied first). Returns the paths written. */
export function assembleRootfs({ arch, out, releaseDir = join(root, "dist/release") }) {
  const spec = ARCHES[arch];
  if (!spec) throw new Error(`--arch ${arch}: expected one of ${Object.keys(ARCHES).join(", ")}`);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const written = [];
  const libs = new Set();
  let interp;
  for (const [name, file] of Object.entries(spec.executables)) {
    const src = join(releaseDir, file);
    if (!existsSync(src)) throw new Error(`${src} is missing: run \`npm run build:release\``);
    copyInto(out, src, `usr/local/bin/${name}`, 0o755);
    written.push(`/usr/local/bin/${name}`);
    const linked = linkedFiles(src);
    for (const n of linked.needed) libs.add(n);
    interp = linked.interp;
  }
  // The loader is named by its path (/lib64/ld-linux-x86-64.so.2, /lib/ld-linux-aarch64.so.1): the
  // file lives in the multiarch directory with the libraries, and a symlink gives it that path.
  libs.add(basename(interp));
  for (const name of [...libs].sort()) {
    copyInto(out, findLibrary(name, spec.triplet), `lib/${spec.triplet}/${name}`, 0o755);
    written.push(`/lib/${spec.triplet}/${name}`);
  }
  const loaderInTree = `/lib/${spec.triplet}/${basename(interp)}`;
  if (interp !== loaderInTree) {
    mkdirSync(join(out, dirname(interp)), { recursive: true });
    symlinkSync(relative(dirname(interp), loaderInTree), join(out, interp));
    written.push(`${interp} -> ${loaderInTree}`);
  }
  const copyright = "/usr/share/doc/libc6/copyright";
  if (existsSync(copyright)) copyInto(out, copyright, copyright.slice(1), 0o644);
  written.push(...writeDocs({ arch, out, releaseDir, executables: spec.executables }));
  return written;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { arch: { type: "string" }, out: { type: "string" } } });
  try {
    if (!values.arch || !values.out)
      throw new Error("usage: node scripts/image-rootfs.mjs --arch amd64|arm64 --out DIR");
    for (const p of assembleRootfs({ arch: values.arch, out: values.out }))
      process.stderr.write(`image-rootfs: ${p}\n`);
  } catch (err) {
    process.stderr.write(`image-rootfs: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}
