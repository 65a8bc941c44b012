/**
 * `plexus doctor` on what Multus leaves behind once a node runs Plexus (M14, M18), each named with
 * what to do about it: a Multus config in the conf dir that wraps Plexus (its DaemonSet wrote it
 * again: every ADD through it fails), the configs the take-over kept for the way back (and which
 * of them the way back would restore), the take-over's guards, Multus's temp file, its
 * kubeconfig dir `multus.d/`, its binaries in the plugin dirs, its cache of the pods it attached
 * (`/var/lib/cni/multus`, which Plexus reads at those pods' DEL), and, when the credentials may
 * read them, Multus's DaemonSet, ServiceAccount, RBAC and ConfigMap in the cluster.
 */
import { lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { PLEXUS_CONF_NAME } from "../install/options";
import { keptCopiesOf, readConfText, readKeptCopies, restorable } from "../install/kept-copies";
import { multusKindOf } from "../install/multus-config";
import { listGuards } from "../install/multus-guard";
import { DEFAULT_CONF_DIR, DEFAULT_MULTUS_CACHE_DIR } from "../config/plugin-conf";
import { loadKubeApi } from "../kubeapi/index";
import { cniPathOf, type CommonFlags, messageOf, type OpsContext } from "./context";
import { pluginDirs } from "./plugin-binaries";
import type { Finding } from "./validate";

type Add = (level: Finding["level"], subject: string, msg: string) => void;

const SUBJECT = "multus";
/** Only once you will not go back to Multus: the way back needs these. */
const NOT_GOING_BACK = "once Multus's DaemonSet is deleted and you will not go back to Multus";

interface LeftoverPaths {
  /** The node's CNI config directory, as this process sees it. */
  confDir: string;
  /** Where plugin binaries are looked up (Multus installs its own there). */
  binDirs: readonly string[];
  /** Multus's cache of the pods it attached (the config's multusCacheDir). */
  multusCacheDir: string;
}

function names(dir: string): string[] {
  try {
    return readdirSync(dir).sort();
  } catch {
    return [];
  }
}

const kindOf = (path: string): "file" | "dir" | undefined => {
  try {
    const st = lstatSync(path);
    return st.isDirectory() ? "dir" : "file";
  } catch {
    return undefined;
  }
};

/** The file names of the conf dir: Multus configs wrapping Plexus, kept copies, guards. */
function checkConfDir(confDir: string, add: Add): number {
  const all = names(confDir);
  let found = 0;
  for (const name of all) {
    if (!/\.(conf|conflist|json)$/.test(name) || kindOf(join(confDir, name)) !== "file") continue;
    const text = readConfText(join(confDir, name));
    if (text === undefined || multusKindOf(text) !== "wraps-plexus") continue;
    found++;
    add(
      name < PLEXUS_CONF_NAME ? "error" : "warning",
      SUBJECT,
      `${join(confDir, name)} is Multus's config wrapping Plexus's: Multus's DaemonSet wrote it ` +
        "again after the take-over, and every ADD through it fails. plexus install (taking " +
        "over) removes it; delete Multus's DaemonSet so that it is not written again",
    );
  }
  found += checkKeptCopies(confDir, all, add);
  const guards = listGuards(confDir, all);
  if (guards.length) {
    found++;
    const paths = guards.map((g) => join(confDir, g));
    add(
      "warning",
      SUBJECT,
      `${paths.join(", ")}: Plexus's guards, directories that keep Multus's entrypoint from ` +
        "writing its config again (its container fails to start meanwhile); the way back and " +
        `plexus uninstall remove them. Remove them yourself ${NOT_GOING_BACK}: ` +
        `rm -r ${paths.join(" ")}`,
    );
  }
  return found + checkMultusFiles(confDir, all, add);
}

/** The configs the take-over kept, and which one the way back would put back. */
function checkKeptCopies(confDir: string, all: readonly string[], add: Add): number {
  let found = 0;
  for (const [config, copies] of keptCopiesOf(all)) {
    const states = readKeptCopies(confDir, copies);
    const back = restorable(states);
    for (const state of states) {
      found++;
      const path = join(confDir, state.name);
      const what =
        state === back
          ? "the config plexus install --no-take-over-multus (the way back) restores as " +
            `${config}; ` +
            `remove it ${NOT_GOING_BACK}`
          : state.kind === "wraps-plexus"
            ? "Multus's config wrapping Plexus's, never restored (every ADD through it would " +
              "fail); remove it"
            : state.kind === "multus"
              ? "an older kept copy of Multus's config (the way back restores " +
                `${back?.name}); remove it`
              : "not a config of Multus's; remove it";
      add("warning", SUBJECT, `${path}: ${what}: rm ${path}`);
    }
  }
  return found;
}

/** Multus's kubeconfig dir and the temp files its entrypoint leaves when a render fails. */
function checkMultusFiles(confDir: string, all: readonly string[], add: Add): number {
  let found = 0;
  for (const name of all.filter((n) => /^00-multus\.conf\.(new|temp)$/.test(n))) {
    const path = join(confDir, name);
    if (kindOf(path) !== "file") continue;
    found++;
    add("warning", SUBJECT, `${path}: a temp file of Multus's entrypoint; remove it: rm ${path}`);
  }
  const kubeconfigDir = join(confDir, "multus.d");
  if (kindOf(kubeconfigDir) === "dir") {
    found++;
    add(
      "warning",
      SUBJECT,
      `${kubeconfigDir}: Multus's kubeconfig (its token stops working once Multus's DaemonSet ` +
        `is deleted); the way back's config names it. Remove it ${NOT_GOING_BACK}: ` +
        `rm -r ${kubeconfigDir}`,
    );
  }
  return found;
}

/** Multus's plugin and thick's shim in the plugin dirs. */
function checkBinaries(binDirs: readonly string[], add: Add): number {
  let found = 0;
  for (const dir of new Set(binDirs)) {
    for (const name of ["multus", "multus-shim"]) {
      const path = join(dir, name);
      if (kindOf(path) !== "file") continue;
      found++;
      add(
        "warning",
        SUBJECT,
        `${path}: Multus's plugin; only a Multus config runs it (the way back's). Remove it ` +
          `${NOT_GOING_BACK}: rm ${path}`,
      );
    }
  }
  return found;
}

/** Multus's cache: one file per pod it attached, which Plexus reads at that pod's DEL. */
function checkCache(dir: string, add: Add): number {
  if (kindOf(dir) !== "dir") return 0;
  const pods = names(dir).filter((n) => n !== "results" && kindOf(join(dir, n)) === "file");
  const results = names(join(dir, "results"));
  if (pods.length > 0) {
    add(
      "ok",
      SUBJECT,
      `${dir} holds the files of ${pods.length} pod(s) Multus attached: Plexus reads each at ` +
        "that pod's DEL and removes it. Keep the directory until it is empty: without it such a " +
        "pod's DEL tears down its default network only, and its other networks' addresses leak",
    );
    return 1;
  }
  if (results.length > 0) {
    add(
      "warning",
      SUBJECT,
      `${dir} holds no pod's file any more, and its results/ ${results.length} file(s) of no ` +
        `pod: remove it: rm -r ${dir}`,
    );
    return 1;
  }
  // Empty: harmless, and nothing to act on before Multus is gone for good.
  add("ok", SUBJECT, `${dir} is empty: nothing reads it any more; rm -r ${dir} when you like`);
  return 0;
}

/** Every leftover of Multus on this node; returns how many were named. */
function checkMultusLeftovers(paths: LeftoverPaths, add: Add): number {
  const found =
    checkConfDir(paths.confDir, add) +
    checkBinaries(paths.binDirs, add) +
    checkCache(paths.multusCacheDir, add);
  if (found === 0)
    add(
      "ok",
      SUBJECT,
      `nothing of Multus's in ${paths.confDir}, ${[...new Set(paths.binDirs)].join(", ")} or ` +
        `${paths.multusCacheDir}`,
    );
  return found;
}

/** Multus's objects in the cluster, by the names its own manifests give them. */
const MULTUS_OBJECTS = [
  { ref: "daemonset/kube-multus-ds", path: "/apis/apps/v1/namespaces/kube-system/daemonsets" },
  { ref: "serviceaccount/multus", path: "/api/v1/namespaces/kube-system/serviceaccounts" },
  { ref: "configmap/multus-cni-config", path: "/api/v1/namespaces/kube-system/configmaps" },
  { ref: "configmap/multus-daemon-config", path: "/api/v1/namespaces/kube-system/configmaps" },
  { ref: "clusterrole/multus", path: "/apis/rbac.authorization.k8s.io/v1/clusterroles" },
  {
    ref: "clusterrolebinding/multus",
    path: "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
  },
] as const;

export type Lister = (path: string, query: Record<string, string>) => Promise<unknown>;

/**
 * Which of Multus's objects remain, asked one list each (by name, so a missing one is an empty
 * list, not an error); named with the one command that deletes them.
 */
export async function checkMultusObjects(list: Lister, add: Add): Promise<void> {
  const present: string[] = [];
  try {
    for (const object of MULTUS_OBJECTS) {
      const name = object.ref.split("/")[1]!;
      const page = (await list(object.path, { fieldSelector: `metadata.name=${name}` })) as {
        items?: unknown[];
      };
      if (Array.isArray(page.items) && page.items.length > 0) present.push(object.ref);
    }
  } catch (err) {
    add(
      "ok",
      SUBJECT,
      "cannot tell whether Multus's DaemonSet, ServiceAccount, RBAC and ConfigMap remain " +
        `(${messageOf(err)}): run plexus doctor with ` +
        "--kubeconfig of an administrator, or kubectl -n kube-system get ds kube-multus-ds",
    );
    return;
  }
  reportObjects(present, add);
}

function reportObjects(present: readonly string[], add: Add): void {
  if (present.length === 0) {
    add("ok", SUBJECT, "Multus's DaemonSet, ServiceAccount, RBAC and ConfigMap are gone");
    return;
  }
  const command = `kubectl -n kube-system delete ${present.join(" ")}`;
  if (present.includes("daemonset/kube-multus-ds"))
    add(
      "warning",
      SUBJECT,
      "Multus's DaemonSet kube-system/kube-multus-ds still exists: each start of its pods " +
        "runs Multus's entrypoint again (Plexus's guards keep its config out). Once every node " +
        "has switched (kubectl -n kube-system rollout status ds/plexus), delete it with the " +
        `rest of Multus's objects (not the CRD): ${command}`,
    );
  else
    add(
      "warning",
      SUBJECT,
      `Multus's ${present.join(", ")} remain, unused since its DaemonSet is gone: ${command}`,
    );
}

/**
 * doctor's Multus section: the node's leftovers, and Multus's objects in the cluster when the node
 * has any (a node that never ran Multus asks the API nothing). Without a Plexus config (`ctx`
 * undefined) the paths are the defaults and the flags'.
 */
export async function doctorMultus(
  ctx: OpsContext | undefined,
  flags: CommonFlags,
  add: Add,
): Promise<void> {
  const env = ctx?.env ?? process.env;
  const found = checkMultusLeftovers(
    {
      confDir: flags.cniConfDir ?? DEFAULT_CONF_DIR,
      binDirs: ctx ? pluginDirs(ctx.conf, ctx.cniPath) : cniPathOf(flags.cniPath, env),
      multusCacheDir: ctx?.conf.multusCacheDir ?? DEFAULT_MULTUS_CACHE_DIR,
    },
    add,
  );
  if (!ctx || found === 0 || ctx.conf.fileClusterDir) return;
  try {
    const api = await loadKubeApi(ctx.conf, {
      env,
      log: ctx.log,
      client: { retry: { requestTimeoutMs: ctx.conf.apiRequestTimeoutMs, totalTimeoutMs: 10_000 } },
    });
    if (!api) return;
    try {
      await checkMultusObjects((path, query) => api.list(path, query), add);
    } finally {
      await api.close();
    }
  } catch (err) {
    add("ok", SUBJECT, `cannot ask the API server about Multus's objects: ${messageOf(err)}`);
  }
}
