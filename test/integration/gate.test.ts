/**
 * The delegate gate through dist/plexus: what a tenant's NAD or selection may make Plexus run
 * under namespaceIsolation (a device no allocation gave the pod, a port on the node), Plexus's own
 * network namespace as CNI_NETNS, and a CNI GC that meets a container whose ADD is still running.
 * Tenants' objects come from a manifest directory (fileClusterDir); the delegates are the fixture
 * plugin (test/fixtures/noop-plugin.mjs), whose invocation log shows what ran and with what.
 */
import { chmodSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cniError, type Invocation, podNetns, singleJson, waitFor } from "../support/plexus-bin";
import { useSandbox } from "./use-sandbox";

const ctx = useSandbox();
const POD_ARGS = "IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=web;K8S_POD_UID=uid-web";
const VF = "0000:af:00.1";
const stdinOf = (invocation: Invocation) => invocation.stdin as Record<string, unknown>;

/**
 * A node whose cluster is a manifest directory: the pod app/web selecting `networks`, one NAD
 * app/<nad> (no resourceName) whose fixture config has `nadExtra`, and the fixture as the
 * default network net-a. namespaceIsolation is on.
 */
function isolatedNode(options: {
  nad: string;
  nadExtra: Record<string, unknown>;
  networks: unknown[];
}): Record<string, unknown> {
  const { sb } = ctx;
  const clusterDir = join(sb.root, "cluster");
  mkdirSync(clusterDir, { recursive: true });
  const nadConf = sb.delegate(options.nad, { extra: options.nadExtra });
  const objects = [
    {
      apiVersion: "k8s.cni.cncf.io/v1",
      kind: "NetworkAttachmentDefinition",
      metadata: { namespace: "app", name: options.nad },
      spec: { config: JSON.stringify(nadConf) },
    },
    {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        namespace: "app",
        name: "web",
        uid: "uid-web",
        annotations: { "k8s.v1.cni.cncf.io/networks": JSON.stringify(options.networks) },
      },
    },
  ];
  writeFileSync(
    join(clusterDir, "objects.yaml"),
    objects.map((x) => `---\n${JSON.stringify(x)}\n`).join(""),
  );
  return sb.config([sb.delegate("net-a")], {
    fileClusterDir: clusterDir,
    namespaceIsolation: true,
  });
}

/** The refusal a tenant's network gets before anything runs: 7, no delegate, no record. */
async function expectRefusedBeforeAnything(conf: Record<string, unknown>): Promise<string> {
  const { sb } = ctx;
  const err = cniError(await sb.run("ADD", conf, { CNI_ARGS: POD_ARGS }));
  expect(err.code).toBe(7);
  expect(sb.invocations()).toEqual([]);
  expect(sb.recordFiles()).toEqual([]);
  expect(sb.resultFiles()).toEqual([]);
  return err.msg;
}

describe("B87 a NAD's own device keys under namespaceIsolation", () => {
  it.each([
    ["deviceID", { deviceID: VF }],
    ["pciBusID", { pciBusID: VF }],
    ["DeviceID", { DeviceID: VF }],
    // U+017F folds to "s" in Go's encoding/json, so a Go plugin reads this as pciBusID.
    ["pciBu\u017fID", { "pciBu\u017fID": VF }],
    ["runtimeConfig.deviceID", { runtimeConfig: { deviceID: VF } }],
  ])(
    "B87 a NAD's %s, no resourceName: 7 naming it, nothing run; allowUnallocatedDeviceIDs runs it",
    async (key, nadExtra) => {
      const { sb } = ctx;
      const conf = isolatedNode({ nad: "hw", nadExtra, networks: [{ name: "hw" }] });
      const msg = await expectRefusedBeforeAnything(conf);
      expect(msg).toContain(
        `pod app/web: network app/hw: the network's config asks for a device with key ` +
          `${JSON.stringify(key)}: "${VF}", but the network's NAD has no ` +
          "k8s.v1.cni.cncf.io/resourceName",
      );
      expect(msg).toContain('"allowUnallocatedDeviceIDs": true');

      const r = await sb.run(
        "ADD",
        { ...conf, allowUnallocatedDeviceIDs: true },
        { CNI_ARGS: POD_ARGS },
      );
      expect(r.code, r.stdout + r.stderr).toBe(0);
      singleJson(r.stdout);
      expect(sb.calls()).toEqual(["ADD net-a", "ADD hw"]);
      expect(sb.recordFiles()).toEqual(["ctr1-eth0.json"]);
    },
  );
});

