/**
 * The record decoder (nodestate/record.ts over store/json-store.ts, read through the shared-file
 * reader) against generated record files: bad JSON, wrong types, names that disagree with the file
 * name, hostile names, sizes past the cap, symlinks, FIFOs and directories where a file is
 * expected. Whatever the files hold, a read or a listing never crashes (at most an I/O error, 5,
 * for the very entry asked for), a record is "found" only under its own name with names that are
 * valid CNI names, every path Plexus would build from it stays inside the state dir, nothing is
 * read through a symlink, and no reason quotes a file's content.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CniError } from "../../../src/cni/errors";
import { RecordStore, type RecordRead } from "../../../src/nodestate/record";
import { lockPath } from "../../../src/store/container-lock";
import { MAX_STATE_FILE_BYTES } from "../../../src/store/json-store";
import { stateNamesProblem } from "../../../src/store/state-names";
import { propertyRuns } from "../../support/property";

const SECRET = "s3cr3t=Tok3n";
const OUTSIDE_NETNS = "/outside/the/state/dir";

const goodName = fc.stringMatching(/^[a-z0-9][a-z0-9_.-]{0,12}$/);
const goodIf = fc.stringMatching(/^[a-z][a-z0-9]{0,8}$/);
const hostileName = fc.oneof(
  fc.constantFrom("../../etc", "a/b", "", "..", ".", "x".repeat(300), "a\u0000b", "net1 x", "é"),
  fc.string({ maxLength: 20 }),
);
const anyName = fc.oneof({ weight: 3, arbitrary: goodName }, { weight: 1, arbitrary: hostileName });
const anyIf = fc.oneof({ weight: 3, arbitrary: goodIf }, { weight: 1, arbitrary: hostileName });
/** A value of the wrong type for a field. */
const shortArray = fc.array(fc.integer(), { maxLength: 2 });
const wrongType = fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), shortArray);

const withSecret = (text: string) => ({ kind: "text" as const, text: text + SECRET });
const BREAKABLE = fc.constantFrom("kind", "containerId", "ifName", "attachments", "conf");
const recordValue = fc
  .record({
    containerId: anyName,
    ifName: anyIf,
    attachments: fc.array(fc.record({ ifName: anyIf, network: anyName }), { maxLength: 3 }),
    breakField: fc.option(BREAKABLE, { nil: undefined }),
    wrong: wrongType,
  })
  .map((r) => {
    const rec: Record<string, unknown> = {
      kind: "plexusRecordV1",
      containerId: r.containerId,
      ifName: r.ifName,
      netns: "/var/run/netns/x",
      cniVersion: "1.0.0",
      cniArgs: "",
      attachments: r.attachments.map((a) => ({
        network: a.network,
        ifName: a.ifName,
        isDefault: false,
        conf: { cniVersion: "1.0.0", name: a.network, plugins: [{ type: "noop" }] },
      })),
    };
    if (r.breakField === "conf" && Array.isArray(rec.attachments) && rec.attachments[0])
      (rec.attachments[0] as Record<string, unknown>).conf = r.wrong;
    else if (r.breakField) rec[r.breakField] = r.wrong;
    return rec;
  });

/** One file of the records dir: what it holds, and under which name. */
const recordFile = fc.record({
  holds: fc.oneof(
    { weight: 4, arbitrary: recordValue.map((value) => ({ kind: "json" as const, value })) },
    {
      weight: 2,
      arbitrary: fc.string({ maxLength: 40 }).map(withSecret),
    },
    { weight: 1, arbitrary: fc.constantFrom({ kind: "huge" as const }, { kind: "fifo" as const }) },
    { weight: 1, arbitrary: fc.constantFrom({ kind: "dir" as const }, { kind: "link" as const }) },
  ),
  /** own: the name its identity gives; other: a name of another (valid) identity. */
  named: fc.oneof(
    fc.constant({ as: "own" as const }),
    fc.record({ as: fc.constant("other" as const), cid: goodName, ifName: goodIf }),
  ),
  cid: goodName,
  ifName: goodIf,
});

let root: string;
let outside: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "plx-record-prop-"));
  outside = join(root, "outside.json");
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function identityOf(spec: FileSpec): [string, string] {
  const v = spec.holds.kind === "json" ? spec.holds.value : undefined;
  const cid = typeof v?.containerId === "string" ? v.containerId : spec.cid;
  const ifName = typeof v?.ifName === "string" ? v.ifName : spec.ifName;
  return [cid, ifName];
}
type FileSpec = typeof recordFile extends fc.Arbitrary<infer T> ? T : never;

