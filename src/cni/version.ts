/** CNI spec versions Plexus speaks, oldest first (C2.7, C5.1). */
export const ALL_VERSIONS = [
  "0.1.0",
  "0.2.0",
  "0.3.0",
  "0.3.1",
  "0.4.0",
  "1.0.0",
  "1.1.0",
] as const;
export type CniVersion = (typeof ALL_VERSIONS)[number];
export const CURRENT_VERSION: CniVersion = "1.1.0";

import { CniError, Code } from "./errors";

export function isSupportedVersion(version: unknown): version is CniVersion {
  return typeof version === "string" && (ALL_VERSIONS as readonly string[]).includes(version);
}

/** Compares dotted versions numerically; `a < b` → negative. Non-numeric parts count as 0. */
export function compareVersions(left: string, right: string): number {
  const pa = left.split(".").map((x) => Number.parseInt(x, 10) || 0);
  const pb = right.split(".").map((x) => Number.parseInt(x, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

export function versionAtLeast(version: string, min: string): boolean {
  return compareVersions(version, min) >= 0;
}

/**
 * Validates a config's `cniVersion` (B13): missing or unknown → code 1, listing what is supported.
 */
export function requireSupportedVersion(version: unknown, where: string): CniVersion {
  if (isSupportedVersion(version)) return version;
  const got = version === undefined ? "missing" : JSON.stringify(version);
  throw new CniError(
    Code.IncompatibleVersion,
    `${where}: cniVersion ${got} is not supported; supported versions: ${ALL_VERSIONS.join(", ")}`,
  );
}

export function versionInfo(cniVersion: string = CURRENT_VERSION) {
  return { cniVersion, supportedVersions: [...ALL_VERSIONS] };
}
