/**
 * What to tell an operator about the keys of a Plexus config that Plexus does not read (M1): Go's
 * decoder ignores them silently, which hides a typo (`clusterNetwrok`) until pods lack their
 * networks. Each is named with the nearest known key; the keys only Multus's thick daemon reads
 * are named as accepted but without effect, not as typos.
 */
import { showKey } from "../cni/json";
import { foldKey } from "../cni/keys";

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

export interface UnknownKeyReport {
  key: string;
  /** "thick": a Multus daemon key, accepted without effect; "unknown": not a key Plexus knows. */
  kind: "thick" | "unknown";
  suggestion?: string;
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

/** What to say of one unknown key, without saying where it is. */
type KeyDescription = Omit<UnknownKeyReport, "msg"> & { text: string };

function describeKey(key: string, known: readonly string[]): KeyDescription {
  // A key as typed when it is short, printable ASCII; else escaped and cut (showKey).
  const shown = /^[\x20-\x7e]{1,80}$/.test(key) ? `\`${key}\`` : showKey(key);
  if (THICK_FOLDED.has(foldKey(key))) {
    return {
      key,
      kind: "thick",
      text: `${shown} is a key of Multus's thick-plugin daemon: accepted, has no effect here`,
    };
  }
  const suggestion = nearestKey(key, known);
  const hint = suggestion ? `; did you mean \`${suggestion}\`?` : " and is ignored";
  const text = `${shown} is not a Plexus key${hint}`;
  return suggestion ? { key, kind: "unknown", suggestion, text } : { key, kind: "unknown", text };
}

/** One line per unknown key, for doctor, validate, explain, the installer's log and the CNI log. */
export function reportUnknownKeys(
  keys: readonly string[],
  known: readonly string[],
  where = "the Plexus config",
): UnknownKeyReport[] {
  return keys.map((key) => {
    const { text, ...report } = describeKey(key, known);
    return { ...report, msg: `${where}: ${text}` };
  });
}

/**
 * The unknown keys of a config that failed, for its error: each with the nearest known key, so a
 * typo that broke the config is named where the failure is (the thick-daemon keys are left out:
 * they are accepted). Undefined when there is nothing to say.
 */
export function unknownKeysHint(keys: readonly string[], known: readonly string[]) {
  const lines = keys
    .map((key) => describeKey(key, known))
    .filter((d) => d.kind === "unknown")
    .map((d) => d.text);
  if (lines.length === 0) return undefined;
  // A handful is what a person reads; the rest are counted.
  const more = lines.length > MAX_HINTS ? `; and ${lines.length - MAX_HINTS} more` : "";
  return `the config has keys Plexus does not read: ${lines.slice(0, MAX_HINTS).join("; ")}${more}`;
}
