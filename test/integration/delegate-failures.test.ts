/**
 * Delegate misbehaviour through the built binary (B51–B57, B61, B63: docs/conformance.md): each
 * failure is one CNI error on stdout, exit 1, the delegate named, a DEL of that delegate run, no
 * record left and no process left running.
 */
import { closeSync, mkdirSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cniError, isAlive, singleJson, waitFor, type Behaviour } from "../support/plexus-bin";
import { useSandbox } from "./use-sandbox";

const ctx = useSandbox();

/** ADD with one default network `net-a` whose ADD behaves as given; a fast deadline. */
async function addFailing(add: Behaviour, extra: Record<string, unknown> = {}) {
  const { sb } = ctx;
  const conf = sb.config([sb.delegate("net-a", { behaviours: { ADD: add } })], {
    delegateTimeoutSeconds: 2,
    ...extra,
  });
  const r = await sb.run("ADD", conf);
  return { r, err: cniError(r) };
}

/** The failing delegate got its DEL (C4.1), and the ADD left nothing behind. */
function expectRolledBack(): void {
  const { sb } = ctx;
  expect(sb.calls()).toEqual(["ADD net-a", "DEL net-a"]);
  expect(sb.recordFiles()).toEqual([]);
  expect(sb.resultFiles()).toEqual([]);
}

describe("B51 delegate binary cannot be run", () => {
  it("B51 missing from CNI_PATH: error 7 naming the type; no delegate ran", async () => {
    const { sb } = ctx;
    const conf = sb.config([{ cniVersion: "1.0.0", name: "net-a", type: "no-such-plugin" }]);
    const err = cniError(await sb.run("ADD", conf));
    expect(err.code).toBe(7);
    expect(err.msg).toContain('"no-such-plugin"');
    expect(err.msg).toContain(sb.binDir);
    expect(sb.invocations()).toEqual([]);
    // K5: containerd takes a DEL error saying "not found" as success; a missing binary is not
    // "gone".
    expect(err.msg).not.toMatch(/not found/i);
    // C4.1: only delegates that were executed get the rollback DEL; this one never ran, so nothing
    // is left to tear down and the record goes (a kept record would make every later DEL fail).
    expect(sb.recordFiles()).toEqual([]);
    // M7: without a record Plexus ran nothing for the container; a DEL whose delegate cannot even
    // be found (code 7) has nothing of it to remove and must not wedge the pod: it succeeds, and
    // says so.
    const del = await sb.run("DEL", conf, { CNI_NETNS: "" }, {});
    expect(del.code, del.stdout).toBe(0);
    expect(del.stdout).toBe("");
  });

  it("B51 not executable (mode 0644): error naming the type and why it was skipped", async () => {
    const { sb } = ctx;
    sb.installPlugin("noexec", 0o644);
    const conf = sb.config([sb.delegate("net-a", { type: "noexec" })]);
    const err = cniError(await sb.run("ADD", conf));
    expect([5, 7]).toContain(err.code);
    expect(err.msg).toContain('"noexec"');
    expect(err.msg).toContain("not executable");
    expect(sb.invocations()).toEqual([]);
  });

  it("B51 a directory with the type's name: error naming the type", async () => {
    const { sb } = ctx;
    mkdirSync(join(sb.binDir, "adir"));
    const conf = sb.config([sb.delegate("net-a", { type: "adir" })]);
    const err = cniError(await sb.run("ADD", conf));
    expect([5, 7]).toContain(err.code);
    expect(err.msg).toContain('"adir"');
    expect(err.msg).toContain("not a regular file");
  });

  it("B51 ETXTBSY (binary held open for writing) is retried with a fresh process and then succeeds", async () => {
    const { sb } = ctx;
    const bin = sb.installPlugin("held");
    const logFile = join(sb.root, "plexus.log");
    const conf = sb.config([sb.delegate("net-a", { type: "held" })], {
      logFile,
      logLevel: "verbose",
      logToStderr: false,
    });
    const fd = openSync(bin, "r+"); // as an installer copying over it in place would
    let closed = false;
    try {
      const run = sb.run("ADD", conf);
      // Release the file only once Plexus has hit ETXTBSY and said it will retry.
      await waitFor(
        () => {
          try {
            return /"attempt":1\b.*retrying/.test(readFileSync(logFile, "utf8"));
          } catch {
            return false;
          }
        },
        5000,
        "the ETXTBSY retry to be logged",
      );
      closeSync(fd);
      closed = true;
      const r = await run;
      expect(r.code, r.stdout).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({
        cniVersion: "1.0.0",
        ips: [{ address: "10.1.2.3/24" }],
      });
      expect(sb.calls()).toEqual(["ADD net-a"]);
    } finally {
      if (!closed) closeSync(fd);
    }
  });
});

