/**
 * `plexus doctor` on node-scoped writes (docs/node-scoped-writes.md): whether the token the plugin
 * sends names this node (a pod-bound token on Kubernetes 1.30+: the API server then knows which
 * node a write comes from), whether the admission policies that hold each node to its own pods
 * are installed and bound, and whether the identity the kubeconfig authenticates as (its client
 * certificate's subject, else its token's service account) is one the policies hold. The token is
 * decoded, not verified, and never printed.
 */
import { X509Certificate } from "node:crypto";
import { loadKubeApi } from "../kubeapi/index";
import { loadKubeconfigFile } from "../kubeapi/kubeconfig";
import { apiStatusIn, type RestKube } from "../kubeapi/rest-kube";
import { messageOf, type OpsContext } from "./context";
import type { Finding } from "./validate";

type Add = (level: Finding["level"], subject: string, msg: string) => void;

/** The policies deploy/components/node-scoped-writes installs, each with a binding of its name. */
export const NODE_SCOPE_POLICIES = [
  "plexus-node-scoped-writes",
  "plexus-node-scoped-events",
  "plexus-node-claim-required",
] as const;

const ADMISSION_API = "/apis/admissionregistration.k8s.io/v1";

/**
 * The identity of a per-node client certificate (policy.yaml): the user `plexus:node:<node>` in
 * the group `plexus:nodes`, as kubelets are `system:node:<node>` in `system:nodes`.
 */
const NODE_USER_PREFIX = "plexus:node:";
const NODE_GROUP = "plexus:nodes";
/** The verb only Plexus's cluster role grants (deploy/rbac.yaml): the policies' mark of Plexus. */
const HELD_VERB = "held-to-node";
/** Groups the policies leave alone: the API server's superusers, the kubelets. */
const EXEMPT_GROUPS = ["system:masters", "system:nodes"];

