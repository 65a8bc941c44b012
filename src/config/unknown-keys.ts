/**
 * What to tell an operator about the keys of a Plexus config that Plexus does not read (M1): Go's
 * decoder ignores them silently, which hides a typo (`clusterNetwrok`) until pods lack their
 * networks. Each is named with the nearest known key; the keys only Multus's thick daemon reads
 * are named as accepted but without effect, not as typos.
 */

/**
 * Keys of Multus's thick-plugin daemon config (its server config and the config it generates) that
 * a thin config may carry over: harmless here, since Plexus has no such daemon settings.
 */
export const MULTUS_THICK_KEYS: readonly string[] = [
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
const THICK_LOWER = new Set(MULTUS_THICK_KEYS.map((k) => k.toLowerCase()));

export interface UnknownKeyReport {
  key: string;
  /** "thick": a Multus daemon key, accepted without effect; "unknown": not a key Plexus knows. */
  kind: "thick" | "unknown";
  suggestion?: string;
  msg: string;
}

/** Levenshtein distance of two short strings (config keys), case-insensitive. */
function distance(left: string, right: string): number {
  const a = left.toLowerCase();
  const b = right.toLowerCase();
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
    const d = distance(key, name);
    if (!best || d < best.d) best = { name, d };
  }
  if (!best) return undefined;
  const limit = Math.max(2, Math.floor(Math.max(key.length, best.name.length) / 3));
  return best.d <= limit ? best.name : undefined;
}

/** One line per unknown key, for doctor, validate, explain, the installer's log and the CNI log. */
export function reportUnknownKeys(
  keys: readonly string[],
  known: readonly string[],
  where = "the Plexus config",
): UnknownKeyReport[] {
  return keys.map((key) => {
    if (THICK_LOWER.has(key.toLowerCase())) {
      return {
        key,
        kind: "thick",
        msg: `${where}: \`${key}\` is a key of Multus's thick-plugin daemon: accepted, has no effect here`,
      };
    }
    const suggestion = nearestKey(key, known);
    const hint = suggestion ? `; did you mean \`${suggestion}\`?` : " and is ignored";
    const report: UnknownKeyReport = { key, kind: "unknown", msg: `${where}: \`${key}\` is not a Plexus key${hint}` };
    if (suggestion) report.suggestion = suggestion;
    return report;
  });
}
