/**
 * What a selection asks of its delegates (M4, N4.1.2.1.3, N4.1.2.1.4, CNI CONVENTIONS):
 * `ips` and `mac` go to every plugin as `args.cni.ips` / `args.cni.mac`, `cni-args` is merged into
 * `args.cni` of every plugin; and `ips`, `mac`, `infiniband-guid`, `portMappings`, `bandwidth`,
 * `deviceID` become capability values, which reach a plugin as `runtimeConfig` only if it declares
 * the capability (C3.2). A requested capability no plugin of the attachment declares fails the
 * ADD naming it: Multus drops it silently and the pod runs without what it asked for.
 */
import type { ConfList, PluginConf } from "../cni/conf";
import { CniError, Code } from "../cni/errors";
import { isPlainObject } from "../cni/json";
import type { NetworkSelection } from "./types";

export interface AppliedSelection {
  conf: ConfList;
  /** Capability values for this attachment, by CNI capability name. */
  capabilityArgs: Record<string, unknown>;
}

export function applySelection(conf: ConfList, sel: NetworkSelection): AppliedSelection {
  const capabilityArgs: Record<string, unknown> = {};
  if (sel.ips) capabilityArgs.ips = sel.ips;
  if (sel.mac) capabilityArgs.mac = sel.mac;
  if (sel.infinibandGuid) capabilityArgs.infinibandGUID = sel.infinibandGuid;
  if (sel.portMappings) capabilityArgs.portMappings = sel.portMappings;
  if (sel.bandwidth) capabilityArgs.bandwidth = sel.bandwidth;
  if (sel.deviceID) capabilityArgs.deviceID = sel.deviceID;

  const declared = new Set(conf.plugins.flatMap((p) => Object.entries(p.capabilities ?? {}).filter(([, on]) => on).map(([c]) => c)));
  const missing = Object.keys(capabilityArgs).filter((c) => !declared.has(c));
  if (missing.length) {
    throw new CniError(
      Code.InvalidNetworkConfig,
      `network ${sel.namespace}/${sel.name}: the pod requests ${missing.map((c) => `"${c}"`).join(", ")}, but no plugin of the network declares ${missing.length > 1 ? "those capabilities" : "that capability"} (add "capabilities": {${missing.map((c) => `"${c}": true`).join(", ")}} to the plugin that should handle it)`,
    );
  }

  const cniArgs: Record<string, unknown> = { ...(sel.cniArgs ?? {}) };
  if (sel.ips) cniArgs.ips = sel.ips;
  if (sel.mac) cniArgs.mac = sel.mac;
  if (Object.keys(cniArgs).length === 0) return { conf, capabilityArgs };
  const withArgs = (p: PluginConf): PluginConf => {
    const args = isPlainObject(p.args) ? p.args : {};
    const cni = isPlainObject(args.cni) ? args.cni : {};
    return { ...p, args: { ...args, cni: { ...cni, ...cniArgs } } };
  };
  return { conf: { ...conf, plugins: conf.plugins.map(withArgs) }, capabilityArgs };
}