/** A JWT's claims, undefined when it is not one. */
function jwtClaims(token: string): Record<string, unknown> | undefined {
  const payload = token.trim().split(".")[1];
  if (!payload) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as unknown;
    return claims && typeof claims === "object" ? (claims as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** What a token's claims say about where it was issued; undefined when it is not a JWT. */
export function tokenBinding(token: string): { node?: string; pod?: string } | undefined {
  const claims = jwtClaims(token);
  if (!claims) return undefined;
  const k = claims["kubernetes.io"] as
    | { node?: { name?: unknown }; pod?: { name?: unknown } }
    | undefined;
  const node = typeof k?.node?.name === "string" ? k.node.name : undefined;
  const pod = typeof k?.pod?.name === "string" ? k.pod.name : undefined;
  return { ...(node ? { node } : {}), ...(pod ? { pod } : {}) };
}

function checkTokenNode(source: { token?: string; from: string }, add: Add): void {
  if (!source.token) return;
  const b = tokenBinding(source.token);
  if (!b)
    return add(
      "warning",
      "token node",
      `${source.from} is not a bound service-account token (no JWT): the API server cannot ` +
        `tell which node writes with it; with node-scoped writes installed its writes are refused`,
    );
  if (b.node)
    return add(
      "ok",
      "token node",
      `${source.from} was issued on node ${b.node} (pod ${b.pod ?? "?"})`,
    );
  add(
    "warning",
    "token node",
    `${source.from} names no node: the API server cannot hold its writes to this node's pods; ` +
      `node-scoped writes refuse them (or warn, with allow-tokens-without-node). A pod-bound ` +
      `projected token on Kubernetes 1.30+ names its node`,
  );
}

/** Whom the kubeconfig's credentials authenticate as, as far as the node can tell. */
interface WriteIdentity {
  by: "client certificate" | "service-account token";
  user: string;
  groups: string[];
  /** The node the credentials name: a bound token's claim, a per-node certificate's user. */
  node?: string;
}

/** A certificate's subject as the API server's x509 authenticator reads it: CN user, O groups. */
function certificateIdentity(pem: string | Buffer): WriteIdentity | undefined {
  let subject: string;
  try {
    subject = new X509Certificate(pem).subject;
  } catch {
    return undefined;
  }
  const fields = subject.split("\n").map((line) => {
    const at = line.indexOf("=");
    return [line.slice(0, at), line.slice(at + 1)] as const;
  });
  const user = fields.find(([k]) => k === "CN")?.[1] ?? "";
  const groups = fields.filter(([k]) => k === "O").map(([, v]) => v);
  const node =
    user.startsWith(NODE_USER_PREFIX) && groups.includes(NODE_GROUP)
      ? user.slice(NODE_USER_PREFIX.length)
      : undefined;
  return { by: "client certificate", user, groups, ...(node ? { node } : {}) };
}

/** A service-account token's user (its `sub`) and groups, as serviceaccount.UserInfo makes them. */
function tokenIdentity(token: string): WriteIdentity | undefined {
  const claims = jwtClaims(token);
  const sub = typeof claims?.sub === "string" ? claims.sub : "";
  const [system, kind, namespace] = sub.split(":");
  if (system !== "system" || kind !== "serviceaccount" || !namespace) return undefined;
  const node = tokenBinding(token)?.node;
  const groups = ["system:serviceaccounts", `system:serviceaccounts:${namespace}`];
  return { by: "service-account token", user: sub, groups, ...(node ? { node } : {}) };
}

/**
 * The identity the plugin's requests carry: the client certificate when there is one (the API
 * server's x509 authenticator runs before the token one), else the bearer token; a string says
 * why it cannot be told.
 */
async function identityOf(kubeconfig: string): Promise<WriteIdentity | string> {
  const source = await loadKubeconfigFile(kubeconfig);
  if ("plugin" in source) return "its user runs a credential plugin (exec or auth-provider)";
  if (source.tls?.cert)
    return certificateIdentity(source.tls.cert) ?? "its client certificate cannot be parsed";
  const auth = (await source.auth.headers()).authorization ?? "";
  if (auth.startsWith("Bearer "))
    return tokenIdentity(auth.slice("Bearer ".length)) ?? "its token is not a service account's";
  return auth ? "it authenticates with basic auth" : "it has no credentials";
}

/** The installed write policy (its match conditions tell whom it holds), or why there is none. */
type InstalledPolicy = Record<string, unknown> | "missing" | "unknown";

/** The expressions of the policy's matchConditions: whom it applies to. */
function identityCondition(policy: Record<string, unknown>): string {
  const spec = policy.spec as { matchConditions?: { expression?: unknown }[] } | undefined;
  return (spec?.matchConditions ?? []).map((c) => String(c.expression ?? "")).join("\n");
}

/** How to ask the API server whether the user holds Plexus's role (the policies ask the same). */
function canIHint(identity: WriteIdentity): string {
  const groups =
    identity.by === "client certificate"
      ? identity.groups.map((g) => ` --as-group ${g}`).join("")
      : "";
  const resource = "node-scoped-writes.plexus.invalid";
  return `kubectl auth can-i ${HELD_VERB} ${resource} --as ${identity.user}${groups}`;
}

/**
 * Whether the policies hold the identity: never a member of an exempt group, nor a user an older
 * policy (matching user names, not the role's mark) does not name; to a node only with one.
 */
function checkIdentity(identity: WriteIdentity | string, policy: InstalledPolicy, add: Add): void {
  const subject = "write identity";
  if (policy === "missing") return;
  if (typeof identity === "string")
    return add(
      "warning",
      subject,
      `cannot tell whom the kubeconfig writes as: ${identity}. The node-scoped-writes policies ` +
        `hold only users bound to Plexus's cluster role, and to one node only with a pod-bound ` +
        `service-account token or a per-node client certificate (user ${NODE_USER_PREFIX}<node> ` +
        `in group ${NODE_GROUP})`,
    );
  const who = `the ${identity.by} of ${identity.user}`;
  const exempt = identity.groups.find((g) => EXEMPT_GROUPS.includes(g));
  if (exempt)
    return add(
      "error",
      subject,
      `${who} is in the group ${exempt}, which the node-scoped-writes policies leave alone: this ` +
        `node's credentials can write the status of any pod in the cluster. Give Plexus its ` +
        `service account's pod-bound token or a per-node client certificate`,
    );
  const condition = typeof policy === "string" ? undefined : identityCondition(policy);
  if (condition && !condition.includes(HELD_VERB) && !condition.includes(`'${identity.user}'`))
    return add(
      "error",
      subject,
      `${who} is outside the installed node-scoped-writes policies: they hold only the user ` +
        `names they spell out (deploy/ from before they held Plexus's cluster role), so its ` +
        `writes are not limited to this node's pods; apply deploy/ again`,
    );
  checkIdentityNode(identity, who, add);
}

function checkIdentityNode(identity: WriteIdentity, who: string, add: Add): void {
  const subject = "write identity";
  // A token's node has its own line ("token node").
  if (!identity.node && identity.by === "service-account token") return;
  if (!identity.node)
    return add(
      "warning",
      subject,
      `${who} names no node: the node-scoped-writes policies refuse its writes (or only warn, ` +
        `with allow-tokens-without-node). A per-node client certificate has the user ` +
        `${NODE_USER_PREFIX}<node> in the group ${NODE_GROUP}`,
    );
  add(
    "ok",
    subject,
    `${who} names node ${identity.node}: the node-scoped-writes policies hold it to that node's ` +
      `pods when it is bound to Plexus's cluster role (\`${canIHint(identity)}\` answers yes)`,
  );
}

/** An installed policy or binding, or the status code (404, 403) that says why there is none. */
async function readObject(api: RestKube, path: string): Promise<Record<string, unknown> | number> {
  try {
    return await api.list(path);
  } catch (err) {
    const status = apiStatusIn(err);
    if (status && (status.code === 404 || status.code === 403)) return status.code;
    throw err;
  }
}

async function checkPolicies(api: RestKube, add: Add): Promise<InstalledPolicy> {
  const missing: string[] = [];
  let actions: unknown;
  let writes: Record<string, unknown> | undefined;
  for (const name of NODE_SCOPE_POLICIES) {
    for (const kind of ["validatingadmissionpolicies", "validatingadmissionpolicybindings"]) {
      const o = await readObject(api, `${ADMISSION_API}/${kind}/${name}`);
      if (o === 403) {
        add(
          "warning",
          "node-scoped writes",
          `could not tell whether the policies are installed: the credentials may not read ` +
            `${kind} (the node-scoped-writes component grants that read)`,
        );
        return "unknown";
      }
      if (typeof o === "number") missing.push(`${kind}/${name}`);
      else if (name === "plexus-node-claim-required" && kind.endsWith("bindings"))
        actions = (o.spec as { validationActions?: unknown } | undefined)?.validationActions;
      else if (name === "plexus-node-scoped-writes" && kind.endsWith("policies")) writes = o;
    }
  }
  if (missing.length || !writes) {
    add(
      "warning",
      "node-scoped writes",
      `not installed (${missing.join(", ")} missing): this node's credentials can write the ` +
        `network-status of any pod in the cluster; see docs/node-scoped-writes.md`,
    );
    return "missing";
  }
  const noNode =
    Array.isArray(actions) && actions.includes("Deny") ? "refused" : "allowed with a warning";
  add(
    "ok",
    "node-scoped writes",
    `policies installed and bound; writes with credentials that name no node are ${noNode}`,
  );
  return writes;
}

/** The installed policies as the API server reports them, or why they cannot be told. */
async function installedPolicy(ctx: OpsContext, add: Add): Promise<InstalledPolicy> {
  const { conf } = ctx;
  try {
    const retry = {
      requestTimeoutMs: conf.apiRequestTimeoutMs,
      totalTimeoutMs: conf.apiTotalTimeoutMs,
    };
    const api = await loadKubeApi(conf, { env: ctx.env, log: ctx.log, client: { retry } });
    if (!api) return "unknown";
    try {
      return await checkPolicies(api, add);
    } finally {
      await api.close();
    }
  } catch (err) {
    add(
      "warning",
      "node-scoped writes",
      `could not tell whether the policies are installed: ${messageOf(err)}`,
    );
    return "unknown";
  }
}

/** The checks; nothing to say without an API server. */
export async function checkNodeScope(input: {
  ctx: OpsContext;
  add: Add;
  readToken: (kubeconfig: string) => Promise<{ token?: string; from: string }>;
}): Promise<void> {
  const { conf } = input.ctx;
  const kubeconfig = conf.kubeconfig;
  if (conf.fileClusterDir || !kubeconfig) return;
  try {
    checkTokenNode(await input.readToken(kubeconfig), input.add);
  } catch {
    // The kubeconfig check above already said why the token cannot be read.
  }
  const policy = await installedPolicy(input.ctx, input.add);
  const identity = await identityOf(kubeconfig).catch(() => undefined);
  // An unreadable kubeconfig: the kubeconfig check above already said why.
  if (identity !== undefined) checkIdentity(identity, policy, input.add);
}
