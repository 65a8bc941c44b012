/**
 * Node-scoped writes (docs/node-scoped-writes.md): the admission policies deploy/ ships, as
 * `kubectl kustomize` renders them, evaluated by the fake API server's admission
 * (test/support/fake-apiserver/admission.ts) over generated requests; the CEL evaluator it uses
 * checked against a slice of the CEL conformance suite that covers what the policies' expressions
 * use;
 * the bound tokens it issues; the switch for tokens without a node; doctor's decoding of a token.
 */
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type CelInput,
  celEnv,
  celUint,
  isCelError,
  isCelList,
  isCelMap,
  isCelUint,
  parse,
  plan,
} from "@bufbuild/cel";
import { strings } from "@bufbuild/cel/ext";
import { getTestRegistry } from "@bufbuild/cel-spec/testdata/registry.js";
import { getConformanceSuite, type IncrementalTest } from "@bufbuild/cel-spec/testdata/tests.js";
import fc from "fast-check";
import { loadAll } from "js-yaml";
import { afterAll, describe, expect, it } from "vitest";
import { NODE_SCOPE_POLICIES, tokenBinding } from "../../../src/ops/node-scope-check";
import { DEPLOY, type Manifest, renderKustomization } from "../../support/deploy-render";
import {
  type AdmissionOutcome,
  type AdmissionUser,
  createFakeAdmission,
  createTokenIssuer,
  type FakeAdmission,
  NODE_NAME_EXTRA,
} from "../../support/fake-apiserver/admission";
import { propertyRuns } from "../../support/property";

const SEED = 20261126;
const SA = {
  name: "system:serviceaccount:kube-system:plexus",
  groups: ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"],
};
const STATUS = "k8s.v1.cni.cncf.io/network-status";
type Obj = Record<string, any>;

// ---------------------------------------------------------------------------------------------
// The evaluator against the CEL conformance suite: the parts the policies' expressions use.
// ---------------------------------------------------------------------------------------------

const SLICE: Record<string, string[]> = {
  basic: ["variables"],
  comparisons: ["eq_literal", "ne_literal", "in_list_literal", "in_map_literal"],
  fields: ["map_fields", "map_has", "in"],
  lists: ["in", "size", "index"],
  logic: ["conditional", "AND", "OR", "NOT"],
  macros: ["exists", "all", "exists_one"],
  string: ["size", "starts_with", "ends_with", "contains", "concatenation"],
};

type ExprValue = { kind: { case: string | undefined; value: any } };

/** A conformance `cel.expr.Value` as the evaluator's input. */
function fromValue(input: ExprValue): CelInput {
  const { case: k, value } = input.kind;
  if (k === "uint64Value") return celUint(value);
  if (k === "nullValue") return null;
  if (k === "listValue") return value.values.map(fromValue);
  if (k === "mapValue")
    return new Map(
      value.entries.map((e: { key: ExprValue; value: ExprValue }) => [
        fromValue(e.key),
        fromValue(e.value),
      ]),
    );
  if (["boolValue", "stringValue", "doubleValue", "bytesValue", "int64Value"].includes(k ?? ""))
    return value;
  throw new Error(`conformance value ${k} is not in the slice`);
}

/** A value in a form `toEqual` compares: ints, uints and bytes tagged, maps as sorted entries. */
function normalize(input: unknown): unknown {
  if (isCelUint(input)) return { uint: String(input.value) };
  if (typeof input === "bigint") return { int: String(input) };
  if (input instanceof Uint8Array) return { bytes: [...input] };
  if (isCelList(input) || Array.isArray(input))
    return [...(input as Iterable<unknown>)].map(normalize);
  if (isCelMap(input) || input instanceof Map)
    return [...(input as Map<unknown, unknown>).entries()]
      .map(([a, b]) => [JSON.stringify(normalize(a)), normalize(b)])
      .sort((a, b) => String(a[0]).localeCompare(String(b[0])));
  return input;
}

function conformanceTests(): { name: string; test: IncrementalTest }[] {
  const suite = getConformanceSuite();
  return Object.entries(SLICE).flatMap(([file, sections]) =>
    sections.flatMap((section) => {
      const tests = suite.suites
        .find((s) => s.name === file)!
        .suites.find((s) => s.name === section)!.tests;
      return tests.map((test) => ({ name: `${file}/${section}/${test.name}`, test }));
    }),
  );
}

