/**
 * The person-facing commands in-process, against a file-backed cluster and against the
 * fake API server, with the fixture plugin as delegates: `explain` shows ADD's plan and exactly
 * the error ADD gives (checked against the built binary's ADD), `validate` finds a missing
 * binary, a typo in a NAD, an undeclared capability, overlapping ranges and a plugin that does not
 * speak the NAD's cniVersion, `doctor` an expired token, refused credentials, a stale record and a
 * runtime config that is not Plexus's, and `records` lists, shows and tears down a record.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startDaemon } from "../../src/daemon/main";
import { silentLogger } from "../../src/log/logger";
import { doctor } from "../../src/ops/doctor";
import { explain, renderExplanation } from "../../src/ops/explain";
import { recordsRetryMain } from "../../src/ops/housekeeping";
import { recordsMain } from "../../src/ops/records";
import { RecordStore } from "../../src/nodestate/record";
import { validate } from "../../src/ops/validate";
import { type FakeApiServer, startFakeApiServer, writeKubeconfig } from "../support/fake-apiserver";
import { podWithDevices, startFakePodResources } from "../support/fake-pod-resources";
import { cniError, Sandbox, TEST_PATH } from "../support/plexus-bin";

const NS = "demo";
let sb: Sandbox;
let api: FakeApiServer | undefined;
beforeEach(() => {
  sb = new Sandbox("plx-ops-");
});
afterEach(async () => {
  await api?.close();
  api = undefined;
  await sb.dispose();
});

const nad = (name: string, config: Record<string, unknown> | string) => ({
  apiVersion: "k8s.cni.cncf.io/v1",
  kind: "NetworkAttachmentDefinition",
  metadata: { namespace: NS, name },
  spec: { config: typeof config === "string" ? config : JSON.stringify(config) },
});
const pod = (name: string, networks: string) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: {
    namespace: NS,
    name,
    uid: `uid-${name}`,
    annotations: { "k8s.v1.cni.cncf.io/networks": networks },
  },
});

/**
 * A node: net.d with Plexus's conflist first and the default network, a manifest dir, the fixture
 * as plugins.
 */
function node(
  objects: object[],
  options: { kubeconfig?: string; daemonSocket?: string; extra?: Record<string, unknown> } = {},
) {
  const confDir = join(sb.root, "net.d");
  const clusterDir = join(sb.root, "cluster");
  mkdirSync(confDir, { recursive: true });
  mkdirSync(clusterDir, { recursive: true });
  const plexus = {
    type: "plexus",
    clusterNetwork: "default-net",
    confDir,
    cniDir: sb.cniDir,
    daemonSocket: options.daemonSocket ?? "",
    ...(options.kubeconfig ? { kubeconfig: options.kubeconfig } : { fileClusterDir: clusterDir }),
    ...options.extra,
  };
  writeFileSync(
    join(confDir, "00-plexus.conflist"),
    JSON.stringify({ cniVersion: "1.0.0", name: "plexus-net", plugins: [plexus] }),
  );
  writeFileSync(
    join(confDir, "10-default.conflist"),
    JSON.stringify({
      cniVersion: "1.0.0",
      name: "default-net",
      plugins: [{ type: "noop", debugFile: sb.setBehaviours("default-net", {}) }],
    }),
  );
  writeFileSync(
    join(clusterDir, "objects.yaml"),
    objects.map((x) => `---\n${JSON.stringify(x)}\n`).join(""),
  );
  sb.installPlugin("noop");
  const env = { PATH: TEST_PATH, CNI_PATH: sb.binDir };
  const flags = { cniConfDir: confDir };
  /** The config the runtime would pass (the conflist's Plexus entry with name and cniVersion). */
  const stdinConf = { ...plexus, name: "plexus-net", cniVersion: "1.0.0" };
  return { confDir, clusterDir, env, flags, stdinConf };
}

const noopConf = (extra: Record<string, unknown> = {}) => ({
  cniVersion: "1.0.0",
  type: "noop",
  ...extra,
});

/**
 * What the built binary's ADD says for the pod (the sandbox's netns is this process's own; the
 * fixture never enters it).
 */
