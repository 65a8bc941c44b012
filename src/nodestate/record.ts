/**
 * The per-container record (M7): written atomically before any delegate runs, holding what DEL
 * needs (every attachment's resolved conflist and interface name), so DEL works without the API
 * server, after a NAD changed (B33), and after Plexus was SIGKILLed mid-ADD (B64).
 */
import { lstatSync, lutimesSync, readdirSync, rmSync, type Stats } from "node:fs";
import { basename, join } from "node:path";
import type { CniArgs } from "../cni/args";
import type { CniRequest } from "../cni/env";
import { validateContainerId, validateInterfaceName } from "../cni/validate";
import type { ConfList } from "../cni/conf";
import { removeFile, writeFileAtomic } from "../store/atomic-file";
import { isPlainObject } from "../cni/json";
import { JsonFileStore, type JsonStore, type StoreRead } from "../store/json-store";
import { readSharedFile } from "../store/shared-file";
import { stateNamesProblem } from "../store/state-names";
import type { NetworkSelection } from "../npwg/types";

/** M10: the device an attachment got (planning/devices.ts). */
export interface AttachmentDevice {
  resourceName: string;
  deviceID: string;
  /**
   * Where it came from: kubelet's allocation (device plugin), a ResourceClaim's allocation (DRA),
   * or the pod's own `deviceID` in its selection.
   */
  from: "kubelet" | "claim" | "pod";
  /** DRA: the ResourceClaim (of the pod's namespace) and the allocated device it came from. */
  claim?: { name: string; driver: string; pool: string; device: string; request: string };
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
  /**
   * The annotation element that asked for it (N4.1): verified after ADD, gateway for the status.
   */
  selection?: NetworkSelection;
  /** The pod's default-network override chose it: a tenant's network (src/gate/policy.ts). */
  chosenByPod?: true;
  /**
   * How many of the runtime's DELs failed for this attachment (M7, `retryDeleteOnError`): with
   * retries off, the second failure abandons it instead of failing the pod's DEL forever.
   */
  failedDels?: number;
  /** M10: the device of a NAD with a resourceName, kept so DEL asks kubelet nothing. */
  device?: AttachmentDevice;
  /**
   * M12: the auxiliary chain (no network-status entry unless its result names an interface or IP).
   */
  auxiliary?: true;
  /**
   * When hot-plug attached it to the running pod (ISO time, orchestrate/hotplug.ts); unset: by ADD.
   */
  hotpluggedAt?: string;
  /** Why its last DEL failed (code and message), for `plexus records` (pending.ts). */
  lastDelError?: { code: number; msg: string };
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
  /**
   * When a DEL of this container first failed (ISO time): from then on the record is "pending", and
   * housekeeping retries it until it succeeds or `failedDelRetrySeconds` has passed (pending.ts).
   * This field, not the entry in `pending/`, is what makes a record pending: that index is
   * rebuilt from the records.
   */
  delFailedAt?: string;
}

/** A pending record's entry in `<cniDir>/pending/` (its modification time: the last retry). */
export interface PendingEntry {
  containerId: string;
  ifName: string;
  /** Epoch ms of the entry's last write (the failed DEL, or the last retry). */
  touchedAt: number;
}

export type RecordRead =
  | { state: "found"; record: ContainerRecord }
  | { state: "missing" }
  | { state: "corrupt"; path: string; reason: string };

/** A pending entry is two names in JSON: anything bigger is not one. */
const MAX_PENDING_BYTES = 4096;
/** In `<cniDir>/housekeeping/`: when `pending/` was last rebuilt from the records. */
const SYNCED_STAMP = "pending-synced";
/** In `<cniDir>/housekeeping/`: until when the node's housekeeper (the daemon's timer) runs. */
const HOUSEKEEPER_STAMP = "housekeeper";
/** The furthest ahead a housekeeper stamps: twice the longest `--housekeeping-interval`. */
export const MAX_HOUSEKEEPER_AHEAD_MS = 2 * 3600_000;

/** What `syncPending` changed. */
type Synced = { added: number; removed: number };
const noRecord = () => undefined;

