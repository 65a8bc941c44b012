/**
 * What delegates see, checked from the fixture's invocation log: env, argv and stdin as libcni
 * passes them (C4.1), stderr routed to the log (C4.1), runtime-shaped input (K2, K3), STATUS (C2.8)
 * and GC (C2.9) forwarded through the built binary.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  cniError,
  podNetns,
  singleJson,
  sortedCompactJson,
  TEST_PATH,
} from "../support/plexus-bin";
import type { Invocation, Sandbox } from "../support/plexus-bin";
import { useSandbox } from "./use-sandbox";

const ctx = useSandbox();

const POD_ARGS = [
  "IgnoreUnknown=1",
  "K8S_POD_NAMESPACE=default",
  "K8S_POD_NAME=web-0",
  "K8S_POD_INFRA_CONTAINER_ID=ctr1",
  "K8S_POD_UID=1b4e28ba-2fa1-11d2-883f-0016d3cca427",
];

type Calls = { sb: Sandbox; calls: Invocation[] };

/** ADD net-a, ADD net-b, DEL net-b, DEL net-a: each delegate's CNI_* env, argv, env and group. */
function expectDelegateEnvs({ sb, calls, cniArgs }: Calls & { cniArgs: string }): void {
  const [addA, addB, delB, delA] = calls as [Invocation, Invocation, Invocation, Invocation];
  const envOf = (command: string, ifName: string, netns: string) => ({
    CNI_COMMAND: command,
    CNI_CONTAINERID: "ctr1",
    CNI_NETNS: netns,
    CNI_IFNAME: ifName,
    CNI_ARGS: cniArgs,
    CNI_PATH: sb.binDir,
  });
  expect(addA.cniEnv).toEqual(envOf("ADD", "eth0", podNetns()));
  expect(addB.cniEnv).toEqual(envOf("ADD", "net1", podNetns()));
  expect(delB.cniEnv).toEqual(envOf("DEL", "net1", ""));
  expect(delA.cniEnv).toEqual(envOf("DEL", "eth0", ""));
  for (const c of calls) {
    expect(c.argv).toEqual([]); // libcni passes no arguments
    expect(c.env.FOO).toBe("bar"); // the rest of the runtime's env is inherited
    expect(c.env.PATH).toBe(TEST_PATH);
    expect(c.pgid).toBe(c.pid); // each delegate leads its own process group (B52)
  }
}

/**
 * stdin: the delegate's own netconf with name and cniVersion, runtimeConfig only for declared
 * capabilities, `capabilities` itself removed, unknown keys passed through.
 */
function expectDelegateStdins(
  options: Calls & { ports: unknown[]; addResult: Record<string, unknown> },
): void {
  const { sb, calls, ports, addResult } = options;
  const [addA, addB, delB, delA] = calls as [Invocation, Invocation, Invocation, Invocation];
  expect(addA.stdin).toEqual({
    cniVersion: "1.0.0",
    name: "net-a",
    type: "noop",
    debugFile: sb.debugFilePath("net-a"),
    bridge: "cni0",
    ipam: { type: "host-local" },
    runtimeConfig: { portMappings: ports },
  });
  expect(addB.stdin).toEqual({
    cniVersion: "0.4.0",
    name: "net-b",
    type: "noop",
    debugFile: sb.debugFilePath("net-b"),
  });
  // DEL gets the cached ADD result as prevResult, in the delegate's own version (C3.3).
  expect((delA.stdin as Record<string, unknown>).prevResult).toEqual(addResult);
  expect((delB.stdin as Record<string, unknown>).prevResult).toMatchObject({
    cniVersion: "0.4.0",
    ips: [{ version: "4", address: "10.1.2.3/24" }],
  });
}

