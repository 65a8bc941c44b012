/**
 * The table of objects Plexus reads by name (src/cluster/reads.ts): who may read each (the
 * shipped ClusterRole grants `get` on its resource), the names each allows (B20), and the two
 * ways between the port's named reads and a transport's one generic read.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { loadAll } from "js-yaml";
import { describe, expect, it } from "vitest";
import { Code } from "../../../src/cni/errors";
import type { ResourceClaim } from "../../../src/cluster/dra-objects";
import {
  ObjectReader,
  READ_KINDS,
  type ReadAnswer,
  type ReadKind,
  type ReadRef,
  READS,
  readThrough,
  validateReadRef,
} from "../../../src/cluster/reads";
import { FakeKube } from "../../fakes/fake-kube";
import { REPO_ROOT } from "../../support/plexus-bin";

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
}

/** The rules of the ClusterRole `plexus` in deploy/rbac.yaml. */
function plexusRules(): Rule[] {
  const docs = loadAll(readFileSync(join(REPO_ROOT, "deploy/rbac.yaml"), "utf8")) as Array<{
    kind?: string;
    metadata?: { name?: string };
    rules?: Rule[];
  }>;
  const role = docs.find((d) => d.kind === "ClusterRole" && d.metadata?.name === "plexus");
  return role?.rules ?? [];
}

/** Records each read it is asked for, answering every one with a made-up object. */
class RecordingReader extends ObjectReader {
  readonly asked: Array<[ReadKind, ReadRef]> = [];
  override async read<K extends ReadKind>(kind: K, ref: ReadRef): Promise<ReadAnswer<K>> {
    this.asked.push([kind, ref]);
    return { metadata: { name: ref.name, namespace: ref.namespace } } as unknown as ReadAnswer<K>;
  }
}

describe("the objects Plexus reads by name (cluster/reads.ts)", () => {
  it("each row's resource is one the shipped ClusterRole grants get on", () => {
    const rules = plexusRules();
    for (const kind of READ_KINDS) {
      const { group, plural } = READS[kind].resource;
      const granted = rules.some(
        (r) =>
          (r.apiGroups ?? []).includes(group) &&
          (r.resources ?? []).includes(plural) &&
          r.verbs.includes("get"),
      );
      expect(granted, `get ${group}/${plural} (${kind})`).toBe(true);
    }
  });

  it("B20 a name is checked by its row's rule, the namespace always as a label", () => {
    const check = (kind: ReadKind, ref: ReadRef) => () => validateReadRef(READS[kind], ref);
    expect(check("pod", { namespace: "app", name: "web.v2" })).not.toThrow();
    expect(check("resourceClaim", { namespace: "app", name: "gpu.a" })).not.toThrow();
    expect(check("nad", { namespace: "app", name: "net.a" })).toThrow(
      expect.objectContaining({
        code: Code.InvalidNetworkConfig,
        message: expect.stringMatching(/^NetworkAttachmentDefinition name "net\.a" is not/),
      }),
    );
    for (const name of [".", "..", "%2e", "a/b", "x".repeat(254)])
      expect(check("pod", { namespace: "app", name })).toThrow(
        /^pod name .*\(DNS-1123 subdomain\)$/,
      );
    expect(check("resourceClaim", { namespace: "App", name: "gpu" })).toThrow(
      /^ResourceClaim namespace "App" is not a valid DNS-1123 label/,
    );
  });

  it("the port's named reads are the transport's one read, with the pod's UID", async () => {
    const reader = new RecordingReader();
    await reader.getPod("app", "web", "u1");
    await reader.getNad("app", "net-a");
    await reader.getResourceClaim("app", "gpu", { uid: "u1" });
    await reader.getResourceClaim("app", "gpu");
    expect(reader.asked).toEqual([
      ["pod", { namespace: "app", name: "web", podUid: "u1" }],
      ["nad", { namespace: "app", name: "net-a" }],
      ["resourceClaim", { namespace: "app", name: "gpu", podUid: "u1" }],
      ["resourceClaim", { namespace: "app", name: "gpu", podUid: undefined }],
    ]);
  });

  it("a KubeApi known only by the port is read through its named methods", async () => {
    const kube = new FakeKube().addPod("app", "web").addNad("app", "net-a", { type: "bridge" });
    expect((await readThrough(kube, "pod", { namespace: "app", name: "web" })).metadata.uid).toBe(
      "uid-web",
    );
    expect(await readThrough(kube, "nad", { namespace: "app", name: "gone" })).toBeUndefined();
    expect(kube.calls).toEqual(["getPod app/web", "getNad app/gone"]);
    // FakeKube reads no DRA objects: a claim read of it is a wiring bug, not "no such claim".
    await expect(
      readThrough(kube, "resourceClaim", { namespace: "app", name: "gpu" }),
    ).rejects.toMatchObject({ code: Code.Internal });
    const claims = Object.assign(new FakeKube(), {
      getResourceClaim: async (namespace: string, name: string, forPod?: { uid?: string }) =>
        ({ metadata: { name, namespace, uid: forPod?.uid } }) as ResourceClaim,
    });
    const ref = { namespace: "app", name: "gpu", podUid: "u1" };
    expect((await readThrough(claims, "resourceClaim", ref))?.metadata.uid).toBe("u1");
  });
});
