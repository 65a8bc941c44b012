/**
 * Authentication and RBAC, as kube-apiserver decides them.
 *
 * Authentication (its authenticators, x509 first): a client certificate the test CA signed
 * authenticates as its CN (user) and O (groups); else the bearer token: the server's own, the
 * administrator's (`ADMIN_TOKEN`), or a bound token the server issued (admission.ts). Anything
 * else is 401.
 *
 * Authorization, as its RBAC authorizer: the rules of every (Cluster)Role bound to the user, its
 * name or one of its groups, by a (Cluster)RoleBinding; a request no rule grants is 403 Forbidden
 * with kube-apiserver's wording. The roles and the identity come from the manifests Plexus ships
 * (`deploy/`, followed through its kustomization.yaml), read at test time: a test that makes a
 * request the shipped RBAC does not grant fails, whatever the manifests grant later.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import { dirname, join } from "node:path";
import type { TLSSocket } from "node:tls";
import { loadAll } from "js-yaml";
import { mergePatch } from "./patch.ts";

/**
 * A cluster administrator's token (group system:masters, which kube-apiserver authorizes before
 * RBAC): for tests of the fake's own protocol on requests Plexus never makes. Plexus's own
 * requests carry the service account's token and meet the shipped RBAC.
 */
export const ADMIN_TOKEN = "plexus-test-admin";

/**
 * Who a request is from (kube-apiserver's user.Info): a token's service account or a certificate's
 * CN/O.
 */
export interface UserInfo {
  name: string;
  groups: string[];
  uid?: string;
  /** A bound token's extra (`authentication.kubernetes.io/node-name`, …): admission.ts. */
  extra?: Record<string, string[]>;
}

const ADMIN_USER: UserInfo = {
  name: "kubernetes-admin",
  groups: ["system:masters", "system:authenticated"],
};

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
  /**
   * The service accounts the manifests define, as user names (`system:serviceaccount:<ns>:<name>`).
   */
  serviceAccounts: UserInfo[];
}

export const DEPLOY_DIR = join(import.meta.dirname, "..", "..", "..", "deploy");

type Doc = Record<string, any>;

/** The YAML documents of one file of a kustomization's `resources`, or of a directory's. */
function resourceDocs(path: string, seen: Set<string>): Doc[] {
  if (statSync(path).isDirectory()) return kustomizationDocs(path, seen);
  return loadAll(readFileSync(path, "utf8")).filter(
    (d): d is Doc => Boolean(d) && typeof d === "object",
  );
}

/**
 * The YAML documents a kustomization directory renders from: its `resources` (directories
 * followed), then its `components` in order, each adding to and patching the set so far, as
 * kustomize applies them; a `patches` entry is a file naming its target by kind and name, merged
 * in.
 */
export function kustomizationDocs(dir: string, seen = new Set<string>(), out: Doc[] = []): Doc[] {
  if (seen.has(dir)) return out;
  seen.add(dir);
  const file = ["kustomization.yaml", "kustomization.yml", "Kustomization"]
    .map((f) => join(dir, f))
    .find((f) => existsSync(f));
  if (!file) throw new Error(`fake API server RBAC: no kustomization file in ${dir}`);
  const kustomization = loadAll(readFileSync(file, "utf8"))[0] as Doc;
  for (const r of (kustomization.resources ?? []) as string[])
    out.push(...resourceDocs(join(dirname(file), r), seen));
  for (const c of (kustomization.components ?? []) as string[])
    kustomizationDocs(join(dirname(file), c), seen, out);
  for (const { path } of (kustomization.patches ?? []) as { path: string }[]) {
    const patch = loadAll(readFileSync(join(dirname(file), path), "utf8"))[0] as Doc;
    const i = out.findIndex(
      (d) => d.kind === patch.kind && d.metadata?.name === patch.metadata?.name,
    );
    if (i < 0) throw new Error(`fake API server: patch ${path} in ${dir} matches no object`);
    out[i] = mergePatch(out[i], patch) as Doc;
  }
  return out;
}

/**
 * The RBAC objects and service accounts Plexus ships (default: everything `kubectl apply -k
 * deploy/` creates).
 */
export function loadShippedRbac(dir = DEPLOY_DIR): RbacPolicy {
  return rbacOf(kustomizationDocs(dir));
}

