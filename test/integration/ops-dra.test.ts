/**
 * `plexus explain` and `plexus validate` for device networks through DRA (M10), in-process against
 * a manifest directory: explain names the claim and the allocated device each network got (also
 * in a `--file POD.yaml --nads DIR` dry run), validate flags a NAD whose resourceName no driver on
 * the node publishes.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { explain, renderExplanation } from "../../src/ops/explain";
import { validate } from "../../src/ops/validate";
import {
  type DraScenario,
  draScenario,
  NET_CLAIM,
  NETDRA,
  VF1,
  VF2,
} from "../support/dra-fixtures";
import { Sandbox, TEST_PATH } from "../support/plexus-bin";

let sb: Sandbox;
beforeEach(() => {
  sb = new Sandbox("plx-ops-dra-");
});
afterEach(async () => {
  await sb.dispose();
});

const nadConfig = () =>
  JSON.stringify({ cniVersion: "1.0.0", type: "noop", capabilities: { deviceID: true } });

/**
 * A node: net.d with Plexus first and the default network, the scenario as a manifest directory.
 */
function node(objects: object[]) {
  const confDir = join(sb.root, "net.d");
  const clusterDir = join(sb.root, "cluster");
  mkdirSync(confDir, { recursive: true });
  mkdirSync(clusterDir, { recursive: true });
  const plexus = {
    type: "plexus",
    clusterNetwork: "default-net",
    confDir,
    cniDir: sb.cniDir,
    daemonSocket: "",
    fileClusterDir: clusterDir,
    podResourcesSocket: join(sb.root, "no-kubelet.sock"),
  };
  writeFileSync(
    join(confDir, "00-plexus.conflist"),
    JSON.stringify({ cniVersion: "1.0.0", name: "plexus-net", plugins: [plexus] }),
  );
  writeFileSync(
    join(confDir, "10-default.conflist"),
    JSON.stringify({ cniVersion: "1.0.0", name: "default-net", plugins: [{ type: "noop" }] }),
  );
  writeFileSync(
    join(clusterDir, "objects.yaml"),
    objects.map((x) => `---\n${JSON.stringify(x)}\n`).join(""),
  );
  sb.installPlugin("noop");
  return {
    clusterDir,
    env: { PATH: TEST_PATH, CNI_PATH: sb.binDir, NODE_NAME: "node-1" },
    flags: { cniConfDir: confDir },
  };
}

const all = (sc: DraScenario) => [sc.pod, ...sc.nads, ...sc.claims, ...sc.slices];

describe("M10 DRA in plexus explain and validate", () => {
  it("M10 explain shows which claim and which allocated device each network got", async () => {
    const n = node(all(draScenario({ nadConfig })));
    const r = await explain("app/web", n.flags, n.env);
    expect(r.errors).toEqual([]);
    expect(
      r.attachments
        .slice(1)
        .map((a) => [a.ifName, a.device?.deviceID, a.device?.from, a.device?.claim?.device]),
    ).toEqual([
      ["net1", VF1, "claim", "vf-1"],
      ["net2", VF2, "claim", "vf-2"],
    ]);
    expect(renderExplanation(r)).toContain(
      `device: ${VF1} of ${NETDRA} (ResourceClaim ${NET_CLAIM}, request vfs: device vf-1 of ` +
        `driver sriov.example.com, pool node-1)`,
    );
  });

  it("M10 explain --file POD.yaml --nads DIR reads claims and slices from the NADs' directory", async () => {
    const n = node([]);
    const sc = draScenario({ nadConfig });
    const dir = join(sb.root, "nads");
    mkdirSync(dir);
    writeFileSync(
      join(dir, "objects.json"),
      JSON.stringify({ kind: "List", items: [...sc.nads, ...sc.claims, ...sc.slices] }),
    );
    const podFile = join(sb.root, "pod.json");
    writeFileSync(podFile, JSON.stringify(sc.pod));
    const r = await explain(undefined, { ...n.flags, file: podFile, nads: dir }, n.env);
    expect(r.errors).toEqual([]);
    expect(r.attachments.slice(1).map((a) => a.device?.deviceID)).toEqual([VF1, VF2]);
  });

  it("M10 explain of a claim not allocated yet: ADD's error, naming the claim", async () => {
    const n = node(
      all(
        draScenario({
          nadConfig,
          edit: (sc) => delete (sc.claims[0]!.status as Record<string, unknown>).allocation,
        }),
      ),
    );
    const r = await explain("app/web", n.flags, n.env);
    expect(r.errors).toEqual([
      {
        code: 11,
        msg: expect.stringContaining(`ResourceClaim app/${NET_CLAIM} is not allocated yet`),
      },
    ]);
  });

  it("M10 validate: a NAD whose resourceName a driver on the node publishes is ok; one no driver publishes is flagged", async () => {
    const sc = draScenario({ nadConfig });
    const other = structuredClone(sc.nads[1]!);
    other.metadata.name = "netdra-typo";
    (other.metadata.annotations as Record<string, string>)["k8s.v1.cni.cncf.io/resourceName"] =
      "example.com/netdrA";
    const n = node([...all(sc), other]);
    const { reports } = await validate(
      undefined,
      { ...n.flags, all: true, nodeName: "node-1" },
      n.env,
    );
    const of = (name: string) => reports.find((r) => r.nad === `app/${name}`)!.findings;
    expect(of("netdra-a")).toContainEqual({
      level: "ok",
      msg: `resourceName ${NETDRA}: published on node node-1 by sriov.example.com (5 device(s))`,
    });
    expect(of("netdra-typo")).toContainEqual({
      level: "warning",
      msg: expect.stringContaining(
        "resourceName example.com/netdrA: no DRA driver on node node-1 publishes a device",
      ),
    });
  });
});
