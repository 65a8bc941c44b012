/**
 * The delegate runner that ships (RawExec over spawn-bun.ts and orphans.ts), run by Bun as in
 * dist/plexus: the deadline, the output caps, what a delegate leaves running, and how a failed
 * delegate is reported. Each case runs one real process (/bin/sh scripts, a reference plugin from
 * /usr/lib/cni) through run-delegate.ts and asserts on its JSON answer and on the processes left.
 * No assertion is on elapsed time: a deadline case is told apart by its error code, and the
 * delegates sleep far longer than any test runs.
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Code } from "../../../src/cni/errors";
import { runHarness, running, scratch, waitForFile } from "./bun-harness";

const RESULT = '{"cniVersion":"1.0.0","interfaces":[{"name":"net1"}]}';
/** Longer than any test may run: a delegate still sleeping at the end was never stopped. */
const LONG_SLEEP = "sleep 600";

function run(input: {
  path: string;
  env: Record<string, string>;
  deadlineMs?: number;
  inheritFile?: string;
  busy?: boolean;
}) {
  return runHarness("run-delegate", {
    stdin: '{"cniVersion":"1.0.0","name":"net-a","type":"shipped"}',
    deadlineMs: 20_000,
    ...input,
  });
}

const bridge = "/usr/lib/cni/bridge";
const haveBridge = existsSync(bridge);
const noBridge = haveBridge ? "" : ` (skipped: no ${bridge})`;

describe("the runner that ships, run by Bun", () => {
  it.skipIf(!haveBridge && !process.env.CI)(
    `C4.1 a reference plugin's VERSION comes back whole${noBridge}`,
    async () => {
      const { env } = scratch();
      const reply = await run({ path: bridge, env: { ...env, CNI_COMMAND: "VERSION" } });
      expect(reply.ok).toBe(true);
      const version = JSON.parse(reply.stdout as string);
      expect(version.supportedVersions).toContain("1.0.0");
    },
  );

  it("B52 a hanging delegate is killed at its deadline with its process group: 101", async () => {
    const s = scratch();
    const hang = s.script("hang", `${LONG_SLEEP} & echo $! > ${s.dir}/child\nwait`);
    const reply = await run({ path: hang, env: s.env, deadlineMs: 1000 });
    expect(reply).toMatchObject({ ok: false, code: Code.DelegateTimeout });
    expect(reply.message).toContain("did not finish within 1000 ms; its process group was killed");
    expect(s.marked()).toEqual([]);
  });

  it("B63 exit 0 while a child holds stdout: the result is used, the child killed", async () => {
    const s = scratch();
    const path = s.script("linger", `echo '${RESULT}'\n${LONG_SLEEP} &\necho $! > ${s.dir}/child`);
    // Waiting for the held pipe would end at this deadline with 101 instead of the result.
    const reply = await run({ path, env: s.env, deadlineMs: 20_000 });
    expect(reply).toMatchObject({ ok: true, stdout: `${RESULT}\n` });
    expect(running(Number(await waitForFile(join(s.dir, "child"))))).toBe(false);
    expect(s.marked()).toEqual([]);
  });

  it("B69 a setsid grandchild is killed when the delegate ends", async () => {
    const s = scratch();
    const detach = `setsid ${LONG_SLEEP} </dev/null >/dev/null 2>&1 &`;
    const body = `${detach}\necho $! > ${s.dir}/child\necho '${RESULT}'`;
    const reply = await run({ path: s.script("detach", body), env: s.env });
    expect(reply).toMatchObject({ ok: true, stdout: `${RESULT}\n` });
    const child = Number(await waitForFile(join(s.dir, "child")));
    expect(running(child)).toBe(false);
    expect(s.marked()).toEqual([]);
    // The runner says what it killed (orphans.ts through the subreaper), not only that it did.
    const warned = reply.warnings as Array<{ fields: { killed?: number[] } }>;
    expect(warned.flatMap((line) => line.fields.killed ?? [])).toContain(child);
  });

  it("B61 an endless stdout is stopped past 4 MiB: 100, not the deadline's 101", async () => {
    const s = scratch();
    // Endless: only the cap's kill ends it before the deadline (which would be 101).
    const flood = s.script("flood", "cat /dev/zero");
    const reply = await run({ path: flood, env: s.env });
    expect(reply).toMatchObject({ ok: false, code: Code.InvalidResult });
    expect(reply.message).toContain("wrote more than 4194304 bytes to stdout");
    expect(s.marked()).toEqual([]);
  });

  it("B61 3 MB on stderr and a good result: the result is used", async () => {
    const s = scratch();
    const chatty = s.script(
      "chatty",
      `head -c 3000000 /dev/zero | tr '\\0' x >&2\necho '${RESULT}'`,
    );
    const reply = await run({ path: chatty, env: s.env });
    expect(reply).toMatchObject({ ok: true, stdout: `${RESULT}\n` });
  });
});

