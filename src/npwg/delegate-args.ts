/**
 * What a selection asks of its delegates (M4, N4.1.2.1.3, N4.1.2.1.4, CNI CONVENTIONS):
 * - `ips` and `mac` go to every plugin as `args.cni.ips` / `args.cni.mac`, always (N4.1.2.1.3/4:
 *   MUST), and also as `runtimeConfig` to the plugins that declare the `ips` / `mac` capability;
 * - `cni-args` is merged into `args.cni` of every plugin (M4), the selection's keys winning over
 *   the config's, as in Multus; `ips`/`mac` win over a `cni-args` key of the same name, since they
 *   are what the attachment is verified against after ADD;
 * - `infiniband-guid`, `portMappings`, `bandwidth`, `deviceID` are capability values
 *   (`infinibandGUID`, `portMappings`, `bandwidth`, `deviceID`) and reach a plugin only as
 *   `runtimeConfig`, only if it declares the capability (C3.2).
 *
 * M4: `ips` and `mac` are never refused for a missing capability: `args.cni` is their channel
 * (static IPAM and tuning read it), and the post-ADD check decides whether they were honoured. The
 * other requests have no other channel, so if no plugin of the attachment declares one, the ADD
 * fails naming it (Multus drops it silently, so the pod runs without what it asked for).
 *
 * An empty `portMappings` list or `bandwidth` object asks for nothing (Multus passes neither) and
 * is not a request. The input config is never mutated: the result is a deep copy.
 */
import type { ConfList, PluginConf } from "../cni/conf";
import { CniError, Code } from "../cni/errors";
import { copyJson, isPlainObject } from "../cni/json";
import { getKeyFold, withKeysFold } from "../cni/keys";
import type { NetworkSelection } from "./types";

export interface AppliedSelection {
  conf: ConfList;
  /** Capability values for this attachment, by CNI capability name. */
  capabilityArgs: Record<string, unknown>;
}

/** The CNI capability names of what a selection requests (M4). */
function requestedCapabilities(sel: NetworkSelection): Record<string, unknown> {
  const caps: Record<string, unknown> = {};
  if (sel.ips?.length) caps.ips = sel.ips;
  if (sel.mac) caps.mac = sel.mac;
  if (sel.infinibandGuid) caps.infinibandGUID = sel.infinibandGuid;
  if (sel.portMappings?.length) caps.portMappings = sel.portMappings;
  if (sel.bandwidth && Object.keys(sel.bandwidth).length) caps.bandwidth = sel.bandwidth;
  if (sel.deviceID) caps.deviceID = sel.deviceID;
  return caps;
}

/** Requests that travel in `args.cni` too, so no declared capability is needed for them. */
const IN_CNI_ARGS = new Set(["ips", "mac"]);

function declaredCapabilities(conf: ConfList): Set<string> {
  return new Set(
    conf.plugins.flatMap((p) =>
      Object.entries(p.capabilities ?? {})
        .filter(([, on]) => on === true)
        .map(([c]) => c),
    ),
  );
}

export interface ApplyOptions {
  /**
   * M10: the NAD has a resourceName, so a requested `deviceID` also reaches every plugin at the top
   * level of its config (where sriov-cni and friends read it): no declared capability is needed.
   */
  deviceNetwork?: boolean;
}

export function applySelection(
  conf: ConfList,
  sel: NetworkSelection,
  opts: ApplyOptions = {},
): AppliedSelection {
  const capabilityArgs = requestedCapabilities(sel);
  const declared = declaredCapabilities(conf);
  const channelled = (c: string) =>
    IN_CNI_ARGS.has(c) || (c === "deviceID" && opts.deviceNetwork === true);
  const missing = Object.keys(capabilityArgs).filter((c) => !declared.has(c) && !channelled(c));
  if (missing.length) {
    const plural = missing.length > 1;
    throw new CniError(
      Code.InvalidNetworkConfig,
      `network ${sel.namespace}/${sel.name} (config ${JSON.stringify(conf.name)}): the pod ` +
        `requests ${missing.map((c) => `"${c}"`).join(", ")}, but no plugin of the network ` +
        `declares ${plural ? "those capabilities" : "that capability"}; add "capabilities": ` +
        `{${missing.map((c) => `"${c}": true`).join(", ")}} to the plugin that should handle ` +
        `${plural ? "them" : "it"}`,
    );
  }

  // Plexus's own requests replace every spelling of their keys that a Go plugin reads as the same
  // (keys.ts): the config's and the annotation's `IPS` must not outlast or merge with `ips`.
  const own: Record<string, unknown> = {};
  if (sel.ips?.length) own.ips = sel.ips;
  if (sel.mac) own.mac = sel.mac;
  const cniArgs = withKeysFold(sel.cniArgs ?? {}, own);
  // Not structuredClone: a number kept as written (B92, json.ts) cannot be cloned by it.
  const copy = copyJson(conf);
  if (Object.keys(cniArgs).length === 0)
    return { conf: copy, capabilityArgs: copyJson(capabilityArgs) };
  const withArgs = (p: PluginConf): PluginConf => {
    const args = isPlainObject(p.args) ? p.args : {};
    const given = getKeyFold(args, "cni");
    const cni = withKeysFold(isPlainObject(given) ? given : {}, copyJson(cniArgs));
    return { ...p, args: withKeysFold(args, { cni }) };
  };
  return {
    conf: { ...copy, plugins: copy.plugins.map(withArgs) },
    capabilityArgs: copyJson(capabilityArgs),
  };
}
