/**
 * The config keys of the delegates Plexus knows by name: the CNI reference plugins and IPAMs
 * (containernetworking/plugins), SR-IOV CNI and whereabouts, as their Go structs define them (each
 * field's `json` tag, or its Go name where it has none). Go's decoder ignores a key no field takes,
 * so a typo (`"mastr": "eth0"` for macvlan) passes every plugin silently, and macvlan then takes
 * the node's default-route interface; `validate`, `explain`, `doctor` and ADD's log name such a
 * key with the key meant (unknown-keys.ts), comparing as Go does (foldKey). A type not listed here
 * is not judged: its keys are its own.
 *
 * Each list is the union over the releases: containernetworking/plugins v0.8.7 to v1.9,
 * sriov-cni v2.0 to v2.10 (not the v0/v1 Intel plugin of that name), whereabouts v0.1 to v0.9. A
 * key one release reads is known, so no config that works with some release is called a typo.
 */
import { KeySet } from "../cni/keys";

/**
 * What every plugin reads or is given: CNI's `types.PluginConf` (`cniVersion`, `name`, `type`,
 * `capabilities`, `ipam`, `dns`, `prevResult`, and `cni.dev/valid-attachments`, which libcni sets
 * for GC), and what libcni and Plexus inject (`runtimeConfig`, `args`).
 */
const COMMON_KEYS: readonly string[] = [
  "cniVersion",
  "name",
  "type",
  "capabilities",
  "ipam",
  "dns",
  "args",
  "prevResult",
  "runtimeConfig",
  "cni.dev/valid-attachments",
];

/** A main or meta plugin's own top-level keys (COMMON_KEYS come on top). */
const PLUGIN_KEYS: Readonly<Record<string, readonly string[]>> = {
  bridge: [
    "bridge",
    "isGateway",
    "isDefaultGateway",
    "forceAddress",
    "ipMasq",
    "ipMasqBackend",
    "mtu",
    "hairpinMode",
    "promiscMode",
    "vlan",
    "vlanTrunk",
    "preserveDefaultVlan",
    "macspoofchk",
    "enabledad",
    "disableContainerInterface",
    "portIsolation",
  ],
  macvlan: ["master", "mode", "mtu", "mac", "linkInContainer", "bcqueuelen"],
  ipvlan: ["master", "mode", "mtu", "linkInContainer"],
  vlan: ["master", "vlanId", "mtu", "linkInContainer"],
  // DPDKMode has no json tag: Go decodes the field's own name.
  "host-device": ["device", "hwaddr", "DPDKMode", "kernelpath", "pciBusID"],
  ptp: ["ipMasq", "ipMasqBackend", "mtu"],
  tap: ["multiQueue", "mtu", "mac", "owner", "group", "selinuxContext", "bridge"],
  // dummy and loopback decode CNI's types.PluginConf alone.
  dummy: [],
  loopback: [],
  vrf: ["vrfname", "table"],
  tuning: ["dataDir", "sysctl", "mac", "promisc", "mtu", "txQLen", "allmulti"],
  portmap: [
    "backend",
    "snat",
    "conditionsV4",
    "conditionsV6",
    "masqAll",
    "markMasqBit",
    "externalSetMarkChain",
  ],
  // The BandwidthEntry fields are embedded at the top level; v1.5 also read the two subnets.
  bandwidth: [
    "ingressRate",
    "ingressBurst",
    "egressRate",
    "egressBurst",
    "shapedSubnets",
    "unshapedSubnets",
  ],
  firewall: ["backend", "iptablesAdminChainName", "firewalldZone", "ingressPolicy"],
  sbr: ["table", "gateways", "addSourceHints"],
  // Fields without a json tag (Master, MAC, MTU, VFID, …) decode by their Go names; DPDKMode had
  // none before v2.8, and HostIFNames, ContIFNames, adminMAC and effectiveMAC are earlier keys.
  sriov: [
    "Master",
    "MAC",
    "MTU",
    "VFID",
    "DPDKMode",
    "OrigVfState",
    "HostIFNames",
    "ContIFNames",
    "adminMAC",
    "effectiveMAC",
    "vlan",
    "vlanQoS",
    "vlanProto",
    "deviceID",
    "min_tx_rate",
    "max_tx_rate",
    "spoofchk",
    "trust",
    "link_state",
    "logLevel",
    "logFile",
  ],
};

