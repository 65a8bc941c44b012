// Where the images' glibc comes from, and which glibc it is. The files are those of Debian's libc6
// package for the image's architecture, taken either
//   - from this machine (`npm run image`): dpkg-query names the installed version, and every file
//     copied must belong to libc6 by dpkg's own list, or
//   - from the package file itself (`--libc6-deb`, what the Dockerfile downloads): dpkg-deb names
//     its package, architecture and version, and unpacks it into a scratch directory.
// Either way the version must be the one scripts/libc6.version pins, so the image's glibc is the
// pinned one whatever Debian the builder runs, and the image's SBOM names it. A different version
// fails the build, naming both; to move the pin (after a Debian point release or security update),
// build once with PLEXUS_LIBC6_UPDATE=1, which writes the version found, and review that change.
import { execFileSync } from "node:child_process";
import { existsSync, lstatSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const LIBC6_PIN = fileURLToPath(new URL("libc6.version", import.meta.url));
/** A Debian version: [epoch:]upstream[-revision], in the characters Debian policy allows. */
const DEBIAN_VERSION = /^(?:\d+:)?[0-9][A-Za-z0-9.+~-]*$/;

/** The version the pin file names. */
export function readLibc6Pin(file = LIBC6_PIN) {
  if (!existsSync(file)) throw new Error(`${file} is missing: it pins the images' libc6 version`);
  const version = readFileSync(file, "utf8").trim();
  if (!DEBIAN_VERSION.test(version))
    throw new Error(`${file} holds ${JSON.stringify(version)}: expected one Debian version`);
  return version;
}

/**
 * `found` (the version of libc6 for `arch` about to be copied) when the pin names it; with `update`
 * the pin is rewritten to it instead of failing.
 */
export function checkLibc6Pin({ found, arch, file = LIBC6_PIN, update = false }) {
  const pinned = existsSync(file) ? readLibc6Pin(file) : undefined;
  if (pinned === found) return found;
  if (update) {
    writeFileSync(file, `${found}\n`);
    process.stderr.write(`libc6: ${file} now pins ${found} (was ${pinned ?? "nothing"})\n`);
    return found;
  }
  throw new Error(
    `libc6:${arch} here is ${found}, but ${file} pins ${pinned}: the image would carry another ` +
      `glibc than its pin. Build where Debian's libc6 ${pinned} is installed, or move the pin ` +
      "with PLEXUS_LIBC6_UPDATE=1 and review the change",
  );
}

function run(command, args) {
  return execFileSync(command, args, {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, LC_ALL: "C" },
  });
}

/** `path` (absolute inside `root`) with its symlinks followed without leaving `root`. */
function resolveInside(root, path) {
  let p = path;
  for (let hops = 0; hops < 16; hops++) {
    const full = join(root, p);
    if (!lstatSync(full).isSymbolicLink()) return full;
    const target = readlinkSync(full);
    p = target.startsWith("/") ? target : join(dirname(p), target);
  }
  throw new Error(`${join(root, path)}: too many symbolic links`);
}

/** The file `name` of libc6's multiarch directory for `triplet` under `root`, or undefined. */
function libraryIn({ root, name, triplet }) {
  for (const dir of [`/lib/${triplet}`, `/usr/lib/${triplet}`]) {
    const p = join(dir, name);
    if (existsSync(join(root, p))) return { path: p, file: resolveInside(root, p) };
  }
  return undefined;
}

/** Fails unless dpkg lists every one of `paths` as a file of libc6 for `arch`. */
function assertOwnedByLibc6({ arch, paths }) {
  let out;
  try {
    out = run("dpkg-query", ["-S", ...paths]);
  } catch (err) {
    throw new Error(`dpkg-query -S ${paths.join(" ")}: ${err.stderr || err.message}`);
  }
  for (const line of out.trim().split("\n")) {
    const at = line.lastIndexOf(": ");
    const owners = line.slice(0, at).split(", ");
    if (!owners.includes(`libc6:${arch}`) && !owners.includes("libc6"))
      throw new Error(`${line.slice(at + 2)} belongs to ${owners.join(", ")}, not libc6:${arch}`);
  }
}

/** libc6 for `arch` as this machine has it installed. */
export function installedLibc6({ arch, triplet }) {
  const pkg = `libc6:${arch}`;
  let version;
  try {
    // Its default output: the package, a tab, the version.
    version = run("dpkg-query", ["-W", pkg]).trim().split("\t")[1];
    if (!version) throw new Error("no version");
  } catch {
    throw new Error(`${pkg} is not installed here (dpkg-query -W ${pkg}): install it`);
  }
  return {
    version,
    find(name) {
      const found = libraryIn({ root: "/", name, triplet });
      if (!found) throw new Error(`${name} for ${triplet} is not on this machine (install ${pkg})`);
      assertOwnedByLibc6({ arch, paths: [found.path] });
      return found.file;
    },
    copyright: "/usr/share/doc/libc6/copyright",
  };
}

/** libc6 for `arch` from the package file `deb`, unpacked into `scratch`. */
export function packagedLibc6({ arch, triplet, deb, scratch }) {
  const fields = Object.fromEntries(
    run("dpkg-deb", ["-f", deb, "Package", "Architecture", "Version"])
      .trim()
      .split("\n")
      .map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 1).trim()]),
  );
  if (fields.Package !== "libc6" || fields.Architecture !== arch)
    throw new Error(`${deb} is ${fields.Package}:${fields.Architecture}, expected libc6:${arch}`);
  run("dpkg-deb", ["-x", deb, scratch]);
  return {
    version: fields.Version,
    find(name) {
      const found = libraryIn({ root: scratch, name, triplet });
      if (!found) throw new Error(`${name} for ${triplet} is not in ${deb}`);
      return found.file;
    },
    copyright: join(scratch, "usr/share/doc/libc6/copyright"),
  };
}
