// `npm run image`: the DaemonSet images, built offline with podman from the release executables
// (`npm run build:release` runs first): `FROM scratch` images holding the file tree of
// scripts/image-rootfs.mjs, one executable each, and two manifest lists, all tagged with this
// build's version and commit (scripts/build-info.mjs), so a build never replaces another commit's
// image in a shared store:
//   localhost/plexus:<tag>-amd64             the amd64 build (for CPUs with AVX2)
//   localhost/plexus:<tag>-arm64             the arm64 build
//   localhost/plexus:<tag>-baseline-amd64    the amd64 build for every x86-64 CPU (no AVX2 needed)
//   localhost/plexus:<tag>                   manifest list: <tag>-amd64, <tag>-arm64
//   localhost/plexus:<tag>-baseline          manifest list: <tag>-baseline-amd64, <tag>-arm64
// <tag> is the version and the commit, e.g. 0.1.0-g1a2b3c4d5e6f; stdout says the two lists, one a
// line, the default one first. The release workflow builds the same trees from the Dockerfile
// (its VARIANT build argument: baseline for the baseline list).
// The OCI labels say where the image comes from (source, revision, version, licenses) and when
// (created: the commit's time, which is also every file's time, so one commit builds one image).
// Nothing is pulled and nothing runs inside the build (no RUN step), so the arm64 image needs no
// emulator. Extra arguments are podman's global options (--root, --runroot, --storage-driver),
// for a private image store (the end-to-end test). PLEXUS_LIBC6_UPDATE=1 moves the glibc pin to
// this machine's libc6 instead of failing on another version (scripts/libc6.mjs).
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildInfo, imageTag } from "./build-info.mjs";
import { ARCHES, assembleRootfs } from "./image-rootfs.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
export const IMAGE = "localhost/plexus";
/**
 * What the image holds: Plexus (Apache-2.0), the Bun runtime in each executable (MIT) and glibc
 * (LGPL-2.1-or-later); the licenses and the SBOM are in /usr/share/doc.
 */
const LICENSES = "Apache-2.0 AND MIT AND LGPL-2.1-or-later";

const isoSeconds = (seconds) => new Date(seconds * 1000).toISOString().replace(/\.000Z$/, "Z");

/** The OCI annotation labels for this build. */
export function ociLabels(info) {
  const labels = {
    "org.opencontainers.image.title": "plexus",
    "org.opencontainers.image.version": info.version,
    "org.opencontainers.image.revision": info.commit,
    "org.opencontainers.image.licenses": LICENSES,
    "org.opencontainers.image.created": isoSeconds(info.time),
  };
  if (info.source) labels["org.opencontainers.image.source"] = info.source;
  return labels;
}

const CONTAINERFILE = `FROM scratch
COPY . /
ENTRYPOINT ["/usr/local/bin/plexus"]
CMD ["install"]
`;

function podman(globals, args, options = {}) {
  return execFileSync("podman", [...globals, ...args], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", options.quiet ? "pipe" : "inherit"],
  });
}

function buildImage({ globals, arch, variant, info, name }) {
  const work = join(root, ".cache/image", `${arch}${variant}-${process.pid}`);
  const tree = join(work, "rootfs");
  const labels = Object.entries(ociLabels(info)).flatMap(([k, v]) => ["--label", `${k}=${v}`]);
  try {
    const updatePin = process.env.PLEXUS_LIBC6_UPDATE === "1";
    assembleRootfs({ arch, variant, out: tree, updatePin });
    writeFileSync(join(work, "Containerfile"), CONTAINERFILE);
    podman(globals, [
      "build",
      "--quiet",
      "--platform",
      `linux/${arch}`,
      // The commit's time for the image and its files, and no builder-version label: reproducible.
      `--timestamp=${info.time}`,
      "--identity-label=false",
      ...labels,
      "-f",
      join(work, "Containerfile"),
      "-t",
      name,
      tree,
    ]);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const size = Number(podman(globals, ["image", "inspect", "--format", "{{.Size}}", name]).trim());
  process.stderr.write(`image: ${name} (${(size / 2 ** 20).toFixed(1)} MiB)\n`);
  return name;
}

/** Makes `list` a manifest list of `images` (replacing one of that name). */
function manifestList({ globals, list, images }) {
  // `manifest create` refuses an existing name.
  const exists = spawnSync("podman", [...globals, "manifest", "exists", list]).status === 0;
  if (exists) podman(globals, ["manifest", "rm", list], { quiet: true });
  podman(globals, ["manifest", "create", list], { quiet: true });
  for (const image of images)
    podman(globals, ["manifest", "add", list, `containers-storage:${image}`], { quiet: true });
  process.stderr.write(`image: ${list} (manifest list: ${images.join(", ")})\n`);
}

/**
 * Builds every image and both lists: the default one (each architecture's default build) and the
 * baseline one (the baseline build where an architecture has one, its default build elsewhere).
 */
export function buildImages(globals = []) {
  mkdirSync(join(root, ".cache/image"), { recursive: true });
  const info = buildInfo();
  const list = `${IMAGE}:${imageTag(info)}`;
  const baseline = `${list}-baseline`;
  const byVariant = { "": [], baseline: [] };
  for (const [arch, spec] of Object.entries(ARCHES)) {
    const name = buildImage({ globals, arch, variant: "", info, name: `${list}-${arch}` });
    byVariant[""].push(name);
    if (!spec.builds.baseline) {
      byVariant.baseline.push(name);
      continue;
    }
    const own = { arch, variant: "baseline", info, name: `${baseline}-${arch}` };
    byVariant.baseline.push(buildImage({ globals, ...own }));
  }
  manifestList({ globals, list, images: byVariant[""] });
  manifestList({ globals, list: baseline, images: byVariant.baseline });
  return { list, baseline, images: [...new Set([...byVariant[""], ...byVariant.baseline])] };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    const { list, baseline } = buildImages(process.argv.slice(2));
    process.stdout.write(`${list}\n${baseline}\n`);
  } catch (err) {
    process.stderr.write(`image: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}