async function addError(stdinConf: object, podName: string): Promise<string> {
  const r = await sb.run("ADD", stdinConf, {
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${NS};K8S_POD_NAME=${podName};K8S_POD_UID=uid-${podName}`,
  });
  return cniError(r).msg;
}

describe("plexus explain: ADD's plan without running a plugin", () => {
  it("lists each network in ADD's order with its interface, plugin config after name injection, args.cni, runtimeConfig, env and binary", async () => {
    const n = node([
      nad("blue", noopConf({ capabilities: { ips: true } })),
      { ...nad("green", noopConf()), spec: {} },
      pod(
        "web",
        JSON.stringify([
          { name: "blue", ips: ["10.1.0.5/24"] },
          { name: "green", interface: "data0" },
        ]),
      ),
    ]);
    // green has no spec.config: its config is the conf dir's file of that name (as ADD finds it).
    writeFileSync(
      join(n.confDir, "20-green.conflist"),
      JSON.stringify({ cniVersion: "1.0.0", name: "green", plugins: [{ type: "noop" }] }),
    );
    const r = await explain(`${NS}/web`, n.flags, n.env);
    expect(r.errors).toEqual([]);
    expect(r.attachments.map((a) => [a.network, a.ifName, a.isDefault])).toEqual([
      ["default-net", "eth0", true],
      ["demo/blue", "net1", false],
      ["demo/green", "data0", false],
    ]);
    expect(r.attachments.map((a) => a.source)).toEqual([
      undefined,
      "spec.config",
      join(n.confDir, "20-green.conflist"),
    ]);
    const blue = r.attachments[1]!.plugins[0]!;
    expect(blue.binary).toBe(join(sb.binDir, "noop"));
    expect(blue.stdin).toMatchObject({
      name: "blue",
      cniVersion: "1.0.0",
      type: "noop",
      args: { cni: { ips: ["10.1.0.5/24"] } },
      runtimeConfig: { ips: ["10.1.0.5/24"] },
    });
    expect(blue.stdin).not.toHaveProperty("capabilities");
    expect(blue.env).toMatchObject({
      CNI_COMMAND: "ADD",
      CNI_IFNAME: "net1",
      CNI_PATH: sb.binDir,
      CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${NS};K8S_POD_NAME=web;K8S_POD_UID=uid-web`,
    });
    const text = renderExplanation(r);
    expect(text).toContain("ADD would attach 3 network(s)");
    expect(text).toContain(`type noop → ${join(sb.binDir, "noop")}`);
    // Nothing ran: no plugin invocation, no record, no status written.
    expect(sb.invocations()).toEqual([]);
    expect(sb.recordFiles()).toEqual([]);
  });

  it.each([
    [
      "a missing plugin binary",
      [nad("blue", noopConf({ type: "absent-plugin" })), pod("web", "blue")],
      "absent-plugin",
    ],
    [
      "a typo in a NAD (trailing comma)",
      [nad("blue", '{"cniVersion":"1.0.0","type":"noop",}'), pod("web", "blue")],
      "spec.config",
    ],
    [
      "an undeclared capability",
      [
        nad("blue", noopConf()),
        pod("web", JSON.stringify([{ name: "blue", deviceID: "0000:03:00.1" }])),
      ],
      '"deviceID"',
    ],
    ["a NAD that does not exist", [pod("web", "nope")], "nope"],
  ])(
    "with %s: explain reports the error ADD gives, word for word",
    async (_label, objects, needle) => {
      const n = node(objects);
      const r = await explain(`${NS}/web`, n.flags, n.env);
      expect(r.errors).toHaveLength(1);
      const add = await addError(n.stdinConf, "web");
      // explain runs here under Node, ADD in the Bun executable: JSON.parse words its complaint per
      // engine, so that tail is left out of the comparison (in the executable both are Bun's).
      const engineFree = (m: string) => m.replace(/is not valid JSON: .*/, "is not valid JSON: …");
      expect(engineFree(r.errors[0]!.msg)).toBe(engineFree(add));
      expect(add).toContain(needle);
    },
  );

  it("M10 N7.4 explain reports a deviceID no allocation backs, as ADD words it", async () => {
    const chosen = JSON.stringify([{ name: "blue", deviceID: "0000:03:00.1" }]);
    const blue = nad("blue", noopConf({ capabilities: { deviceID: true } }));
    const objects = [blue, pod("web", chosen)];
    const n = node(objects, { extra: { namespaceIsolation: true } });
    const r = await explain(`${NS}/web`, n.flags, n.env);
    const add = await addError(n.stdinConf, "web");
    expect(r.errors.map((e) => e.msg)).toEqual([add]);
    expect(add).toContain('"allowUnallocatedDeviceIDs": true');
  });

  it("M9 B28 explain reports every problem of the pod (all missing NADs, every bad network), ADD's first one first", async () => {
    const objects = [
      nad("bad", '{"cniVersion":"1.0.0","type":"noop",}'),
      nad("good", noopConf()),
      pod("web", "missing-1,good,bad,missing-2"),
    ];
    const n = node(objects, { extra: { clusterNetwrok: "typo", SocketDir: "/run/multus" } });
    const r = await explain(`${NS}/web`, n.flags, n.env);
    const add = await addError(n.stdinConf, "web");
    expect(r.errors[0]!.msg).toBe(add);
    expect(r.errors.map((e) => e.msg)).toEqual([
      expect.stringMatching(
        /network demo\/missing-1 requested .*no NetworkAttachmentDefinition missing-1/,
      ),
      expect.stringMatching(/network demo\/bad: .*spec\.config is not valid JSON/),
      expect.stringMatching(
        /network demo\/missing-2 requested .*no NetworkAttachmentDefinition missing-2/,
      ),
    ]);
    expect(renderExplanation(r)).toContain(
      "ADD would fail (it stops at the first; all 3 problems found)",
    );
    // M1: the node config's unknown keys are named too.
    expect(r.notes).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /`clusterNetwrok` is not a Plexus key; did you mean `clusterNetwork`\?/,
        ),
        expect.stringMatching(
          /`SocketDir` is a key of Multus's thick-plugin daemon: accepted, has no effect here/,
        ),
      ]),
    );
  });

  it("M1 a missing primary plugin binary is one of 'all N problems', beside a missing NAD", async () => {
    const n = node([pod("web", "missing-1")]);
    writeFileSync(
      join(n.confDir, "10-default.conflist"),
      JSON.stringify({
        cniVersion: "1.0.0",
        name: "default-net",
        plugins: [{ type: "gone-primary" }],
      }),
    );
    const r = await explain(`${NS}/web`, n.flags, n.env);
    expect(r.errors.map((e) => e.msg)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/no NetworkAttachmentDefinition missing-1/),
        expect.stringMatching(/network "default-net": plugin type="gone-primary" is missing/),
      ]),
    );
    expect(renderExplanation(r)).toContain("all 2 problems found");
  });

  it("M10 shows the device chosen for a NAD with a resourceName, and the deviceID its plugins get", async () => {
    const socket = join(sb.root, "kubelet.sock");
    const kubelet = await startFakePodResources(socket, [
      podWithDevices(NS, "web", { app: { "intel.com/sriov": ["0000:3b:02.1"] } }),
    ]);
    try {
      const sriov = {
        ...nad("sriov", noopConf({ capabilities: { deviceID: true } })),
        metadata: {
          namespace: NS,
          name: "sriov",
          annotations: { "k8s.v1.cni.cncf.io/resourceName": "intel.com/sriov" },
        },
      };
      const n = node([sriov, pod("web", "sriov")], {
        extra: { podResourcesSocket: socket, deviceInfoDir: join(sb.root, "devinfo") },
      });
      const r = await explain(`${NS}/web`, n.flags, n.env);
      expect(r.errors).toEqual([]);
      expect(r.attachments[1]!.device).toMatchObject({
        resourceName: "intel.com/sriov",
        deviceID: "0000:3b:02.1",
        from: "kubelet",
      });
      expect(r.attachments[1]!.plugins[0]!.stdin).toMatchObject({
        deviceID: "0000:3b:02.1",
        runtimeConfig: { deviceID: "0000:3b:02.1" },
      });
      expect(renderExplanation(r)).toContain(
        "device: 0000:3b:02.1 of intel.com/sriov (allocated by kubelet)",
      );
    } finally {
      await kubelet.close();
    }
  });

  it("writes nothing to the cluster: the event ADD would record is shown as a note", async () => {
    const n = node([pod("web", "nope")]);
    const r = await explain(`${NS}/web`, n.flags, n.env);
    expect(r.notes.join("\n")).toContain("NoNetworkFound");
    expect(() => readFileSync(join(n.clusterDir, "status", "events.jsonl"))).toThrow();
  });

  it("--file POD.yaml --nads DIR: a dry run without a cluster", async () => {
    const n = node([]);
    const nadDir = join(sb.root, "nads");
    mkdirSync(nadDir);
    writeFileSync(join(nadDir, "blue.yaml"), JSON.stringify(nad("blue", noopConf())));
    const podFile = join(sb.root, "pod.yaml");
    writeFileSync(
      podFile,
      `apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: ${NS}\n  annotations:\n  ` +
        `  k8s.v1.cni.cncf.io/networks: blue@fast0\n`,
    );
    const r = await explain(undefined, { ...n.flags, file: podFile, nads: nadDir }, n.env);
    expect(r.errors).toEqual([]);
    expect(r.pod).toBe(`${NS}/web`);
    expect(r.attachments.map((a) => `${a.network}@${a.ifName}`)).toEqual([
      "default-net@eth0",
      "demo/blue@fast0",
    ]);
  });

  it("against the API server: reads the pod and NADs, writes nothing (no status, no event)", async () => {
    api = await startFakeApiServer();
    const kubeconfig = writeKubeconfig(api, { dir: sb.root });
    api.addPod({
      metadata: {
        namespace: NS,
        name: "web",
        uid: "uid-web",
        annotations: { "k8s.v1.cni.cncf.io/networks": "blue,missing-one" },
      },
    });
    api.addNad({
      metadata: { namespace: NS, name: "blue" },
      spec: { config: JSON.stringify(noopConf()) },
    });
    const n = node([], { kubeconfig });
    const r = await explain(`${NS}/web`, n.flags, n.env);
    expect(r.errors.map((e) => e.msg).join()).toContain("missing-one");
    expect(api.requests.filter((q) => q.method !== "GET")).toEqual([]);
    expect(api.events()).toEqual([]);
  });
});

