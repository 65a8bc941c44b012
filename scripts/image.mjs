// `npm run image`: the DaemonSet image, built offline with podman from the release executables
// (`npm run build:release` runs first): one `FROM scratch` image per architecture holding the file
// tree of scripts/image-rootfs.mjs, and a manifest list that names both:
//   localhost/plexus:<version>-amd64, localhost/plexus:<version>-arm64   the images
//   localhost/plexus:<version>                                          the manifest list (what deploy/ names)
// Nothing is pulled and nothing runs inside the build (no RUN step), so the arm64 image needs no
// emulator. Extra arguments are podman's global options (--root, --runroot, --storage-driver),
// for a private image store (the end-to-end test).
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ARCHES, assembleRootfs } from "./image-rootfs.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const version = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version;
export const IMAGE = "localhost/plexus";

const CONTAINERFILE = `FROM scratch
COPY . /
LABEL org.opencontainers.image.title="plexus" org.opencontainers.image.version="${version}"
ENTRYPOINT ["/usr/local/bin/plexus"]
CMD ["install"]
`;

function podman(globals, args, o = {}) {
  return execFileSync("podman", [...globals, ...args], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", o.quiet ? "pipe" : "inherit"],
  });
}

function buildArch(globals, arch) {
  const work = join(root, ".cache/image", arch);
  const tree = join(work, "rootfs");
  const tag = `${IMAGE}:${version}-${arch}`;
  try {
    assembleRootfs({ arch, out: tree });
    writeFileSync(join(work, "Containerfile"), CONTAINERFILE);
    podman(globals, [
      "build",
      "--quiet",
      "--platform",
      `linux/${arch}`,
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
  const tags = Object.keys(ARCHES).map((arch) => buildArch(globals, arch));
  const list = `${IMAGE}:${version}`;
  // A rebuild replaces the list: `manifest create` refuses an existing name.
  const exists = spawnSync("podman", [...globals, "manifest", "exists", list]).status === 0;
  if (exists) podman(globals, ["manifest", "rm", list], { quiet: true });
  podman(globals, ["manifest", "create", list], { quiet: true });
  for (const tag of tags) podman(globals, ["manifest", "add", list, `containers-storage:${tag}`], { quiet: true });
  process.stderr.write(`image: ${list} (manifest list: ${tags.join(", ")})\n`);
  return { list, tags };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    buildImages(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`image: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}
