/**
 * deploy/ validated offline against the Kubernetes OpenAPI schemas (kubernetes-models' JSON-schema
 * validators), the CRD against N3.1, the RBAC against exactly the calls the plugin makes (the
 * methods of src/k8s/kube-api.ts KubeApi), and the DaemonSet against what the installer needs.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { loadAll } from "js-yaml";
import * as apiextensions from "kubernetes-models/apiextensions.k8s.io/v1";
import * as apps from "kubernetes-models/apps/v1";
import * as rbac from "kubernetes-models/rbac.authorization.k8s.io/v1";
import * as core from "kubernetes-models/v1";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../../support/plexus-bin";

const DEPLOY = join(REPO_ROOT, "deploy");
type Doc = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string }; [k: string]: unknown };

function docs(file: string): Doc[] {
  return loadAll(readFileSync(join(DEPLOY, file), "utf8")).filter((d) => d !== null && d !== undefined) as Doc[];
}
const manifestFiles = readdirSync(DEPLOY).filter((f) => f.endsWith(".yaml") && f !== "kustomization.yaml");
const all = manifestFiles.flatMap((f) => docs(f).map((d) => ({ file: f, doc: d })));
const find = (kind: string) => all.find((x) => x.doc.kind === kind)!.doc as Doc & Record<string, any>;

const MODELS: Record<string, Record<string, unknown>> = {
  v1: core,
  "apps/v1": apps,
  "rbac.authorization.k8s.io/v1": rbac,
  "apiextensions.k8s.io/v1": apiextensions,
};

/** The kubernetes-models class for a manifest's apiVersion and kind. */
async function modelFor(doc: Doc): Promise<new (d: unknown) => { validate(): void }> {
  const model = MODELS[doc.apiVersion]?.[doc.kind];
  if (typeof model !== "function") throw new Error(`no kubernetes-models model for ${doc.apiVersion} ${doc.kind}`);
  return model as new (d: unknown) => { validate(): void };
}