describe("plexus validate: can this node run the NAD", () => {
  it("B86 a NAD whose type allowedPluginTypes does not list is an error, and its binary is never run, not even for VERSION", async () => {
    const ran = join(sb.root, "evil-ran");
    const evil = join(sb.binDir, "evil");
    const version = '{"cniVersion":"1.0.0","supportedVersions":["1.0.0"]}';
    writeFileSync(evil, `#!/bin/sh\ntouch '${ran}'\necho '${version}'\n`);
    chmodSync(evil, 0o755);
    const nads = [nad("evil", noopConf({ type: "evil" }))];
    const refused = node(nads, { extra: { allowedPluginTypes: ["noop"] } });
    const { reports } = await validate(`${NS}/evil`, refused.flags, refused.env);
    expect(reports[0]!.findings).toEqual(
      expect.arrayContaining([
        { level: "error", msg: expect.stringMatching(/"evil".*allowedPluginTypes.*no binary/) },
      ]),
    );
    expect(existsSync(ran)).toBe(false);
    // Without the allow-list the same NAD's binary answers VERSION: the check above can fail.
    const open = node(nads);
    await validate(`${NS}/evil`, open.flags, open.env);
    expect(existsSync(ran)).toBe(true);
  });

  it("M1 names the node config's unknown keys and a NAD conflist's unread top-level keys, each with a suggestion; keys in other cases are read", async () => {
    const n = node(
      [
        nad("listy", {
          CNIVersion: "1.0.0",
          Name: "listy",
          disableChek: true,
          Plugins: [{ TYPE: "noop" }],
        }),
      ],
      { extra: { namespaceIsolaton: true } },
    );
    const { reports, notes } = await validate(`${NS}/listy`, n.flags, n.env);
    expect(notes).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /`namespaceIsolaton` is not a Plexus key; did you mean `namespaceIsolation`\?/,
        ),
      ]),
    );
    expect(reports[0]!.findings).toEqual(
      expect.arrayContaining([
        {
          level: "warning",
          msg: expect.stringMatching(
            /`disableChek` is not a conflist key .*did you mean `disableCheck`\?/,
          ),
        },
        { level: "ok", msg: expect.stringContaining("config parses (from spec.config): noop") },
      ]),
    );
  });

  it("reports a missing binary, a typo, overlapping ranges on one bridge, an undeclared capability a pod requests, and a cniVersion the plugin does not speak", async () => {
    const old = join(sb.binDir, "old-plugin");
    writeFileSync(
      old,
      `#!/bin/sh\necho '{"cniVersion":"0.4.0","supportedVersions":["0.3.1","0.4.0"]}'\n`,
    );
    chmodSync(old, 0o755);
    sb.installPlugin("bridge");
    sb.installPlugin("host-local"); // the IPAM binary, which validate looks up as well
    const hostLocal = (subnet: string, extra = {}) => ({
      type: "host-local",
      ranges: [[{ subnet, ...extra }]],
    });
    const n = node([
      nad("absent", noopConf({ type: "absent-plugin" })),
      nad("typo", '{"cniVersion":"1.0.0","type":"noop",}'),
      nad("red", noopConf({ type: "bridge", bridge: "br-x", ipam: hostLocal("10.9.0.0/24") })),
      nad(
        "pink",
        noopConf({
          type: "bridge",
          bridge: "br-x",
          ipam: hostLocal("10.9.0.0/24", { rangeStart: "10.9.0.100", rangeEnd: "10.9.0.200" }),
        }),
      ),
      nad(
        "elsewhere",
        noopConf({ type: "bridge", bridge: "br-y", ipam: hostLocal("10.9.0.0/24") }),
      ),
      nad("outside", noopConf({ ipam: hostLocal("10.8.0.0/24", { rangeEnd: "10.8.1.9" }) })),
      nad("plain", noopConf()),
      nad("old", { cniVersion: "1.0.0", type: "old-plugin" }),
      pod("web", JSON.stringify([{ name: "plain", deviceID: "0000:03:00.1" }])),
    ]);
    const { reports } = await validate(undefined, { ...n.flags, all: true }, n.env);
    const of = (name: string) =>
      reports
        .find((r) => r.nad === `${NS}/${name}`)!
        .findings.filter((f) => f.level === "error")
        .map((f) => f.msg);
    expect(of("absent").join()).toContain('plugin type="absent-plugin" is missing');
    expect(of("typo").join()).toMatch(/spec\.config is not valid JSON/);
    expect(of("red")).toEqual([
      expect.stringMatching(
        /overlaps 10\.9\.0\.100-10\.9\.0\.200 in 10\.9\.0\.0\/24 of demo\/pink on the same bridge br-x/,
      ),
    ]);
    expect(of("elsewhere")).toEqual([]);
    expect(of("outside").join()).toContain("rangeEnd 10.8.1.9 is outside subnet 10.8.0.0/24");
    expect(of("plain")).toEqual([
      expect.stringContaining(
        'pod demo/web: network demo/plain (config "plain"): the pod requests "deviceID", but no ' +
          "plugin of the network declares that capability",
      ),
    ]);
    expect(of("old").join()).toContain(
      "does not speak the network's cniVersion 1.0.0 (it speaks 0.3.1, 0.4.0)",
    );
  });

  it("macvlan, ipvlan, vlan master and host-device device must exist on the node; a bridge not", async () => {
    for (const t of ["macvlan", "ipvlan", "vlan", "host-device", "bridge"]) sb.installPlugin(t);
    const n = node([
      nad("mv-absent", noopConf({ type: "macvlan", master: "plx-absent0" })),
      nad("mv-lo", noopConf({ type: "macvlan", master: "lo" })),
      nad("mv-default", noopConf({ type: "macvlan" })),
      nad("ipv-case", noopConf({ type: "ipvlan", Master: "plx-absent1" })),
      nad("vlan-bad-name", noopConf({ type: "vlan", master: "../../etc", vlanId: 5 })),
      nad("hd-absent", noopConf({ type: "host-device", device: "plx-absent2" })),
      nad("br-new", noopConf({ type: "bridge", bridge: "plx-absent3" })),
    ]);
    const { reports } = await validate(undefined, { ...n.flags, all: true }, n.env);
    const of = (name: string) =>
      reports
        .find((r) => r.nad === `${NS}/${name}`)!
        .findings.filter((f) => f.level === "error")
        .map((f) => f.msg);
    expect(of("mv-absent")).toEqual([
      expect.stringContaining('plugin macvlan: master "plx-absent0" does not exist on this node'),
    ]);
    expect(of("mv-lo")).toEqual([]);
    expect(of("mv-default")).toEqual([]);
    expect(of("ipv-case")).toEqual([
      expect.stringContaining('plugin ipvlan: master "plx-absent1" does not exist'),
    ]);
    expect(of("vlan-bad-name")).toEqual([expect.stringContaining("is not a valid interface name")]);
    expect(of("hd-absent")).toEqual([
      expect.stringContaining('plugin host-device: device "plx-absent2" does not exist'),
    ]);
    expect(of("br-new")).toEqual([]);
  });

  it("one NAD by name, or from --file; a NAD that does not exist is an error", async () => {
    const n = node([nad("blue", noopConf())]);
    const one = await validate(`${NS}/blue`, n.flags, n.env);
    expect(one.reports.map((r) => [r.nad, r.findings.map((f) => f.level)])).toEqual([
      [`${NS}/blue`, ["ok", "ok"]],
    ]);
    const file = join(sb.root, "typo.yaml");
    writeFileSync(file, JSON.stringify(nad("blue", '{"cniVersion":"1.0.0","type":"noop"')));
    const fromFile = await validate(undefined, { ...n.flags, file }, n.env);
    expect(fromFile.reports[0]!.findings[0]).toMatchObject({
      level: "error",
      msg: expect.stringContaining("not valid JSON"),
    });
    const missing = await validate(`${NS}/nope`, n.flags, n.env);
    expect(missing.reports[0]!.findings).toEqual([
      { level: "error", msg: `no NetworkAttachmentDefinition ${NS}/nope exists` },
    ]);
  });

  it("against the API server: lists every NAD and this node's pods, writes nothing", async () => {
    api = await startFakeApiServer();
    const kubeconfig = writeKubeconfig(api, { dir: sb.root });
    api.addNad({
      metadata: { namespace: NS, name: "blue" },
      spec: { config: JSON.stringify(noopConf()) },
    });
    api.addNad({ metadata: { namespace: NS, name: "bad" }, spec: { config: "{" } });
    api.addPod({
      metadata: {
        namespace: NS,
        name: "web",
        annotations: {
          "k8s.v1.cni.cncf.io/networks": JSON.stringify([
            { name: "blue", deviceID: "0000:03:00.1" },
          ]),
        },
      },
      spec: { nodeName: "node-1" },
    });
    api.addPod({
      metadata: {
        namespace: NS,
        name: "other",
        annotations: {
          "k8s.v1.cni.cncf.io/networks": JSON.stringify([
            { name: "blue", deviceID: "0000:03:00.2" },
          ]),
        },
      },
      spec: { nodeName: "node-2" },
    });
    const n = node([], { kubeconfig });
    const { reports } = await validate(
      undefined,
      { ...n.flags, all: true, nodeName: "node-1" },
      n.env,
    );
    const errors = Object.fromEntries(
      reports.map((r) => [r.nad, r.findings.filter((f) => f.level === "error").map((f) => f.msg)]),
    );
    expect(errors[`${NS}/bad`]!.join()).toContain("not valid JSON");
    // Only node-1's pod is checked.
    expect(errors[`${NS}/blue`]).toEqual([
      expect.stringContaining(
        'pod demo/web: network demo/blue (config "blue"): the pod requests "deviceID"',
      ),
    ]);
    expect(api.requests.filter((q) => q.method !== "GET")).toEqual([]);
    expect(
      api.requests.some(
        (q) =>
          q.path === "/api/v1/pods" &&
          new URLSearchParams(q.query).get("fieldSelector") === "spec.nodeName=node-1",
      ),
    ).toBe(true);
  });
});