describe("C4.1 delegates get the runtime's env, their own netconf, and their stderr is logged", () => {
  it("C4.1 C3.2 env, argv and stdin of each delegate on ADD and DEL", async () => {
    const { sb } = ctx;
    const ports = [{ hostPort: 8080, containerPort: 80, protocol: "tcp" }];
    const conf = sb.config(
      [
        sb.delegate("net-a", {
          extra: {
            capabilities: { portMappings: true },
            bridge: "cni0",
            ipam: { type: "host-local" },
          },
        }),
        sb.delegate("net-b", { cniVersion: "0.4.0" }),
      ],
      { runtimeConfig: { portMappings: ports, bandwidth: { ingressRate: 1 } } },
    );
    const cniArgs = POD_ARGS.join(";");
    const add = await sb.run("ADD", conf, { CNI_ARGS: cniArgs, FOO: "bar" });
    expect(add.code, add.stdout).toBe(0);
    const addResult = singleJson(add.stdout);
    const del = await sb.run("DEL", conf, { CNI_ARGS: cniArgs, CNI_NETNS: "", FOO: "bar" });
    expect(del.code, del.stdout).toBe(0);

    const calls = sb.invocations();
    expect(calls.map((c) => `${c.command} ${c.network}`)).toEqual([
      "ADD net-a",
      "ADD net-b",
      "DEL net-b",
      "DEL net-a",
    ]);
    expectDelegateEnvs({ sb, calls, cniArgs });
    expectDelegateStdins({ sb, calls, ports, addResult });
  });

  it("C4.1 a delegate's stderr reaches Plexus's log file (verbose) and stays off stdout", async () => {
    const { sb } = ctx;
    const logFile = join(sb.root, "plexus.log");
    const conf = sb.config(
      [
        sb.delegate("net-a", {
          behaviours: { ADD: { stderr: "noop: hello from the delegate's stderr\n" } },
        }),
      ],
      {
        logFile,
        logLevel: "verbose",
        logToStderr: false,
      },
    );
    const r = await sb.run("ADD", conf);
    expect(r.code).toBe(0);
    expect(singleJson(r.stdout)).toMatchObject({ cniVersion: "1.0.0" });
    expect(r.stdout).not.toContain("hello from the delegate");
    expect(r.stderr).toBe("");
    expect(readFileSync(logFile, "utf8")).toContain("hello from the delegate's stderr");
  });

  it("C4.1 with logToStderr the delegate's stderr goes to Plexus's stderr", async () => {
    const { sb } = ctx;
    const conf = sb.config(
      [sb.delegate("net-a", { behaviours: { ADD: { stderr: "noop: to stderr please\n" } } })],
      {
        logLevel: "verbose",
        logToStderr: true,
      },
    );
    const r = await sb.run("ADD", conf);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("to stderr please");
    expect(r.stdout).not.toContain("to stderr please");
  });
});

describe("K2 K3 input shaped as containerd sends it", () => {
  it("K2 CNI_ARGS in a different order on every call is accepted and passed on as given", async () => {
    const { sb } = ctx;
    const conf = sb.config([sb.delegate("net-a")]);
    const orders = [
      [4, 0, 2, 1, 3],
      [1, 3, 0, 4, 2],
      [2, 4, 3, 0, 1],
    ].map((o) => o.map((i) => POD_ARGS[i]).join(";"));
    const verbs = ["ADD", "CHECK", "DEL"];
    for (const [i, verb] of verbs.entries()) {
      const r = await sb.run(verb, conf, { CNI_ARGS: orders[i] });
      expect(r.code, `${verb}: ${r.stdout}`).toBe(0);
    }
    expect(sb.invocations().map((c) => [c.command, c.cniEnv.CNI_ARGS])).toEqual(
      verbs.map((v, i) => [v, orders[i]]),
    );
    expect(sb.recordFiles()).toEqual([]);
  });

  it("K3 K4 a compact, key-sorted config with Go-named capability values works; only declared capabilities reach the delegate, verbatim", async () => {
    const { sb } = ctx;
    const ports = [{ ContainerPort: 80, HostIP: "", HostPort: 8080, Protocol: "tcp" }];
    const annotations = {
      "k8s.v1.cni.cncf.io/networks": "",
      "io.kubernetes.cri.sandbox-id": "ctr1",
    };
    const conf = sb.config(
      [sb.delegate("net-a", { extra: { capabilities: { portMappings: true } } })],
      {
        capabilities: { portMappings: true, "io.kubernetes.cri.pod-annotations": true },
        runtimeConfig: { portMappings: ports, "io.kubernetes.cri.pod-annotations": annotations },
      },
    );
    const text = sortedCompactJson(conf);
    expect(text).not.toMatch(/\s"|":\s/); // compact
    const add = await sb.run("ADD", text, { CNI_ARGS: POD_ARGS.join(";") });
    expect(add.code, add.stdout).toBe(0);
    expect(singleJson(add.stdout)).toMatchObject({
      cniVersion: "1.0.0",
      ips: [{ address: "10.1.2.3/24" }],
    });
    const del = await sb.run("DEL", text, { CNI_ARGS: POD_ARGS.join(";") });
    expect(del.code, del.stdout).toBe(0);
    const [a] = sb.invocations();
    expect((a!.stdin as Record<string, unknown>).runtimeConfig).toEqual({ portMappings: ports });
  });
});