describe("B94 a selection's hostPort under namespaceIsolation", () => {
  const portmap = { capabilities: { portMappings: true } };

  it.each(["hostPort", "HostPort"])(
    "B94 a selection's %s: 7, nothing run; allowHostPorts passes it on; no hostPort runs anyway",
    async (key) => {
      const { sb } = ctx;
      const mapping = { [key]: 8080, containerPort: 80, protocol: "tcp" };
      const networks = [{ name: "pm", portMappings: [mapping] }];
      const conf = isolatedNode({ nad: "pm", nadExtra: portmap, networks });
      const msg = await expectRefusedBeforeAnything(conf);
      expect(msg).toContain(
        "pod app/web: network app/pm: the pod's selection asks for portMappings with a hostPort",
      );
      expect(msg).toContain(JSON.stringify(mapping));
      expect(msg).toContain('"allowHostPorts": true');

      const r = await sb.run("ADD", { ...conf, allowHostPorts: true }, { CNI_ARGS: POD_ARGS });
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(sb.calls()).toEqual(["ADD net-a", "ADD pm"]);
      expect(stdinOf(sb.invocations()[1]!).runtimeConfig).toEqual({ portMappings: [mapping] });

      // The rule is about the node's ports: a mapping inside the pod runs under isolation.
      const inPod = { containerPort: 80, protocol: "tcp" };
      isolatedNode({
        nad: "pm",
        nadExtra: portmap,
        networks: [{ name: "pm", portMappings: [inPod] }],
      });
      const ctr2 = await sb.run("ADD", conf, { CNI_ARGS: POD_ARGS, CNI_CONTAINERID: "ctr2" });
      expect(ctr2.code, ctr2.stdout + ctr2.stderr).toBe(0);
      expect(stdinOf(sb.invocations()[3]!).runtimeConfig).toEqual({ portMappings: [inPod] });
    },
  );
});

describe("B97 CNI_NETNS naming Plexus's own network namespace", () => {
  it('B97 ADD, CHECK: 4, nothing run; DEL exits 0, delegates get CNI_NETNS=""', async () => {
    const { sb } = ctx;
    const conf = sb.config([sb.delegate("net-a"), sb.delegate("net-b")]);
    const added = await sb.run("ADD", conf, { CNI_NETNS: podNetns() });
    expect(added.code, added.stdout + added.stderr).toBe(0);
    expect(sb.calls()).toEqual(["ADD net-a", "ADD net-b"]);

    // /proc/self is the spawned plexus; the test's own process is in that namespace too.
    for (const own of ["/proc/self/ns/net", `/proc/${process.pid}/ns/net`]) {
      const add = cniError(await sb.run("ADD", conf, { CNI_CONTAINERID: "ctr2", CNI_NETNS: own }));
      expect(add.code).toBe(4);
      expect(add.msg).toContain(
        `CNI_NETNS ${JSON.stringify(own)} is Plexus's own network namespace`,
      );
    }
    const check = cniError(await sb.run("CHECK", conf, { CNI_NETNS: "/proc/self/ns/net" }));
    expect(check.code).toBe(4);
    expect(check.msg).toContain("Plexus's own network namespace");
    expect(sb.calls()).toEqual(["ADD net-a", "ADD net-b"]);
    expect(sb.recordFiles()).toEqual(["ctr1-eth0.json"]);

    const del = await sb.run("DEL", conf, { CNI_NETNS: "/proc/self/ns/net" });
    expect(del.code, del.stdout + del.stderr).toBe(0);
    expect(del.stdout).toBe("");
    const dels = sb.invocations().filter((i) => i.command === "DEL");
    expect(dels.map((i) => [i.network, i.cniEnv.CNI_CONTAINERID, i.cniEnv.CNI_NETNS])).toEqual([
      ["net-b", "ctr1", ""],
      ["net-a", "ctr1", ""],
    ]);
    expect(sb.recordFiles()).toEqual([]);
    expect(sb.resultFiles()).toEqual([]);
  });
});

/**
 * A chained plugin that holds its ADD until the test writes `releaseFile` (after writing
 * `heldFile`): a delegate still at work, for as long as the test needs, whatever the machine's
 * speed. Every other command exits 0 at once.
 */