function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}

/** Removes an entry that is not valid (a name in our own `pending/`); best effort. */
function dropEntry(path: string): void {
  try {
    rmSync(path, { force: true, recursive: true }); // never follows a symlink
  } catch {
    // Not removable now: the next rebuild tries again.
  }
}

export class RecordStore {
  private readonly store: JsonStore<ContainerRecord>;
  /**
   * `<cniDir>/pending/`: one small file per record whose DEL failed, named as the record, so that
   * every call can find them with one readdir of a directory that is usually empty or missing.
   */
  private readonly pendingDir: string;
  /** Node-wide stamps of housekeeping (pending.ts), none per container. */
  private readonly stampDir: string;
  constructor(cniDir: string) {
    this.pendingDir = join(cniDir, "pending");
    this.stampDir = join(cniDir, "housekeeping");
    this.store = new JsonFileStore<ContainerRecord>({
      dir: join(cniDir, "records"),
      kind: "plexusRecordV1",
      what: "container record",
      shape: "a Plexus container record",
      valid: (v) =>
        Array.isArray(v.attachments) &&
        v.attachments.every(
          (a) => isPlainObject(a) && typeof a.ifName === "string" && isPlainObject(a.conf),
        ) &&
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
      exactNumbers: true, // B92: DEL runs the configs ADD ran, numbers as written
    });
  }

  get dir(): string {
    return this.store.dir;
  }

  /**
   * `<containerId>-<ifName>.json`, or a hashed name when that would be ambiguous or too long
   * (state-names.ts).
   */
  path(containerId: string, ifName: string): string {
    return this.store.path([containerId, ifName]);
  }

  async write(rec: ContainerRecord): Promise<void> {
    await this.store.write(rec);
  }

  /**
   * The record, the one under the legacy name if need be; a file of another container is not this
   * one's.
   */
  async read(containerId: string, ifName: string): Promise<RecordRead> {
    return asRecordRead(this.store.read([containerId, ifName]));
  }

  /** The record and its pending entry. */
  async delete(containerId: string, ifName: string): Promise<void> {
    await this.store.delete([containerId, ifName]);
    await removeFile(this.pendingPath(containerId, ifName));
  }

  /** Writes (or touches) the pending entry of a record whose DEL failed. */
  async markPending(containerId: string, ifName: string): Promise<void> {
    await writeFileAtomic(
      this.pendingPath(containerId, ifName),
      JSON.stringify({ containerId, ifName }),
    );
  }

  /**
   * Moves a pending entry to the end of the queue; never creates one (a missing entry stays
   * missing).
   */
  touchPending(containerId: string, ifName: string): void {
    try {
      const now = new Date();
      lutimesSync(this.pendingPath(containerId, ifName), now, now); // never through a symlink
    } catch {
      // Gone meanwhile, or not writable: the next retry finds out.
    }
  }

  async unmarkPending(containerId: string, ifName: string): Promise<void> {
    await removeFile(this.pendingPath(containerId, ifName));
  }

  /**
   * Pending entries last written at or before `dueAt` (epoch ms), least recently retried first, at
   * most `limit`: every entry is lstat'ed (one readdir, one lstat each), only the ones returned are
   * read. An entry that is not valid is removed when it is met, so no call reads it twice.
   */
  listPending(options: { dueAt?: number; limit?: number } = {}): PendingEntry[] {
    const { dueAt = Number.POSITIVE_INFINITY, limit = Number.POSITIVE_INFINITY } = options;
    const candidates: Array<{ path: string; touchedAt: number }> = [];
    for (const path of this.pendingPaths()) {
      try {
        const st = lstatSync(path);
        if (!st.isFile()) dropEntry(path);
        else if (st.mtimeMs <= dueAt) candidates.push({ path, touchedAt: st.mtimeMs });
      } catch {
        // Gone meanwhile.
      }
    }
    const out: PendingEntry[] = [];
    for (const c of candidates.sort((a, b) => a.touchedAt - b.touchedAt)) {
      if (out.length >= limit) break;
      const entry = this.readPending(c.path);
      if (entry) out.push({ ...entry, touchedAt: c.touchedAt });
      else dropEntry(c.path);
    }
    return out;
  }