function jwt(expSeconds: number): string {
  const b = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
  const claims = { sub: "system:serviceaccount:kube-system:plexus", exp: expSeconds };
  return `${b({ alg: "RS256" })}.${b(claims)}.sig`;
}

describe("plexus doctor: the node in one screen", () => {
  const level = (checks: Array<{ level: string; subject: string }>, subject: string) =>
    checks.filter((c) => c.subject === subject).map((c) => c.level);

  it("a healthy file-backed node: every line ok but the absent daemon", async () => {
    const n = node([]);
    const checks = await doctor(n.flags, n.env);
    expect(checks.filter((c) => c.level !== "ok")).toEqual([]);
    expect(checks.map((c) => c.subject)).toEqual(
      expect.arrayContaining([
        "runtime config",
        "plexus config",
        "default network",
        "kubernetes",
        "records",
        "disk",
        "log",
      ]),
    );
  });

  it("M1 a missing primary plugin binary is an error, looked up in binDir and CNI_PATH as a call does", async () => {
    const n = node([]);
    const primary = (type: string) =>
      writeFileSync(
        join(n.confDir, "10-default.conflist"),
        JSON.stringify({ cniVersion: "1.0.0", name: "default-net", plugins: [{ type }] }),
      );
    primary("gone-primary");
    const checks = await doctor(n.flags, n.env);
    const d = checks.filter((c) => c.subject === "default network");
    expect(d).toEqual([
      {
        level: "error",
        subject: "default network",
        msg: expect.stringMatching(
          /default-net .*plugin type="gone-primary" is missing.*: every ADD fails/,
        ),
      },
    ]);
    expect(d[0]!.msg).toContain(sb.binDir);
    // The same binary present under another name in CNI_PATH: ok.
    primary("noop");
    expect(level(await doctor(n.flags, n.env), "default network")).toEqual(["ok"]);
  });

  it("an expired token is an error with what to do; the API server accepting it still answers", async () => {
    const expired = jwt(Math.floor(Date.now() / 1000) - 60);
    api = await startFakeApiServer({ token: expired });
    const kubeconfig = writeKubeconfig(api, { dir: sb.root, tokenFile: true });
    const n = node([], { kubeconfig });
    const checks = await doctor(n.flags, n.env);
    expect(checks.find((c) => c.subject === "token")).toMatchObject({
      level: "error",
      msg: expect.stringContaining("expired at"),
    });
    expect(level(checks, "api server")).toEqual(["ok"]);
  });

  it("B72 a FIFO where the kubeconfig's token file is: doctor finishes at once and names it as an error", async () => {
    api = await startFakeApiServer();
    const kubeconfig = writeKubeconfig(api, { dir: sb.root, tokenFile: true });
    rmSync(`${kubeconfig}.token`);
    execFileSync("mkfifo", [`${kubeconfig}.token`]);
    const n = node([], { kubeconfig });
    const started = performance.now();
    const checks = await doctor(n.flags, n.env);
    expect(performance.now() - started).toBeLessThan(5000);
    expect(checks.find((c) => c.subject === "kubeconfig")).toMatchObject({
      level: "error",
      msg: expect.stringContaining("it is a FIFO, not a regular file"),
    });
    expect(api.requests).toEqual([]);
  });

  it("the daemon's socket: synced caches with their sizes; a socket file nobody answers on is an error", async () => {
    api = await startFakeApiServer();
    const kubeconfig = writeKubeconfig(api, { dir: sb.root });
    api.addNad({
      metadata: { namespace: NS, name: "blue" },
      spec: { config: JSON.stringify(noopConf()) },
    });
    api.addPod({ metadata: { namespace: NS, name: "web" }, spec: { nodeName: "node-1" } });
    const socket = join(sb.root, "plexus.sock");
    const d = await startDaemon(
      { kubeconfig, nodeName: "node-1", socket, apiRequestTimeout: "1", apiTotalTimeout: "3" },
      {},
      silentLogger(),
    );
    try {
      const n = node([], { kubeconfig, daemonSocket: socket });
      await expect
        .poll(async () => (await doctor(n.flags, n.env)).find((c) => c.subject === "daemon"), {
          timeout: 5000,
        })
        .toMatchObject({
          level: "ok",
          msg: `${socket}: caches synced (1 pod(s) of this node, 1 NAD(s))`,
        });
    } finally {
      await d.stop();
    }
    const dead = join(sb.root, "dead.sock");
    writeFileSync(dead, "");
    const n = node([], { kubeconfig, daemonSocket: dead });
    expect((await doctor(n.flags, n.env)).find((c) => c.subject === "daemon")).toMatchObject({
      level: "error",
      msg: expect.stringContaining("does not answer"),
    });
  });

  it("credentials the API server refuses (401) are an error naming the server", async () => {
    api = await startFakeApiServer({ token: jwt(Math.floor(Date.now() / 1000) + 3600) });
    const kubeconfig = writeKubeconfig(api, { dir: sb.root, token: "not-the-token" });
    const n = node([], { kubeconfig });
    const checks = await doctor(n.flags, n.env);
    expect(checks.find((c) => c.subject === "api server")).toMatchObject({
      level: "error",
      msg: expect.stringContaining("401"),
    });
  });

  it("a stale record (its netns is gone) is a warning pointing at plexus records", async () => {
    const n = node([]);
    mkdirSync(join(sb.cniDir, "records"), { recursive: true });
    writeFileSync(
      join(sb.cniDir, "records", "gone-eth0.json"),
      JSON.stringify({
        kind: "plexusRecordV1",
        containerId: "gone",
        ifName: "eth0",
        netns: "/var/run/netns/plx-never-existed",
        cniVersion: "1.0.0",
        cniArgs: "",
        attachments: [],
      }),
    );
    const checks = await doctor(n.flags, n.env);
    expect(checks.find((c) => c.subject === "records")).toMatchObject({
      level: "warning",
      msg: expect.stringContaining("plexus records rm ID --teardown"),
    });
  });

  it("a runtime config that is not Plexus's, and a missing readiness file, are errors", async () => {
    const n = node([]);
    writeFileSync(
      join(n.confDir, "00-aaa.conflist"),
      JSON.stringify({ cniVersion: "1.0.0", name: "other", plugins: [{ type: "bridge" }] }),
    );
    const confFile = join(sb.root, "plexus.json");
    writeFileSync(
      confFile,
      JSON.stringify({ ...n.stdinConf, readinessindicatorfile: join(sb.root, "never") }),
    );
    const checks = await doctor({ ...n.flags, config: confFile }, n.env);
    expect(checks.find((c) => c.subject === "runtime config")).toMatchObject({
      level: "error",
      msg: expect.stringContaining("00-aaa.conflist, not Plexus"),
    });
    expect(level(checks, "readiness")).toEqual(["error"]);
  });
});

