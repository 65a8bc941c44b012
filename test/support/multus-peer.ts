/**
 * Real Multus v4.0.2 thin for the end-to-end tests: built once per tarball from the project's
 * source snapshot (../shared/peers/multus-cni-4.0.2.tar.gz, checked against its SHA-256 by
 * scripts/multus-build.sh, the bench peer's build too) into a cache dir in the OS temp dir named
 * by that SHA-256, so later runs and suites reuse it. Nothing of Multus enters the repository.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "./plexus-bin";

const MULTUS_TARBALL =
  process.env.MULTUS_TARBALL ?? join(REPO_ROOT, "..", "shared", "peers", "multus-cni-4.0.2.tar.gz");

/** The thin plugin's path, building it first when the cache has none; or why it cannot be had. */
export function multusThin(): { path: string } | { missing: string } {
  if (!existsSync(MULTUS_TARBALL)) return { missing: `no Multus source at ${MULTUS_TARBALL}` };
  if (spawnSync("go", ["version"]).status !== 0)
    return { missing: "no Go toolchain on PATH to build Multus (Debian: golang-go)" };
  const sha = createHash("sha256").update(readFileSync(MULTUS_TARBALL)).digest("hex");
  const dir = join(tmpdir(), `plexus-multus-${sha}`);
  const path = join(dir, "multus");
  if (!existsSync(path)) {
    // Minutes on a loaded machine; the script writes under a temp name and renames.
    execFileSync(join(REPO_ROOT, "scripts", "multus-build.sh"), [dir, "multus"], {
      env: { ...process.env, MULTUS_TARBALL },
      stdio: ["ignore", "ignore", "pipe"],
      timeout: 30 * 60_000,
    });
  }
  return { path };
}
