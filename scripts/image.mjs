// `npm run image`: the DaemonSet image, built offline with podman from the release executables
// (`npm run build:release` runs first): one `FROM scratch` image per architecture holding the file
// tree of scripts/image-rootfs.mjs, and a manifest list that names both, all tagged with this
// build's version and commit (scripts/build-info.mjs), so a build never replaces another commit's
// image in a shared store:
//   localhost/plexus:<tag>-amd64, localhost/plexus:<tag>-arm64   the images
//   localhost/plexus:<tag>                                      the manifest list
// <tag> is the version and the commit, e.g. 0.1.0-g1a2b3c4d5e6f (printed on stdout, one line).
// The OCI labels say where the image comes from (source, revision, version, licenses) and when
// (created: the commit's time, which is also every file's time, so one commit builds one image).
// Nothing is pulled and nothing runs inside the build (no RUN step), so the arm64 image needs no
// emulator. Extra arguments are podman's global options (--root, --runroot, --storage-driver),
// for a private image store (the end-to-end test).
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

function buildArch({ globals, arch, info, base }) {
  const work = join(root, ".cache/image", `${arch}-${process.pid}`);
  const tree = join(work, "rootfs");
  const tag = `${base}-${arch}`;
  const labels = Object.entries(ociLabels(info)).flatMap(([k, v]) => ["--label", `${k}=${v}`]);
  try {
    assembleRootfs({ arch, out: tree });
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
      tag,
      tree,
    ]);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const size = Number(podman(globals, ["image", "inspect", "--format", "{{.Size}}", tag]).trim());
  process.stderr.write(`image: ${tag} (${(size / 2 ** 20).toFixed(1)} MiB)\n`);
  return tag;
}

export function buildImages(globals = []) {
  mkdirSync(join(root, ".cache/image"), { recursive: true });
  const info = buildInfo();
  const list = `${IMAGE}:${imageTag(info)}`;
  const tags = Object.keys(ARCHES).map((arch) => buildArch({ globals, arch, info, base: list }));
  // A rebuild replaces the list: `manifest create` refuses an existing name.
  const exists = spawnSync("podman", [...globals, "manifest", "exists", list]).status === 0;
  if (exists) podman(globals, ["manifest", "rm", list], { quiet: true });
  podman(globals, ["manifest", "create", list], { quiet: true });
  for (const tag of tags)
    podman(globals, ["manifest", "add", list, `containers-storage:${tag}`], { quiet: true });
  process.stderr.write(`image: ${list} (manifest list: ${tags.join(", ")})\n`);
  return { list, tags };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    const { list } = buildImages(process.argv.slice(2));
    process.stdout.write(`${list}\n`);
  } catch (err) {
    process.stderr.write(`image: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}
