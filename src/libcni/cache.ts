/**
 * The libcni-style result cache (C3.3): one file per delegate attachment
 * (delegate network, container ID, interface) holding the config it was added with and its
 * last ADD result, so CHECK and DEL can pass `prevResult` and GC can find stale attachments.
 * Same record shape as libcni's `cniCacheV1`, under `<cniDir>/results/`.
 */
import { join } from "node:path";
import type { AnyResult } from "../cni/result/types";
import { JsonFileStore, type JsonStore } from "../store/json-store";
import { stateNamesProblem } from "../store/state-names";

export interface AttachmentKey {
  networkName: string;
  containerId: string;
  ifName: string;
}

export interface CachedAttachment extends AttachmentKey {
  kind: "cniCacheV1";
  /** The delegate's conflist as it was run (JSON text). */
  config: string;
  netns?: string;
  cniArgs?: string;
  capabilityArgs?: Record<string, unknown>;
  result?: AnyResult;
}

export interface ResultCacheOptions {
  /**
   * Name files exactly as libcni does, `<network>-<containerId>-<ifName>` (to read another
   * runtime's cache, such as Multus's); otherwise that name only when it is unambiguous and fits,
   * else a hashed one (state-names.ts).
   */
  libcniNames?: boolean;
}

export class ResultCache {
  private readonly store: JsonStore<CachedAttachment>;
  constructor(cniDir: string, opts: ResultCacheOptions = {}) {
    this.store = new JsonFileStore<CachedAttachment>({
      dir: join(cniDir, "results"),
      kind: "cniCacheV1",
      what: "cached result",
      shape: "a cached result",
      valid: (v) =>
        typeof v.networkName === "string" &&
        typeof v.containerId === "string" &&
        typeof v.ifName === "string",
      identity: identityOf,
      // B71: GC and DEL remove entries by these names.
      nameProblem: (e) =>
        stateNamesProblem({
          containerId: e.containerId,
          ifNames: [e.ifName],
          networks: [e.networkName],
        }),
      ...(opts.libcniNames ? { libcniNames: true } : {}),
    });
  }

  get dir(): string {
    return this.store.dir;
  }

  path(key: AttachmentKey): string {
    return this.store.path(identityOf(key));
  }

  async set(entry: Omit<CachedAttachment, "kind">): Promise<void> {
    await this.store.write({ kind: "cniCacheV1", ...entry });
  }

  /**
   * Missing or unreadable entries are `undefined`: a DEL then runs without `prevResult`, as
   * libcni's does. So is an entry whose identity is not the one asked for.
   */
  async get(key: AttachmentKey): Promise<CachedAttachment | undefined> {
    const read = this.store.read(identityOf(key));
    return read.state === "found" ? read.value : undefined;
  }

  async delete(key: AttachmentKey): Promise<void> {
    await this.store.delete(identityOf(key));
  }

  /** Every readable entry, optionally only those of one network (GC). */
  async list(networkName?: string): Promise<CachedAttachment[]> {
    return this.store
      .list()
      .flatMap((r) =>
        r.state === "found" && (networkName === undefined || r.value.networkName === networkName)
          ? [r.value]
          : [],
      );
  }
}

function identityOf(key: AttachmentKey): string[] {
  return [key.networkName, key.containerId, key.ifName];
}