/** The RBAC objects and service accounts among manifests (admission's `authorizer` too). */
export function rbacOf(docs: readonly Doc[]): RbacPolicy {
  const policy: RbacPolicy = {
    clusterRoles: new Map(),
    roles: new Map(),
    bindings: [],
    serviceAccounts: [],
  };
  for (const d of docs) {
    const ns = d.metadata?.namespace as string | undefined;
    if (d.kind === "ClusterRole") policy.clusterRoles.set(d.metadata.name, d.rules ?? []);
    else if (d.kind === "Role")
      policy.roles.set(`${ns ?? "default"}/${d.metadata.name}`, d.rules ?? []);
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

/**
 * The user a service account's token authenticates as (serviceaccount.MakeUsername and its groups).
 */
export function serviceAccountUser(namespace: string, name: string): UserInfo {
  return {
    name: `system:serviceaccount:${namespace}:${name}`,
    groups: [
      "system:serviceaccounts",
      `system:serviceaccounts:${namespace}`,
      "system:authenticated",
    ],
  };
}

function appliesTo(
  subject: Binding["subjects"][number],
  user: UserInfo,
  bindingNs: string | undefined,
): boolean {
  if (subject.kind === "User") return subject.name === user.name;
  if (subject.kind === "Group") return user.groups.includes(subject.name);
  if (subject.kind === "ServiceAccount")
    return user.name === `system:serviceaccount:${subject.namespace ?? bindingNs}:${subject.name}`;
  return false;
}

const has = (list: string[] | undefined, value: string) =>
  (list ?? []).some((x) => x === "*" || x === value);

function ruleAllows(rule: PolicyRule, attrs: RequestAttributes): boolean {
  if (!has(rule.verbs, attrs.verb) || !has(rule.apiGroups, attrs.apiGroup)) return false;
  const combined = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource;
  const resourceOk = (rule.resources ?? []).some(
    (x) =>
      x === "*" ||
      x === combined ||
      (attrs.subresource && x === `*/${attrs.subresource}`) ||
      (!attrs.subresource && x === attrs.resource),
  );
  if (!resourceOk) return false;
  return !rule.resourceNames?.length || rule.resourceNames.includes(attrs.name);
}

/**
 * Whether any binding that applies to the user grants the request (RBAC is allow-only: no deny
 * rules).
 */
export function authorize(policy: RbacPolicy, user: UserInfo, attrs: RequestAttributes): boolean {
  for (const b of policy.bindings) {
    if (b.namespace !== undefined && b.namespace !== attrs.namespace) continue;
    if (!b.subjects.some((s) => appliesTo(s, user, b.namespace))) continue;
    const rules =
      b.roleRef.kind === "ClusterRole"
        ? policy.clusterRoles.get(b.roleRef.name)
        : policy.roles.get(`${b.namespace}/${b.roleRef.name}`);
    if ((rules ?? []).some((r) => ruleAllows(r, attrs))) return true;
  }
  return false;
}

/**
 * kube-apiserver's words for a denied resource request (responsewriters.forbiddenMessage,
 * errors.NewForbidden).
 */
export function forbiddenMessage(user: UserInfo, attrs: RequestAttributes): string {
  const resource = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource;
  const where = attrs.namespace ? `in the namespace "${attrs.namespace}"` : "at the cluster scope";
  const qualified = attrs.apiGroup ? `${attrs.resource}.${attrs.apiGroup}` : attrs.resource;
  const subject = attrs.name ? `${qualified} "${attrs.name}"` : qualified;
  return (
    `${subject} is forbidden: User "${user.name}" cannot ${attrs.verb} resource ` +
    `"${resource}" in API group "${attrs.apiGroup}" ${where}`
  );
}

/**
 * Paths kube-apiserver's default roles (system:discovery, system:public-info-viewer) open to any
 * authenticated user.
 */
const DISCOVERY = /^\/(api|apis|version|healthz|livez|readyz)(\/.*)?$/;

/**
 * RBAC's decision, or undefined when allowed: discovery paths are open to every authenticated user.
 */
export function denied(
  policy: RbacPolicy | undefined,
  request: { user: UserInfo; info: RequestAttributes | undefined; method: string; path: string },
): string | undefined {
  const { user, info, method, path } = request;
  // kube-apiserver authorizes the system:masters group before RBAC is asked.
  if (!policy || user.groups.includes("system:masters")) return undefined;
  if (!info) {
    if (method === "GET" && DISCOVERY.test(path)) return undefined;
    return `forbidden: User "${user.name}" cannot ${method.toLowerCase()} path "${path}"`;
  }
  return authorize(policy, user, info) ? undefined : forbiddenMessage(user, info);
}

/** What the authenticators know: the server's own token and user, and the bound-token verifier. */
export interface Authenticators {
  clientCertificates: boolean;
  token: () => string;
  tokenUser: UserInfo;
  /** A bound token the server issued (admission.ts), or undefined. */
  boundToken: (token: string) => UserInfo | undefined;
}

type Authenticated = { user: UserInfo; by: "token" | "client-certificate" };

/** The user of a client certificate the TLS layer verified: CN the name, O the groups. */
function certificateUser(req: IncomingMessage): UserInfo | undefined {
  const socket = req.socket as Partial<TLSSocket>;
  if (!socket.authorized) return undefined;
  const subject = socket.getPeerCertificate?.()?.subject as
    | Record<string, string | string[]>
    | undefined;
  const cn = subject?.CN;
  if (typeof cn !== "string" || !cn) return undefined;
  const org = subject?.O;
  const groups = [...(Array.isArray(org) ? org : org ? [org] : []), "system:authenticated"];
  return { name: cn, groups };
}

/**
 * kube-apiserver's authenticators, x509 first: a verified client certificate, else the bearer
 * token.
 */
export function authenticate(
  req: IncomingMessage,
  authn: Authenticators,
): Authenticated | undefined {
  const cert = authn.clientCertificates ? certificateUser(req) : undefined;
  if (cert) return { user: cert, by: "client-certificate" };
  const header = req.headers.authorization;
  if (header === `Bearer ${authn.token()}`) return { user: authn.tokenUser, by: "token" };
  if (header === `Bearer ${ADMIN_TOKEN}`) return { user: ADMIN_USER, by: "token" };
  const bound = authn.boundToken(header?.replace(/^Bearer /, "") ?? "");
  return bound ? { user: bound, by: "token" } : undefined;
}
