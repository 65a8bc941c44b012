/**
 * Reading the delegate cache Multus 4.x (thin or thick) writes at every ADD, so that a node
 * switched from Multus to Plexus can still DEL and CHECK the pods Multus attached (M14, migration).
 *
 * The file is `<Multus's cniDir>/<containerID>`: a JSON list of the delegates Multus ran, the
 * pod's default network first. Of each entry Plexus uses the config Multus ran (`Bytes`, base64; a
 * `.conf` or a `.conflist`), `Name`, `ifnameRequest`, and the requests Multus passed to that
 * delegate as `runtimeConfig`: `ipRequest`, `macRequest`, `infinibandGUIDRequest`, `deviceID`
 * (Multus does not store port mappings or bandwidth requests). Interface names are Multus's: the
 * first entry is on CNI_IFNAME, the others on `ifnameRequest`, else `net<position>`; Multus gives
 * the requests to the non-default entries only.
 *
 * Everything here is input from disk: bounded in size, validated, and a bad file is a "corrupt"
 * outcome with a reason, never an exception.
 */
import { join } from "node:path";
import * as z from "../cni/shape";
import { parseConfList } from "../cni/conf";
import { CniError, Code } from "../cni/errors";
import { decodeJson } from "../cni/json";
import { parseWithSchema } from "../cni/schema-error";
import { interfaceNameProblem, validateContainerId } from "../cni/validate";
import { validateDeviceText } from "../npwg/device-id";
import { readSharedFile } from "../store/shared-file";
import type { Attachment } from "../nodestate/record";

/** Far above what Multus writes for a pod (a few KiB per network). */
export const MAX_MULTUS_CACHE_BYTES = 4 * 1024 * 1024;

/**
 * Plexus's mark on an entry after a failed DEL (retryDeleteOnError); Multus's decoder ignores it.
 */
export const ATTEMPTS_KEY = "plexusDelAttempts";

const entrySchema = z.object({
  Name: z.optional(z.string()),
  Bytes: z.string({ message: "expected the delegate's config as a base64 string" }),
  ifnameRequest: z.optional(z.string()),
  macRequest: z.optional(z.string()),
  infinibandGUIDRequest: z.optional(z.string()),
  ipRequest: z.optional(z.nullable(z.array(z.string()))),
  deviceID: z.optional(z.string()),
  [ATTEMPTS_KEY]: z.optional(z.number({ int: true, nonnegative: true })),
});
const fileSchema = z.array(entrySchema, {
  typeMessage: "expected a JSON list of Multus delegates",
  min: 1,
  message: "the list of delegates is empty",
});
type Entry = z.Infer<typeof entrySchema>;

export interface MultusCacheFound {
  state: "found";
  path: string;
  attachments: Attachment[];
  /** How many DELs of this file already failed (Plexus's mark; 0 for a file as Multus wrote it). */
  failedDels: number;
  /** The entries as read, to write back with a new mark. */
  raw: Array<Record<string, unknown>>;
}

export type MultusCacheRead =
  | { state: "off" }
  | { state: "missing"; path: string }
  | MultusCacheFound
  | { state: "corrupt"; path: string; reason: string };

export interface MultusCacheQuery {
  /** `multusCacheDir`; "" means off. */
  dir: string;
  containerId: string;
  /** CNI_IFNAME: the default network's interface (Multus's master delegate). */
  ifName: string;
  /** For a delegate config without `cniVersion` (Multus gives it its own config's). */
  cniVersion: string;
}

/** `<dir>/<containerID>`; the ID is checked again here, as it becomes a file name. */
function multusCachePath(dir: string, containerId: string): string {
  validateContainerId(containerId);
  if (containerId === "." || containerId === "..")
    throw new CniError(
      Code.InvalidEnv,
      `CNI_CONTAINERID ${JSON.stringify(containerId)} is not a file name`,
    );
  return join(dir, containerId);
}

export async function readMultusCache(query: MultusCacheQuery): Promise<MultusCacheRead> {
  if (query.dir === "") return { state: "off" };
  const path = multusCachePath(query.dir, query.containerId);
  const text = readBounded(path);
  if (text === undefined) return { state: "missing", path };
  if (typeof text !== "string") return { state: "corrupt", path, reason: text.reason };
  try {
    return { state: "found", path, ...parseMultusCache(text, query) };
  } catch (err) {
    return { state: "corrupt", path, reason: err instanceof Error ? err.message : String(err) };
  }
}

/**
 * The file's text; undefined when there is none; a reason when it is not a readable regular file
 * (B72, B73).
 */
function readBounded(path: string): string | undefined | { reason: string } {
  const file = readSharedFile(path, { maxBytes: MAX_MULTUS_CACHE_BYTES });
  if (file.state === "missing") return undefined;
  if (file.state === "refused") return { reason: `not read: ${file.reason}` };
  return file.data.toString("utf8");
}

/** Parses the file's text into attachments; throws a CniError naming the first problem. */
function parseMultusCache(
  text: string,
  query: MultusCacheQuery,
): Omit<MultusCacheFound, "state" | "path"> {
  const value = decodeJson(text, { what: "the file", maxBytes: MAX_MULTUS_CACHE_BYTES });
  const entries = parseWithSchema(fileSchema, value, "the file");
  const attachments = entries.map((e, i) => toAttachment(e, i, query));
  const failedDels = Math.max(...entries.map((e) => e[ATTEMPTS_KEY] ?? 0));
  return { attachments, failedDels, raw: value as Array<Record<string, unknown>> };
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function toAttachment(entry: Entry, index: number, query: MultusCacheQuery): Attachment {
  const what = `entry ${index}${entry.Name ? ` (${entry.Name})` : ""}`;
  if (!BASE64.test(entry.Bytes))
    throw new CniError(Code.Decoding, `${what}: "Bytes" is not base64`);
  const raw = decodeJson(Buffer.from(entry.Bytes, "base64"), {
    what: `${what}: the config in "Bytes"`,
    maxBytes: MAX_MULTUS_CACHE_BYTES,
    exactNumbers: true, // B92: DEL gives the delegate the numbers its ADD got
  });
  const conf = parseConfList(raw, {
    what,
    defaultVersion: query.cniVersion,
    ...defaultName(entry.Name),
  });
  const isDefault = index === 0;
  const ifName = entry.ifnameRequest || (isDefault ? query.ifName : `net${index}`);
  const problem = interfaceNameProblem(ifName);
  if (problem)
    throw new CniError(
      Code.InvalidNetworkConfig,
      `${what}: interface name ${JSON.stringify(ifName)} is invalid: ${problem}`,
    );
  const att: Attachment = { network: entry.Name || conf.name, ifName, isDefault, conf };
  if (!isDefault) {
    const caps: Record<string, unknown> = {};
    if (entry.ipRequest && entry.ipRequest.length > 0) caps.ips = entry.ipRequest;
    if (entry.macRequest) caps.mac = entry.macRequest;
    if (entry.infinibandGUIDRequest) caps.infinibandGUID = entry.infinibandGUIDRequest;
    if (entry.deviceID)
      caps.deviceID = validateDeviceText(entry.deviceID, { what: `${what}: "deviceID"` });
    if (Object.keys(caps).length > 0) att.capabilityArgs = caps;
  }
  return att;
}

/**
 * Multus names a NAD's delegate `<namespace>/<name>`; the NAD's name is what Multus gave a config
 * without one.
 */
function defaultName(name: string | undefined): { defaultName?: string } {
  const last = name?.split("/").pop();
  return last ? { defaultName: last } : {};
}