describe("plexus records: list, show, rm --teardown", () => {
  function capture() {
    const out: string[] = [];
    const err: string[] = [];
    return {
      io: { out: (t: string) => void out.push(t), err: (t: string) => void err.push(t) },
      out,
      err,
    };
  }

  it("a record whose sandbox is gone: listed as stale, shown, torn down with DEL's code (every plugin DELed), then removed", async () => {
    const conf = sb.config([sb.delegate("net-a"), sb.delegate("net-b")]);
    const r = await sb.run("ADD", conf);
    expect(r.code, r.stdout).toBe(0);
    const path = join(sb.cniDir, "records", "ctr1-eth0.json");
    const rec = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
    writeFileSync(path, JSON.stringify({ ...rec, netns: "/var/run/netns/plx-gone" }));
    const flags = {
      cniDir: sb.cniDir,
      cniPath: sb.binDir,
      cniConfDir: join(sb.root, "no-such-dir"),
      logLevel: "silent",
    };

    const list = capture();
    expect(await recordsMain("list", undefined, flags, list.io)).toBe(0);
    expect(list.out.join("")).toMatch(/ctr1-eth0\s+stale\s+-\s+net-a@eth0,net-b@net1/);
    const show = capture();
    expect(await recordsMain("show", "ctr1", flags, show.io)).toBe(0);
    expect(JSON.parse(show.out.join(""))).toMatchObject({
      id: "ctr1-eth0",
      state: "stale",
      record: { containerId: "ctr1" },
    });

    rmSync(join(sb.binDir, "noop"));
    const failed = capture();
    expect(await recordsMain("rm", "ctr1-eth0", { ...flags, teardown: true }, failed.io)).toBe(1);
    expect(failed.err.join("")).toContain("record ctr1-eth0 kept");
    expect(sb.recordFiles()).toEqual(["ctr1-eth0.json"]);

    sb.installPlugin("noop");
    const ok = capture();
    expect(await recordsMain("rm", "ctr1-eth0", { ...flags, teardown: true }, ok.io)).toBe(0);
    expect(sb.calls().slice(-2)).toEqual(["DEL net-b", "DEL net-a"]);
    expect(sb.invocations().slice(-1)[0]!.cniEnv.CNI_NETNS).toBe("");
    expect(sb.recordFiles()).toEqual([]);
    expect(sb.resultFiles()).toEqual([]);
  });

  it("M7 records retry: one housekeeping pass tears down a pending record whose delegate recovered; --housekeeper stamps the node for DELs", async () => {
    const conf = sb.config([sb.delegate("net-a"), sb.delegate("net-b")]);
    expect((await sb.run("ADD", conf)).code).toBe(0);
    sb.setBehaviours("net-b", { DEL: { do: "error", error: { code: 999, msg: "down for now" } } });
    expect((await sb.run("DEL", conf)).code).toBe(1);
    const configFile = join(sb.root, "plexus.conf");
    writeFileSync(configFile, JSON.stringify(conf));
    const flags = { config: configFile, cniPath: sb.binDir, logLevel: "silent" };
    const list = capture();
    expect(await recordsMain("list", undefined, flags, list.io)).toBe(0);
    expect(list.out.join("")).toMatch(/ctr1-eth0\s+pending.*net-b@net1: code 999: .*down for now/);

    sb.setBehaviours("net-b", {});
    const retry = capture();
    expect(await recordsRetryMain({ ...flags, housekeeper: "60" }, retry.io)).toBe(0);
    expect(retry.out.join("")).toMatch(/^retried 1 pending record\(s\); 0 still pending/);
    expect(sb.calls().slice(-1)).toEqual(["DEL net-b"]);
    expect(sb.recordFiles()).toEqual([]);
    expect(new RecordStore(sb.cniDir).housekeeperAlive()).toBe(true);
    const bad = capture();
    expect(await recordsRetryMain({ ...flags, housekeeper: "abc" }, bad.io)).toBe(2);
  });

  it("an unknown ID is an error naming the directory", async () => {
    const c = capture();
    expect(
      await recordsMain(
        "show",
        "nope",
        { cniDir: sb.cniDir, cniConfDir: join(sb.root, "none") },
        c.io,
      ),
    ).toBe(1);
    expect(c.err.join("")).toContain(`no record "nope" in ${join(sb.cniDir, "records")}`);
  });
});
