/**
 * deploy/ as a cluster receives it: `kubectl kustomize` renders a kustomization (offline), and
 * `kubectl patch --local` applies a strategic-merge patch file to a manifest (offline), so tests
 * check what `kubectl apply -k` and `kubectl patch` would send, not the files one by one.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
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
    return execFileSync("kubectl", args, {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 60_000,
    });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === "ENOENT")
      throw new Error(
        "kubectl is not on PATH: the deploy/ tests render the manifests with `kubectl kustomize`",
      );
    throw new Error(`kubectl ${args.join(" ")} failed: ${e.stderr ?? e.message}`);
  }
}

/** `kubectl kustomize <dir>` (dir relative to deploy/), as documents. */
export function renderKustomization(dir = "."): Manifest[] {
  return (loadAll(kubectl(["kustomize", join(DEPLOY, dir)])) as Array<Manifest | null>).filter(
    (d): d is Manifest => d !== null && d !== undefined,
  );
}

/**
 * `kubectl patch --local -f <manifest> --type strategic --patch-file <file>` (file relative to
 * deploy/).
 */
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

/** A node layout: a component of deploy/components/ (none: the base) and the node's CNI dirs. */
export interface Layout {
  name: string;
  component?: string;
  confDir: string;
  /** Where the installer puts the plexus binary. */
  binDir: string;
  /** The runtime's plugin dirs, in its order (its CNI_PATH): binDir is one of them. */
  pluginDirs: readonly string[];
}

/** The layouts deploy/ ships, with the paths each distribution's runtime reads. */
export const LAYOUTS: readonly Layout[] = [
  {
    name: "base",
    confDir: "/etc/cni/net.d",
    binDir: "/opt/cni/bin",
    pluginDirs: ["/opt/cni/bin"],
  },
  {
    name: "crio",
    component: "crio",
    confDir: "/etc/cni/net.d",
    binDir: "/usr/libexec/cni",
    // crio.conf's plugin_dirs as Fedora and RHEL package it.
    pluginDirs: ["/opt/cni/bin", "/usr/libexec/cni"],
  },
  {
    name: "k3s",
    component: "k3s",
    confDir: "/var/lib/rancher/k3s/agent/etc/cni/net.d",
    binDir: "/var/lib/rancher/k3s/data/cni",
    pluginDirs: ["/var/lib/rancher/k3s/data/cni"],
  },
  {
    name: "rke2",
    component: "rke2",
    confDir: "/var/lib/rancher/rke2/agent/etc/cni/net.d",
    binDir: "/opt/cni/bin",
    pluginDirs: ["/opt/cni/bin"],
  },
];

/**
 * deploy/ with a layout's component, as an operator's kustomization lists them (deploy/ as a
 * resource, the component beside it), rendered offline.
 */
export function renderLayout(layout: Layout): Manifest[] {
  if (!layout.component) return renderKustomization(".");
  const dir = mkdtempSync(join(tmpdir(), "plx-layout-"));
  try {
    // kustomize takes only relative paths to other kustomizations.
    const deploy = relative(dir, DEPLOY);
    const kustomization = {
      apiVersion: "kustomize.config.k8s.io/v1beta1",
      kind: "Kustomization",
      resources: [deploy],
      components: [join(deploy, "components", layout.component)],
    };
    writeFileSync(join(dir, "kustomization.yaml"), dump(kustomization));
    return (loadAll(kubectl(["kustomize", dir])) as Array<Manifest | null>).filter(
      (d): d is Manifest => d !== null && d !== undefined,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One volume mount of a rendered container, with what its volume is on the node. */
export interface ContainerMount {
  mountPath: string;
  readOnly: boolean;
  volume: string;
  /** The node path of a hostPath volume; undefined for other kinds (projected, …). */
  hostPath?: string;
  /** The hostPath volume's `type` (DirectoryOrCreate: the kubelet makes it). */
  hostPathType?: string;
}

/**
 * The volume mounts of `container` in a rendered DaemonSet, each resolved to its volume: what the
 * container sees of the node, read from the manifest rather than assumed.
 */
export function containerMounts(daemonSet: Manifest, container: string): ContainerMount[] {
  const pod = daemonSet.spec.template.spec;
  const found = pod.containers.find((c: { name: string }) => c.name === container);
  if (!found) throw new Error(`the rendered DaemonSet has no container ${container}`);
  type Mount = { name: string; mountPath: string; readOnly?: boolean };
  type Volume = { name: string; hostPath?: { path: string; type?: string } };
  return ((found.volumeMounts ?? []) as Mount[]).map((m) => {
    const volume = (pod.volumes as Volume[]).find((v) => v.name === m.name);
    if (!volume) throw new Error(`${container} mounts ${m.name}, which is not a volume`);
    return {
      mountPath: m.mountPath,
      readOnly: m.readOnly === true,
      volume: m.name,
      ...(volume.hostPath
        ? { hostPath: volume.hostPath.path, hostPathType: volume.hostPath.type ?? "" }
        : {}),
    };
  });
}
