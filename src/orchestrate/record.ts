/**
 * The per-container record (M7): written atomically before any delegate runs, holding what DEL
 * needs (every attachment's resolved conflist and interface name), so DEL works without the API
 * server, after a NAD changed (B33), and after Plexus was SIGKILLed mid-ADD (B64).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { CniArgs } from "../cni/args";
import type { CniRequest } from "../cni/env";
import type { ConfList } from "../cni/conf";
import { isPlainObject } from "../cni/json";
import { ioError, listStateFiles, readOrEmpty, removeFile, sweepDeadWriters, writeFileAtomic } from "../store/atomic-file";
import { stateFileName } from "../store/state-names";
import type { NetworkSelection } from "../npwg/types";
import type { AttachmentDevice } from "./devices";

/** One network attached to the pod: the default network or a selected one (N4.2). */
export interface Attachment {
  /** The network's name for status and messages: NAD reference or delegate network name. */
  network: string;
  /** CNI_IFNAME for the delegate. */
  ifName: string;
  isDefault: boolean;
  conf: ConfList;
  /** Extra capability values for this attachment only (ips, mac, … from the annotation). */
  capabilityArgs?: Record<string, unknown>;
  /** The annotation element that asked for it (N4.1): verified after ADD, gateway for the status. */
  selection?: NetworkSelection;
  /**
   * How many of the runtime's DELs failed for this attachment (M7, `retryDeleteOnError`): with
   * retries off, the second failure abandons it instead of failing the pod's DEL forever.
   */
  failedDels?: number;
  /** M10: the device of a NAD with a resourceName, kept so DEL asks kubelet nothing. */
  device?: AttachmentDevice;
}

export interface ContainerRecord {
  kind: "plexusRecordV1";
  containerId: string;
  /** Plexus's own CNI_IFNAME: the runtime's attachment is (containerId, ifName). */
  ifName: string;
  netns: string;
  cniVersion: string;
  cniArgs: string;
  pod?: { namespace: string; name: string; uid?: string };
  attachments: Attachment[];
}

export type RecordRead =
  | { state: "found"; record: ContainerRecord }
  | { state: "missing" }
  | { state: "corrupt"; path: string; reason: string };

export class RecordStore {
  readonly dir: string;
  constructor(cniDir: string) {
    this.dir = join(cniDir, "records");
  }

  /** `<containerId>-<ifName>.json`, or a hashed name when that would be ambiguous or too long (state-names.ts). */
  path(containerId: string, ifName: string): string {
    return join(this.dir, stateFileName([containerId, ifName], ".json"));
  }

  async write(rec: ContainerRecord): Promise<void> {
    sweepDeadWriters(this.dir);
    await writeFileAtomic(this.path(rec.containerId, rec.ifName), JSON.stringify(rec));
  }

  async read(containerId: string, ifName: string): Promise<RecordRead> {
    const path = this.path(containerId, ifName);
    const read = this.readAt(path, containerId, ifName);
    // Plexus before hashed names wrote every record as <containerId>-<ifName>.json.
    const legacy = join(this.dir, `${containerId}-${ifName}.json`);
    return read.state === "missing" && legacy !== path ? this.readAt(legacy, containerId, ifName) : read;
  }

  private readAt(path: string, containerId: string, ifName: string): RecordRead {
    let text: string;
    try {
      text = readFileSync(path, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return { state: "missing" };
      throw ioError(`cannot read container record ${path}`, err);
    }
    const read = parseRecord(text, path);
    // The identity inside is checked: a file of another container is not this one's record.
    if (read.state === "found" && (read.record.containerId !== containerId || read.record.ifName !== ifName)) {
      return { state: "missing" };
    }
    return read;
  }

  async delete(containerId: string, ifName: string): Promise<void> {
    await removeFile(this.path(containerId, ifName));
    const legacy = join(this.dir, `${containerId}-${ifName}.json`);
    if (legacy !== this.path(containerId, ifName) && this.readAt(legacy, containerId, ifName).state === "found") await removeFile(legacy);
  }

  /** Every record on the node (GC); corrupt ones are returned as such. */
  async list(): Promise<RecordRead[]> {
    const out: RecordRead[] = [];
    for (const name of listStateFiles(this.dir).filter((n) => n.endsWith(".json"))) {
      const path = join(this.dir, name);
      out.push(parseRecord(readOrEmpty(path), path));
    }
    return out;
  }
}

function parseRecord(text: string, path: string): RecordRead {
  if (text.length === 0) return { state: "corrupt", path, reason: "the file is empty" };
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    return { state: "corrupt", path, reason: `not valid JSON (${(err as Error).message})` };
  }
  if (!isPlainObject(v) || v.kind !== "plexusRecordV1" || !Array.isArray(v.attachments) || typeof v.containerId !== "string" || typeof v.ifName !== "string") {
    return { state: "corrupt", path, reason: "not a Plexus container record" };
  }
  return { state: "found", record: v as unknown as ContainerRecord };
}

/** The record of one CNI call's container: what ADD attaches, or what a DEL keeps for its retry. */
export function newRecord(req: Pick<CniRequest, "containerId" | "ifName" | "netns" | "rawArgs" | "args">, cniVersion: string, attachments: Attachment[]): ContainerRecord {
  const record: ContainerRecord = { kind: "plexusRecordV1", containerId: req.containerId, ifName: req.ifName, netns: req.netns, cniVersion, cniArgs: req.rawArgs, attachments };
  const pod = podOf(req.args);
  if (pod) record.pod = pod;
  return record;
}

export function podOf(args: CniArgs): ContainerRecord["pod"] {
  const namespace = args.get("K8S_POD_NAMESPACE");
  const name = args.get("K8S_POD_NAME");
  if (!namespace || !name) return undefined;
  const uid = args.get("K8S_POD_UID");
  return uid ? { namespace, name, uid } : { namespace, name };
}
