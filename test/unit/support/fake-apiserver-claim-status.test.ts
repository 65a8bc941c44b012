/**
 * The fake API server's ResourceClaim status (test/support/fake-apiserver/claim-status.ts, ssa.ts),
 * pinned to kube-apiserver 1.36's, one behaviour per test: server-side apply on
 * resourceclaims/status (fieldManager required, the list-map keyed by driver, device and pool,
 * managedFields per manager, conflicts and force, a manager removing its fields from an entry it
 * co-owns leaving the other's), updates' ownership, the status strategy, validation, granular
 * status authorization, the node-scoped-writes policy, and the slices' field selectors.
 */
import { describe, expect, it } from "vitest";
import { draDeployDir } from "../../support/dra-deploy";
import { ADMIN_TOKEN, type FakeApiServer, startFakeApiServer } from "../../support/fake-apiserver";
import { interfaceAddressProblem } from "../../support/fake-apiserver/claim-status";
import {
  applyConfig,
  fromFieldsV1,
  type Schema,
  toFieldSet,
  toFieldsV1,
} from "../../support/fake-apiserver/ssa";

const DRIVER = "sriov.example.com";
const CLAIM = "/apis/resource.k8s.io/v1/namespaces/app/resourceclaims/net";
const KEY = { device: "vf-1", driver: DRIVER, pool: "node-1" };
const K = `k:${JSON.stringify(KEY)}`;
const APPLY = "application/apply-patch+yaml";
const CONDITION = "plexus.cni.cncf.io/Attached";

type Obj = Record<string, any>;

function claim(node = "node-1"): Obj & { metadata: { name: string; namespace: string } & Obj } {
  return {
    metadata: { name: "net", namespace: "app", labels: { team: "a" } },
    spec: { devices: { requests: [{ name: "vfs", exactly: { deviceClassName: "vf" } }] } },
    status: {
      allocation: {
        devices: {
          results: [
            { driver: DRIVER, pool: "node-1", device: "vf-1", request: "vfs" },
            { driver: "other.example.com", pool: "node-1", device: "nic-0", request: "vfs" },
          ],
        },
        nodeSelector: {
          nodeSelectorTerms: [
            { matchFields: [{ key: "metadata.name", operator: "In", values: [node] }] },
          ],
        },
      },
      reservedFor: [{ resource: "pods", name: "web", uid: "uid-web" }],
    },
  };
}

const condition = (type: string, reason = "Ready") => ({
  type,
  status: "True",
  reason,
  message: "ok",
  lastTransitionTime: "2026-01-02T03:04:05Z",
});

const plexusEntry = (over: Obj = {}) => ({
  ...KEY,
  networkData: {
    interfaceName: "net1",
    ips: ["10.1.1.5/24"],
    hardwareAddress: "0a:58:0a:01:01:05",
  },
  conditions: [condition(CONDITION, "Attached")],
  ...over,
});

const driverEntry = () => ({
  ...KEY,
  data: { pfName: "ens1f0", vfIndex: 1 },
  conditions: [condition("Ready")],
});

const applied = (devices: unknown[]) => ({
  apiVersion: "resource.k8s.io/v1",
  kind: "ResourceClaim",
  metadata: { name: "net", namespace: "app" },
  status: { devices },
});

interface Answer {
  status: number;
  body: Obj;
}