describe("B52 delegate hangs", () => {
  it("B52 is killed at delegateTimeoutSeconds with its whole process group, then DELed", async () => {
    const { sb } = ctx;
    const conf = sb.config(
      [sb.delegate("net-a", { behaviours: { ADD: { do: "hang", child: true } } })],
      {
        delegateTimeoutSeconds: 1,
      },
    );
    const r = await sb.run("ADD", conf);
    const err = cniError(r);
    expect(err.code).toBe(101);
    expect(err.msg).toContain("net-a");
    expect(r.durationMs).toBeGreaterThanOrEqual(950);
    expect(r.durationMs).toBeLessThan(6000);
    const [add] = sb.invocations();
    expect(add?.command).toBe("ADD");
    // The delegate leads its own group, and the grandchild it started is in that group too.
    expect(add?.pgid).toBe(add?.pid);
    expect(add?.childPid).toBeTypeOf("number");
    expect(isAlive(add!.pid)).toBe(false);
    expect(isAlive(add!.childPid!)).toBe(false);
    expectRolledBack();
  });
});

describe("B53 delegate crashes", () => {
  it("B53 exit 1 with only stderr: the error carries the stderr text, DEL run", async () => {
    const { err } = await addFailing({ do: "crash", stderr: "noop: bridge cni0 exploded\n" });
    expect(err.code).toBeGreaterThanOrEqual(100);
    expect(err.msg).toContain("net-a");
    expect(`${err.msg}\n${err.details ?? ""}`).toContain("bridge cni0 exploded");
    expectRolledBack();
  });
});

describe("B54 delegate killed by a signal", () => {
  it.each(["SIGKILL", "SIGSEGV"])(
    "B54 %s: the message names the signal, DEL run",
    async (signal) => {
      const { err } = await addFailing({ do: "signal", signal });
      expect(err.code).toBeGreaterThanOrEqual(100);
      expect(err.msg).toContain(signal);
      expect(err.msg).toContain("net-a");
      expectRolledBack();
    },
  );
});

describe("B55 delegate prints something that is not a result", () => {
  const cases: Array<[string, string]> = [
    ["garbage", "this is not json at all"],
    ["partial JSON", '{"cniVersion":"1.0.0","ips":[{"address":"10.'],
    ["null", "null"],
    [
      "JSON plus trailing text",
      '{"cniVersion":"1.0.0","ips":[{"address":"10.1.2.3/24"}]} and then some',
    ],
    ["a list", "[]"],
    ["nothing", ""],
  ];
  it.each(cases)("B55 %s on exit 0 → code 100, DEL run", async (_label, stdout) => {
    const { err } = await addFailing({ do: "print", stdout });
    expect(err.code).toBe(100);
    expect(err.msg).toContain("net-a");
    expectRolledBack();
  });
});

describe("B56 delegate exits 0 with an error object", () => {
  it("B56 is an error with the object's code and message, DEL run", async () => {
    const { err } = await addFailing({
      do: "error",
      exitCode: 0,
      error: { code: 11, msg: "ipam busy, try again", details: "lock held" },
    });
    expect(err.code).toBe(11);
    expect(err.msg).toContain("ipam busy, try again");
    expect(err.details).toBe("lock held");
    expectRolledBack();
  });
});

