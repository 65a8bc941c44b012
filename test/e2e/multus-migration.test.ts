/**
 * In-place migration from Multus (M14): a pod attached by Multus 4.x before the node's primary
 * config was switched to Plexus is DELed by dist/plexus from what Multus left on the node. The
 * attachment is made here as Multus makes it: the reference bridge plugin (with host-local) run
 * directly for eth0 and net1 with the env libcni gives it, libcni's result cache written under
 * Multus's cniDir, and Multus's delegate list written as its saveDelegates does. Subnets
 * 10.218.x.0/24.
 */
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { cniError, TEST_PATH } from "../support/plexus-bin";
import {
  CNI_BIN_DIR,
  describeE2e,
  links,
  NOTHING_LEFT,
  useE2eScope,
  type E2eScope,
  type Netns,
} from "../support/netns";
import { writeLibcniResult, writeMultusCache, type MultusDelegate } from "../support/multus-cache";
import {
  defaultNet,
  expectNetnsMatchesResult,
  expectSilentOk,
  plexusConf,
  secondaryBridgeNet,
  type Result100,
} from "./networks";

const t = useE2eScope();

/**
 * What Multus's libcni passes every delegate in CNI_ARGS (its K8S_POD_* args after IgnoreUnknown).
 */
function multusArgs(containerId: string): Array<[string, string]> {
  return [
    ["IgnoreUnknown", "true"],
    ["K8S_POD_NAMESPACE", "default"],
    ["K8S_POD_NAME", "migrated"],
    ["K8S_POD_INFRA_CONTAINER_ID", containerId],
    ["K8S_POD_UID", "7a9c1f2e-0000-4000-8000-000000000001"],
  ];
}

/**
 * One delegate ADD the way Multus's libcni runs it: the plugin binary, the CNI env, the config on
 * stdin.
 */
function libcniAdd(
  scope: E2eScope,
  options: { config: Record<string, unknown>; containerId: string; netns: Netns; ifName: string },
): Result100 {
  const [mk, mv] = scope.marker.split("=") as [string, string];
  const r = spawnSync(join(CNI_BIN_DIR, String(options.config.type)), [], {
    input: JSON.stringify(options.config),
    encoding: "utf8",
    timeout: 20_000,
    env: {
      PATH: TEST_PATH,
      [mk]: mv,
      CNI_COMMAND: "ADD",
      CNI_CONTAINERID: options.containerId,
      CNI_NETNS: options.netns.path,
      CNI_IFNAME: options.ifName,
      CNI_PATH: CNI_BIN_DIR,
      CNI_ARGS: multusArgs(options.containerId)
        .map(([k, v]) => `${k}=${v}`)
        .join(";"),
    },
  });
  expect(r.status, `bridge ADD of ${options.ifName}: ${r.stdout} ${r.stderr}`).toBe(0);
  return JSON.parse(r.stdout) as Result100;
}

interface MultusPod {
  containerId: string;
  netns: Netns;
  multusDir: string;
  /** The default network as Multus ran it, which Plexus's config now names too. */
  defaultNetwork: Record<string, unknown>;
}

/**
 * A pod Multus attached: the cluster network on eth0 and the NAD default/bridge-net on net1 (by
 * position: the annotation named no interface), each as libcni runs a delegate, then Multus's
 * files.
 */
function attachAsMultus(index: number, containerId: string): MultusPod {
  const { scope } = t;
  const netns = scope.addNetns();
  const multusDir = join(scope.root, "multus");
  const defaultNetwork = defaultNet(scope, `10.218.${index}.0/24`, "cluster-net");
  const secondary = secondaryBridgeNet(scope, `10.218.${index + 1}.0/24`);
  const delegates: Array<MultusDelegate & { ifName: string }> = [
    { config: defaultNetwork, ifName: "eth0" },
    { config: secondary, name: "default/bridge-net", ifName: "net1" },
  ];
  for (const d of delegates) {
    const result = libcniAdd(scope, { config: d.config, containerId, netns, ifName: d.ifName });
    expectNetnsMatchesResult(netns, result, { ifName: d.ifName });
    writeLibcniResult(multusDir, {
      network: String(d.config.name),
      containerId,
      ifName: d.ifName,
      config: d.config,
      netns: netns.path,
      cniArgs: multusArgs(containerId),
      result,
    });
  }
  writeMultusCache(multusDir, containerId, delegates);
  expect(
    links(netns.name)
      .map((l) => l.name)
      .sort(),
  ).toEqual(["eth0", "lo", "net1"]);
  expect(scope.ipReservations()).toEqual([
    `bridge-net/10.218.${index + 1}.2`,
    `cluster-net/10.218.${index}.2`,
  ]);
  return { containerId, netns, multusDir, defaultNetwork };
}

/**
 * Plexus's config after the switch: Multus's keys, its default network inline, and where Multus
 * kept its cache.
 */