async function write(
  api: FakeApiServer,
  body: unknown,
  options: {
    manager?: string;
    token?: string;
    type?: string;
    query?: string;
    method?: string;
  } = {},
): Promise<Answer> {
  const q = new URLSearchParams(options.query ?? "");
  if (options.manager) q.set("fieldManager", options.manager);
  const r = await fetch(`${api.url}${CLAIM}/status?${q}`, {
    method: options.method ?? "PATCH",
    headers: {
      authorization: `Bearer ${options.token ?? api.token}`,
      "content-type": options.type ?? APPLY,
      "user-agent": "sriov-dra-driver/1.0",
    },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: (await r.json()) as Obj };
}

const asDriver = (api: FakeApiServer, devices: unknown[], more: Obj = {}) =>
  write(api, applied(devices), { manager: DRIVER, token: ADMIN_TOKEN, ...more });
const asPlexus = (api: FakeApiServer, devices: unknown[], more: Obj = {}) =>
  write(api, applied(devices), { manager: "plexus", ...more });

const stored = (api: FakeApiServer): Obj =>
  (api as unknown as { store: { objects(r: string): Map<string, Obj> } }).store
    .objects("resourceclaims")
    .get("app/net")!;
const managed = (api: FakeApiServer, manager: string): Obj | undefined =>
  stored(api).metadata.managedFields.find((m: Obj) => m.manager === manager);

/** The fake with one claim; granular status authorization off unless a test is about it. */
async function server(options: Parameters<typeof startFakeApiServer>[0] = {}) {
  const api = await startFakeApiServer({
    tls: false,
    draGranularStatusAuthorization: false,
    ...options,
  });
  api.addDra("resourceclaims", claim());
  return api;
}

describe("field sets (ToFieldSet) and their FieldsV1 form", () => {
  const schema: Schema = {
    kind: "struct",
    fields: {
      items: { kind: "listMap", keys: ["name"], elem: { kind: "map" } },
      named: { kind: "struct", fields: { a: { kind: "atomic" } } },
      ips: { kind: "atomic" },
    },
  };

  it("owns leaves, list-map items and a deduced map's keys, not the named fields between", () => {
    const set = toFieldSet(
      { items: [{ name: "x", v: 1 }], named: { a: 1 }, labels: { k: "v" }, ips: ["a", "b"] },
      schema,
    );
    expect(toFieldsV1(set)).toEqual({
      "f:items": { 'k:{"name":"x"}': { ".": {}, "f:name": {}, "f:v": {} } },
      "f:named": { "f:a": {} },
      "f:labels": { ".": {}, "f:k": {} },
      "f:ips": {},
    });
    expect(fromFieldsV1(toFieldsV1(set))).toEqual(set);
  });

  it("an empty list-map owns nothing; an empty map is owned as itself", () => {
    expect([...toFieldSet({ items: [], named: {} }, schema)]).toEqual(["f:named"]);
  });

  it("a manager's apply that drops an item it alone owned removes it; one another applier owns stays", () => {
    const live = { items: [{ name: "x", v: 1 }] };
    const self = { manager: "a", operation: "Apply" as const, apiVersion: "v1" };
    const first = applyConfig({ live: {}, config: live, schema, managers: [], self, force: false });
    const other = { manager: "b", operation: "Apply" as const, apiVersion: "v1" };
    const both = applyConfig({
      live: first.object,
      config: { items: [{ name: "x", w: 2 }] },
      schema,
      managers: first.managers,
      self: other,
      force: false,
    });
    const dropped = applyConfig({
      live: both.object,
      config: {},
      schema,
      managers: both.managers,
      self,
      force: false,
    });
    expect(dropped.object).toEqual({ items: [{ name: "x", w: 2 }] });
    const alone = applyConfig({
      live: first.object,
      config: {},
      schema,
      managers: first.managers,
      self,
      force: false,
    });
    // The field goes too: a named field with owned children was the manager's as well.
    expect(alone.object).toEqual({});
    expect(alone.managers).toEqual([]);
  });
});

describe("server-side apply on resourceclaims/status", () => {
  it("D1 needs a fieldManager: 422 PatchOptions, as kube-apiserver", async () => {
    await using api = await server();
    const r = await write(api, applied([plexusEntry()]));
    expect(r.status).toBe(422);
    expect(r.body.message).toBe(
      'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for ' +
        "apply patch",
    );
    const forced = await write(
      api,
      { status: {} },
      {
        type: "application/merge-patch+json",
        query: "force=true",
        token: ADMIN_TOKEN,
      },
    );
    expect(forced.status).toBe(422);
    expect(forced.body.message).toContain(
      "force: Forbidden: may not be specified for non-apply patch",
    );
  });

  it("D1 an entry keyed by driver, device and pool; managedFields: Apply, subresource status, the applied leaves and the item", async () => {
    await using api = await server();
    const r = await asPlexus(api, [plexusEntry()]);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.status.devices).toEqual([plexusEntry()]);
    const mine = managed(api, "plexus")!;
    expect(mine).toMatchObject({
      operation: "Apply",
      apiVersion: "resource.k8s.io/v1",
      subresource: "status",
      fieldsType: "FieldsV1",
    });
    expect(mine.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(mine.fieldsV1).toEqual({
      "f:status": {
        "f:devices": {
          [K]: {
            ".": {},
            "f:device": {},
            "f:driver": {},
            "f:pool": {},
            "f:networkData": {
              "f:interfaceName": {},
              "f:ips": {},
              "f:hardwareAddress": {},
            },
            "f:conditions": { [`k:{"type":"${CONDITION}"}`]: expect.objectContaining({ ".": {} }) },
          },
        },
      },
    });
    // The allocation stays its creator's; nothing else of the claim changed.
    expect(stored(api).status.allocation).toEqual(claim().status.allocation);
  });

  it("D1 applying again what is there changes nothing: the same resourceVersion", async () => {
    await using api = await server();
    await asPlexus(api, [plexusEntry()]);
    const rv = stored(api).metadata.resourceVersion;
    const again = await asPlexus(api, [plexusEntry()]);
    expect(again.status).toBe(200);
    expect(stored(api).metadata.resourceVersion).toBe(rv);
  });

  it("D1 two appliers co-own one entry: the driver's data and condition, Plexus's networkData and condition, the keys owned by both", async () => {
    await using api = await server();
    expect((await asDriver(api, [driverEntry()])).status).toBe(200);
    const r = await asPlexus(api, [plexusEntry()]);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const [entry] = stored(api).status.devices;
    expect(entry.data).toEqual(driverEntry().data);
    expect(entry.networkData).toEqual(plexusEntry().networkData);
    expect(entry.conditions.map((c: Obj) => c.type)).toEqual(["Ready", CONDITION]);
    for (const m of ["plexus", DRIVER])
      expect(managed(api, m)!.fieldsV1["f:status"]["f:devices"][K]).toMatchObject({
        ".": {},
        "f:device": {},
        "f:driver": {},
        "f:pool": {},
      });
  });

  it("D1 a manager removing its part of a co-owned entry leaves the other manager's fields", async () => {
    await using api = await server();
    await asDriver(api, [driverEntry()]);
    await asPlexus(api, [plexusEntry()]);
    const r = await asPlexus(api, []);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(stored(api).status.devices).toEqual([driverEntry()]);
    expect(managed(api, "plexus")).toBeUndefined();
    expect(managed(api, DRIVER)).toBeDefined();
  });

  it("D1 an entry only one applier owned goes with its part", async () => {
    await using api = await server();
    await asPlexus(api, [plexusEntry()]);
    await asPlexus(api, []);
    expect(stored(api).status.devices).toBeUndefined();
    expect(stored(api).status.allocation).toEqual(claim().status.allocation);
  });

  it("D1 a field another manager owns with another value: 409 with FieldManagerConflict causes; force takes it", async () => {
    await using api = await server();
    const theirs = { ...KEY, networkData: { interfaceName: "eth9" } };
    await asDriver(api, [theirs]);
    const r = await asPlexus(api, [plexusEntry()]);
    expect(r.status).toBe(409);
    expect(r.body.reason).toBe("Conflict");
    const field = `.status.devices[device="vf-1",driver="${DRIVER}",pool="node-1"].networkData.interfaceName`;
    expect(r.body.details.causes).toEqual([
      {
        reason: "FieldManagerConflict",
        message: `conflict with "${DRIVER}" with subresource "status"`,
        field,
      },
    ]);
    expect(r.body.message).toBe(
      `Apply failed with 1 conflict: conflict with "${DRIVER}" with subresource "status": ` +
        `${field}`,
    );
    // The same value is no conflict: both own it.
    const same = plexusEntry({ networkData: { interfaceName: "eth9" } });
    expect((await asPlexus(api, [same])).status).toBe(200);
    const forced = await asPlexus(api, [plexusEntry()], { query: "force=true" });
    expect(forced.status).toBe(200);
    expect(stored(api).status.devices[0].networkData.interfaceName).toBe("net1");
    // The driver keeps the entry and its keys, not the field it lost.
    const theirEntry = managed(api, DRIVER)!.fieldsV1["f:status"]["f:devices"][K];
    expect(theirEntry).toEqual({ ".": {}, "f:device": {}, "f:driver": {}, "f:pool": {} });
  });

  it("D1 an update (merge patch) owns what it changed, as `Update` of its User-Agent, and takes it from the applier", async () => {
    await using api = await server();
    await asPlexus(api, [plexusEntry()]);
    const patched = plexusEntry({ networkData: { interfaceName: "eth2" } });
    const r = await write(
      api,
      { status: { devices: [patched] } },
      {
        type: "application/merge-patch+json",
        token: ADMIN_TOKEN,
      },
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const theirs = managed(api, "sriov-dra-driver")!;
    expect(theirs).toMatchObject({ operation: "Update", subresource: "status" });
    const entry = theirs.fieldsV1["f:status"]["f:devices"][K];
    expect(entry["f:networkData"]).toEqual({ "f:interfaceName": {} });
    // Plexus lost the field changed and the two removed: no networkData of its own is left.
    const mine = managed(api, "plexus")!.fieldsV1["f:status"]["f:devices"][K];
    expect(mine["f:networkData"]).toBeUndefined();
    expect(mine["f:conditions"]).toBeDefined();
  });

  it("D1 the status strategy keeps the spec and the metadata a status write names", async () => {
    await using api = await server();
    const r = await write(
      api,
      {
        metadata: { labels: { team: "b" } },
        spec: { devices: {} },
        status: { devices: [driverEntry()] },
      },
      { type: "application/merge-patch+json", token: ADMIN_TOKEN },
    );
    expect(r.status).toBe(200);
    expect(stored(api).metadata.labels).toEqual({ team: "a" });
    expect(stored(api).spec).toEqual(claim().spec);
    expect(stored(api).status.devices).toEqual([driverEntry()]);
  });
});

describe("validation of status.devices (422 Invalid)", () => {
  it("D1 an entry for a device the claim was not allocated", async () => {
    await using api = await server();
    const r = await asPlexus(api, [plexusEntry({ device: "vf-9" })]);
    expect(r.status).toBe(422);
    expect(r.body.message).toBe(
      `ResourceClaim.resource.k8s.io "net" is invalid: status.devices[0]: Invalid value: ` +
        `"${DRIVER}/node-1/vf-9": must be an allocated device in the claim`,
    );
    expect(r.body.details.causes[0]).toMatchObject({
      reason: "FieldValueInvalid",
      field: "status.devices[0]",
    });
  });

  it("D1 the API's limits: IPs as canonical interface addresses, at most 16, at most 8 conditions", async () => {
    await using api = await server();
    const ips = await asPlexus(api, [plexusEntry({ networkData: { ips: ["2001:DB8::5/64"] } })]);
    expect(ips.status).toBe(422);
    expect(ips.body.message).toContain(
      'status.devices[0].networkData.ips[0]: Invalid value: "2001:DB8::5/64": must be in ' +
        'canonical form ("2001:db8::5/64")',
    );
    const many = Array.from({ length: 17 }, (_, i) => `10.0.0.${i + 1}/24`);
    const tooMany = await asPlexus(api, [plexusEntry({ networkData: { ips: many } })]);
    expect(tooMany.body.message).toContain(
      "networkData.ips: Too many: 17: must have at most 16 items",
    );
    const conditions = Array.from({ length: 9 }, (_, i) => condition(`c${i}`));
    const nine = await asPlexus(api, [plexusEntry({ conditions })]);
    expect(nine.body.message).toContain("conditions: Too many: 9: must have at most 8 items");
  });

  it("interface addresses as IsValidInterfaceAddress takes them: host bits allowed, canonical only", () => {
    expect(interfaceAddressProblem("10.1.1.5/24")).toBeUndefined();
    expect(interfaceAddressProblem("fd00::5/64")).toBeUndefined();
    expect(interfaceAddressProblem("10.1.1.5")).toMatch(/must be a valid address in CIDR form/);
    expect(interfaceAddressProblem("10.1.1.5/33")).toMatch(/CIDR form/);
    expect(interfaceAddressProblem("fd00:0::5/64")).toBe(
      'must be in canonical form ("fd00::5/64")',
    );
    expect(interfaceAddressProblem("10.1.1.5/024")).toBe(
      'must be in canonical form ("10.1.1.5/24")',
    );
  });
});

describe("granular status authorization (Kubernetes 1.36)", () => {
  const granular = { draGranularStatusAuthorization: true };

  it("D1 without resourceclaims/driver for the driver: 422 Invalid, a Forbidden cause naming the verbs", async () => {
    await using api = await server(granular);
    const r = await asPlexus(api, [plexusEntry()]);
    expect(r.status).toBe(422);
    expect(r.body.details.causes[0]).toMatchObject({
      reason: "FieldValueForbidden",
      field: "status.devices",
    });
    expect(r.body.message).toContain(
      "status.devices: Forbidden: changing status.devices requires " +
        'resource="resourceclaims/driver", verb="[associated-node:patch arbitrary-node:patch]" ' +
        `permission: resourceclaims.resource.k8s.io "${DRIVER}" is forbidden: User ` +
        `"system:serviceaccount:kube-system:plexus" cannot associated-node:patch resource ` +
        `"resourceclaims/driver" in API group "resource.k8s.io" in the namespace "app"`,
    );
  });

  it("D1 granted associated-node:patch for the driver (the dra-claim-status component): allowed on the claim's node only", async () => {
    using deploy = draDeployDir([DRIVER]);
    await using api = await server({
      ...granular,
      rbac: { deployDir: deploy.dir },
      admission: { deployDir: deploy.dir },
    });
    expect((await asPlexus(api, [plexusEntry()])).status).toBe(200);
    // Another driver's entry is not granted.
    const other = { driver: "other.example.com", pool: "node-1", device: "nic-0" };
    const r = await asPlexus(api, [
      plexusEntry(),
      { ...other, conditions: [condition(CONDITION, "Attached")] },
    ]);
    expect(r.status).toBe(422);
    expect(r.body.message).toContain('"other.example.com" is forbidden');
    // A token of another node is not associated: arbitrary-node only, which nothing grants.
    const elsewhere = api.issueToken({ node: "node-2", pod: "plexus-x" });
    const far = await asPlexus(api, [], { token: elsewhere });
    expect(far.status).toBe(422);
    expect(far.body.message).toContain('verb="[arbitrary-node:patch]"');
  });

  it("D1 off (before 1.36, or the gate off): RBAC on resourceclaims/status is enough", async () => {
    await using api = await server({ draGranularStatusAuthorization: false });
    expect((await asPlexus(api, [plexusEntry()])).status).toBe(200);
    await using on = await server(granular);
    expect((await asPlexus(on, [plexusEntry()])).status).toBe(422);
  });
});

describe("the node-scoped-writes policy on claim status", () => {
  it("D1 refuses a claim allocated to another node, a changed allocation, and a driver's data or condition changed", async () => {
    await using api = await server();
    api.addDra("resourceclaims", claim("node-2"));
    const far = await asPlexus(api, [plexusEntry()]);
    expect(far.status).toBe(403);
    expect(far.body.message).toContain(
      "ResourceClaim app/net is not allocated to node node-1 alone",
    );
    api.addDra("resourceclaims", claim());
    await asDriver(api, [driverEntry()]);
    const theirs = await asPlexus(api, [{ ...KEY, data: { pfName: "x" } }], {
      query: "force=true",
    });
    expect(theirs.status).toBe(403);
    expect(theirs.body.message).toContain("Plexus may change no driver's data or conditions");
    const binding = await write(
      api,
      { status: { reservedFor: [] } },
      { type: "application/merge-patch+json" },
    );
    expect(binding.status).toBe(403);
    expect(binding.body.message).toContain("Plexus may change no allocation or reservation");
  });
});

describe("ResourceSlice field selectors", () => {
  it("D2 spec.nodeName and spec.driver are accepted; spec.pool.name is 400 as kube-apiserver words it", async () => {
    await using api = await server();
    const list = (sel: string) =>
      fetch(
        `${api.url}/apis/resource.k8s.io/v1/resourceslices?fieldSelector=${encodeURIComponent(sel)}`,
        {
          headers: { authorization: `Bearer ${api.token}` },
        },
      );
    expect((await list(`spec.nodeName=node-1,spec.driver=${DRIVER}`)).status).toBe(200);
    const r = await list("spec.pool.name=node-1");
    expect(r.status).toBe(400);
    expect(((await r.json()) as Obj).message).toBe(
      "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: spec.pool.name",
    );
  });
});
