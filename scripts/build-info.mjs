// What a build says about itself: the version, the commit and the commit's time, for the bundle
// (`plexus --version`, esbuild.config.mjs), the image's OCI labels and tags (scripts/image.mjs) and
// the SBOMs (scripts/build-release.mjs). Everything comes from the source (the checkout's git
// history, package.json), never from the clock or the machine, so one commit builds the same bytes.
//   version  `git describe --tags` (a leading "v" dropped) when a tag reaches the commit; else
//            package.json's version plus the commit as semver build metadata (0.1.0+g1a2b3c4d5e6f);
//            "-dirty" / ".dirty" when tracked files differ from the commit
//   commit   the full commit id, or "unknown" outside a git checkout (a source tarball)
//   time     the commit's time (seconds since the epoch), or SOURCE_DATE_EPOCH, or 0
//   source   where the source lives: package.json's repository URL, or PLEXUS_SOURCE_URL, or
//            undefined (then the image has no source label and the SBOMs no vcs reference)
// A build without .git (a tarball, the Dockerfile's context) takes PLEXUS_BUILD_VERSION and
// PLEXUS_BUILD_COMMIT when set, else package.json's version and commit "unknown".
import { execFileSync } from "node:child_process";
import { readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

function git(root, args) {
  try {
    const o = { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] };
    return execFileSync("git", args, o).trim();
  } catch {
    return undefined;
  }
}

/** Whether `root` is the top of a git checkout (not a tarball unpacked inside someone else's). */
function inOwnCheckout(root) {
  const top = git(root, ["rev-parse", "--show-toplevel"]);
  if (!top) return false;
  try {
    return realpathSync(top) === realpathSync(root);
  } catch {
    return false;
  }
}

function fromGit(root, pkgVersion) {
  const commit = git(root, ["rev-parse", "--verify", "HEAD"]);
  if (!commit) return undefined;
  // Only tracked files count: an untracked build product or a node_modules link is not a change.
  const dirty = git(root, ["status", "--porcelain", "--untracked-files=no"]) !== "";
  const describe = ["describe", "--tags", "--match", "v[0-9]*", "--abbrev=12", "--dirty"];
  const described = git(root, describe);
  const version = described
    ? described.replace(/^v/, "")
    : `${pkgVersion}+g${commit.slice(0, 12)}${dirty ? ".dirty" : ""}`;
  const time = Number(git(root, ["log", "-1", "--format=%ct", commit]));
  return { version, commit, time: Number.isInteger(time) ? time : 0, dirty };
}

/**
 * The build's identity, `{ version, commit, time, dirty, source }` (see the top of this file), of
 * the checkout at `root` (this one unless given), with the variables of `env`.
 */
export function buildInfo({ root = ROOT, env = process.env } = {}) {
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  const pkgVersion = pkg.version;
  const epoch = env.SOURCE_DATE_EPOCH ? Number(env.SOURCE_DATE_EPOCH) : Number.NaN;
  const info = (inOwnCheckout(root) && fromGit(root, pkgVersion)) || {
    version: env.PLEXUS_BUILD_VERSION || pkgVersion,
    commit: env.PLEXUS_BUILD_COMMIT || "unknown",
    time: 0,
    dirty: false,
  };
  if (Number.isInteger(epoch) && epoch >= 0) info.time = epoch;
  const repo = typeof pkg.repository === "string" ? pkg.repository : pkg.repository?.url;
  info.source = repo?.replace(/^git\+/, "") || env.PLEXUS_SOURCE_URL || undefined;
  return info;
}

/**
 * The image tag for a build: the version and the commit, in the characters a tag allows
 * ([A-Za-z0-9_.-], `+` is not one), so builds of two commits never share a name.
 */
export function imageTag({ version, commit }) {
  const short = commit === "unknown" ? "nogit" : commit.slice(0, 12);
  const base = version.replaceAll("+", "-").replace(/[^A-Za-z0-9_.-]/g, "_");
  return base.includes(short) ? base : `${base}-${short}`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const info = buildInfo();
  process.stdout.write(`${JSON.stringify({ ...info, imageTag: imageTag(info) })}\n`);
}
