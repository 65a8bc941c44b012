/**
 * STATUS (C2.8): can ADD be served? Forwarded to every delegate network; no API call (B66).
 * A delegate's own error (50/51 or other) is passed on with the network named.
 */
import type { CniRequest } from "../cni/env";
import { asCniError } from "../cni/errors";
import type { PlexusConf } from "../config/plugin-conf";
import { statusNetworkList } from "../exec/conflist";
import { runtimeConfFor, type Deps } from "./deps";
import { planFromDelegates } from "./plan";

export async function cmdStatus(req: CniRequest, conf: PlexusConf, deps: Deps): Promise<void> {
  const ctx = { containerId: "", netns: "", cniArgs: "" };
  for (const att of planFromDelegates(conf, req.ifName || "eth0")) {
    await statusNetworkList(att.conf, runtimeConfFor(att, ctx, req, conf, deps), deps).catch((err: unknown) => {
      throw asCniError(err).withContext(`STATUS of network ${JSON.stringify(att.network)}`);
    });
  }
}