/** The keys of an IPAM plugin's `ipam` section (its `type` included). */
const IPAM_KEYS: Readonly<Record<string, readonly string[]>> = {
  // Name has no json tag; the embedded Range gives rangeStart, rangeEnd, subnet and gateway.
  "host-local": [
    "type",
    "Name",
    "routes",
    "dataDir",
    "resolvConf",
    "ranges",
    "rangeStart",
    "rangeEnd",
    "subnet",
    "gateway",
  ],
  static: ["type", "Name", "routes", "addresses", "dns"],
  dhcp: ["type", "daemonSocketPath", "provide", "request", "priority"],
  // The etcd keys and `datastore` are still decoded, though unused; Name, PodName and
  // PodNamespace have no tag.
  whereabouts: [
    "type",
    "Name",
    "PodName",
    "PodNamespace",
    "routes",
    "addresses",
    "ipRanges",
    "exclude",
    "dns",
    "range",
    "range_start",
    "range_end",
    "gateway",
    "node_slice_size",
    "network_name",
    "enable_overlapping_ranges",
    "leader_lease_duration",
    "leader_renew_deadline",
    "leader_retry_period",
    "reconciler_cron_expression",
    "sleep_for_race",
    "log_file",
    "log_level",
    "kubernetes",
    "configuration_path",
    "datastore",
    "etcd_host",
    "etcd_username",
    "etcd_password",
    "etcd_key_file",
    "etcd_cert_file",
    "etcd_ca_cert_file",
  ],
};

/**
 * The key of each plugin type that names an interface of the node, which must exist before the
 * plugin runs (a bridge is created by its plugin; sriov's master comes from the VF it is given).
 */
const HOST_LINK_KEYS: Readonly<Record<string, string>> = {
  macvlan: "master",
  ipvlan: "master",
  vlan: "master",
  "host-device": "device",
};

/** Each type's KeySet, made on first use: a call builds only the sets of the types it meets. */
const pluginSets = new Map<string, KeySet>();
const ipamSets = new Map<string, KeySet>();

function setOf(
  cache: Map<string, KeySet>,
  table: Readonly<Record<string, readonly string[]>>,
  type: string,
  common: readonly string[],
): KeySet | undefined {
  if (!Object.hasOwn(table, type)) return undefined;
  let set = cache.get(type);
  if (!set) {
    set = new KeySet([...common, ...table[type]!]);
    cache.set(type, set);
  }
  return set;
}

/** The keys a plugin of `type` reads at the top of its config, the common ones included. */
export function pluginKeys(type: string): KeySet | undefined {
  return setOf(pluginSets, PLUGIN_KEYS, type, COMMON_KEYS);
}

/** The keys an IPAM plugin of `type` reads in its `ipam` section. */
export function ipamKeys(type: string): KeySet | undefined {
  return setOf(ipamSets, IPAM_KEYS, type, []);
}

/** The key that names a node interface in a plugin of `type`'s config (`master`, `device`). */
export function hostLinkKey(type: string): string | undefined {
  return Object.hasOwn(HOST_LINK_KEYS, type) ? HOST_LINK_KEYS[type] : undefined;
}

/** The types in the table, for tests that walk it. */
export const KNOWN_PLUGIN_TYPES: readonly string[] = Object.keys(PLUGIN_KEYS);
export const KNOWN_IPAM_TYPES: readonly string[] = Object.keys(IPAM_KEYS);
