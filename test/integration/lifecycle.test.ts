/**
 * Container lifecycle through the built binary: partial DEL failures (B62), ADD killed mid-way
 * (B64), unusable cniDir (B44, B45), damaged records (B47), a default network without an IP
 * (K5, B60) and result version conversion (B58).
 */
import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cniError, isAlive, singleJson, waitFor } from "../support/plexus-bin";
import { useSandbox } from "./use-sandbox";

const ctx = useSandbox();

/** Two networks: net-a (default, eth0) and net-b (net1), each its own fixture type. */
function twoNetworks(extra: Record<string, unknown> = {}) {
  const { sb } = ctx;
  return sb.config(
    [sb.delegate("net-a", { type: "noop-a" }), sb.delegate("net-b", { type: "noop-b" })],
    {
      delegateTimeoutSeconds: 5,
      ...extra,
    },
  );
}

async function addOk(conf: unknown, env: Record<string, string> = {}) {
  const r = await ctx.sb.run("ADD", conf, env);
  expect(r.code, r.stdout + r.stderr).toBe(0);
  return singleJson(r.stdout);
}

describe("B62 DEL of one delegate fails", () => {
  it("B62 the others are still DELed, the overall result is an error, the record is kept, no 'not found'", async () => {
    const { sb } = ctx;
    const conf = twoNetworks();
    await addOk(conf);
    sb.setBehaviours("net-b", {
      DEL: { do: "error", error: { code: 11, msg: "device or resource busy" } },
    });
    const r = await sb.run("DEL", conf);
    const err = cniError(r);
    expect(err.code).toBe(11);
    expect(err.msg).toContain("net-b");
    expect(err.msg).toContain("device or resource busy");
    expect(err.msg).not.toMatch(/not found/i);
    expect(sb.calls()).toEqual(["ADD net-a", "ADD net-b", "DEL net-b", "DEL net-a"]);
    expect(sb.recordFiles()).toEqual(["ctr1-eth0.json"]);
    // net-a's cached result went with its successful DEL; net-b's stays for the retry's prevResult.
    expect(sb.resultFiles()).toEqual(["net-b-ctr1-net1"]);

    // The runtime's retry, once the delegate recovers, finishes the job: the record kept only
    // net-b.
    sb.setBehaviours("net-b", {});
    const again = await sb.run("DEL", conf);
    expect(again.code, again.stdout).toBe(0);
    expect(again.stdout).toBe("");
    expect(sb.calls().slice(4)).toEqual(["DEL net-b"]);
    expect(sb.recordFiles()).toEqual([]);
    expect(sb.resultFiles()).toEqual([]);
  });

  it("B62 K5 a delegate binary gone since ADD: error naming it without 'not found', the other still DELed", async () => {
    const { sb } = ctx;
    const conf = twoNetworks();
    await addOk(conf);
    rmSync(join(sb.binDir, "noop-b"));
    const err = cniError(await sb.run("DEL", conf));
    expect(err.msg).toContain('"noop-b"');
    expect(err.msg).not.toMatch(/not found/i);
    expect(sb.calls()).toEqual(["ADD net-a", "ADD net-b", "DEL net-a"]);
    expect(sb.recordFiles()).toEqual(["ctr1-eth0.json"]);
  });
});

describe("B64 ADD SIGKILLed mid-way, then DEL", () => {
  it.each(["net-a", "net-b"])(
    "B64 killed while %s's ADD hangs: the runtime's DEL kills the orphaned delegate itself, tears everything down and leaves no record",
    async (hanging) => {
      const { sb } = ctx;
      const conf = twoNetworks({ delegateTimeoutSeconds: 30 });
      sb.setBehaviours(hanging, { ADD: { do: "hang" } });
      let plexusPid = 0;
      const run = sb.run("ADD", conf, {}, { onSpawn: (pid) => (plexusPid = pid) });
      await waitFor(
        () => sb.calls().includes(`ADD ${hanging}`),
        10_000,
        `the ADD of ${hanging} to start`,
      );
      process.kill(plexusPid, "SIGKILL"); // the runtime's deadline
      const killed = await run;
      expect(killed.signal).toBe("SIGKILL");
      expect(killed.stdout).toBe("");
      // The record was on disk before any delegate ran (M7).
      expect(sb.recordFiles()).toEqual(["ctr1-eth0.json"]);
      // The hung delegate leads its own process group, so it outlives the SIGKILLed plexus, and the
      // runtime kills only plexus. It holds the container's lock (inherited): the DEL finds the
      // owner dead and kills it before tearing down.
      const orphan = sb.invocations().find((i) => i.command === "ADD" && i.network === hanging)!;
      expect(
        isAlive(orphan.pid),
        "the orphaned delegate is still running when the runtime's DEL comes",
      ).toBe(true);

      sb.setBehaviours(hanging, {});
      const r = await sb.run("DEL", conf, { CNI_NETNS: "" });
      expect(r.code, r.stdout).toBe(0);
      await waitFor(() => !isAlive(orphan.pid), 2000, "the orphaned delegate to be gone");
      expect(r.stdout).toBe("");
      const dels = sb.calls().filter((c) => c.startsWith("DEL"));
      expect(dels).toEqual(["DEL net-b", "DEL net-a"]);
      expect(sb.recordFiles()).toEqual([]);
      expect(sb.resultFiles()).toEqual([]);
    },
  );
});