describe("a delegate that fails, as the runner that ships reports it", () => {
  it.each([
    ["missing", (dir: string) => join(dir, "absent"), "ENOENT"],
    ["a directory", (dir: string) => dir, "EACCES"],
    [
      "not executable",
      (dir: string) => {
        const path = join(dir, "plain");
        writeFileSync(path, "#!/bin/sh\n", { mode: 0o644 });
        return path;
      },
      "EACCES",
    ],
  ])("B51 a delegate binary that is %s: 5 naming the path and why", async (_what, at, why) => {
    const s = scratch();
    const path = at(s.dir);
    const reply = await run({ path, env: s.env });
    expect(reply).toMatchObject({ ok: false, code: Code.IoFailure });
    expect(reply.message).toContain(`cannot execute ${path} (${why})`);
  });

  it("B51 a binary held open for writing (ETXTBSY): retried, then 11", async () => {
    const s = scratch();
    const path = s.script("busy", `echo '${RESULT}'`);
    const reply = await run({ path, env: s.env, busy: true });
    expect(reply).toMatchObject({ ok: false, code: Code.TryAgainLater });
    expect(reply.message).toContain(`${path} stayed busy ("text file busy") after 5 retries`);
    const retries = (reply.warnings as Array<{ msg: string }>).filter((line) =>
      line.msg.includes("busy"),
    );
    expect(retries).toHaveLength(5);
  });

  it("B53 exit 1 with only stderr: 102, the stderr text in the message and details", async () => {
    const s = scratch();
    const crash = s.script("crash", "echo 'no bridge named cni9' >&2\nexit 1");
    const reply = await run({ path: crash, env: s.env });
    expect(reply).toMatchObject({ ok: false, code: Code.DelegateFailed });
    expect(reply.message).toContain("exited with status 1: no bridge named cni9");
    expect(reply.details).toBe("no bridge named cni9");
  });

  it("B54 killed by a signal: 102 naming the signal and its number", async () => {
    const s = scratch();
    const reply = await run({ path: s.script("segv", "kill -SEGV $$"), env: s.env });
    expect(reply).toMatchObject({ ok: false, code: Code.DelegateFailed });
    expect(reply.message).toContain("killed by signal SIGSEGV (11)");
  });

  it("B57 exit 1 with a CNI error: code, msg and details kept, the delegate named", async () => {
    const s = scratch();
    const error = '{"cniVersion":"1.0.0","code":11,"msg":"busy","details":"try later"}';
    const reply = await run({ path: s.script("busy", `echo '${error}'\nexit 1`), env: s.env });
    expect(reply).toMatchObject({ ok: false, code: 11, details: "try later" });
    expect(reply.message).toBe('plugin type="shipped" network="net-a" (ADD): busy');
  });

  it("the container's lock a call hands its delegates is their fd 3", async () => {
    const s = scratch();
    const lockFile = join(s.dir, "held.lock");
    writeFileSync(lockFile, "");
    const body = `printf '{"cniVersion":"1.0.0","fd3":"%s"}' "$(readlink /proc/$$/fd/3)"`;
    const reply = await run({ path: s.script("fd3", body), env: s.env, inheritFile: lockFile });
    expect(reply.ok).toBe(true);
    expect(JSON.parse(reply.stdout as string).fd3).toBe(lockFile);
  });
});
