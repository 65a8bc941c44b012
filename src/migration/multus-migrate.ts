/**
 * DEL and CHECK of a pod that Multus attached before the node switched to Plexus (M14,
 * migration): used when Plexus has no record for the container but Multus's delegate cache is
 * there (see ./multus-cache). The delegates' results are where Multus's libcni cached them,
 * `<multusCacheDir>/results/` (libcni's own format, which Plexus's ResultCache reads): they are
 * passed as `prevResult` (chained plugins such as firewall need it on DEL, and CHECK needs it),
 * and DEL removes them.
 */
import type { CniRequest } from "../cni/env";
import type { PlexusConf } from "../config/plugin-conf";
import { removeFile, writeFileAtomic } from "../store/atomic-file";
import { ResultCache } from "../libcni/cache";
import { abandon, delError } from "../nodestate/del-failures";
import { callDeadline } from "../nodestate/runtime-conf";
import { ATTEMPTS_KEY, readMultusCache, type MultusCacheFound } from "./multus-cache";
import { podOf, type Attachment } from "../nodestate/record";
import { teardown, type TeardownDeps } from "../nodestate/teardown";

/** Multus's cache for this container, or undefined (none, turned off, or unusable: logged). */
async function multusAttached<D extends TeardownDeps>(
  req: CniRequest,
  conf: PlexusConf,
  deps: D,
): Promise<{ found: MultusCacheFound; deps: D } | undefined> {
  const read = await readMultusCache({
    dir: conf.multusCacheDir,
    containerId: req.containerId,
    ifName: req.ifName,
    cniVersion: conf.cniVersion,
  });
  if (read.state === "corrupt") {
    deps.log.warn(
      { path: read.path, reason: read.reason },
      "Multus's delegate cache for this container is unusable; going on as without a record (the " +
        "file is left for inspection and may be removed)",
    );
  }
  if (read.state !== "found") return undefined;
  deps.log.info(
    { path: read.path, networks: read.attachments.map((a) => `${a.network}@${a.ifName}`) },
    "no Plexus record; using the delegates Multus attached",
  );
  return {
    found: read,
    deps: { ...deps, cache: new ResultCache(conf.multusCacheDir, { libcniNames: true }) },
  };
}

/**
 * DEL from Multus's cache, when there is one (false: there is none, and DEL goes on as without a
 * record): every attachment in reverse, past failures. On success the file is removed. A failure
 * keeps it for the runtime's retry and fails the DEL. With `retryDeleteOnError: false` (the
 * default) that retry is the last: if it fails too, what failed is given up as a record's
 * attachment is (./del-failures: logged, a `TeardownAbandoned` event, its cached result removed),
 * the file is removed and the DEL succeeds, so the pod can go.
 */
export async function delMultusAttached(
  req: CniRequest,
  conf: PlexusConf,
  deps: TeardownDeps,
): Promise<boolean> {
  const m = await multusAttached(req, conf, deps);
  if (!m) return false;
  const { found } = m;
  const ctx = {
    containerId: req.containerId,
    netns: req.netns,
    cniArgs: req.rawArgs,
    deadline: callDeadline("DEL", conf),
  };
  const failures = await teardown(found.attachments, ctx, req, conf, m.deps);
  if (failures.length > 0) {
    // A count that cannot be kept would make every DEL the first: then this one is the last.
    const retry =
      conf.retryDeleteOnError || (found.failedDels === 0 && (await markFailedDel(found, deps)));
    if (retry) throw delError(failures, req);
    await abandon(failures, podOf(req.args), req, m.deps);
  }
  await removeFile(found.path);
  return true;
}

/**
 * Counts the failed DEL in the file itself (Multus's decoder ignores the extra key), so the next
 * DEL knows.
 */
async function markFailedDel(
  found: MultusCacheFound,
  deps: Pick<TeardownDeps, "log">,
): Promise<boolean> {
  const marked = found.raw.map((e) => ({ ...e, [ATTEMPTS_KEY]: found.failedDels + 1 }));
  try {
    await writeFileAtomic(found.path, JSON.stringify(marked));
    return true;
  } catch (err) {
    deps.log.error(
      { path: found.path, err: (err as Error).message },
      "could not mark Multus's delegate cache after a failed DEL; giving up on what failed now",
    );
    return false;
  }
}

/**
 * CHECK from Multus's cache: the attachments (in order) and the deps whose result cache is
 * Multus's, for orchestrate/check.ts's own loop; undefined when there is no usable cache.
 */
export async function multusAttachedForCheck<D extends TeardownDeps>(
  req: CniRequest,
  conf: PlexusConf,
  deps: D,
): Promise<{ attachments: Attachment[]; deps: D } | undefined> {
  const m = await multusAttached(req, conf, deps);
  return m && { attachments: m.found.attachments, deps: m.deps };
}