/** Writes the files; returns the names written and the identities to read back. */
function writeFiles(store: RecordStore, files: FileSpec[]): Array<[string, string]> {
  mkdirSync(store.dir, { recursive: true });
  const asked: Array<[string, string]> = [];
  for (const f of files) {
    const [cid, ifName] = identityOf(f);
    const { named } = f;
    type Identity = [string, string];
    const nameIdentity: Identity = named.as === "own" ? [cid, ifName] : [named.cid, named.ifName];
    let path: string;
    try {
      path = store.path(...nameIdentity);
    } catch {
      continue;
    }
    // A hostile identity could name a path outside: such a file is never written by anyone.
    const inside = dirname(resolve(path)) === resolve(store.dir);
    if (!inside || basename(path).startsWith(".") || path.includes("\u0000")) continue;
    rmSync(path, { recursive: true, force: true });
    plant(path, f);
    asked.push(nameIdentity, [cid, ifName]);
  }
  return asked;
}

function plant(path: string, spec: FileSpec): void {
  const h = spec.holds;
  if (h.kind === "json") writeFileSync(path, JSON.stringify(h.value));
  else if (h.kind === "text") writeFileSync(path, h.text);
  else if (h.kind === "huge") {
    writeFileSync(path, "");
    truncateSync(path, MAX_STATE_FILE_BYTES + 1);
  } else if (h.kind === "fifo") execFileSync("mkfifo", [path]);
  else if (h.kind === "dir") mkdirSync(path);
  else {
    const record = { ...validRecord(spec.cid, spec.ifName), netns: OUTSIDE_NETNS };
    writeFileSync(outside, JSON.stringify(record));
    symlinkSync(outside, path);
  }
}

function validRecord(containerId: string, ifName: string): Record<string, unknown> {
  return {
    kind: "plexusRecordV1",
    containerId,
    ifName,
    netns: "/x",
    cniVersion: "1.0.0",
    cniArgs: "",
    attachments: [],
  };
}

/** What must hold of anything the decoder answers. */
function checkRead(store: RecordStore, read: RecordRead, asked?: [string, string]): void {
  if (read.state === "missing") return;
  if (read.state === "corrupt") {
    expect(resolve(read.path).startsWith(`${resolve(store.dir)}/`)).toBe(true);
    expect(read.reason).not.toContain(SECRET);
    return;
  }
  const rec = read.record;
  expect(rec.netns).not.toBe(OUTSIDE_NETNS); // never read through the symlink
  if (asked) expect([rec.containerId, rec.ifName]).toEqual(asked);
  const names = { containerId: rec.containerId, ifNames: [rec.ifName], networks: [] as string[] };
  for (const a of rec.attachments) {
    names.ifNames.push(a.ifName);
    names.networks.push(a.conf.name);
  }
  expect(stateNamesProblem(names)).toBeUndefined();
  const { containerId, ifName } = rec;
  for (const path of [store.path(containerId, ifName), lockPath(root, containerId, ifName)])
    expect(resolve(path).startsWith(`${resolve(root)}/`)).toBe(true);
}

describe("B71 B72 B73 generated record files: refused or reported, never a crash, never a path outside", () => {
  it("list() and read() over any mix of record files", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(recordFile, { minLength: 1, maxLength: 6 }), async (files) => {
        const cniDir = join(root, `run-${run++}`);
        const store = new RecordStore(cniDir);
        try {
          const asked = writeFiles(store, files);
          for (const read of await store.list()) checkRead(store, read);
          for (const identity of asked) {
            let read: RecordRead;
            try {
              read = await store.read(...identity);
            } catch (err) {
              // Only the entry asked for being unreadable (a FIFO, a directory, too large): 5.
              expect(err).toBeInstanceOf(CniError);
              expect((err as CniError).code).toBe(5);
              expect((err as CniError).message).not.toContain(SECRET);
              continue;
            }
            checkRead(store, read, identity);
          }
        } finally {
          rmSync(cniDir, { recursive: true, force: true });
        }
      }),
      propertyRuns({ seed: 20261126, numRuns: 150 }),
    );
  });
});