function switchedConf(pod: MultusPod, extra: Record<string, unknown> = {}) {
  return plexusConf(t.scope, [pod.defaultNetwork], { multusCacheDir: pod.multusDir, ...extra });
}

/** What the runtime passes on DEL (the kubelet's K8S_POD_* args). */
function runtimeEnv(pod: MultusPod, netns = pod.netns.path) {
  return {
    CNI_CONTAINERID: pod.containerId,
    CNI_NETNS: netns,
    CNI_IFNAME: "eth0",
    CNI_ARGS: multusArgs(pod.containerId)
      .map(([k, v]) => `${k}=${v}`)
      .join(";"),
  };
}

/** Multus's own files for the pod: its delegate list and libcni's results. */
function multusLeftovers(pod: MultusPod): string[] {
  const out = existsSync(join(pod.multusDir, pod.containerId)) ? [pod.containerId] : [];
  const results = join(pod.multusDir, "results");
  if (existsSync(results)) out.push(...readdirSync(results).map((n) => `results/${n}`));
  return out.sort();
}

describeE2e("e2e migration from Multus: DEL of a pod Multus attached", () => {
  it("M7 C2.5 B65 DEL without a Plexus record tears down every interface and IP Multus's delegates made and removes Multus's files; DEL again with CNI_NETNS=\"\" exits 0", async () => {
    const { scope } = t;
    const pod = attachAsMultus(1, "ctr-multus");
    expect(multusLeftovers(pod)).toEqual([
      "ctr-multus",
      "results/bridge-net-ctr-multus-net1",
      "results/cluster-net-ctr-multus-eth0",
    ]);

    expectSilentOk(await scope.run("DEL", switchedConf(pod), runtimeEnv(pod)));
    expect(links(pod.netns.name).map((l) => l.name)).toEqual(["lo"]);
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    expect(multusLeftovers(pod)).toEqual([]);

    // RemovePodSandbox: the namespace is gone, DEL again without it: Plexus's own no-record path.
    scope.deleteNetns(pod.netns);
    expectSilentOk(await scope.run("DEL", switchedConf(pod), runtimeEnv(pod, "")));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    expect(multusLeftovers(pod)).toEqual([]);
  });

  it("C2.6 CHECK without a Plexus record checks Multus's attachments against libcni's cached results and changes nothing", async () => {
    const { scope } = t;
    const pod = attachAsMultus(3, "ctr-mcheck");
    expectSilentOk(await scope.run("CHECK", switchedConf(pod), runtimeEnv(pod)));
    expect(multusLeftovers(pod)).toHaveLength(3);
    expectSilentOk(await scope.run("DEL", switchedConf(pod), runtimeEnv(pod)));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    expect(multusLeftovers(pod)).toEqual([]);
  });

  it("B62 a DEL whose net1 delegate fails keeps Multus's file (and net1's cached result) for the retry, which finishes the job", async () => {
    const { scope } = t;
    const pod = attachAsMultus(5, "ctr-mfail");
    // net1's bridge DEL fails through a shim in binDir (searched before CNI_PATH) while the flag
    // file exists.
    const binDir = join(scope.root, "fail-bin");
    const flag = join(scope.root, "fail-net1");
    mkdirSync(binDir);
    writeFileSync(
      join(binDir, "bridge"),
      [
        "#!/bin/sh",
        `if [ "$CNI_COMMAND" = DEL ] && [ "$CNI_IFNAME" = net1 ] && [ -e ${flag} ]; then echo ` +
          `'{"cniVersion":"1.0.0","code":11,"msg":"device busy"}'; exit 1; fi`,
        `exec ${CNI_BIN_DIR}/bridge`,
        "",
      ].join("\n"),
    );
    chmodSync(join(binDir, "bridge"), 0o755);
    writeFileSync(flag, "");

    const err = cniError(await scope.run("DEL", switchedConf(pod, { binDir }), runtimeEnv(pod)));
    expect(err).toMatchObject({
      code: 11,
      msg: expect.stringContaining('network "default/bridge-net" (net1)'),
    });
    // eth0 is gone, net1 and its reservation are still there; Multus's file and net1's result are
    // kept.
    expect(
      links(pod.netns.name)
        .map((l) => l.name)
        .sort(),
    ).toEqual(["lo", "net1"]);
    expect(scope.ipReservations()).toEqual(["bridge-net/10.218.6.2"]);
    expect(multusLeftovers(pod)).toEqual(["ctr-mfail", "results/bridge-net-ctr-mfail-net1"]);
    expect(readFileSync(join(pod.multusDir, pod.containerId), "utf8")).toContain(
      '"plexusDelAttempts":1',
    );

    // The delegate recovers; the runtime's retry tears down what is left and removes the file.
    rmSync(flag);
    expectSilentOk(await scope.run("DEL", switchedConf(pod, { binDir }), runtimeEnv(pod)));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    expect(multusLeftovers(pod)).toEqual([]);
  });
});
