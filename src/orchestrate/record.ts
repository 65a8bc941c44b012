/**
 * The per-container record (M7): written atomically before any delegate runs, holding what DEL
 * needs (every attachment's resolved conflist and interface name), so DEL works without the API
 * server, after a NAD changed (B33), and after Plexus was SIGKILLed mid-ADD (B64).
 */
import { join } from "node:path";
import type { CniArgs } from "../cni/args";
import type { CniRequest } from "../cni/env";
import type { ConfList } from "../cni/conf";
import { isPlainObject } from "../cni/json";
import { JsonFileStore, type JsonStore, type StoreRead } from "../store/json-store";
import { stateNamesProblem } from "../store/state-names";
import type { NetworkSelection } from "../npwg/types";

/** M10: the device an attachment got (devices.ts). */
export interface AttachmentDevice {
  resourceName: string;
  deviceID: string;
  /** Where it came from: kubelet's allocation, or the pod's own `deviceID` in its selection. */
  from: "kubelet" | "pod";
  /** Plexus's device-info copy for this attachment (NPWG device-info), when the names allow one. */
  infoFile?: string;
}

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
  private readonly store: JsonStore<ContainerRecord>;
  constructor(cniDir: string) {
    this.store = new JsonFileStore<ContainerRecord>({
      dir: join(cniDir, "records"),
      kind: "plexusRecordV1",
      what: "container record",
      shape: "a Plexus container record",
      valid: (v) =>
        Array.isArray(v.attachments) &&
        v.attachments.every((a) => isPlainObject(a) && typeof a.ifName === "string" && isPlainObject(a.conf)) &&
        typeof v.containerId === "string" &&
        typeof v.ifName === "string",
      identity: (rec) => [rec.containerId, rec.ifName],
      // B71: DEL, GC and `records rm` build paths from these names (locks, caches, device-info).
      nameProblem: (rec) =>
        stateNamesProblem({
          containerId: rec.containerId,
          ifNames: [rec.ifName, ...rec.attachments.map((a) => a.ifName)],
          networks: rec.attachments.map((a) => a.conf.name),
        }),
      ext: ".json",
      // Plexus before hashed names wrote every record as <containerId>-<ifName>.json.
      legacyName: (parts) => `${parts.join("-")}.json`,
    });
  }

  get dir(): string {
    return this.store.dir;
  }

  /** `<containerId>-<ifName>.json`, or a hashed name when that would be ambiguous or too long (state-names.ts). */
  path(containerId: string, ifName: string): string {
    return this.store.path([containerId, ifName]);
  }

  async write(rec: ContainerRecord): Promise<void> {
    await this.store.write(rec);
  }

  /** The record, the one under the legacy name if need be; a file of another container is not this one's. */
  async read(containerId: string, ifName: string): Promise<RecordRead> {
    return asRecordRead(this.store.read([containerId, ifName]));
  }

  async delete(containerId: string, ifName: string): Promise<void> {
    await this.store.delete([containerId, ifName]);
  }

  /** Every record on the node (GC); corrupt ones are returned as such. */
  async list(): Promise<RecordRead[]> {
    return this.store.list().map(asRecordRead);
  }
}

function asRecordRead(read: StoreRead<ContainerRecord>): RecordRead {
  return read.state === "found" ? { state: "found", record: read.value } : read;
}

/** The record of one CNI call's container: what ADD attaches, or what a DEL keeps for its retry. */
export function newRecord(
  req: Pick<CniRequest, "containerId" | "ifName" | "netns" | "rawArgs" | "args">,
  cniVersion: string,
  attachments: Attachment[],
): ContainerRecord {
  const record: ContainerRecord = {
    kind: "plexusRecordV1",
    containerId: req.containerId,
    ifName: req.ifName,
    netns: req.netns,
    cniVersion,
    cniArgs: req.rawArgs,
    attachments,
  };
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