const HOLD_PLUGIN = `#!/usr/bin/env node
const fs = require("node:fs");
const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
const command = process.env.CNI_COMMAND;
if (command === "VERSION") {
  process.stdout.write(JSON.stringify({ cniVersion: "1.1.0", supportedVersions: ["1.1.0"] }));
  process.exit(0);
}
const chunks = [];
const buf = Buffer.alloc(65536);
for (;;) {
  let n;
  try {
    n = fs.readSync(0, buf, 0, buf.length, null);
  } catch (err) {
    if (err.code === "EAGAIN") { sleep(5); continue; }
    if (err.code === "EOF") break;
    throw err;
  }
  if (n === 0) break;
  chunks.push(Buffer.from(buf.subarray(0, n)));
}
const conf = JSON.parse(Buffer.concat(chunks).toString("utf8"));
if (command === "ADD") {
  fs.writeFileSync(conf.heldFile, String(process.pid));
  while (!fs.existsSync(conf.releaseFile)) sleep(20);
  process.stdout.write(JSON.stringify({ ...conf.prevResult, cniVersion: conf.cniVersion }));
}
`;

describe("B96 a CNI GC while a container's ADD holds its lock", () => {
  it("B96 a busy container is valid in all of the GC: no DEL; cache, record stay", async () => {
    const { sb } = ctx;
    const holdPath = join(sb.binDir, "hold");
    writeFileSync(holdPath, HOLD_PLUGIN);
    chmodSync(holdPath, 0o755);
    const heldFile = join(sb.root, "held");
    const releaseFile = join(sb.root, "release");
    const netA = sb.delegate("net-a", { cniVersion: "1.1.0" });
    const fixtureB = sb.delegate("net-b", { cniVersion: "1.1.0" });
    const netB = {
      cniVersion: "1.1.0",
      name: "net-b",
      plugins: [
        { type: fixtureB.type, debugFile: fixtureB.debugFile },
        { type: "hold", heldFile, releaseFile },
      ],
    };
    const conf = sb.config([netA, netB], { cniVersion: "1.1.0", delegateTimeoutSeconds: 120 });
    let addDone = false;
    const adding = sb.run("ADD", conf, {}, { timeoutMs: 120_000 }).finally(() => (addDone = true));
    try {
      // net-b's ADD has started (the fixture logged it, the hold plugin is waiting): net-a's
      // ADD is done and cached, and the ADD still holds ctr1's lock.
      await waitFor(
        () => sb.calls().includes("ADD net-b") && existsSync(heldFile),
        30_000,
        "the ADD of net-b to be under way",
      );
      expect(sb.resultFiles()).toEqual(["net-a-ctr1-eth0"]);
      expect(sb.recordFiles()).toEqual(["ctr1-eth0.json"]);

      const valid = [{ containerID: "other", ifname: "eth0" }];
      const gc = await sb.run("GC", { ...conf, "cni.dev/valid-attachments": valid });
      expect(gc.code, gc.stdout + gc.stderr).toBe(0);
      expect(addDone, "the ADD still runs (and holds ctr1's lock) after the GC").toBe(false);
      expect(sb.calls()).toEqual(["ADD net-a", "ADD net-b", "GC net-a", "GC net-b"]);
      const [gcA, gcB] = sb.invocations().slice(2).map(stdinOf);
      expect(gcA!["cni.dev/valid-attachments"]).toEqual([{ containerID: "ctr1", ifname: "eth0" }]);
      expect(gcB!["cni.dev/valid-attachments"]).toEqual([{ containerID: "ctr1", ifname: "net1" }]);
      expect(sb.resultFiles()).toEqual(["net-a-ctr1-eth0"]);
    } finally {
      writeFileSync(releaseFile, "");
      await adding.catch(() => {});
    }
    const added = await adding;
    expect(added.code, added.stdout + added.stderr).toBe(0);
    singleJson(added.stdout);
    expect(sb.calls().filter((c) => c.startsWith("DEL"))).toEqual([]);
    expect(sb.recordFiles()).toEqual(["ctr1-eth0.json"]);
    expect(sb.resultFiles()).toEqual(["net-a-ctr1-eth0", "net-b-ctr1-net1"]);
  });
});
