/**
 * What to tell an operator about the keys of a Plexus config that Plexus does not read (M1): Go's
 * decoder ignores them silently, which hides a typo (`clusterNetwrok`) until pods lack their
 * networks. Each is named with the nearest known key; the keys only Multus's thick daemon reads
 * are named as accepted but without effect, not as typos.
 */
import { LIST_KEYS } from "../cni/conf";
import { isPlainObject, showKey } from "../cni/json";
import { canonicalizeKeys, foldKey, hasKeyFold } from "../cni/keys";

const MAX_HINTS = 5;

/**
 * Keys of Multus's thick-plugin daemon config (its server config and the config it generates) that
 * a thin config may carry over: harmless here, since Plexus has no such daemon settings.
 */
const MULTUS_THICK_KEYS: readonly string[] = [
  "chrootDir",
  "socketDir",
  "perNodeCertificate",
  "connectionLimit",
  "metricsPort",
  "enablePprof",
  "cniConfigDir",
  "daemonSocketDir",
  "multusConfigFile",
  "multusMasterCNI",
  "multusAutoconfigDir",
  "forceCNIVersion",
  "overrideNetworkName",
];
const THICK_FOLDED = new Set(MULTUS_THICK_KEYS.map(foldKey));

/** Whose keys they are: the reader that ignores a key it does not know. */
export type KeyReader = "plexus" | "conflist";

/**
 * One key a config has that its reader does not read: what every message about unknown keys is
 * rendered from (describeUnknownKey), so no message is ever parsed back into what it says.
 */
export interface UnknownKey {
  /** The top-level key as the config spells it. */
  key: string;
  reader: KeyReader;
  /** "thick": a Multus daemon key, accepted without effect; "unknown": not a key the reader knows. */
  kind: "thick" | "unknown";
  /** The known key nearest to it, when near enough to be the one meant. */
  suggestion?: string;
}

export interface UnknownKeyReport extends UnknownKey {
  /** The record rendered, prefixed with where the config is. */
  msg: string;
}

/** Levenshtein distance of two short strings (config keys), ignoring case as Go does. */
function distance(left: string, right: string): number {
  const a = foldKey(left);
  const b = foldKey(right);
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost);
    }
    prev = row;
  }
  return prev[b.length]!;
}

/** The known key nearest to `key`, when it is near enough to be the one meant. */
export function nearestKey(key: string, known: readonly string[]): string | undefined {
  let best: { name: string; d: number } | undefined;
  for (const name of known) {
    const limit = Math.max(2, Math.floor(Math.max(key.length, name.length) / 3));
    // The distance is at least the difference in length: a key far longer than any known one
    // (a hostile config's) costs no quadratic comparison.
    if (Math.abs(key.length - name.length) > limit) continue;
    const d = distance(key, name);
    if (d <= limit && (!best || d < best.d)) best = { name, d };
  }
  return best?.name;
}

/**
 * The records of the unknown `keys` of one config: the one place that classifies and suggests.
 * `known` is what `reader` reads; the keys only Multus's thick daemon reads count as accepted in a
 * Plexus config (a conflist has no such keys).
 */
export function findUnknownKeys(
  keys: readonly string[],
  known: readonly string[],
  reader: KeyReader = "plexus",
): UnknownKey[] {
  return keys.map((key) => {
    if (reader === "plexus" && THICK_FOLDED.has(foldKey(key)))
      return { key, reader, kind: "thick" };
    const suggestion = nearestKey(key, known);
    return suggestion
      ? { key, reader, kind: "unknown", suggestion }
      : { key, reader, kind: "unknown" };
  });
}

/**
 * The top-level keys of a conflist that libcni does not read (a plugin's own keys belong to the
 * plugin and are not judged here). Anything that is not a conflist (no `plugins`) has none.
 */
export function conflistUnknownKeys(value: unknown): UnknownKey[] {
  if (!isPlainObject(value) || !hasKeyFold(value, "plugins")) return [];
  return findUnknownKeys(canonicalizeKeys(value, LIST_KEYS).unknown, LIST_KEYS.names, "conflist");
}

const NOT_READ: Record<KeyReader, string> = {
  plexus: "is not a Plexus key",
  conflist: "is not a conflist key (libcni reads no such key)",
};

/** What to say of one unknown key, without saying where it is. */
export function describeUnknownKey(record: UnknownKey): string {
  // A key as typed when it is short, printable ASCII; else escaped and cut (showKey).
  const shown = /^[\x20-\x7e]{1,80}$/.test(record.key) ? `\`${record.key}\`` : showKey(record.key);
  if (record.kind === "thick")
    return `${shown} is a key of Multus's thick-plugin daemon: accepted, has no effect here`;
  const hint = record.suggestion ? `; did you mean \`${record.suggestion}\`?` : " and is ignored";
  return `${shown} ${NOT_READ[record.reader]}${hint}`;
}

/** One line per record, prefixed with where the config is. */
export function renderUnknownKeys(
  records: readonly UnknownKey[],
  where: string,
): UnknownKeyReport[] {
  return records.map((record) => ({ ...record, msg: `${where}: ${describeUnknownKey(record)}` }));
}

/**
 * One line per unknown key of a Plexus config, for doctor, validate, explain, the installer's log
 * and the CNI log.
 */
export function reportUnknownKeys(
  keys: readonly string[],
  known: readonly string[],
  where = "the Plexus config",
): UnknownKeyReport[] {
  return renderUnknownKeys(findUnknownKeys(keys, known), where);
}

/**
 * The unknown keys of a config that failed, for its error: each with the nearest known key, so a
 * typo that broke the config is named where the failure is (the thick-daemon keys are left out:
 * they are accepted). Undefined when there is nothing to say.
 */
export function unknownKeysHint(keys: readonly string[], known: readonly string[]) {
  const lines = findUnknownKeys(keys, known)
    .filter((record) => record.kind === "unknown")
    .map(describeUnknownKey);
  if (lines.length === 0) return undefined;
  // A handful is what a person reads; the rest are counted.
  const more = lines.length > MAX_HINTS ? `; and ${lines.length - MAX_HINTS} more` : "";
  return `the config has keys Plexus does not read: ${lines.slice(0, MAX_HINTS).join("; ")}${more}`;
}
