/**
 * What to tell an operator about the keys of a config that its reader does not read (M1): Go's
 * decoder ignores them silently, which hides a typo (`clusterNetwrok` in Plexus's config, `mastr`
 * in a macvlan NAD) until pods lack their networks or get the wrong one. Each is named with the
 * nearest known key; the keys only Multus's thick daemon reads are named as accepted but without
 * effect, not as typos. A delegate's keys are judged for the plugin types of delegate-keys.ts only.
 */
import { LIST_KEYS } from "../cni/conf";
import { asCniError, CniError } from "../cni/errors";
import { isPlainObject, showKey } from "../cni/json";
import { canonicalizeKeys, foldKey, getKeyFold, hasKeyFold, type KeySet } from "../cni/keys";
import { ipamKeys, pluginKeys } from "./delegate-keys";

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

/**
 * Whose keys they are: the reader that ignores a key it does not know (a delegate plugin reads its
 * config's top level, an IPAM plugin the `ipam` section).
 */
export type KeyReader = "plexus" | "conflist" | "plugin" | "ipam";

/**
 * One key a config has that its reader does not read: what every message about unknown keys is
 * rendered from (describeUnknownKey), so no message is ever parsed back into what it says.
 */
export interface UnknownKey {
  /** The top-level key as the config spells it. */
  key: string;
  reader: KeyReader;
  /** "thick": a Multus daemon key, accepted without effect; "unknown": a key the reader lacks. */
  kind: "thick" | "unknown";
  /** The known key nearest to it, when near enough to be the one meant. */
  suggestion?: string;
  /** Reader "plugin" or "ipam": the plugin type whose config has no such key (one of the table). */
  type?: string;
  /** In a conflist: the index of the plugin in `plugins`. */
  index?: number;
}

export interface UnknownKeyReport extends UnknownKey {
  /** The record rendered, prefixed with where the config is. */
  msg: string;
}

/**
 * Edit distance of two short strings (config keys), ignoring case as Go does: insertions,
 * deletions, substitutions and swaps of two neighbours (`rnage` is one edit from `range`), each
 * one edit (the optimal string alignment distance).
 */
function distance(left: string, right: string): number {
  const a = foldKey(left);
  const b = foldKey(right);
  let before: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        row[j] = Math.min(row[j]!, before[j - 2]! + 1);
    }
    before = prev;
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

/** The keys of one object of a config that its reader does not read, before any suggestion. */
interface Unread {
  keys: string[];
  known: KeySet;
  reader: KeyReader;
  type?: string;
  index?: number;
}

/** A conflist's top level, then each plugin's; or the one plugin's of a single config. */
function unreadOf(value: Record<string, unknown>): Unread[] {
  if (!hasKeyFold(value, "plugins")) return pluginUnread(value);
  const top = canonicalizeKeys(value, LIST_KEYS).unknown;
  const out: Unread[] = [{ keys: top, known: LIST_KEYS, reader: "conflist" }];
  const plugins = getKeyFold(value, "plugins");
  if (Array.isArray(plugins))
    plugins.forEach((plugin: unknown, index) => out.push(...pluginUnread(plugin, index)));
  return out;
}

/** One plugin's keys, then its `ipam` section's, for the types of the table only. */
function pluginUnread(plugin: unknown, index?: number): Unread[] {
  if (!isPlainObject(plugin)) return [];
  const out: Unread[] = [];
  const judge = (obj: Record<string, unknown>, reader: KeyReader, type: unknown) => {
    const known = typeof type === "string" ? keySetFor(reader, type) : undefined;
    if (!known) return;
    const keys = canonicalizeKeys(obj, known).unknown;
    out.push({
      keys,
      known,
      reader,
      type: type as string,
      ...(index === undefined ? {} : { index }),
    });
  };
  judge(plugin, "plugin", getKeyFold(plugin, "type"));
  const ipam = getKeyFold(plugin, "ipam");
  if (isPlainObject(ipam)) judge(ipam, "ipam", getKeyFold(ipam, "type"));
  return out;
}

/**
 * The keys of a delegate's config (a NAD's `spec.config`, a conflist, one plugin's config) that
 * its readers do not read: the conflist's top level as libcni reads it, each plugin's keys and its
 * `ipam` section's as the plugin and the IPAM plugin of that type read them. A type not in the
 * table (delegate-keys.ts) is not judged: its keys are its own. At most `limit` records, each with
 * its suggestion; `more` counts the rest, which cost no search for a suggestion.
 */
export function delegateUnknownKeys(
  value: unknown,
  limit = Number.POSITIVE_INFINITY,
): { records: UnknownKey[]; more: number } {
  const records: UnknownKey[] = [];
  let more = 0;
  if (!isPlainObject(value)) return { records, more };
  for (const { keys, known, reader, ...at } of unreadOf(value)) {
    const room = Math.max(0, limit - records.length);
    more += Math.max(0, keys.length - room);
    for (const record of findUnknownKeys(keys.slice(0, room), known.names, reader))
      records.push({ ...record, ...at });
  }
  return { records, more };
}

function keySetFor(reader: KeyReader, type: string): KeySet | undefined {
  return reader === "ipam" ? ipamKeys(type) : pluginKeys(type);
}

const NOT_READ: Record<KeyReader, (record: UnknownKey) => string> = {
  plexus: () => "is not a Plexus key",
  conflist: () => "is not a conflist key (libcni reads no such key)",
  plugin: (record) => `is not a key of the ${record.type} plugin`,
  ipam: (record) => `in "ipam" is not a key of the ${record.type} IPAM plugin`,
};

/** What to say of one unknown key, without saying where it is. */
export function describeUnknownKey(record: UnknownKey): string {
  // A key as typed when it is short, printable ASCII; else escaped and cut (showKey).
  const shown = /^[\x20-\x7e]{1,80}$/.test(record.key) ? `\`${record.key}\`` : showKey(record.key);
  if (record.kind === "thick")
    return `${shown} is a key of Multus's thick-plugin daemon: accepted, has no effect here`;
  const hint = record.suggestion ? `; did you mean \`${record.suggestion}\`?` : " and is ignored";
  const plugin = record.index === undefined ? "" : `plugin ${record.index}: `;
  return `${plugin}${shown} ${NOT_READ[record.reader](record)}${hint}`;
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
 * One line per unknown key of a delegate's config (delegateUnknownKeys), prefixed with where the
 * config is: the warnings of `plexus validate` and of ADD's log. A handful at most, the rest
 * counted: the config is a tenant's, and its keys are not to flood the node's log on every ADD.
 */
export function delegateKeyWarnings(value: unknown, where: string): string[] {
  const { records, more } = delegateUnknownKeys(value, MAX_HINTS);
  const lines = renderUnknownKeys(records, where).map((r) => r.msg);
  if (more > 0) lines.push(`${where}: and ${more} more keys that no reader of it reads`);
  return lines;
}

/**
 * A delegate config's error with the keys of it that no reader reads added, each with the key
 * meant: a typo is often why it failed (`cniVesion`, and so no `cniVersion`). The error as it was
 * when there are none.
 */
export function withDelegateKeyHint(err: unknown, value: unknown): CniError {
  const e = asCniError(err);
  const { records, more } = delegateUnknownKeys(value, MAX_HINTS);
  if (records.length === 0) return e;
  const lines = records.map(describeUnknownKey).join("; ");
  const rest = more > 0 ? `; and ${more} more` : "";
  const hint = `the config has keys no reader of it reads: ${lines}${rest}`;
  return new CniError(e.code, `${e.message} (${hint})`, e.details, { cause: e });
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
