/**
 * Through dist/plexus against the test API server: a NAD without spec.config names a `.conflist`
 * of the node's config directory (N3.4.1), and the folder named after that network holds one
 * more plugin, which runs after the conflist's own, as libcni 1.3 loads a conflist file (C3.1),
 * unless the conflist says `loadOnlyInlinedPlugins`. Its `cniVersions` picks the version every
 * plugin gets (N7.1).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { startFakeApiServer, writeKubeconfig } from "../support/fake-apiserver";
import type { Sandbox } from "../support/plexus-bin";
import { cniError } from "../support/plexus-bin";
import { useSandbox } from "./use-sandbox";

const ctx = useSandbox();
const POD_ARGS = "IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=web;K8S_POD_UID=uid-web";

/**
 * The node: pod app/web asking for net-b, whose NAD has no spec.config; `net.d/20-net-b.conflist`
 * (its plugin "main", the list's keys from `list`) and `net.d/net-b/10-extra.conf` (plugin
 * "extra"). The default network is the inline delegate net-alpha.
 */
async function node(sb: Sandbox, list: Record<string, unknown>) {
  const api = await startFakeApiServer();
  onTestFinished(() => api.close());
  api.addPod({
    metadata: {
      namespace: "app",
      name: "web",
      uid: "uid-web",
      annotations: { "k8s.v1.cni.cncf.io/networks": "net-b" },
    },
    spec: { nodeName: "node-1" },
  });
  api.addNad({ metadata: { namespace: "app", name: "net-b" } });
  const confDir = join(sb.root, "net.d");
  mkdirSync(join(confDir, "net-b"), { recursive: true });
  const main = sb.delegate("net-b", { type: "main" });
  const conflist = { name: "net-b", plugins: [main], ...list };
  writeFileSync(join(confDir, "20-net-b.conflist"), JSON.stringify(conflist));
  const extra = { type: "extra", debugFile: sb.debugFilePath("net-b") };
  sb.installPlugin("extra");
  writeFileSync(join(confDir, "net-b", "10-extra.conf"), JSON.stringify(extra));
  const conf = sb.config([sb.delegate("net-alpha", { type: "alpha" })], {
    withoutKubernetes: false,
    kubeconfig: writeKubeconfig(api),
    daemonSocket: join(sb.root, "no-daemon.sock"),
    confDir,
  });
  return { api, conf };
}

describe("N3.4.1 a conf-dir NAD's conflist takes the plugins of its network's folder", () => {
  it("N3.4.1 C3.1 N7.1 the folder's plugin runs after the conflist's own, with its result, in the version cniVersions picks; DEL in reverse", async () => {
    const { sb } = ctx;
    const { conf } = await node(sb, { cniVersion: "0.4.0", cniVersions: ["1.0.0", "1.1.0"] });
    const add = await sb.run("ADD", conf, { CNI_ARGS: POD_ARGS });
    expect(add.code, add.stdout + add.stderr).toBe(0);
    const del = await sb.run("DEL", conf, { CNI_ARGS: POD_ARGS });
    expect(del.code, del.stdout + del.stderr).toBe(0);
    const calls = sb.invocations();
    expect(calls.map((c) => `${c.command} ${c.network} ${c.type}`)).toEqual([
      "ADD net-alpha alpha",
      "ADD net-b main",
      "ADD net-b extra",
      "DEL net-b extra",
      "DEL net-b main",
      "DEL net-alpha alpha",
    ]);
    const [, main, extra] = calls as Array<{ stdin: Record<string, unknown>; cniEnv: object }>;
    expect(main?.stdin).toMatchObject({ cniVersion: "1.1.0", name: "net-b", type: "main" });
    expect(extra?.stdin).toMatchObject({ cniVersion: "1.1.0", name: "net-b", type: "extra" });
    // The conflist's chain: the folder's plugin gets the result of the one before it.
    expect(extra?.stdin.prevResult).toMatchObject({
      cniVersion: "1.1.0",
      ips: [expect.anything()],
    });
    expect(extra?.cniEnv).toMatchObject({ CNI_IFNAME: "net1" });
  });

  it("N3.4.1 N7.1 loadOnlyInlinedPlugins: the conflist's own plugins only, the folder's never run", async () => {
    const { sb } = ctx;
    const { conf } = await node(sb, { cniVersion: "1.1.0", loadOnlyInlinedPlugins: true });
    const add = await sb.run("ADD", conf, { CNI_ARGS: POD_ARGS });
    expect(add.code, add.stdout + add.stderr).toBe(0);
    expect((await sb.run("DEL", conf, { CNI_ARGS: POD_ARGS })).code).toBe(0);
    expect(sb.calls()).toEqual(["ADD net-alpha", "ADD net-b", "DEL net-b", "DEL net-alpha"]);
    expect(sb.invocations().map((c) => c.type)).not.toContain("extra");
  });

  it("N3.4.1 a folder plugin that is not a plugin config fails the ADD with 7 naming the NAD and the file; nothing runs", async () => {
    const { sb } = ctx;
    const { conf } = await node(sb, { cniVersion: "1.1.0" });
    const broken = join(sb.root, "net.d", "net-b", "20-broken.conf");
    writeFileSync(broken, '{"mtu": 1500}');
    const e = cniError(await sb.run("ADD", conf, { CNI_ARGS: POD_ARGS }));
    expect(e.code).toBe(7);
    expect(e.msg).toContain("NetworkAttachmentDefinition app/net-b");
    expect(e.msg).toContain(`plugin file ${broken}`);
    expect(e.msg).toContain('"type"');
    // Resolved before anything is attached: no delegate ran.
    expect(sb.calls()).toEqual([]);
  });
});
