/**
 * The container lock that ships (store/container-lock.ts: flock through bun:ffi, which only Bun
 * has), taken by Bun processes as the verbs of dist/plexus take it (hold-lock.ts): two holders, a
 * holder killed while its delegate runs, and the lock file's lifetime. Under Node the lock is a
 * no-op, so these run under Bun. No assertion is on elapsed time: a waiter is told apart by its
 * answer (held, or 11 at its deadline), and the delegates sleep far longer than any test runs.
 */
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { Code } from "../../../src/cni/errors";
import { lockPath } from "../../../src/store/container-lock";
import {
  runHarness,
  running,
  type Scratch,
  scratch,
  startHarness,
  waitForFile,
} from "./bun-harness";

const CONTAINER = { containerId: "c0ffee", ifName: "eth0" };

function lockInput(
  scratch: Scratch,
  extra: { verb: string; waitMs: number; killsOrphans?: boolean },
) {
  return { cniDir: join(scratch.dir, "cni"), ...CONTAINER, ...extra };
}

/** A holder (ADD) that runs a delegate under the lock; resolves once the delegate runs. */
async function holderWithDelegate(scratch: Scratch) {
  const started = join(scratch.dir, "delegate-pid");
  const path = scratch.script("delegate", `echo $$ > ${started}\nexec sleep 600`);
  const holder = startHarness("hold-lock", {
    ...lockInput(scratch, { verb: "ADD", waitMs: 20_000 }),
    delegate: { path, env: scratch.env },
  });
  expect(await holder.next()).toMatchObject({ held: true });
  return { holder, delegate: Number(await waitForFile(started)) };
}

describe("the container lock that ships, taken by Bun processes", () => {
  it("a second call gets 11 naming the holder; once released, the lock is its", async () => {
    const s = scratch();
    const first = startHarness("hold-lock", lockInput(s, { verb: "ADD", waitMs: 20_000 }));
    const held = await first.next();
    expect(held).toMatchObject({ held: true, fd: expect.any(Number) });
    expect(JSON.parse(held.owner as string)).toEqual({
      pid: first.pid,
      verb: "ADD",
      marker: held.marker,
    });

    const busy = await runHarness("hold-lock", lockInput(s, { verb: "DEL", waitMs: 300 }));
    expect(busy).toMatchObject({ held: false, code: Code.TryAgainLater });
    expect(busy.message).toContain(`container c0ffee (eth0) is busy: ADD by pid ${first.pid}`);

    const second = startHarness("hold-lock", lockInput(s, { verb: "DEL", waitMs: 20_000 }));
    first.send("release");
    expect(await first.next()).toEqual({ released: true });
    expect(await second.next()).toMatchObject({ held: true });
  });

  it("B64 B81 a dead holder's delegate is killed after the grace; the lock taken", async () => {
    const s = scratch();
    const { holder, delegate } = await holderWithDelegate(s);
    await holder.kill();
    expect(running(delegate)).toBe(true);

    const del = await runHarness("hold-lock", lockInput(s, { verb: "DEL", waitMs: 20_000 }));
    expect(del).toMatchObject({ held: true });
    expect(running(delegate)).toBe(false);
    const warned = del.warnings as Array<{ fields: { killed?: number[]; ownerPid?: number } }>;
    expect(warned).toContainEqual(
      expect.objectContaining({
        fields: expect.objectContaining({ ownerPid: holder.pid, killed: [delegate] }),
      }),
    );
  });

  it("B64 housekeeping never kills a dead call's delegate: 11, it runs on", async () => {
    const s = scratch();
    const { holder, delegate } = await holderWithDelegate(s);
    await holder.kill();
    // A deadline closer than the grace makes a verb's waiter look for leftovers at once.
    const input = lockInput(s, { verb: "DEL", waitMs: 500, killsOrphans: false });
    const gc = await runHarness("hold-lock", input);
    expect(gc).toMatchObject({ held: false, code: Code.TryAgainLater });
    expect(running(delegate)).toBe(true);
  });

  it("a live holder's delegate is never killed: the waiter gets 11", async () => {
    const s = scratch();
    const { delegate } = await holderWithDelegate(s);
    // As above, the waiter looks at once; the holder runs, so its delegate is not a leftover.
    const del = await runHarness("hold-lock", lockInput(s, { verb: "DEL", waitMs: 500 }));
    expect(del).toMatchObject({ held: false, code: Code.TryAgainLater });
    expect(running(delegate)).toBe(true);
  });

  it.each([
    ["release remove", "goes", false],
    ["release", "stays", true],
  ])("`%s` (the container has state left or not): the lock file %s", async (line, _, left) => {
    const s = scratch();
    const holder = startHarness("hold-lock", lockInput(s, { verb: "ADD", waitMs: 20_000 }));
    expect(await holder.next()).toMatchObject({ held: true });
    holder.send(line);
    expect(await holder.next()).toEqual({ released: true });
    expect(existsSync(lockPath(join(s.dir, "cni"), CONTAINER.containerId, CONTAINER.ifName))).toBe(
      left,
    );
  });

  it("B72 a symlink at the lock path is replaced, not followed: the target is kept", async () => {
    const s = scratch();
    const target = join(s.dir, "precious");
    writeFileSync(target, "keep me");
    const path = lockPath(join(s.dir, "cni"), CONTAINER.containerId, CONTAINER.ifName);
    mkdirSync(dirname(path), { recursive: true });
    symlinkSync(target, path);
    const holder = startHarness("hold-lock", lockInput(s, { verb: "ADD", waitMs: 20_000 }));
    expect(await holder.next()).toMatchObject({ held: true });
    expect(readFileSync(target, "utf8")).toBe("keep me");
    expect(lstatSync(path).isFile()).toBe(true);
  });
});
