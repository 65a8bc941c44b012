/**
 * STATUS (C2.8): can ADD be served? Forwarded to every delegate network; no API call (B66).
 * A delegate's own error (50/51 or other) is passed on with the network named.
 */
import type { CniRequest } from "../cni/env";
import { asCniError, CniError, Code } from "../cni/errors";
import type { PlexusConf } from "../config/plugin-conf";
import { statusNetworkList } from "../libcni/conflist";
import { runtimeConfFor, type Deps } from "./deps";
import { planFromDelegates } from "./plan";
import { isReady } from "./readiness";

export async function cmdStatus(req: CniRequest, conf: PlexusConf, deps: Deps): Promise<void> {
  // N6.1.2: the default network is not ready yet; ADD would wait for it.
  if (!(await isReady(conf.readinessindicatorfile))) {
    throw new CniError(
      Code.PluginNotAvailable,
      `the cluster default network is not ready: readiness indicator file ${conf.readinessindicatorfile} does not exist`,
    );
  }
  const ctx = { containerId: "", netns: "", cniArgs: "" };
  for (const att of planFromDelegates(conf, req.ifName || "eth0")) {
    await statusNetworkList(att.conf, runtimeConfFor(att, ctx, req, conf, deps), deps).catch(
      (err: unknown) => {
        throw asCniError(err).withContext(`STATUS of network ${JSON.stringify(att.network)}`);
      },
    );
  }
}
