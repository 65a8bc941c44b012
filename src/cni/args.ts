/**
 * CNI_ARGS parsing (C2.1, B6, M17): `K=V;K=V`, read as libcni's `types.LoadArgs` reads it into
 * Multus's `K8sArgs`, so that Plexus takes exactly the CNI_ARGS a Multus ADD takes. Multus v4 runs
 * its delegates with its own arguments in front of the runtime's, so when it wraps Plexus every
 * key comes twice; LoadArgs sets a field once per pair, so the last value wins.
 */
import { CniError, Code } from "./errors";
import { quote } from "./quote";

export type CniArgs = ReadonlyMap<string, string>;

/** `UnmarshallableBool`: "1" or "true", "0" or "false", in any case (Go lower-cases it). */
const GO_BOOL = /^(?:1|true|0|false)$/i;
const GO_TRUE = /^(?:1|true)$/i;

/**
 * The fields of Multus's `K8sArgs`, each with the values its `UnmarshalText` takes: the keys that
 * LoadArgs knows (by exact name). Any other key is unknown.
 */
const FIELDS: ReadonlyMap<string, { takes: (value: string) => boolean; expected: string }> =
  new Map([
    ["IgnoreUnknown", { takes: (v: string) => GO_BOOL.test(v), expected: "1, true, 0 or false" }],
    // net.IP: empty means none.
    ["IP", { takes: (v: string) => v === "" || isGoIp(v), expected: "an IP address or nothing" }],
    ...["K8S_POD_NAME", "K8S_POD_NAMESPACE", "K8S_POD_INFRA_CONTAINER_ID", "K8S_POD_UID"].map(
      (key) => [key, { takes: () => true, expected: "any text" }] as const,
    ),
  ]);
/** The embedded `types.CommonArgs` is a field LoadArgs finds but cannot set from text. */
const UNSETTABLE_FIELD = "CommonArgs";

function invalid(what: string): CniError {
  return new CniError(Code.InvalidEnv, `CNI_ARGS is invalid: ${what}`);
}

/** A pair or key for a message, quoted and cut short: CNI_ARGS may be as long as the env allows. */
function shown(text: string): string {
  return quote(text.length > 100 ? `${text.slice(0, 100)}…` : text);
}

/**
 * LoadArgs's rules: the string splits on ';' and every pair on '=' into exactly two parts (so no
 * `K=a=b`, no empty pair from a stray ';'); an empty string means no args. A known key's value
 * must be one its field takes, in every pair that gives it, and the last one wins. An unknown key
 * (the empty one included) is refused unless the last `IgnoreUnknown` says true, wherever it
 * stands. The map holds the known keys only, each with its last value.
 */
export function parseCniArgs(raw: string | undefined): CniArgs {
  const out = new Map<string, string>();
  if (raw === undefined || raw === "") return out;
  const unknown: string[] = [];
  for (const pair of raw.split(";")) {
    const kv = pair.split("=");
    if (kv.length !== 2) {
      throw invalid(
        `pair ${shown(pair)} is not KEY=VALUE (pairs are separated by ';', with no trailing ';')`,
      );
    }
    const [key, value] = kv as [string, string];
    if (key === UNSETTABLE_FIELD) {
      throw invalid(`key ${key} names the struct that holds IgnoreUnknown; libcni cannot set it`);
    }
    const field = FIELDS.get(key);
    if (!field) {
      unknown.push(key);
      continue;
    }
    if (!field.takes(value)) {
      throw invalid(`pair ${shown(pair)}: the value of ${key} must be ${field.expected}`);
    }
    out.set(key, value);
  }
  if (unknown.length > 0 && !GO_TRUE.test(out.get("IgnoreUnknown") ?? "")) {
    const keys = [...new Set(unknown)];
    const more = keys.length > 5 ? ` and ${keys.length - 5} more` : "";
    throw invalid(
      `unknown key ${keys.slice(0, 5).map(shown).join(", ")}${more}, and no IgnoreUnknown=1 ` +
        "(or true) as the last IgnoreUnknown",
    );
  }
  return out;
}

const GO_IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
/** Go's xtoi: the hex digits at the start (Go stops early only on a number too big anyway). */
const HEX_FIELD = /^[0-9A-Fa-f]+/;

/**
 * Go 1.19's `net.ParseIP`, as Multus v4.0.2's images are built with it: the first '.' or ':'
 * decides the family; IPv4 has no leading zeros; no zone.
 */
function isGoIp(text: string): boolean {
  const first = /[.:]/.exec(text)?.[0];
  if (first === ".") return GO_IPV4.test(text);
  return first === ":" && isGoIpv6(text);
}

/**
 * Go 1.19's parseIPv6: groups of hex digits (leading zeros allowed, the value at most 0xFFFF), at
 * most one `::` that stands for at least one group, an IPv4 address only as the last 4 bytes.
 */
function isGoIpv6(text: string): boolean {
  let rest = text;
  let ellipsis = false;
  let bytes = 0;
  if (rest.startsWith("::")) {
    ellipsis = true;
    rest = rest.slice(2);
    if (rest === "") return true;
  }
  while (bytes < 16) {
    const digits = HEX_FIELD.exec(rest)?.[0] ?? "";
    if (digits === "" || Number.parseInt(digits, 16) > 0xffff) return false;
    if (rest[digits.length] === ".") {
      if ((!ellipsis && bytes !== 12) || bytes + 4 > 16 || !GO_IPV4.test(rest)) return false;
      bytes += 4;
      rest = "";
      break;
    }
    bytes += 2;
    rest = rest.slice(digits.length);
    if (rest === "") break;
    if (rest[0] !== ":" || rest.length === 1) return false;
    rest = rest.slice(1);
    if (rest[0] === ":") {
      if (ellipsis) return false;
      ellipsis = true;
      rest = rest.slice(1);
      if (rest === "") break;
    }
  }
  return rest === "" && (bytes < 16 ? ellipsis : !ellipsis);
}

/** Pod identity from CNI_ARGS (K2). Absent name or namespace → not a pod of a cluster (B7). */
export interface PodRef {
  namespace: string;
  name: string;
  uid?: string;
  infraContainerId?: string;
}

export function podFromArgs(args: CniArgs): PodRef | undefined {
  const namespace = args.get("K8S_POD_NAMESPACE");
  const name = args.get("K8S_POD_NAME");
  if (!namespace || !name) return undefined;
  const ref: PodRef = { namespace, name };
  const uid = args.get("K8S_POD_UID");
  if (uid) ref.uid = uid;
  const infra = args.get("K8S_POD_INFRA_CONTAINER_ID");
  if (infra) ref.infraContainerId = infra;
  return ref;
}