  /**
   * Rebuilds `pending/` from the records, its one source of truth: an entry for every record with
   * `delFailedAt` (a marker whose write failed comes back), none for anything else (junk, or a
   * record that succeeded or went). An entry whose record turned pending since `records` were
   * read stays. Stamps the rebuild (`syncedAt`). Throws only when `pending/` cannot be written.
   */
  async syncPending(records: readonly ContainerRecord[]): Promise<Synced> {
    const want = new Map<string, ContainerRecord>();
    for (const r of records.filter((rec) => rec.delFailedAt)) {
      want.set(this.pendingPath(r.containerId, r.ifName), r);
    }
    let added = 0;
    let removed = 0;
    for (const [path, r] of want) {
      if (lstatOrUndefined(path)?.isFile()) continue;
      await removeFile(path);
      await this.markPending(r.containerId, r.ifName);
      added++;
    }
    for (const path of this.pendingPaths()) {
      if (want.has(path)) continue;
      const entry = this.readPending(path);
      const read = entry && (await this.read(entry.containerId, entry.ifName).catch(noRecord));
      if (read && read.state === "found" && read.record.delFailedAt) continue;
      await removeFile(path);
      removed++;
    }
    await writeFileAtomic(join(this.stampDir, SYNCED_STAMP), "");
    return { added, removed };
  }

  /** Epoch ms of the last `syncPending`; 0 when there was none. */
  syncedAt(): number {
    return lstatOrUndefined(join(this.stampDir, SYNCED_STAMP))?.mtimeMs ?? 0;
  }

  /**
   * The node's housekeeper (the daemon's timer) says it runs: the stamp's modification time is
   * when its next pass will have run, so a stopped housekeeper stops counting without a word.
   */
  async markHousekeeper(untilMs: number): Promise<void> {
    const path = join(this.stampDir, HOUSEKEEPER_STAMP);
    await writeFileAtomic(path, "");
    lutimesSync(path, new Date(untilMs), new Date(untilMs));
  }

  /**
   * Whether a housekeeper's stamp is still in the future, but not further than a housekeeper
   * ever sets it: a stamp from a skewed clock, or planted, must not stop DELs' retries for good.
   */
  housekeeperAlive(now = Date.now()): boolean {
    const st = lstatOrUndefined(join(this.stampDir, HOUSEKEEPER_STAMP));
    const ahead = (st?.isFile() ? st.mtimeMs : 0) - now;
    return ahead > 0 && ahead <= MAX_HOUSEKEEPER_AHEAD_MS;
  }

  /** The `.json` names in `pending/` (what an entry is called), as paths. */
  private pendingPaths(): string[] {
    try {
      return readdirSync(this.pendingDir)
        .filter((n) => n.endsWith(".json"))
        .map((n) => join(this.pendingDir, n));
    } catch {
      return [];
    }
  }

  /**
   * An entry is input, not truth: only a small regular file (read as shared-file.ts reads any file
   * others can write) whose names are a valid container ID and interface name and give back its
   * own file name is used.
   */
  private readPending(path: string): Omit<PendingEntry, "touchedAt"> | undefined {
    const file = readSharedFile(path, { maxBytes: MAX_PENDING_BYTES });
    if (file.state !== "found") return undefined;
    try {
      const v = JSON.parse(file.data.toString("utf8")) as {
        containerId?: unknown;
        ifName?: unknown;
      };
      const { containerId, ifName } = v;
      if (typeof containerId !== "string" || typeof ifName !== "string") return undefined;
      validateContainerId(containerId); // throws: a name that is no CNI_CONTAINERID is no entry
      validateInterfaceName(ifName);
      return this.pendingPath(containerId, ifName) === path ? { containerId, ifName } : undefined;
    } catch {
      return undefined;
    }
  }

  private pendingPath(containerId: string, ifName: string): string {
    return join(this.pendingDir, basename(this.path(containerId, ifName)));
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