describe("deploy/ manifests", () => {
  it("every manifest validates against the Kubernetes schemas (kubernetes-models)", async () => {
    expect(all.map((x) => `${x.file}:${x.doc.kind}`).sort()).toEqual([
      "crd.yaml:CustomResourceDefinition",
      "daemonset.yaml:DaemonSet",
      "rbac.yaml:ClusterRole",
      "rbac.yaml:ClusterRoleBinding",
      "serviceaccount.yaml:ServiceAccount",
    ]);
    for (const { file, doc } of all) {
      const Model = await modelFor(doc);
      expect(() => new Model(doc).validate(), `${file} ${doc.kind}`).not.toThrow();
    }
  });

  it("the validator is live: a DaemonSet with a wrongly typed field or a missing required one is rejected", async () => {
    const ds = structuredClone(find("DaemonSet"));
    const Model = await modelFor(ds);
    ds.spec.template.spec.containers[0].resources.limits.memory = { much: true };
    expect(() => new Model(ds).validate()).toThrow(/memory/);
    const noSelector = structuredClone(find("DaemonSet"));
    delete noSelector.spec.selector;
    expect(() => new Model(noSelector).validate()).toThrow(/selector/);
  });

  it("kustomization.yaml lists every manifest, so `kubectl apply -k deploy/` installs everything", () => {
    const k = docs("kustomization.yaml")[0] as unknown as { kind: string; resources: string[] };
    expect(k.kind).toBe("Kustomization");
    expect([...k.resources].sort()).toEqual([...manifestFiles].sort());
  });

  it("N3.1 the CRD: k8s.cni.cncf.io/v1, namespaced, the NPWG names, short name net-attach-def, structural schema with spec.config a string", () => {
    const crd = find("CustomResourceDefinition");
    expect(crd.apiVersion).toBe("apiextensions.k8s.io/v1");
    expect(crd.metadata.name).toBe("network-attachment-definitions.k8s.cni.cncf.io");
    expect(crd.spec.group).toBe("k8s.cni.cncf.io");
    expect(crd.spec.scope).toBe("Namespaced");
    expect(crd.spec.names).toEqual({
      plural: "network-attachment-definitions",
      singular: "network-attachment-definition",
      kind: "NetworkAttachmentDefinition",
      shortNames: ["net-attach-def"],
    });
    expect(crd.spec.versions.map((v: { name: string }) => v.name)).toEqual(["v1"]);
    const v1 = crd.spec.versions[0];
    expect(v1.served && v1.storage).toBe(true);
    const schema = v1.schema.openAPIV3Schema;
    // Structural: every node has a type; spec.config is a string and optional (N3.2).
    const untyped: string[] = [];
    const walk = (s: Record<string, any>, path: string) => {
      if (typeof s.type !== "string") untyped.push(path);
      for (const [k, sub] of Object.entries(s.properties ?? {})) walk(sub as Record<string, any>, `${path}.${k}`);
    };
    walk(schema, "$");
    expect(untyped).toEqual([]);
    expect(schema.properties.spec.properties.config.type).toBe("string");
    expect(schema.properties.spec.required ?? []).not.toContain("config");
    expect(v1.additionalPrinterColumns.map((c: { name: string }) => c.name)).toContain("Age");
  });

  it("RBAC grants exactly the calls the plugin makes (the KubeApi methods), nothing else, bound to the DaemonSet's account", () => {
    // The KubeApi interface's methods, read from the source: a new method fails here until mapped.
    const src = ts.createSourceFile("kube-api.ts", readFileSync(join(REPO_ROOT, "src/k8s/kube-api.ts"), "utf8"), ts.ScriptTarget.Latest);
    const methods: string[] = [];
    src.forEachChild((n) => {
      if (ts.isInterfaceDeclaration(n) && n.name.text === "KubeApi") for (const m of n.members) if (ts.isMethodSignature(m)) methods.push(m.name.getText(src));
    });
    const calls: Record<string, string[]> = {
      getPod: ["/pods get"],
      getNad: ["k8s.cni.cncf.io/network-attachment-definitions get"],
      setNetworkStatus: ["/pods/status patch"],
      recordEvent: ["/events create"],
      close: [],
    };
    expect(methods.sort()).toEqual(Object.keys(calls).sort());
    const role = find("ClusterRole");
    const granted = (role.rules as Array<{ apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }>).flatMap((r) =>
      r.apiGroups.flatMap((g) => r.resources.flatMap((res) => r.verbs.map((v) => `${g}/${res} ${v}`))),
    );
    expect(granted.sort()).toEqual(Object.values(calls).flat().sort());
    expect(granted.join(" ")).not.toContain("*");
    const binding = find("ClusterRoleBinding");
    const sa = find("ServiceAccount");
    const ds = find("DaemonSet");
    expect(binding.roleRef).toEqual({ apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role.metadata.name });
    expect(binding.subjects).toEqual([{ kind: "ServiceAccount", name: sa.metadata.name, namespace: sa.metadata.namespace }]);
    expect(ds.spec.template.spec.serviceAccountName).toBe(sa.metadata.name);
    expect(ds.metadata.namespace).toBe(sa.metadata.namespace);
  });

  it("M11 the DaemonSet: every node, host paths, a projected expiring token, `plexus install` with flags it knows", () => {
    const ds = find("DaemonSet");
    const pod = ds.spec.template.spec;
    expect(pod.hostNetwork).toBe(true);
    expect(pod.priorityClassName).toBe("system-node-critical");
    expect(pod.tolerations).toContainEqual({ operator: "Exists" });
    expect(ds.spec.updateStrategy.type).toBe("RollingUpdate");
    const hostPaths = Object.fromEntries(pod.volumes.filter((v: any) => v.hostPath).map((v: any) => [v.name, v.hostPath.path]));
    expect(Object.values(hostPaths).sort()).toEqual(["/etc/cni/net.d", "/opt/cni/bin", "/var/lib/cni/plexus"]);
    const projected = pod.volumes.find((v: any) => v.projected).projected.sources;
    const token = projected.find((s: any) => s.serviceAccountToken).serviceAccountToken;
    expect(token.expirationSeconds).toBeGreaterThanOrEqual(600);
    const c = pod.containers[0];
    expect(c.resources.requests && c.resources.limits).toBeTruthy();
    const mounts = Object.fromEntries(c.volumeMounts.map((m: any) => [m.name, m.mountPath]));
    for (const [name, path] of Object.entries(hostPaths)) expect(mounts[name], name).toBe(`/host${path}`);
    const tokenMount = c.volumeMounts.find((m: any) => m.name === pod.volumes.find((v: any) => v.projected).name).mountPath;
    expect(c.command.slice(0, 2)).toEqual(["/usr/local/bin/plexus", "install"]);
    expect(c.command).toContain(`--token-file=${tokenMount}/token`);
    const commands = readFileSync(join(REPO_ROOT, "src/cli/commands.ts"), "utf8");
    for (const arg of c.command.slice(2)) expect(commands, `flag ${arg}`).toContain(`"${arg.split("=")[0]}`);
  });
});