describe("B57 delegate exits 1 with a CNI error", () => {
  it("B57 code, msg and details are propagated; the message is prefixed with the network name", async () => {
    const { err } = await addFailing({
      do: "error",
      error: { code: 7, msg: "bad subnet 10.0.0.0/33", details: "parse error at /33" },
    });
    expect(err.code).toBe(7);
    expect(err.details).toBe("parse error at /33");
    expect(err.msg.endsWith("bad subnet 10.0.0.0/33")).toBe(true);
    const prefix = err.msg.slice(0, err.msg.indexOf("bad subnet"));
    expect(prefix).toContain('"net-a"');
    expect(err.cniVersion).toBe("1.0.0");
    expectRolledBack();
  });

  it("B57 a plugin-specific code (≥ 100) is kept as it is", async () => {
    const { err } = await addFailing({ do: "error", error: { code: 142, msg: "vendor failure" } });
    expect(err.code).toBe(142);
    expect(err.msg).toContain("vendor failure");
  });
});

describe("B61 delegate floods its output", () => {
  it("B61 100 MiB on stdout: capped, plexus exits quickly with an error and bounded memory, DEL run", async () => {
    const { sb } = ctx;
    const conf = sb.config(
      [
        sb.delegate("net-a", {
          behaviours: { ADD: { do: "flood", stream: "stdout", bytes: 100 * 1024 * 1024 } },
        }),
      ],
      {
        delegateTimeoutSeconds: 20,
      },
    );
    const r = await sb.run("ADD", conf, {}, { sampleRss: true });
    const err = cniError(r);
    expect(err.code).toBe(100);
    expect(err.msg).toContain("net-a");
    expect(r.durationMs).toBeLessThan(10_000);
    // The executable itself takes ~60–90 MiB; holding 100 MiB of output would add far more.
    expect(r.peakRssKiB).toBeDefined();
    expect(r.peakRssKiB!).toBeLessThan(200 * 1024);
    expectRolledBack();
  });

  it("B61 100 MiB on stderr: capped, one JSON document on stdout, no OOM", async () => {
    const { sb } = ctx;
    const conf = sb.config(
      [
        sb.delegate("net-a", {
          behaviours: { ADD: { do: "flood", stream: "stderr", bytes: 100 * 1024 * 1024 } },
        }),
      ],
      {
        delegateTimeoutSeconds: 20,
      },
    );
    const r = await sb.run("ADD", conf, {}, { sampleRss: true });
    expect(r.durationMs).toBeLessThan(10_000);
    expect(r.peakRssKiB!).toBeLessThan(200 * 1024);
    // stderr is only for the log: it is truncated, and the delegate's good result still counts.
    expect(r.code).toBe(0);
    expect(singleJson(r.stdout)).toMatchObject({ ips: [{ address: "10.1.2.3/24" }] });
  });
});

describe("B63 delegate leaves a daemon holding its stdout", () => {
  it("B63 the delegate printed its result and exited 0: plexus uses it shortly after the exit, not at the deadline, and the child holding stdout is killed", async () => {
    const { sb } = ctx;
    const conf = sb.config([sb.delegate("net-a", { behaviours: { ADD: { do: "daemon" } } })], {
      delegateTimeoutSeconds: 20,
    });
    const r = await sb.run("ADD", conf);
    expect(r.code, r.stdout).toBe(0);
    expect(singleJson(r.stdout)).toMatchObject({
      ips: [expect.objectContaining({ address: expect.any(String) })],
    });
    expect(r.durationMs, "well before the 20 s deadline").toBeLessThan(10_000);
    const [add] = sb.invocations();
    expect(add?.childPid).toBeTypeOf("number");
    await waitFor(() => !isAlive(add!.childPid!), 2000, "the daemon to be gone");
    expect((await sb.run("DEL", conf)).code).toBe(0);
  });
});
