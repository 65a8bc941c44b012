/**
 * deploy/ as a cluster receives it: `kubectl kustomize` renders a kustomization (offline), and
 * `kubectl patch --local` applies a strategic-merge patch file to a manifest (offline), so tests
 * check what `kubectl apply -k` and `kubectl patch` would send, not the files one by one.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dump, loadAll } from "js-yaml";
import { REPO_ROOT } from "./plexus-bin";

export const DEPLOY = join(REPO_ROOT, "deploy");

export type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [k: string]: any;
};

function kubectl(args: string[]): string {
  try {
    return execFileSync("kubectl", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 60_000 });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === "ENOENT")
      throw new Error("kubectl is not on PATH: the deploy/ tests render the manifests with `kubectl kustomize`");
    throw new Error(`kubectl ${args.join(" ")} failed: ${e.stderr ?? e.message}`);
  }
}

/** `kubectl kustomize <dir>` (dir relative to deploy/), as documents. */
export function renderKustomization(dir = "."): Manifest[] {
  return (loadAll(kubectl(["kustomize", join(DEPLOY, dir)])) as Array<Manifest | null>).filter(
    (d): d is Manifest => d !== null && d !== undefined,
  );
}

/** `kubectl patch --local -f <manifest> --type strategic --patch-file <file>` (file relative to deploy/). */
export function patchLocally(manifest: Manifest, patchFile: string): Manifest {
  const dir = mkdtempSync(join(tmpdir(), "plx-deploy-"));
  try {
    const file = join(dir, "manifest.yaml");
    writeFileSync(file, dump(manifest));
    const out = kubectl([
      "patch",
      "--local",
      "-f",
      file,
      "--type",
      "strategic",
      "--patch-file",
      join(DEPLOY, patchFile),
      "-o",
      "json",
    ]);
    return JSON.parse(out) as Manifest;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