describe("B64 a dead call's leftovers are found by its lock, not by a path string or their environment", () => {
  type Json = Record<string, unknown>;
  /** ADD hangs in net-b, Plexus is SIGKILLed, the runtime's DEL comes: it ends the leftovers. */
  async function killedAddThenDel(conf: Json, behaviour: Json) {
    const { sb } = ctx;
    sb.setBehaviours("net-b", { ADD: { do: "hang", ...behaviour } });
    let plexusPid = 0;
    const run = sb.run("ADD", conf, {}, { onSpawn: (pid) => (plexusPid = pid) });
    await waitFor(() => sb.calls().includes("ADD net-b"), 10_000, "the ADD of net-b to start");
    const orphan = sb.invocations().find((i) => i.command === "ADD" && i.network === "net-b")!;
    process.kill(plexusPid, "SIGKILL");
    expect((await run).signal).toBe("SIGKILL");
    sb.setBehaviours("net-b", {});
    const r = await sb.run("DEL", conf, { CNI_NETNS: "" });
    return { r, orphan };
  }

  it.each([
    [
      "through a symlink",
      (root: string, real: string) => {
        mkdirSync(real, { recursive: true });
        symlinkSync(real, join(root, "cni-link"));
        return join(root, "cni-link");
      },
    ],
    // A relative cniDir is refused before anything is written (B91: config-paths.test.ts).
  ])(
    "B64 B81 cniDir given %s: the runtime's DEL kills the orphaned delegate and succeeds",
    async (_how, spell) => {
      const { sb } = ctx;
      const conf = twoNetworks({ delegateTimeoutSeconds: 30, cniDir: spell(sb.root, sb.cniDir) });
      const { r, orphan } = await killedAddThenDel(conf, {});
      expect(r.code, r.stdout).toBe(0);
      await waitFor(() => !isAlive(orphan.pid), 2000, "the orphaned delegate to be gone");
      expect(sb.recordFiles()).toEqual([]);
    },
  );

  it("B64 B81 a delegate's child that cleared its environment and left its session still holds the lock: killed too", async () => {
    const { sb } = ctx;
    const conf = twoNetworks({ delegateTimeoutSeconds: 30 });
    const { r } = await killedAddThenDel(conf, { child: "clean-env" });
    const add = sb.invocations().find((i) => i.command === "ADD" && i.network === "net-b")!;
    const child = add.childPid as number;
    expect(child).toBeGreaterThan(0);
    expect(r.code, r.stdout).toBe(0);
    await waitFor(() => !isAlive(child), 2000, "the grandchild to be gone");
    expect(sb.recordFiles()).toEqual([]);
  });
});

describe("B64 an orphaned delegate that is only slow", () => {
  it("B64 killed while a delegate's ADD takes 400 ms: the runtime's DEL lets it finish on its own (no kill half-way through its bookkeeping), then tears everything down", async () => {
    const { sb } = ctx;
    const conf = twoNetworks({ delegateTimeoutSeconds: 30 });
    const done = join(sb.root, "net-b.done");
    sb.setBehaviours("net-b", { ADD: { delayMs: 400, doneFile: done } });
    let plexusPid = 0;
    const run = sb.run("ADD", conf, {}, { onSpawn: (pid) => (plexusPid = pid) });
    await waitFor(() => sb.calls().includes("ADD net-b"), 10_000, "the ADD of net-b to start");
    process.kill(plexusPid, "SIGKILL");
    expect((await run).signal).toBe("SIGKILL");
    expect(
      existsSync(done),
      "the slow delegate is still at work when the runtime's DEL comes",
    ).toBe(false);
    sb.setBehaviours("net-b", {});
    const r = await sb.run("DEL", conf, { CNI_NETNS: "" });
    expect(r.code, r.stdout).toBe(0);
    // It finished its ADD (wrote its proof after its result) before the DEL tore it down.
    expect(existsSync(done), "the orphaned delegate finished on its own").toBe(true);
    expect(sb.calls().filter((c) => c.startsWith("DEL"))).toEqual(["DEL net-b", "DEL net-a"]);
    expect(sb.recordFiles()).toEqual([]);
  });
});

