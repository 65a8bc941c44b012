/**
 * Network configurations as libcni reads them: a single plugin config (`.conf`) or a list
 * (`.conflist`). Both are normalised to a {@link ConfList} (what containerd does too, K3).
 */
import * as z from "./shape";
import { CniError, Code } from "./errors";
import { assertNoCaseCollisions, isPlainObject, numberValue, showValue } from "./json";
import { canonicalizeKeys, getKeyFold, hasKeyFold, KeySet } from "./keys";
import { parseWithSchema } from "./schema-error";
import { validateNetworkName, validatePluginType } from "./validate";
import {
  ALL_VERSIONS,
  compareVersions,
  isSupportedVersion,
  requireSupportedVersion,
} from "./version";

/** One plugin's config; every key besides the ones named is the plugin's own and passed through. */
export interface PluginConf {
  type: string;
  name?: string;
  cniVersion?: string;
  capabilities?: Record<string, boolean>;
  [key: string]: unknown;
}

export interface ConfList {
  cniVersion: string;
  name: string;
  disableCheck?: boolean;
  disableGC?: boolean;
  plugins: PluginConf[];
}

const capabilities = z.optional(z.record(z.boolean()));
const pluginSchema = z.object({
  type: z.string({ message: 'a plugin needs a string "type"' }),
  capabilities,
});
const listSchema = z.object({
  cniVersion: z.optional(z.string()),
  name: z.optional(z.string()),
  disableCheck: z.optional(z.literal(true, false, "true", "false")),
  disableGC: z.optional(z.literal(true, false, "true", "false")),
  loadOnlyInlinedPlugins: z.optional(z.literal(true, false, "true", "false")),
  plugins: z.array(z.unknown(), {
    min: 1,
    message: 'a conflist needs at least one plugin in "plugins"',
  }),
});

/** What libcni reads of a conflist (M1: matched as Go matches them, case-insensitively). */
export const LIST_KEYS = new KeySet([
  "cniVersion",
  "cniVersions",
  "name",
  "disableCheck",
  "disableGC",
  "loadOnlyInlinedPlugins",
  "plugins",
]);
/** The flags libcni 1.2+ reads with its `readBool`: a boolean, or "true"/"false" in any case. */
const LIST_FLAGS = ["disableCheck", "disableGC", "loadOnlyInlinedPlugins"] as const;
/**
 * The keys of a plugin config that Plexus itself reads or sets (type, capabilities, the IPAM type
 * for allowedPluginTypes, what libcni injects, and `args`, into which a selection's requests are
 * merged). They are passed on spelled canonically, which a Go plugin reads the same; every other
 * key and every value goes to the delegate as given.
 */
const PLUGIN_KEYS = new KeySet([
  "cniVersion",
  "name",
  "type",
  "capabilities",
  "ipam",
  "runtimeConfig",
  "prevResult",
  "args",
]);
const IPAM_KEYS = new KeySet(["type"]);

function asBool(value: boolean | "true" | "false" | undefined): boolean | undefined {
  return value === undefined ? undefined : value === true || value === "true";
}

/** A conflist flag that libcni reads as true (its `readBool`: `true`, or "true" in any case). */
export function isTrueFlag(value: unknown): boolean {
  return value === true || (typeof value === "string" && value.toLowerCase() === "true");
}

/** The list's flags with their string forms in lower case, as libcni compares them. */
function lowerFlags(top: Record<string, unknown>): Record<string, unknown> {
  const strings = LIST_FLAGS.filter((key) => typeof top[key] === "string");
  if (strings.length === 0) return top;
  const out = { ...top };
  for (const key of strings) out[key] = (top[key] as string).toLowerCase();
  return out;
}

/** A version as libcni's `ParseVersion` takes it: one to three dot-separated integers, or "". */
const VERSION_TEXT = /^(?:[+-]?\d+(?:\.[+-]?\d+){0,2})?$/;

/**
 * CNI 1.1's version selection over a conflist's `cniVersion` and `cniVersions`: the highest of
 * them that Plexus supports, as the spec asks. libcni 1.2+ reads the list the same way (a list
 * of version strings, or the config is refused) but keeps any entry not above its own 1.1.0, so
 * an unreleased `1.0.1` would be its pick and fail later; here only a version Plexus speaks is
 * picked, and a list naming none is refused with code 1. Without `cniVersions`, the `cniVersion`.
 */
