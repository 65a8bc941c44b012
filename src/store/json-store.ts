/**
 * One typed JSON file store for Plexus's per-container state (the container records, M7, and the
 * result cache, C3.3): one file per identity under one directory, written atomically (B46, B48),
 * tagged with a `kind`, and holding its identity, checked on read (a file of another identity is
 * not this one's). File names come from state-names.ts, or libcni's `<a>-<b>-<c>` for another
 * runtime's cache; an older name can be read and removed as a fallback.
 *
 * What a file holds is input (another process, or a person, may have put it there): it is read
 * without following a symlink or blocking on a FIFO (shared-file.ts), and a value is "found" only
 * when its names pass `nameProblem` and, when listed, its identity gives back the very file name it
 * was found under. Callers build paths from those names (DEL's lock, GC's teardown, `records rm`),
 * so a file naming `../` or another container is reported as corrupt and left alone.
 */
import { basename, join } from "node:path";
import { CniError, Code } from "../cni/errors";
import { isPlainObject, parseExactJson } from "../cni/json";
import { describeJsonSyntaxError } from "../cni/json-syntax";
import { listStateFiles, removeFile, sweepDeadWriters, writeFileAtomic } from "./atomic-file";
import { readSharedFile } from "./shared-file";
import { stateFileName } from "./state-names";

/** A record or cached result is a few KiB; a file far larger is not one Plexus wrote. */
export const MAX_STATE_FILE_BYTES = 16 * 1024 * 1024;

export type StoreRead<T> =
  | { state: "found"; value: T }
  | { state: "missing" }
  | { state: "corrupt"; path: string; reason: string };

/** What the records and the result cache need of a store; identities are lists of name parts. */
export interface JsonStore<T> {
  readonly dir: string;
  path(identity: readonly string[]): string;
  write(value: T): Promise<void>;
  /** The value stored for `identity`; "missing" also when the file holds another identity. */
  read(identity: readonly string[]): StoreRead<T>;
  delete(identity: readonly string[]): Promise<void>;
  /** Every file of the store, corrupt ones as such (GC). */
  list(): StoreRead<T>[];
}

export interface JsonFileStoreOptions<T> {
  dir: string;
  /** The `kind` tag every value carries. */
  kind: string;
  /** For messages: "container record", "cached result". */
  what: string;
  /** For the corrupt reason: "a Plexus container record". */
  shape: string;
  /** The value's other required fields, beyond `kind` and its identity. */
  valid(value: Record<string, unknown>): boolean;
  /** Why a (valid-shaped) value's names cannot become paths, or undefined when they can. */
  nameProblem(value: T): string | undefined;
  /** The identity a value holds (its file name's parts). */
  identity(value: T): readonly string[];
  /** File name extension (".json"); only files with it are listed. */
  ext?: string;
  /** Name files exactly as libcni does, `<a>-<b>-<c>`, instead of state-names.ts. */
  libcniNames?: boolean;
  /** An older file name to read (and remove) when the current one is missing. */
  legacyName?(identity: readonly string[]): string;
  /**
   * B92: the values hold delegate configs, whose numbers a later call (DEL) passes on as the
   * first (ADD) did: read as written (json.ts `exactNumbers`). Numbers Plexus wrote itself read
   * back as numbers.
   */
  exactNumbers?: boolean;
}

export class JsonFileStore<T> implements JsonStore<T> {
  readonly dir: string;
  constructor(private readonly opts: JsonFileStoreOptions<T>) {
    this.dir = opts.dir;
  }

  path(identity: readonly string[]): string {
    const ext = this.opts.ext ?? "";
    return join(
      this.dir,
      this.opts.libcniNames ? `${identity.join("-")}${ext}` : stateFileName(identity, ext),
    );
  }

  async write(value: T): Promise<void> {
    sweepDeadWriters(this.dir);
    await writeFileAtomic(this.path(this.opts.identity(value)), JSON.stringify(value));
  }

  read(identity: readonly string[]): StoreRead<T> {
    const path = this.path(identity);
    const read = this.readAt(path, identity);
    const legacy = this.legacyPath(identity);
    return read.state === "missing" && legacy !== undefined && legacy !== path
      ? this.readAt(legacy, identity)
      : read;
  }

