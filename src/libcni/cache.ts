/**
 * The libcni-style result cache (C3.3): one file per delegate attachment
 * (delegate network, container ID, interface) holding the config it was added with and its
 * last ADD result, so CHECK and DEL can pass `prevResult` and GC can find stale attachments.
 * Same record shape as libcni's `cniCacheV1`, under `<cniDir>/results/`.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { AnyResult } from "../cni/result/types";
import { isPlainObject } from "../cni/json";
import { ioError, listStateFiles, readOrEmpty, removeFile, sweepDeadWriters, writeFileAtomic } from "../store/atomic-file";
import { stateFileName } from "../store/state-names";

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
  readonly dir: string;
  constructor(
    cniDir: string,
    private readonly opts: ResultCacheOptions = {},
  ) {
    this.dir = join(cniDir, "results");
  }

  path(k: AttachmentKey): string {
    const parts = [k.networkName, k.containerId, k.ifName];
    return join(this.dir, this.opts.libcniNames ? parts.join("-") : stateFileName(parts));
  }

  async set(entry: Omit<CachedAttachment, "kind">): Promise<void> {
    sweepDeadWriters(this.dir);
    await writeFileAtomic(this.path(entry), JSON.stringify({ kind: "cniCacheV1", ...entry }));
  }

  /**
   * Missing or unreadable entries are `undefined`: a DEL then runs without `prevResult`, as libcni's
   * does. So is an entry whose identity is not the one asked for.
   */
  async get(k: AttachmentKey): Promise<CachedAttachment | undefined> {
    let text: string;
    try {
      text = readFileSync(this.path(k), "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw ioError(`cannot read cached result ${this.path(k)}`, err);
    }
    const entry = parseEntry(text);
    return entry && entry.networkName === k.networkName && entry.containerId === k.containerId && entry.ifName === k.ifName ? entry : undefined;
  }

  async delete(k: AttachmentKey): Promise<void> {
    await removeFile(this.path(k));
  }

  /** Every readable entry, optionally only those of one network (GC). */
  async list(networkName?: string): Promise<CachedAttachment[]> {
    const out: CachedAttachment[] = [];
    for (const name of listStateFiles(this.dir)) {
      const entry = parseEntry(readOrEmpty(join(this.dir, name)));
      if (entry && (networkName === undefined || entry.networkName === networkName)) out.push(entry);
    }
    return out;
  }
}

function parseEntry(text: string): CachedAttachment | undefined {
  try {
    const v: unknown = JSON.parse(text);
    if (isPlainObject(v) && v.kind === "cniCacheV1" && typeof v.networkName === "string" && typeof v.containerId === "string" && typeof v.ifName === "string") {
      return v as unknown as CachedAttachment;
    }
  } catch {
    // A torn or foreign file is treated as absent.
  }
  return undefined;
}
