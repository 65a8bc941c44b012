/**
 * Decoding what a delegate printed on success into a typed result (B55, B56, B58, B59).
 */
import * as z from "../shape";
import { CniError, Code, passedOnCode } from "../errors";
import { decodeJson, isPlainObject } from "../json";
import { parseWithSchema } from "../schema-error";
import { isSupportedVersion } from "../version";
import { familyOf, type AnyResult } from "./types";

/** Delegate output larger than this is not a CNI result (B61 caps the capture itself). */
export const MAX_RESULT_BYTES = 4 * 1024 * 1024;

const opt = z.optional;
const route = z.object({ dst: z.string(), gw: opt(z.string()) });
const dns = opt(
  z.object({
    nameservers: opt(z.array(z.string())),
    domain: opt(z.string()),
    search: opt(z.array(z.string())),
    options: opt(z.array(z.string())),
  }),
);
const iface = z.object({
  name: z.string(),
  mac: opt(z.string()),
  sandbox: opt(z.string()),
  mtu: opt(z.number()),
});
const ipShape = {
  address: z.string(),
  gateway: opt(z.string()),
  interface: opt(z.number({ int: true })),
};
const ip = z.object(ipShape);

const schemas = {
  "100": z.object({
    cniVersion: z.string(),
    interfaces: opt(z.array(iface)),
    ips: opt(z.array(ip)),
    routes: opt(z.array(route)),
    dns,
  }),
  "040": z.object({
    cniVersion: z.string(),
    interfaces: opt(z.array(iface)),
    // libcni's 040 decoder does not require `version` (convert.ts derives it from the address).
    ips: opt(z.array(z.object({ ...ipShape, version: opt(z.literal("4", "6")) }))),
    routes: opt(z.array(route)),
    dns,
  }),
  "020": z.object({
    cniVersion: z.string(),
    ip4: opt(z.object({ ip: z.string(), gateway: opt(z.string()), routes: opt(z.array(route)) })),
    ip6: opt(z.object({ ip: z.string(), gateway: opt(z.string()), routes: opt(z.array(route)) })),
    dns,
  }),
} as const;

/**
 * A delegate's error code as we pass it on: unchanged (possibly one of the plugin's own, see
 * `passedOnCode`), but a code that is not a positive integer becomes 100 (invalid output).
 */
export function errorCodeOf(code: number): Code {
  return Number.isInteger(code) && code > 0 ? passedOnCode(code) : Code.InvalidResult;
}

/** A CNI error object: `code` and `msg`, and none of a result's keys. */
export function looksLikeCniError(
  value: unknown,
): value is { code: number; msg?: string; details?: string } {
  return (
    isPlainObject(value) &&
    typeof value.code === "number" &&
    !("ips" in value) &&
    !("interfaces" in value) &&
    !("ip4" in value) &&
    !("ip6" in value)
  );
}

/**
 * Parses a delegate's stdout. A result with an empty `cniVersion` is read as the config's version,
 * as libcni does since cni#895. Exit 0 with an error object is an error (B56).
 */
export function decodeResult(
  stdout: Uint8Array | string,
  confVersion: string,
  what: string,
): AnyResult {
  const value = decodeJson(stdout, {
    what: `${what}: result`,
    maxBytes: MAX_RESULT_BYTES,
    code: Code.InvalidResult,
  });
  if (!isPlainObject(value)) {
    throw new CniError(
      Code.InvalidResult,
      `${what}: result is not a JSON object (got ` +
        `${value === null ? "null" : Array.isArray(value) ? "a list" : typeof value})`,
    );
  }
  if (looksLikeCniError(value)) {
    throw new CniError(
      errorCodeOf(value.code),
      `${what}: ${value.msg ?? "plugin reported an error"} (exited 0 but printed an error)`,
      value.details,
    );
  }
  const version =
    value.cniVersion === undefined || value.cniVersion === "" ? confVersion : value.cniVersion;
  if (!isSupportedVersion(version)) {
    throw new CniError(
      Code.InvalidResult,
      `${what}: result has unsupported cniVersion ${JSON.stringify(value.cniVersion)}`,
    );
  }
  return parseWithSchema(
    schemas[familyOf(version)],
    { ...value, cniVersion: version },
    `${what}: result`,
    Code.InvalidResult,
  ) as AnyResult;
}