  async delete(identity: readonly string[]): Promise<void> {
    // A DEL writes nothing: it is where the temp files of a writer killed mid-ADD go (B64).
    sweepDeadWriters(this.dir);
    const path = this.path(identity);
    await removeFile(path);
    const legacy = this.legacyPath(identity);
    if (legacy !== undefined && legacy !== path && this.readAt(legacy, identity).state === "found")
      await removeFile(legacy);
  }

  list(): StoreRead<T>[] {
    const ext = this.opts.ext ?? "";
    return listStateFiles(this.dir)
      .filter((n) => n.endsWith(ext))
      .flatMap((name): StoreRead<T>[] => {
        const path = join(this.dir, name);
        const read = this.readFile(path);
        if (read.state === "missing") return []; // removed since the listing
        if (read.state !== "found" || this.foundUnder(read.value, name)) return [read];
        return [{ state: "corrupt", path, reason: this.misnamed(read.value) }];
      });
  }

  /**
   * Whether `name` is a file name this value's identity is stored under: the current one, the
   * legacy one, or libcni's `<a>-<b>-<c>` (what Plexus wrote before hashed names, and another
   * runtime's cache). The names are valid ones by now, so none of these leaves the directory.
   */
  private foundUnder(value: T, name: string): boolean {
    const identity = this.opts.identity(value);
    return (
      basename(this.path(identity)) === name ||
      this.opts.legacyName?.(identity) === name ||
      `${identity.join("-")}${this.opts.ext ?? ""}` === name
    );
  }

  private misnamed(value: T): string {
    const identity = this.opts.identity(value);
    return (
      `its contents (${identity.map((p) => JSON.stringify(p)).join(", ")}) do not match its ` +
      `file name, which should be ${basename(this.path(identity))}; left alone`
    );
  }

  private legacyPath(identity: readonly string[]): string | undefined {
    return this.opts.legacyName ? join(this.dir, this.opts.legacyName(identity)) : undefined;
  }

  private readAt(path: string, identity: readonly string[]): StoreRead<T> {
    const file = readSharedFile(path, { maxBytes: MAX_STATE_FILE_BYTES });
    // The entry asked for exists but cannot be read: an I/O error (5), not a silent absence.
    if (file.state === "refused")
      throw new CniError(Code.IoFailure, `cannot read ${this.opts.what} ${path}: ${file.reason}`);
    const read = file.state === "missing" ? file : this.parse(file.data.toString("utf8"), path);
    if (read.state !== "found") return read;
    const held = this.opts.identity(read.value);
    const same = held.length === identity.length && held.every((p, i) => p === identity[i]);
    return same ? read : { state: "missing" };
  }

  /** For listing: what cannot be read is reported as corrupt, and the listing goes on. */
  private readFile(path: string): StoreRead<T> {
    const file = readSharedFile(path, { maxBytes: MAX_STATE_FILE_BYTES });
    if (file.state === "missing") return file;
    if (file.state === "refused")
      return { state: "corrupt", path, reason: `not read: ${file.reason}` };
    return this.parse(file.data.toString("utf8"), path);
  }

  private parse(text: string, path: string): StoreRead<T> {
    if (text.length === 0) return { state: "corrupt", path, reason: "the file is empty" };
    let v: unknown;
    try {
      v = this.opts.exactNumbers ? parseExactJson(text) : JSON.parse(text);
    } catch (err) {
      // Reading numbers as written recurses: thousands of levels overflow the stack (json.ts).
      const reason =
        err instanceof RangeError
          ? "nested too deep to be read"
          : `not valid JSON ${describeJsonSyntaxError(text)}`;
      return { state: "corrupt", path, reason };
    }
    if (!isPlainObject(v) || v.kind !== this.opts.kind || !this.opts.valid(v)) {
      return { state: "corrupt", path, reason: `not ${this.opts.shape}` };
    }
    const problem = this.opts.nameProblem(v as unknown as T);
    if (problem) return { state: "corrupt", path, reason: `${problem}; left alone` };
    return { state: "found", value: v as unknown as T };
  }
}