describe("B44 B45 unusable cniDir", () => {
  it("B44 cniDir is a file → 5 before any delegate runs", async () => {
    const { sb } = ctx;
    const file = join(sb.root, "a-file");
    writeFileSync(file, "x");
    const conf = { ...twoNetworks(), cniDir: file };
    const err = cniError(await sb.run("ADD", conf));
    expect(err.code).toBe(5);
    expect(err.msg).toContain(file);
    expect(sb.invocations()).toEqual([]);
  });

  it("B45 cniDir on a read-only bind mount → 5 before any delegate runs", async () => {
    const { sb } = ctx;
    const ro = join(sb.root, "ro");
    mkdirSync(ro);
    execFileSync("mount", ["--bind", ro, ro]);
    try {
      execFileSync("mount", ["-o", "remount,ro,bind", ro]);
      const conf = { ...twoNetworks(), cniDir: ro };
      const err = cniError(await sb.run("ADD", conf));
      expect(err.code).toBe(5);
      expect(err.msg).toContain(ro);
      expect(sb.invocations()).toEqual([]);
    } finally {
      execFileSync("umount", [ro]);
    }
  });
});

describe("B46 B33 record storage", () => {
  it("B46 ENOSPC while writing the record → 5 before any delegate runs, and no temp file is left", async () => {
    const { sb } = ctx;
    const small = join(sb.root, "small");
    mkdirSync(small);
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", small]);
    try {
      mkdirSync(join(small, "records"));
      // fills the tmpfs (4 KiB pages)
      writeFileSync(join(small, "filler"), Buffer.alloc(60 * 1024));
      const big = sb.delegate("net-a", { extra: { padding: "p".repeat(32 * 1024) } });
      const err = cniError(await sb.run("ADD", sb.config([big], { cniDir: small })));
      expect(err.code).toBe(5);
      expect(err.msg).toMatch(/ENOSPC/);
      expect(err.msg, "the code once, not `ENOSPC ENOSPC:`").not.toMatch(/ENOSPC.*ENOSPC/);
      expect(sb.invocations()).toEqual([]);
      expect(readdirSync(join(small, "records"))).toEqual([]);
    } finally {
      execFileSync("umount", [small]);
    }
  });

  it("B33 M7 DEL runs the delegates recorded at ADD, verbatim, even when the config changed since", async () => {
    const { sb } = ctx;
    const conf = twoNetworks();
    await addOk(conf);
    // The config now names other networks (a NAD edited or deleted between ADD and DEL).
    const changed = sb.config([sb.delegate("net-z")]);
    const r = await sb.run("DEL", changed);
    expect(r.code, r.stdout).toBe(0);
    expect(sb.calls().slice(2)).toEqual(["DEL net-b", "DEL net-a"]);
    const added = sb.invocations().filter((c) => c.command === "ADD");
    const deleted = sb.invocations().filter((c) => c.command === "DEL");
    // The bytes each delegate got on DEL carry the config it was added with.
    for (const d of deleted) {
      const a = added.find((x) => x.network === d.network)!;
      const { prevResult: _p, ...delConf } = d.stdin as Record<string, unknown>;
      expect(delConf).toEqual(a.stdin);
    }
    expect(sb.recordFiles()).toEqual([]);
  });
});

