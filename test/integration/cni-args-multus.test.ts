/**
 * M17 through dist/plexus: Plexus run by Multus v4.0.2 as its delegate. Multus builds a delegate's
 * CNI_ARGS (pkg/types/conf.go, createRuntimeConf and newCNIRuntimeConf) from its own five
 * arguments, in this order, followed by every pair of the runtime's CNI_ARGS as the runtime gave
 * them; libcni joins them with ';'. So every key the runtime sent comes twice.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cniError } from "../support/plexus-bin";
import { useSandbox } from "./use-sandbox";

const ctx = useSandbox();
const NETWORKS = "k8s.v1.cni.cncf.io/networks";
const STATUS = "k8s.v1.cni.cncf.io/network-status";

/** containerd's CNI_ARGS for the sandbox ctr1 of pod app/web (its order: labels, then args). */
const RUNTIME_ARGS =
  "K8S_POD_INFRA_CONTAINER_ID=ctr1;K8S_POD_UID=uid-web;IgnoreUnknown=1;" +
  "K8S_POD_NAMESPACE=app;K8S_POD_NAME=web";
/** Multus's own arguments for that call: IgnoreUnknown=true, then the pod's four, in its order. */
const MULTUS_OWN =
  "IgnoreUnknown=true;K8S_POD_NAMESPACE=app;K8S_POD_NAME=web;K8S_POD_INFRA_CONTAINER_ID=ctr1;" +
  "K8S_POD_UID=uid-web";
/** What Multus v4.0.2 gives its delegate (here Plexus, on eth0) for RUNTIME_ARGS. */
const MULTUS_DELEGATE_ARGS =
  "IgnoreUnknown=true;K8S_POD_NAMESPACE=app;K8S_POD_NAME=web;K8S_POD_INFRA_CONTAINER_ID=ctr1;" +
  "K8S_POD_UID=uid-web;K8S_POD_INFRA_CONTAINER_ID=ctr1;K8S_POD_UID=uid-web;" +
  "IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=web";

/**
 * A cluster of two pods, app/web selecting net-a and app/decoy selecting net-b (all fixture
 * delegates), and Plexus's config over it.
 */
function cluster(): Record<string, unknown> {
  const { sb } = ctx;
  const dir = join(sb.root, "cluster");
  mkdirSync(dir, { recursive: true });
  const nad = (name: string) => ({
    apiVersion: "k8s.cni.cncf.io/v1",
    kind: "NetworkAttachmentDefinition",
    metadata: { namespace: "app", name },
    spec: { config: JSON.stringify(sb.delegate(name)) },
  });
  const pod = (name: string, network: string) => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { namespace: "app", name, uid: `uid-${name}`, annotations: { [NETWORKS]: network } },
  });
  const objects = [nad("net-a"), nad("net-b"), pod("web", "net-a"), pod("decoy", "net-b")];
  writeFileSync(
    join(dir, "objects.yaml"),
    objects.map((o) => `---\n${JSON.stringify(o)}\n`).join(""),
  );
  return sb.config([sb.delegate("cluster-net")], { fileClusterDir: dir });
}

function statusOf(pod: string): Array<Record<string, unknown>> {
  const file = join(ctx.sb.root, "cluster", "status", `app.${pod}.json`);
  return JSON.parse(JSON.parse(readFileSync(file, "utf8")).metadata.annotations[STATUS]);
}

describe("M17 Plexus as Multus v4.0.2's delegate: CNI_ARGS with every key twice", () => {
  it("M17 an ADD with exactly the CNI_ARGS Multus v4.0.2 gives its delegate attaches the pod's networks; DEL with them tears down", async () => {
    const { sb } = ctx;
    const conf = cluster();
    const args = MULTUS_DELEGATE_ARGS;
    const add = await sb.run("ADD", conf, { CNI_ARGS: args });
    expect(add.code, add.stdout + add.stderr).toBe(0);
    expect(sb.calls()).toEqual(["ADD cluster-net", "ADD net-a"]);
    // The delegates get the arguments as Plexus got them (libcni passes CNI_ARGS on unchanged).
    expect(sb.invocations().map((i) => i.cniEnv.CNI_ARGS)).toEqual([args, args]);
    expect(statusOf("web").map((s) => s.name)).toEqual(["cluster-net", "app/net-a"]);
    const del = await sb.run("DEL", conf, { CNI_ARGS: args });
    expect(del.code, del.stdout + del.stderr).toBe(0);
    expect(sb.recordFiles()).toEqual([]);
  });

  it("M17 B6 the last value of each key wins: front arguments naming app/decoy, the last ones app/web → app/web's networks, UID and status", async () => {
    const { sb } = ctx;
    const conf = cluster();
    const front =
      "IgnoreUnknown=true;K8S_POD_NAMESPACE=app;K8S_POD_NAME=decoy;" +
      "K8S_POD_INFRA_CONTAINER_ID=other;K8S_POD_UID=uid-decoy";
    const add = await sb.run("ADD", conf, { CNI_ARGS: `${front};${RUNTIME_ARGS}` });
    expect(add.code, add.stdout + add.stderr).toBe(0);
    expect(sb.calls()).toEqual(["ADD cluster-net", "ADD net-a"]);
    expect(statusOf("web").map((s) => s.name)).toEqual(["cluster-net", "app/net-a"]);
    const [record] = sb
      .recordFiles()
      .map((f) => readFileSync(join(sb.cniDir, "records", f), "utf8"));
    expect(JSON.parse(record!).pod).toEqual({ namespace: "app", name: "web", uid: "uid-web" });
    // Reversed, the last values name app/decoy: its network, under its own UID.
    const reversed = await sb.run("ADD", conf, {
      CNI_ARGS: `${RUNTIME_ARGS};${front}`,
      CNI_CONTAINERID: "ctr2",
    });
    expect(reversed.code, reversed.stdout + reversed.stderr).toBe(0);
    expect(sb.calls().slice(2)).toEqual(["ADD cluster-net", "ADD net-b"]);
    expect(statusOf("decoy").map((s) => s.name)).toEqual(["cluster-net", "app/net-b"]);
  });

  it("M17 B6 the last IgnoreUnknown decides: true in front and 0 behind, an unknown key fails the ADD with 4 and runs nothing", async () => {
    const { sb } = ctx;
    const conf = cluster();
    const add = await sb.run("ADD", conf, {
      CNI_ARGS: `${MULTUS_OWN};FOO=bar;${RUNTIME_ARGS};IgnoreUnknown=0`,
    });
    expect(cniError(add)).toMatchObject({ code: 4, msg: expect.stringContaining('"FOO"') });
    expect(sb.calls()).toEqual([]);
  });
});