describe("B18 large runtimeConfig", () => {
  it("B18 10^4 portMappings and a large pod-annotations capability are handled within the stdin cap; a config over 1 MiB is refused with 6", async () => {
    const { sb } = ctx;
    const ports = Array.from({ length: 10_000 }, (_, i) => ({
      HostPort: 20000 + (i % 40000),
      ContainerPort: 80,
      Protocol: "tcp",
      HostIP: "",
    }));
    const annotations: Record<string, string> = {};
    for (let i = 0; i < 200; i++) annotations[`example.com/a${i}`] = "x".repeat(1000);
    const conf = sb.config(
      [sb.delegate("net-a", { extra: { capabilities: { portMappings: true } } })],
      {
        capabilities: { portMappings: true, "io.kubernetes.cri.pod-annotations": true },
        runtimeConfig: { portMappings: ports, "io.kubernetes.cri.pod-annotations": annotations },
      },
    );
    const add = await sb.run("ADD", conf);
    expect(add.code, add.stdout).toBe(0);
    const [a] = sb.invocations();
    const rc = (a!.stdin as { runtimeConfig: Record<string, unknown> }).runtimeConfig;
    // the annotations capability was not declared by the delegate
    expect(Object.keys(rc)).toEqual(["portMappings"]);
    expect(rc.portMappings).toHaveLength(10_000);
    expect((await sb.run("DEL", conf)).code).toBe(0);

    for (let i = 200; i < 1300; i++) annotations[`example.com/a${i}`] = "x".repeat(1000);
    const big = await sb.run("ADD", conf);
    expect(cniError(big).code).toBe(6);
    expect(sb.invocations()).toHaveLength(2); // ADD and DEL above; the oversized ADD ran nothing
  });
});

