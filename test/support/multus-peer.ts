/**
 * Real Multus v4.0.2 thin for the end-to-end tests: its plugin (`multus`) and the entrypoint its
 * thin DaemonSet runs to render its config (`thin_entrypoint`), built once per tarball from the
 * project's source snapshot (../shared/peers/multus-cni-4.0.2.tar.gz, or MULTUS_TARBALL; checked
 * against its SHA-256 by scripts/multus-build.sh, the bench peer's build too) into a cache dir in
 * the OS temp dir named by that SHA-256, so later runs and suites reuse it. Nothing of Multus
 * enters the repository. MULTUS_PEER_DIR names a directory of binaries built elsewhere instead.
 * docs/development.md says how to provide the peer.
 *
 * A test that needs the peer and cannot have it says why: a missing tarball or Go toolchain skips
 * it outside CI and fails it under CI=true, and so does a build that fails (with the build's own
 * last lines), so that a broken peer is never a silent skip.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "./plexus-bin";
import { isCi } from "./netns";

const MULTUS_TARBALL =
  process.env.MULTUS_TARBALL ?? join(REPO_ROOT, "..", "shared", "peers", "multus-cni-4.0.2.tar.gz");

type Target = "multus" | "thin_entrypoint";

/** A built peer's path, or why there is none: `missing` (not here), `broken` (build failed). */
export type Peer = { path: string } | { missing: string } | { broken: string };

/** MULTUS_PEER_DIR: binaries built elsewhere (multus-build.sh DIR multus thin_entrypoint). */
function prebuilt(dir: string): Record<Target, Peer> {
  const peer = (t: Target): Peer =>
    existsSync(join(dir, t))
      ? { path: join(dir, t) }
      : { missing: `no ${t} in MULTUS_PEER_DIR ${dir}` };
  return { multus: peer("multus"), thin_entrypoint: peer("thin_entrypoint") };
}

/** Builds the targets the cache lacks (minutes on a loaded machine; each renamed into place). */
function build(targets: readonly Target[]): Record<Target, Peer> | { missing: string } {
  if (process.env.MULTUS_PEER_DIR) return prebuilt(process.env.MULTUS_PEER_DIR);
  if (!existsSync(MULTUS_TARBALL))
    return {
      missing:
        `no Multus v4.0.2 source at ${MULTUS_TARBALL} (put multus-cni-4.0.2.tar.gz there or ` +
        'set MULTUS_TARBALL: docs/development.md, "Peers")',
    };
  if (spawnSync("go", ["version"]).status !== 0)
    return { missing: "no Go toolchain on PATH to build Multus (Debian: golang-go)" };
  const sha = createHash("sha256").update(readFileSync(MULTUS_TARBALL)).digest("hex");
  const dir = join(tmpdir(), `plexus-multus-${sha}`);
  const absent = targets.filter((t) => !existsSync(join(dir, t)));
  let broken: string | undefined;
  if (absent.length > 0) {
    try {
      execFileSync(join(REPO_ROOT, "scripts", "multus-build.sh"), [dir, ...absent], {
        env: { ...process.env, MULTUS_TARBALL },
        stdio: ["ignore", "ignore", "pipe"],
        timeout: 30 * 60_000,
      });
    } catch (err) {
      const stderr = String((err as { stderr?: Buffer }).stderr ?? "").trim();
      const tail = stderr.split("\n").slice(-8).join("\n");
      broken = `building Multus v4.0.2 (${absent.join(", ")}) from ${MULTUS_TARBALL} failed: ${
        tail || (err as Error).message
      }`;
    }
  }
  const peer = (t: Target): Peer =>
    existsSync(join(dir, t)) ? { path: join(dir, t) } : { broken: broken ?? `no ${t} was built` };
  return { multus: peer("multus"), thin_entrypoint: peer("thin_entrypoint") };
}

/** The thin plugin and the thin DaemonSet's entrypoint (M18), or why they cannot be had. */
export function multusThinWithEntrypoint(): { multus: string; entrypoint: string } | Peer {
  const built = build(["multus", "thin_entrypoint"]);
  if ("missing" in built) return built;
  const { multus, thin_entrypoint: entrypoint } = built;
  if (!("path" in multus)) return multus;
  if (!("path" in entrypoint)) return entrypoint;
  return { multus: multus.path, entrypoint: entrypoint.path };
}

/**
 * Why a test cannot run with this peer, printed loudly, or undefined when it can. Under CI=true
 * a peer that is missing or does not build throws instead: CI never passes by skipping it.
 */
export function peerUnavailable(peer: object, test: string): string | undefined {
  const why =
    "missing" in peer ? String(peer.missing) : "broken" in peer ? String(peer.broken) : "";
  if (!why) return undefined;
  if (isCi()) throw new Error(`${test}: ${why} (CI=true: a missing e2e prerequisite is a failure)`);
  process.stderr.write(`\n*** SKIPPING ${test}: ${why} ***\n\n`);
  return why;
}