describe("the CEL evaluator (@bufbuild/cel) against the CEL conformance suite", () => {
  const registry = getTestRegistry();
  const tests = conformanceTests();

  it("covers every section the policies' expressions rely on (maps, strings, in, has, all/exists, comparisons)", () => {
    expect(tests.length).toBeGreaterThan(300);
  });

  it.each(tests)("$name", ({ test }) => {
    const o = test.original;
    const env = celEnv({ namespace: o.container, registry, funcs: strings });
    const bindings = Object.fromEntries(
      Object.entries(o.bindings).map(([k, e]) => [k, fromValue(e.kind.value as ExprValue)]),
    );
    const got = plan(env, parse(o.expr))(bindings);
    const m = o.resultMatcher;
    if (m.case === "evalError") expect(isCelError(got), String(got)).toBe(true);
    else if (m.case === "value")
      expect(normalize(got)).toEqual(normalize(fromValue(m.value as ExprValue)));
    else expect(got).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------
// The shipped policies over generated requests.
// ---------------------------------------------------------------------------------------------

function podOn(
  node: string,
  options: { ns?: string; name?: string; annotations?: Obj; labels?: Obj } = {},
): Obj {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: options.name ?? "web",
      namespace: options.ns ?? "app",
      uid: `uid-${options.name ?? "web"}`,
      resourceVersion: "7",
      ...(options.annotations ? { annotations: options.annotations } : {}),
      ...(options.labels ? { labels: options.labels } : {}),
    },
    spec: { nodeName: node, containers: [{ name: "main", image: "busybox" }] },
    status: { phase: "Running", podIP: "10.0.0.5" },
  };
}

/**
 * One admission per rendering (compiling the policies is the slow part); its pods are set per case.
 */
const compiled = new Map<Obj[], { admission: FakeAdmission; pods: Obj[] }>();
function admissionOver(docs: Obj[], pods: Obj[]): FakeAdmission {
  let c = compiled.get(docs);
  if (!c) {
    const world = { pods: [] as Obj[] };
    c = {
      admission: createFakeAdmission({ docs, user: SA, pods: () => world.pods }),
      pods: world.pods,
    };
    compiled.set(docs, c);
  }
  c.pods.splice(0, c.pods.length, ...pods);
  return c.admission;
}

const userOn = (node?: string): AdmissionUser => ({
  ...SA,
  extra: node ? { [NODE_NAME_EXTRA]: [node] } : {},
});

function patchStatus(
  admission: FakeAdmission,
  options: { node?: string; old: Obj; next: Obj },
): AdmissionOutcome {
  const m = options.old.metadata;
  const info = {
    apiGroup: "",
    apiVersion: "v1",
    resource: "pods",
    subresource: "status",
    namespace: m.namespace,
    name: m.name,
  };
  return admission.review({
    info,
    user: userOn(options.node),
    operation: "UPDATE",
    object: options.next,
    oldObject: options.old,
  });
}

function eventAbout(pod: { ns: string; name: string; uid?: string }, ns = pod.ns): Obj {
  return {
    apiVersion: "v1",
    kind: "Event",
    metadata: { name: `${pod.name}.1`, namespace: ns },
    involvedObject: {
      apiVersion: "v1",
      kind: "Pod",
      namespace: pod.ns,
      name: pod.name,
      ...(pod.uid ? { uid: pod.uid } : {}),
    },
    reason: "AddedInterface",
    message: "x",
    type: "Normal",
  };
}

function createEvent(
  admission: FakeAdmission,
  options: { node?: string; event: Obj },
): AdmissionOutcome {
  const ns = options.event.metadata.namespace;
  const info = {
    apiGroup: "",
    apiVersion: "v1",
    resource: "events",
    subresource: "",
    namespace: ns,
    name: "",
  };
  return admission.review({
    info,
    user: userOn(options.node),
    operation: "CREATE",
    object: options.event,
    oldObject: null,
  });
}

const withStatus = (pod: Obj, value: string): Obj => ({
  ...pod,
  metadata: { ...pod.metadata, annotations: { ...pod.metadata.annotations, [STATUS]: value } },
});

const nodeName = fc.stringMatching(/^[a-z][a-z0-9-]{0,14}$/);
const key = fc.oneof(
  fc.stringMatching(/^[a-z][a-z0-9./-]{0,20}$/),
  fc.constantFrom(
    STATUS,
    "k8s.v1.cni.cncf.io/networks",
    "k8s.v1.cni.cncf.io/networks-status",
    "v1.multus-cni.io/default-network",
  ),
);
const stringMap = fc.dictionary(key, fc.string({ maxLength: 8 }), { maxKeys: 4 });

describe("the shipped node-scoped-writes policies (deploy/, as kubectl kustomize renders it)", () => {
  const docs = renderKustomization(".");

  it("M16 installs the three policies, each with a binding of its name that denies", () => {
    const names = (kind: string) => docs.filter((d) => d.kind === kind).map((d) => d.metadata.name);
    expect(names("ValidatingAdmissionPolicy").sort()).toEqual([...NODE_SCOPE_POLICIES].sort());
    expect(names("ValidatingAdmissionPolicyBinding").sort()).toEqual(
      [...NODE_SCOPE_POLICIES].sort(),
    );
    for (const b of docs.filter((d) => d.kind === "ValidatingAdmissionPolicyBinding")) {
      expect(b.spec.policyName).toBe(b.metadata.name);
      expect(b.spec.validationActions).toEqual(["Deny"]);
    }
    const read = docs.find(
      (d) => d.kind === "ClusterRole" && d.metadata.name === "plexus-node-scoped-writes-read",
    )!;
    expect(read.rules).toEqual([
      {
        apiGroups: ["admissionregistration.k8s.io"],
        resources: ["validatingadmissionpolicies", "validatingadmissionpolicybindings"],
        verbs: ["get"],
        resourceNames: [...NODE_SCOPE_POLICIES],
      },
    ]);
  });

  it("M16 a pods/status patch of a pod on another node is refused (403), whatever it changes", () => {
    fc.assert(
      fc.property(nodeName, nodeName, fc.string({ maxLength: 30 }), (tokenNode, podNode, value) => {
        fc.pre(tokenNode !== podNode);
        const old = podOn(podNode);
        const out = patchStatus(admissionOver(docs, [old]), {
          node: tokenNode,
          old,
          next: withStatus(old, value),
        });
        expect(out.denial?.code).toBe(403);
        expect(out.denial?.message).toContain(`is not on node ${tokenNode}`);
      }),
      propertyRuns({ seed: SEED, numRuns: 200 }),
    );
  });

  it("M16 on the token's node only the network-status annotation may change: any other annotation or label change is refused", () => {
    const seen = { allowed: 0, refused: 0 };
    // undefined: the old map again (annotations: with a new network-status), so both outcomes come
    // up.
    const maybe = fc.option(stringMap, { nil: undefined, freq: 2 });
    fc.assert(
      fc.property(
        nodeName,
        stringMap,
        maybe,
        stringMap,
        maybe,
        (node, oldAnn, annIn, oldLabels, labelsIn) => {
          const newAnn = annIn ?? { ...oldAnn, [STATUS]: `[${node}]` };
          const newLabels = labelsIn ?? oldLabels;
          const old = podOn(node, { annotations: oldAnn, labels: oldLabels });
          const next = podOn(node, { annotations: newAnn, labels: newLabels });
          const out = patchStatus(admissionOver(docs, [old]), { node, old, next });
          const entries = (m: Obj, skip?: string) =>
            JSON.stringify(
              Object.entries(m)
                .filter(([k]) => k !== skip)
                .sort(),
            );
          const onlyStatus =
            entries(oldAnn, STATUS) === entries(newAnn, STATUS) &&
            entries(oldLabels) === entries(newLabels);
          expect(out.denial === undefined, JSON.stringify(out.denial)).toBe(onlyStatus);
          if (out.denial) expect(out.denial.code).toBe(403);
          seen[out.denial ? "refused" : "allowed"]++;
        },
      ),
      propertyRuns({ seed: SEED, numRuns: 300 }),
    );
    expect(seen.allowed).toBeGreaterThan(30);
    expect(seen.refused).toBeGreaterThan(30);
  });

  it("M16 on the token's node a change of the spec or status (not annotations) is refused", () => {
    const old = podOn("node-a");
    const a = admissionOver(docs, [old]);
    for (const next of [
      { ...old, spec: { ...old.spec, nodeName: "node-a", hostNetwork: true } },
      { ...old, status: { ...old.status, podIP: "10.9.9.9" } },
      { ...old, metadata: { ...old.metadata, finalizers: ["x"] } },
      {
        ...old,
        metadata: { ...old.metadata, ownerReferences: [{ kind: "ReplicaSet", name: "r" }] },
      },
    ])
      expect(patchStatus(a, { node: "node-a", old, next }).denial?.code).toBe(403);
    expect(patchStatus(a, { node: "node-a", old, next: withStatus(old, "[]") })).toEqual({
      warnings: [],
      audit: [],
    });
  });

  it("M16 an Event about a pod on the token's node is allowed; about a pod on another node, or in a namespace without pods, refused", () => {
    fc.assert(
      fc.property(nodeName, nodeName, fc.boolean(), (tokenNode, other, withUid) => {
        fc.pre(tokenNode !== other);
        const mine = podOn(tokenNode, { name: "mine" });
        const theirs = podOn(other, { name: "theirs" });
        const a = admissionOver(docs, [mine, theirs]);
        const uid = (p: Obj) => (withUid ? p.metadata.uid : undefined);
        const about = (name: string, u?: string) =>
          eventAbout({ ns: "app", name, ...(u ? { uid: u } : {}) });
        expect(
          createEvent(a, { node: tokenNode, event: about("mine", uid(mine)) }).denial,
        ).toBeUndefined();
        expect(
          createEvent(a, { node: tokenNode, event: about("theirs", uid(theirs)) }).denial?.code,
        ).toBe(403);
        const empty = eventAbout({ ns: "empty", name: "mine" });
        expect(createEvent(a, { node: tokenNode, event: empty }).denial?.code).toBe(422);
      }),
      propertyRuns({ seed: SEED, numRuns: 100 }),
    );
  });

  it("M16 an Event naming the right pod but another UID, another namespace, or not a pod is refused", () => {
    const mine = podOn("node-a", { name: "mine" });
    const a = admissionOver(docs, [mine, podOn("node-a", { ns: "other", name: "x" })]);
    const refused = (event: Obj) => createEvent(a, { node: "node-a", event }).denial?.code;
    expect(refused(eventAbout({ ns: "app", name: "mine", uid: "uid-recreated" }))).toBe(403);
    expect(refused(eventAbout({ ns: "app", name: "mine" }, "other"))).toBe(403);
    const node = {
      ...eventAbout({ ns: "app", name: "mine" }),
      involvedObject: { kind: "Node", name: "node-a" },
    };
    expect(refused(node)).toBe(403);
  });

  it("M16 no other write of the service account passes: pods, their spec, deletes, other resources", () => {
    const pod = podOn("node-a");
    const a = admissionOver(docs, [pod]);
    const user = userOn("node-a");
    const info = {
      apiGroup: "",
      apiVersion: "v1",
      resource: "pods",
      subresource: "",
      namespace: "app",
      name: "web",
    };
    expect(
      a.review({ info, user, operation: "UPDATE", object: withStatus(pod, "[]"), oldObject: pod })
        .denial?.code,
    ).toBe(403);
    expect(
      a.review({ info, user, operation: "DELETE", object: null, oldObject: pod }).denial?.code,
    ).toBe(403);
    expect(
      a.review({ info, user, operation: "CREATE", object: pod, oldObject: null }).denial?.code,
    ).toBe(403);
    const cm = { ...info, resource: "configmaps", name: "x" };
    expect(
      a.review({
        info: cm,
        user,
        operation: "CREATE",
        object: { metadata: { name: "x" } },
        oldObject: null,
      }).denial?.code,
    ).toBe(403);
    const ev = { ...info, apiGroup: "events.k8s.io", resource: "events", name: "" };
    expect(
      a.review({
        info: ev,
        user,
        operation: "CREATE",
        object: eventAbout({ ns: "app", name: "web" }),
        oldObject: null,
      }).denial?.code,
    ).toBe(403);
  });

  it("other users are not concerned: the same writes by another identity pass", () => {
    fc.assert(
      fc.property(nodeName, fc.stringMatching(/^[a-z:]{1,30}$/), (node, name) => {
        fc.pre(name !== SA.name);
        const old = podOn("elsewhere");
        const a = admissionOver(docs, [old]);
        const info = {
          apiGroup: "",
          apiVersion: "v1",
          resource: "pods",
          subresource: "status",
          namespace: "app",
          name: "web",
        };
        const user = {
          name,
          groups: ["system:authenticated"],
          extra: { [NODE_NAME_EXTRA]: [node] },
        };
        const next = { ...old, metadata: { ...old.metadata, labels: { x: "y" } } };
        expect(
          a.review({ info, user, operation: "UPDATE", object: next, oldObject: old }).denial,
        ).toBeUndefined();
      }),
      propertyRuns({ seed: SEED, numRuns: 100 }),
    );
  });

  it("M16 a token that names no node is refused by default, for every write", () => {
    const old = podOn("node-a");
    const a = admissionOver(docs, [old]);
    const out = patchStatus(a, { old, next: withStatus(old, "[]") });
    expect(out.denial?.code).toBe(403);
    expect(out.denial?.message).toContain("plexus-node-claim-required");
    expect(out.denial?.message).toContain("names no node");
    expect(createEvent(a, { event: eventAbout({ ns: "app", name: "web" }) }).denial?.code).toBe(
      403,
    );
  });
});

describe("the switch: deploy/components/allow-tokens-without-node", () => {
  const dir = mkdtempSync(join(tmpdir(), "plx-nodescope-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(DEPLOY, join(dir, "deploy"), { recursive: true });
  const k = join(dir, "deploy", "kustomization.yaml");
  writeFileSync(
    k,
    readFileSync(k, "utf8").replace(
      "  - components/node-scoped-writes\n",
      "  - components/node-scoped-writes\n  - components/allow-tokens-without-node\n",
    ),
  );
  const docs = (
    loadAll(
      execFileSync("kubectl", ["kustomize", join(dir, "deploy")], { encoding: "utf8" }),
    ) as Manifest[]
  ).filter(Boolean);

  it("turns only the no-node binding into Warn + Audit; the node checks still deny", () => {
    const actions = Object.fromEntries(
      docs
        .filter((d) => d.kind === "ValidatingAdmissionPolicyBinding")
        .map((d) => [d.metadata.name, d.spec.validationActions]),
    );
    expect(actions).toEqual({
      "plexus-node-claim-required": ["Warn", "Audit"],
      "plexus-node-scoped-events": ["Deny"],
      "plexus-node-scoped-writes": ["Deny"],
    });
  });

  it("a token without a node then writes, with a warning and an audit entry, never silently", () => {
    const old = podOn("node-a");
    const a = admissionOver(docs, [old]);
    const out = patchStatus(a, { old, next: withStatus(old, "[]") });
    expect(out.denial).toBeUndefined();
    expect(out.warnings).toEqual([
      expect.stringMatching(
        /^Validation failed for ValidatingAdmissionPolicy 'plexus-node-claim-required' with binding 'plexus-node-claim-required': the service-account token names no node/,
      ),
    ]);
    expect(out.audit).toHaveLength(1);
    expect(patchStatus(a, { node: "node-b", old, next: withStatus(old, "[]") }).denial?.code).toBe(
      403,
    );
  });
});

describe("bound tokens", () => {
  const issuer = createTokenIssuer();

  it("carry the kubernetes.io claims of a pod-bound token; the user's extra names the node", () => {
    const token = issuer.issue({
      namespace: "kube-system",
      serviceAccount: "plexus",
      node: "node-a",
      pod: "plexus-x",
    });
    const claims = JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString("utf8"));
    expect(claims["kubernetes.io"]).toMatchObject({
      namespace: "kube-system",
      node: { name: "node-a" },
      pod: { name: "plexus-x" },
      serviceaccount: { name: "plexus" },
    });
    const user = issuer.authenticate(token)!;
    expect(user.name).toBe(SA.name);
    expect(user.extra?.[NODE_NAME_EXTRA]).toEqual(["node-a"]);
    expect(user.extra?.["authentication.kubernetes.io/pod-name"]).toEqual(["plexus-x"]);
    expect(tokenBinding(token)).toEqual({ node: "node-a", pod: "plexus-x" });
  });

  it("a token that names no node has no node extra; a forged, foreign or expired one authenticates nobody", () => {
    const plain = issuer.issue({ namespace: "kube-system", serviceAccount: "plexus" });
    expect(issuer.authenticate(plain)!.extra?.[NODE_NAME_EXTRA]).toBeUndefined();
    expect(tokenBinding(plain)).toEqual({});
    const [h, p, sig] = plain.split(".");
    const claims = JSON.parse(Buffer.from(p!, "base64url").toString("utf8"));
    claims["kubernetes.io"].node = { name: "node-b", uid: "x" };
    expect(
      issuer.authenticate(
        `${h}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}.${sig}`,
      ),
    ).toBeUndefined();
    expect(createTokenIssuer().authenticate(plain)).toBeUndefined();
    const expired = issuer.issue({
      namespace: "kube-system",
      serviceAccount: "plexus",
      node: "a",
      expiresInSeconds: -1,
    });
    expect(issuer.authenticate(expired)).toBeUndefined();
    expect(tokenBinding("not-a-jwt")).toBeUndefined();
  });
});