describe("B47 damaged record", () => {
  const damage: Array<[string, (path: string) => void]> = [
    ["zero-byte", (p) => truncateSync(p, 0)],
    ["truncated", (p) => writeFileSync(p, readFileSync(p, "utf8").slice(0, 40))],
  ];

  it.each(damage)(
    "B47 %s record on DEL: falls back to the configured delegates and runs them",
    async (_label, spoil) => {
      const { sb } = ctx;
      const conf = twoNetworks();
      await addOk(conf);
      spoil(join(sb.cniDir, "records", "ctr1-eth0.json"));
      const r = await sb.run("DEL", conf);
      expect(r.code, r.stdout).toBe(0);
      expect(r.stdout).toBe("");
      expect(sb.calls().slice(2)).toEqual(["DEL net-b", "DEL net-a"]);
      expect(sb.recordFiles()).toEqual([]);
    },
  );

  it("B47 M7 zero-byte record on DEL with no delegates to fall back to: a warning naming the file, which is removed; DEL succeeds (it could never succeed later)", async () => {
    const { sb } = ctx;
    const conf = twoNetworks();
    await addOk(conf);
    truncateSync(join(sb.cniDir, "records", "ctr1-eth0.json"), 0);
    const r = await sb.run("DEL", { ...conf, delegates: [], logLevel: "warn" });
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(/ctr1-eth0\.json.*unreadable|unreadable.*ctr1-eth0\.json/);
    expect(sb.calls()).toEqual(["ADD net-a", "ADD net-b"]);
    expect(sb.recordFiles()).toEqual([]);
  });

  it("B47 zero-byte record on ADD is overwritten with a whole one", async () => {
    const { sb } = ctx;
    const conf = twoNetworks();
    mkdirSync(join(sb.cniDir, "records"), { recursive: true });
    writeFileSync(join(sb.cniDir, "records", "ctr1-eth0.json"), "");
    await addOk(conf);
    const rec = JSON.parse(readFileSync(join(sb.cniDir, "records", "ctr1-eth0.json"), "utf8")) as {
      attachments: Array<{ network: string; ifName: string }>;
    };
    expect(rec.attachments.map((a) => `${a.network}@${a.ifName}`)).toEqual([
      "net-a@eth0",
      "net-b@net1",
    ]);
  });
});

describe("K5 B60 the default network's IP", () => {
  it("B60 K5 a default network result without IPs fails the ADD here, with every delegate torn down", async () => {
    const { sb } = ctx;
    const conf = twoNetworks();
    sb.setBehaviours("net-a", { ADD: { noIps: true } });
    const err = cniError(await sb.run("ADD", conf));
    expect(err.code).toBeGreaterThanOrEqual(100);
    expect(err.msg).toContain("net-a");
    expect(err.msg).toContain("eth0");
    expect(
      sb
        .calls()
        .filter((c) => c.startsWith("DEL"))
        .sort(),
    ).toEqual(["DEL net-a", "DEL net-b"]);
    expect(sb.recordFiles()).toEqual([]);
    expect(sb.resultFiles()).toEqual([]);
  });

  it("K5 an ips[] entry without an interface index counts for eth0; a secondary network may have no IP", async () => {
    const { sb } = ctx;
    const conf = twoNetworks();
    sb.setBehaviours("net-a", {
      ADD: { result: { cniVersion: "1.0.0", ips: [{ address: "10.9.8.7/24" }] } },
    });
    sb.setBehaviours("net-b", { ADD: { noIps: true } });
    const out = await addOk(conf);
    expect(out).toEqual({ cniVersion: "1.0.0", ips: [{ address: "10.9.8.7/24" }] });
  });
});

describe("B58 delegate results in other versions", () => {
  const r100 = {
    cniVersion: "1.0.0",
    interfaces: [{ name: "eth0", sandbox: "/proc/self/ns/net" }],
    ips: [{ address: "10.1.2.3/24", gateway: "10.1.2.1", interface: 0 }],
  };
  const r040 = {
    ...r100,
    cniVersion: "0.4.0",
    ips: [{ version: "4", address: "10.1.2.3/24", gateway: "10.1.2.1", interface: 0 }],
  };
  const r020 = { cniVersion: "0.2.0", ip4: { ip: "10.1.2.3/24", gateway: "10.1.2.1" } };
  const cases: Array<{
    label: string;
    conf: string;
    delegate: string;
    result: unknown;
    expected: unknown;
  }> = [
    {
      label: "0.2.0 result, 1.0.0 config",
      conf: "1.0.0",
      delegate: "1.0.0",
      result: r020,
      expected: { cniVersion: "1.0.0", ips: [{ address: "10.1.2.3/24", gateway: "10.1.2.1" }] },
    },
    {
      label: "0.4.0 result, 1.0.0 config",
      conf: "1.0.0",
      delegate: "1.0.0",
      result: r040,
      expected: r100,
    },
    {
      label: "1.0.0 result, 0.4.0 config",
      conf: "0.4.0",
      delegate: "1.0.0",
      result: r100,
      expected: r040,
    },
    {
      label: "1.0.0 result, 0.2.0 config",
      conf: "0.2.0",
      delegate: "1.0.0",
      result: r100,
      expected: r020,
    },
    {
      label: "empty cniVersion read as the delegate's 0.4.0, 1.1.0 config",
      conf: "1.1.0",
      delegate: "0.4.0",
      result: { ...r040, cniVersion: "" },
      expected: { ...r100, cniVersion: "1.1.0" },
    },
    {
      label: "missing cniVersion read as the delegate's 1.0.0",
      conf: "1.0.0",
      delegate: "1.0.0",
      result: { ips: r100.ips, interfaces: r100.interfaces },
      expected: r100,
    },
  ];
  it.each(cases)("B58 $label", async ({ conf, delegate, result, expected }) => {
    const { sb } = ctx;
    const c = sb.config(
      [sb.delegate("net-a", { cniVersion: delegate, behaviours: { ADD: { result } } })],
      {
        cniVersion: conf,
      },
    );
    expect(await addOk(c)).toEqual(expected);
  });

  it("B58 an unknown result version fails cleanly with 100 and a DEL", async () => {
    const { sb } = ctx;
    const c = sb.config([
      sb.delegate("net-a", { behaviours: { ADD: { result: { ...r100, cniVersion: "9.9.9" } } } }),
    ]);
    const err = cniError(await sb.run("ADD", c));
    expect(err.code).toBe(100);
    expect(err.msg).toContain("9.9.9");
    expect(sb.calls()).toEqual(["ADD net-a", "DEL net-a"]);
  });
});