function selectVersion(top: Record<string, unknown>, what: string): unknown {
  const listed = top.cniVersions;
  if (listed === undefined) return top.cniVersion;
  if (!Array.isArray(listed))
    throw new CniError(
      Code.InvalidNetworkConfig,
      `${what}: "cniVersions" must be a list of version strings, ` +
        `got ${showValue(numberValue(listed))}`,
    );
  const candidates = listed.map((entry: unknown, index) => {
    if (typeof entry === "string" && VERSION_TEXT.test(entry)) return entry;
    throw new CniError(
      Code.InvalidNetworkConfig,
      `${what}: cniVersions[${index}] ${showValue(numberValue(entry))} ` +
        'is not a version such as "1.1.0"',
    );
  });
  if (typeof top.cniVersion === "string" && top.cniVersion !== "") candidates.push(top.cniVersion);
  if (candidates.length === 0) return top.cniVersion;
  const best = candidates.filter(isSupportedVersion).sort(compareVersions).at(-1);
  if (best !== undefined) return best;
  throw new CniError(
    Code.IncompatibleVersion,
    `${what}: no version of "cniVersion" and "cniVersions" (${showValue(candidates)}) is one ` +
      `Plexus supports; supported versions: ${ALL_VERSIONS.join(", ")}`,
  );
}

export interface ParseConfOptions {
  /**
   * Names the source in every message: `delegate 1`, `NAD default/net-a`,
   * `/etc/cni/net.d/10-x.conf`.
   */
  what: string;
  /** Used when the config has no `name` (N3.4.2: a NAD's name is injected). */
  defaultName?: string;
  /** Used when the config has no `cniVersion`. */
  defaultVersion?: string;
}

/**
 * Parses a single config or a conflist into a ConfList (B29–B31): `type` validated before any
 * lookup (C4.2), versions checked, keys that differ only in case refused (B17).
 */
export function parseConfList(value: unknown, opts: ParseConfOptions): ConfList {
  const { what } = opts;
  if (!isPlainObject(value)) {
    // numberValue: an inline delegate written `1e2` is a number here too, not an object.
    const kind =
      value === null ? "null" : Array.isArray(value) ? "a list" : typeof numberValue(value);
    throw new CniError(
      Code.InvalidNetworkConfig,
      `${what}: expected a CNI config object (a .conf or a .conflist), got ${kind}`,
    );
  }
  assertNoCaseCollisions(value, what);
  const isList = hasKeyFold(value, "plugins");
  const top = canonicalizeKeys(value, isList ? LIST_KEYS : PLUGIN_KEYS).value;
  const rawName = top.name ?? opts.defaultName;
  const name = validateNetworkName(rawName, what);
  const version = isList ? selectVersion(top, what) : top.cniVersion;
  const cniVersion = requireSupportedVersion(version ?? opts.defaultVersion, what);
  if (!isList) {
    const plugin = parsePlugin(top, `${what} (network ${name})`);
    return { cniVersion, name, plugins: [{ ...plugin, name, cniVersion }] };
  }
  const list = parseWithSchema(listSchema, lowerFlags(top), what);
  const plugins = list.plugins.map((p, i) =>
    parsePlugin(p, `${what} (network ${name}) plugin ${i}`),
  );
  const out: ConfList = { cniVersion, name, plugins };
  const disableCheck = asBool(list.disableCheck);
  const disableGC = asBool(list.disableGC);
  if (disableCheck !== undefined) out.disableCheck = disableCheck;
  if (disableGC !== undefined) out.disableGC = disableGC;
  return out;
}

/**
 * One plugin's config (a `.conf` of a chain directory, an entry of `plugins`): `type` validated,
 * keys as Go reads them.
 */
export function parsePlugin(raw: unknown, what: string): PluginConf {
  if (!isPlainObject(raw))
    throw new CniError(Code.InvalidNetworkConfig, `${what}: expected a plugin config object`);
  assertNoCaseCollisions(raw, what);
  let value = canonicalizeKeys(raw, PLUGIN_KEYS).value;
  if (isPlainObject(value.ipam)) {
    assertNoCaseCollisions(value.ipam, `${what} ipam`);
    const ipam = canonicalizeKeys(value.ipam, IPAM_KEYS).value;
    // A copy: the input may be shared (a cached NAD), and must not change under its owner.
    if (ipam !== value.ipam) value = { ...value, ipam };
  }
  assertArgsKeys(value.args, what);
  if (!("type" in value))
    throw new CniError(Code.InvalidNetworkConfig, `${what}: plugin has no "type"`);
  validatePluginType(value.type, what);
  return parseWithSchema(pluginSchema, value, what) as PluginConf;
}

/**
 * `args` and its `cni` object are where a selection's `ips` and `mac` are merged
 * (delegate-args.ts): two spellings of one key there would leave the plugin to pick (B17).
 */
function assertArgsKeys(args: unknown, what: string): void {
  if (!isPlainObject(args)) return;
  assertNoCaseCollisions(args, `${what} args`);
  const cni = getKeyFold(args, "cni");
  if (isPlainObject(cni)) assertNoCaseCollisions(cni, `${what} args.cni`);
}
