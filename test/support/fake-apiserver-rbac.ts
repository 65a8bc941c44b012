/**
 * RBAC for the fake API server, as kube-apiserver's RBAC authorizer decides it: the rules of every
 * (Cluster)Role bound to the user, a user name or one of its groups, by a (Cluster)RoleBinding;
 * a request no rule grants is 403 Forbidden with kube-apiserver's wording.
 *
 * The roles and the identity come from the manifests Plexus ships (`deploy/`, followed through its
 * kustomization.yaml), read at test time: a test that makes a request the shipped RBAC does not
 * grant fails, whatever the manifests grant later.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { loadAll } from "js-yaml";

/** Who a request is from (kube-apiserver's user.Info): a token's service account or a certificate's CN/O. */
export interface UserInfo {
  name: string;
  groups: string[];
}

/** What a request asks to do (kube-apiserver's authorizer.Attributes for a resource request). */
export interface RequestAttributes {
  verb: string;
  apiGroup: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
}

export interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

interface Binding {
  kind: "ClusterRoleBinding" | "RoleBinding";
  /** A RoleBinding's namespace: it grants only there. */
  namespace: string | undefined;
  roleRef: { kind: string; name: string };
  subjects: { kind: string; name: string; namespace?: string }[];
}

export interface RbacPolicy {
  clusterRoles: Map<string, PolicyRule[]>;
  /** "namespace/name" → rules. */
  roles: Map<string, PolicyRule[]>;
  bindings: Binding[];
  /** The service accounts the manifests define, as user names (`system:serviceaccount:<ns>:<name>`). */
  serviceAccounts: UserInfo[];
}

export const DEPLOY_DIR = join(import.meta.dirname, "..", "..", "deploy");

type Doc = Record<string, any>;

/** The YAML documents a kustomization directory renders from (its `resources`, directories followed). */
function kustomizationDocs(dir: string, seen = new Set<string>()): Doc[] {
  if (seen.has(dir)) return [];
  seen.add(dir);
  const file = ["kustomization.yaml", "kustomization.yml", "Kustomization"]
    .map((f) => join(dir, f))
    .find((f) => existsSync(f));
  if (!file) throw new Error(`fake API server RBAC: no kustomization file in ${dir}`);
  const k = loadAll(readFileSync(file, "utf8"))[0] as Doc;
  const out: Doc[] = [];
  for (const r of (k.resources ?? []) as string[]) {
    const p = join(dirname(file), r);
    if (statSync(p).isDirectory()) out.push(...kustomizationDocs(p, seen));
    else for (const d of loadAll(readFileSync(p, "utf8"))) if (d && typeof d === "object") out.push(d as Doc);
  }
  return out;
}

/** The RBAC objects and service accounts Plexus ships (default: everything `kubectl apply -k deploy/` creates). */
export function loadShippedRbac(dir = DEPLOY_DIR): RbacPolicy {
  const policy: RbacPolicy = { clusterRoles: new Map(), roles: new Map(), bindings: [], serviceAccounts: [] };
  for (const d of kustomizationDocs(dir)) {
    const ns = d.metadata?.namespace as string | undefined;
    if (d.kind === "ClusterRole") policy.clusterRoles.set(d.metadata.name, d.rules ?? []);
    else if (d.kind === "Role") policy.roles.set(`${ns ?? "default"}/${d.metadata.name}`, d.rules ?? []);
    else if (d.kind === "ClusterRoleBinding" || d.kind === "RoleBinding")
      policy.bindings.push({
        kind: d.kind,
        namespace: d.kind === "RoleBinding" ? (ns ?? "default") : undefined,
        roleRef: d.roleRef,
        subjects: d.subjects ?? [],
      });
    else if (d.kind === "ServiceAccount")
      policy.serviceAccounts.push(serviceAccountUser(ns ?? "default", d.metadata.name));
  }
  return policy;
}

/** The user a service account's token authenticates as (serviceaccount.MakeUsername and its groups). */
export function serviceAccountUser(namespace: string, name: string): UserInfo {
  return {
    name: `system:serviceaccount:${namespace}:${name}`,
    groups: ["system:serviceaccounts", `system:serviceaccounts:${namespace}`, "system:authenticated"],
  };
}

function appliesTo(s: Binding["subjects"][number], user: UserInfo, bindingNs: string | undefined): boolean {
  if (s.kind === "User") return s.name === user.name;
  if (s.kind === "Group") return user.groups.includes(s.name);
  if (s.kind === "ServiceAccount") return user.name === `system:serviceaccount:${s.namespace ?? bindingNs}:${s.name}`;
  return false;
}

const has = (list: string[] | undefined, v: string) => (list ?? []).some((x) => x === "*" || x === v);

function ruleAllows(r: PolicyRule, a: RequestAttributes): boolean {
  if (!has(r.verbs, a.verb) || !has(r.apiGroups, a.apiGroup)) return false;
  const combined = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const resourceOk = (r.resources ?? []).some(
    (x) =>
      x === "*" ||
      x === combined ||
      (a.subresource && x === `*/${a.subresource}`) ||
      (!a.subresource && x === a.resource),
  );
  if (!resourceOk) return false;
  return !r.resourceNames?.length || r.resourceNames.includes(a.name);
}

/** Whether any binding that applies to the user grants the request (RBAC is allow-only: no deny rules). */
export function authorize(policy: RbacPolicy, user: UserInfo, a: RequestAttributes): boolean {
  for (const b of policy.bindings) {
    if (b.namespace !== undefined && b.namespace !== a.namespace) continue;
    if (!b.subjects.some((s) => appliesTo(s, user, b.namespace))) continue;
    const rules =
      b.roleRef.kind === "ClusterRole"
        ? policy.clusterRoles.get(b.roleRef.name)
        : policy.roles.get(`${b.namespace}/${b.roleRef.name}`);
    if ((rules ?? []).some((r) => ruleAllows(r, a))) return true;
  }
  return false;
}

/** kube-apiserver's words for a denied resource request (responsewriters.forbiddenMessage, errors.NewForbidden). */
export function forbiddenMessage(user: UserInfo, a: RequestAttributes): string {
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const where = a.namespace ? `in the namespace "${a.namespace}"` : "at the cluster scope";
  const qualified = a.apiGroup ? `${a.resource}.${a.apiGroup}` : a.resource;
  const subject = a.name ? `${qualified} "${a.name}"` : qualified;
  return `${subject} is forbidden: User "${user.name}" cannot ${a.verb} resource "${resource}" in API group "${a.apiGroup}" ${where}`;
}