describe("N7.2 C2.5 B5 B65 B9 ordering and idempotence through the binary", () => {
  it("N7.2 the first failing attachment stops the ADD: later ones are not tried, earlier ones are torn down", async () => {
    const { sb } = ctx;
    const conf = sb.config([
      sb.delegate("net-a"),
      sb.delegate("net-b", {
        behaviours: { ADD: { do: "error", error: { code: 11, msg: "no" } } },
      }),
      sb.delegate("net-c"),
    ]);
    const e = cniError(await sb.run("ADD", conf));
    expect(e.code).toBe(11);
    expect(sb.calls()).toEqual(["ADD net-a", "ADD net-b", "DEL net-b", "DEL net-a"]);
    expect(sb.recordFiles()).toEqual([]);
  });

  it("C2.5 B5 B65 DEL twice (the second with CNI_NETNS empty) and DEL of an unknown container exit 0", async () => {
    const { sb } = ctx;
    const conf = twoNetworks();
    await addOk(conf);
    for (const env of [{}, { CNI_NETNS: "" }, { CNI_CONTAINERID: "never-added", CNI_NETNS: "" }]) {
      const r = await sb.run("DEL", conf, env);
      expect(r.code, r.stdout).toBe(0);
      expect(r.stdout).toBe("");
    }
    expect(sb.recordFiles()).toEqual([]);
    expect(sb.resultFiles()).toEqual([]);
  });

  it("B9 CNI_PATH naming only directories that do not exist → 7 naming the type, nothing run", async () => {
    const { sb } = ctx;
    const conf = twoNetworks();
    const e = cniError(
      await sb.run("ADD", conf, {
        CNI_PATH: `${join(sb.root, "nope1")}:${join(sb.root, "nope2")}`,
      }),
    );
    expect(e.code).toBe(7);
    expect(e.msg).toContain('"noop-a"');
    expect(e.msg).toContain("nope1");
    expect(sb.invocations()).toEqual([]);
  });

  it("C3.1 N7.1 a conflist delegate: plugins in order with prevResult on ADD, reverse with the final result on DEL", async () => {
    const { sb } = ctx;
    sb.installPlugin("first");
    sb.installPlugin("second");
    const debugFile = sb.setBehaviours("chain", {});
    sb.setBehaviours("chain-second", { ADD: { address: "10.7.7.7/24" } });
    const list = {
      cniVersion: "1.0.0",
      name: "chain",
      plugins: [
        { type: "first", debugFile },
        { type: "second", debugFile: sb.debugFilePath("chain-second") },
      ],
    };
    const out = await addOk(sb.config([list]));
    expect(out).toMatchObject({ ips: [{ address: "10.7.7.7/24" }] });
    expect((await sb.run("DEL", sb.config([list]))).code).toBe(0);
    const calls = sb.invocations();
    expect(calls.map((c) => `${c.command} ${c.type}`)).toEqual([
      "ADD first",
      "ADD second",
      "DEL second",
      "DEL first",
    ]);
    const stdin = calls.map((c) => c.stdin as Record<string, unknown>);
    for (const s of stdin) expect(s).toMatchObject({ name: "chain", cniVersion: "1.0.0" });
    expect(stdin[0]).not.toHaveProperty("prevResult");
    expect(stdin[1]?.prevResult).toMatchObject({ ips: [{ address: "10.1.2.3/24" }] });
    expect(stdin[2]?.prevResult).toEqual(out);
    expect(stdin[3]?.prevResult).toEqual(out);
  });
});
