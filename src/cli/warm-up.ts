/**
 * Build-time warm-up for the core bundle's V8 code cache (scripts/make-code-cache.cjs): runs the
 * per-pod code paths once on sample data so their compiled code lands in the cache. It has no
 * effect on behaviour; it only decides which functions start compiled.
 */
import { parseConfList } from "../cni/conf";
import { parseEnv } from "../cni/env";
import { CniError } from "../cni/errors";
import { decodeJson } from "../cni/json";
import { convertResult, toResult } from "../cni/result/convert";
import { decodeResult } from "../cni/result/decode";
import { ALL_VERSIONS } from "../cni/version";
import { parsePlexusConf } from "../config/plugin-conf";
import { RawExec } from "../exec/raw-exec";
import { buildPluginConf } from "../exec/conflist";
import { createLogger } from "../log/logger";
import { parseNetworksAnnotation } from "../npwg/annotation";
import { applySelection } from "../npwg/delegate-args";
import { assignInterfaceNames } from "../npwg/ifnames";
import { resolveNadConfig } from "../npwg/nad";
import { buildNetworkStatus, buildNetworkStatusAnnotation } from "../npwg/status";
import { verifyAttachment } from "../npwg/verify";

export async function warmUp(): Promise<void> {
  const conf = parsePlexusConf(
    decodeJson(
      JSON.stringify({
        cniVersion: "1.0.0",
        name: "warm",
        type: "plexus",
        logLevel: "panic",
        logToStderr: false,
        runtimeConfig: { portMappings: [] },
        delegates: [
          { cniVersion: "1.0.0", name: "a", type: "bridge", capabilities: { portMappings: true }, ipam: { type: "host-local", subnet: "10.0.0.0/24" } },
          { cniVersion: "0.4.0", name: "b", plugins: [{ type: "macvlan" }, { type: "tuning" }] },
        ],
      }),
      { what: "warm-up" },
    ),
  );
  parseEnv({ CNI_COMMAND: "ADD", CNI_CONTAINERID: "abc", CNI_NETNS: "/proc/self/ns/net", CNI_IFNAME: "eth0", CNI_ARGS: "IgnoreUnknown=1;K8S_POD_NAME=a;K8S_POD_NAMESPACE=b", CNI_PATH: "/opt/cni/bin" });
  const result = decodeResult(
    JSON.stringify({ cniVersion: "1.0.0", interfaces: [{ name: "eth0", mac: "aa:bb:cc:dd:ee:ff", sandbox: "/x" }], ips: [{ address: "10.0.0.2/24", gateway: "10.0.0.1", interface: 0 }], routes: [{ dst: "0.0.0.0/0" }], dns: {} }),
    "1.0.0",
    "warm-up",
  );
  for (const v of ALL_VERSIONS) toResult(convertResult(result, v));
  for (const d of conf.delegates) for (const p of d.plugins) buildPluginConf(d, p, conf.runtimeConfig, result);
  parseConfList({ cniVersion: "1.0.0", name: "c", type: "bridge" }, { what: "warm-up" });
  const sels = [
    ...parseNetworksAnnotation("net-a,other/net-b@eth5", "default"),
    ...parseNetworksAnnotation('[{"name":"net-c","ips":["10.0.0.2/24"],"mac":"aa:bb:cc:dd:ee:ff"}]', "default"),
  ];
  assignInterfaceNames(sels, "eth0");
  const nad = resolveNadConfig({ metadata: { name: "net-c", namespace: "default" }, spec: { config: JSON.stringify({ cniVersion: "1.0.0", type: "bridge", capabilities: { ips: true, mac: true } }) } }, []);
  applySelection(nad.conf, sels[2]!);
  verifyAttachment(toResult(result), sels[2]!, "eth0");
  buildNetworkStatusAnnotation([buildNetworkStatus({ name: "cbr0", isDefault: true, ifName: "eth0", result }), buildNetworkStatus({ name: "default/net-a", isDefault: false, ifName: "net1" })]);
  const log = await createLogger({ logLevel: "debug", logToStderr: false, logFile: "/dev/null" });
  log.info("warm");
  new CniError(7, "warm").toJSON("1.0.0");
  try {
    await new RawExec(log).execPlugin({ path: "/bin/true", stdin: Buffer.from("{}"), env: {}, deadlineMs: 5000, what: "warm-up" });
  } catch {
    // Not all build hosts have /bin/true; the cache is then just less warm.
  }
}
