/**
 * One housekeeping pass over the node's records of failed DELs (orchestrate/pending.ts), as the
 * node daemon's timer runs it: the Plexus config the runtime uses (read again each pass, so an
 * edited config counts), the delegates from `--cni-path`, each pending record retried with a
 * budget of its own. After the pass, the stamp that tells DELs a housekeeper runs (so they leave
 * the retries to it) is set to when the pass after next is due.
 */
import { parseCniArgs } from "../cni/args";
import type { CniRequest } from "../cni/env";
import type { KubeApi } from "../k8s/kube-api";
import type { Logger } from "../log/logger";
import type { Deps } from "../orchestrate/deps";
import { nodeDeps } from "../orchestrate/node-deps";
import { housekeep } from "../orchestrate/pending";
import { cniPathOf } from "./context";
import { opsWiring } from "./loaders";
import { loadNodeConfig } from "./node-config";

export interface HousekeepingOptions {
  /** The Plexus config file; undefined: the one the runtime picks from `confDir`. */
  config?: string | undefined;
  confDir?: string | undefined;
  /** The directories of the delegates (the runtime's CNI_PATH), colon-separated. */
  cniPath?: string | undefined;
  /** How long until the next pass: DELs leave the retries to this housekeeper until twice that. */
  intervalMs: number;
  log: Logger;
  /** For the TeardownAbandoned event on the pod of an abandoned record. */
  kube?: () => Promise<KubeApi | undefined>;
}

/** One pass; throws when the config cannot be read (the caller logs it and tries again later). */
export async function housekeepNode(o: HousekeepingOptions): Promise<{ failures: number }> {
  const { conf } = loadNodeConfig({ config: o.config, confDir: o.confDir });
  const deps: Deps = { ...nodeDeps(conf, o.log, process.env), ...opsWiring };
  if (o.kube) deps.kube = o.kube;
  const req: CniRequest = {
    command: "GC",
    containerId: "",
    netns: "",
    ifName: "",
    args: parseCniArgs(""),
    rawArgs: "",
    path: cniPathOf(o.cniPath, process.env),
  };
  const errors = await housekeep(req, conf, deps);
  for (const e of errors) {
    o.log.warn({ code: e.code, err: e.message }, "a pending record's retry failed");
  }
  await deps.records.markHousekeeper(Date.now() + 2 * o.intervalMs);
  return { failures: errors.length };
}