describe("C2.8 STATUS", () => {
  it("C2.8 is forwarded to 1.1.0 delegates only, with no container env; success prints nothing", async () => {
    const { sb } = ctx;
    const conf = sb.config(
      [
        sb.delegate("net-a", { cniVersion: "1.1.0" }),
        sb.delegate("net-b", { cniVersion: "1.0.0" }),
      ],
      { cniVersion: "1.1.0" },
    );
    const r = await sb.run("STATUS", conf);
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toBe("");
    const calls = sb.invocations();
    expect(calls.map((c) => `${c.command} ${c.network}`)).toEqual(["STATUS net-a"]);
    expect(calls[0]?.cniEnv).toEqual({ CNI_COMMAND: "STATUS", CNI_PATH: sb.binDir });
    expect(calls[0]?.stdin).toMatchObject({ cniVersion: "1.1.0", name: "net-a", type: "noop" });
  });

  it("C2.8 a delegate answering 50 makes Plexus exit 1 with code 50, naming the network", async () => {
    const { sb } = ctx;
    const conf = sb.config(
      [
        sb.delegate("net-a", {
          cniVersion: "1.1.0",
          behaviours: {
            STATUS: { do: "error", error: { code: 50, msg: "no IPs left in the pool" } },
          },
        }),
      ],
      {
        cniVersion: "1.1.0",
      },
    );
    const e = cniError(await sb.run("STATUS", conf));
    expect(e.code).toBe(50);
    expect(e.cniVersion).toBe("1.1.0");
    expect(e.msg).toContain("net-a");
    expect(e.msg).toContain("no IPs left in the pool");
  });

  it("C2.8 STATUS has one deadline: past statusTimeoutSeconds it fails with 11, naming the networks not checked, and starts no further delegate", async () => {
    const { sb } = ctx;
    const slow = (name: string) =>
      sb.delegate(name, { cniVersion: "1.1.0", behaviours: { STATUS: { delayMs: 2000 } } });
    const conf = sb.config([slow("net-a"), slow("net-b"), slow("net-c")], {
      cniVersion: "1.1.0",
      statusTimeoutSeconds: 1,
    });
    const e = cniError(await sb.run("STATUS", conf));
    expect(e.code).toBe(11);
    expect(e.msg).toContain("statusTimeoutSeconds");
    expect(e.msg).toMatch(/not checked: network "net-a" \(.*did not finish/);
    expect(e.msg).toContain('network "net-b" (not started), network "net-c" (not started)');
    // Only the first delegate ran: the deadline passed while it slept.
    expect(sb.invocations().map((c) => `${c.command} ${c.network}`)).toEqual(["STATUS net-a"]);
  });
});

describe("C2.9 GC", () => {
  function gcConfig() {
    const { sb } = ctx;
    return sb.config(
      [
        sb.delegate("net-a", { cniVersion: "1.1.0" }),
        sb.delegate("net-b", { cniVersion: "1.1.0" }),
      ],
      {
        cniVersion: "1.1.0",
      },
    );
  }

  it("C2.9 tears down containers the runtime no longer lists and forwards GC with the still-valid attachments", async () => {
    const { sb } = ctx;
    const conf = gcConfig();
    for (const id of ["keep1", "gone2"])
      expect((await sb.run("ADD", conf, { CNI_CONTAINERID: id })).code).toBe(0);
    expect(sb.recordFiles()).toEqual(["gone2-eth0.json", "keep1-eth0.json"]);

    const r = await sb.run("GC", {
      ...conf,
      "cni.dev/valid-attachments": [{ containerID: "keep1", ifname: "eth0" }],
    });
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toBe("");
    const after = sb.invocations().slice(4);
    expect(
      after.map((c) => {
        const { CNI_CONTAINERID = "", CNI_IFNAME = "" } = c.cniEnv;
        return `${c.command} ${c.network} ${CNI_CONTAINERID} ${CNI_IFNAME}`.trim();
      }),
    ).toEqual(["DEL net-b gone2 net1", "DEL net-a gone2 eth0", "GC net-a", "GC net-b"]);
    const gcA = after[2]!.stdin as Record<string, unknown>;
    const gcB = after[3]!.stdin as Record<string, unknown>;
    expect(gcA["cni.dev/valid-attachments"]).toEqual([{ containerID: "keep1", ifname: "eth0" }]);
    expect(gcB["cni.dev/valid-attachments"]).toEqual([{ containerID: "keep1", ifname: "net1" }]);
    expect(sb.recordFiles()).toEqual(["keep1-eth0.json"]);
    expect(sb.resultFiles()).toEqual(["net-a-keep1-eth0", "net-b-keep1-net1"]);
  });

  it("C2.9 keeps going past a failing delegate and reports the failure at the end", async () => {
    const { sb } = ctx;
    const conf = gcConfig();
    sb.setBehaviours("net-a", { GC: { do: "error", error: { code: 11, msg: "store locked" } } });
    const e = cniError(await sb.run("GC", { ...conf, "cni.dev/valid-attachments": [] }));
    expect(e.code).toBe(11);
    expect(e.msg).toContain("net-a");
    expect(e.msg).toContain("store locked");
    expect(sb.calls()).toEqual(["GC net-a", "GC net-b"]);
  });

  it("C2.9 without cni.dev/valid-attachments GC refuses with 7 and runs nothing", async () => {
    const { sb } = ctx;
    const e = cniError(await sb.run("GC", gcConfig()));
    expect(e.code).toBe(7);
    expect(sb.invocations()).toEqual([]);
  });
});
