/**
 * `plexus doctor` on node-scoped writes (docs/node-scoped-writes.md): whether the token the plugin
 * sends names this node (a pod-bound token on Kubernetes 1.30+: the API server then knows which
 * node a write comes from), and whether the admission policies that hold each node to its own
 * pods are installed and bound. The token is decoded, not verified, and never printed.
 */
import { loadKubeApi } from "../kubeapi/index";
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

/** What a token's claims say about where it was issued; undefined when it is not a JWT. */
export function tokenBinding(token: string): { node?: string; pod?: string } | undefined {
  const payload = token.trim().split(".")[1];
  if (!payload) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as Record<
      string,
      unknown
    >;
    const k = claims["kubernetes.io"] as
      | { node?: { name?: unknown }; pod?: { name?: unknown } }
      | undefined;
    const node = typeof k?.node?.name === "string" ? k.node.name : undefined;
    const pod = typeof k?.pod?.name === "string" ? k.pod.name : undefined;
    return { ...(node ? { node } : {}), ...(pod ? { pod } : {}) };
  } catch {
    return undefined;
  }
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

/** The binding's validationActions, or why it cannot be read. */
async function readObject(api: RestKube, path: string): Promise<Record<string, unknown> | number> {
  try {
    return await api.list(path);
  } catch (err) {
    const status = apiStatusIn(err);
    if (status && (status.code === 404 || status.code === 403)) return status.code;
    throw err;
  }
}

async function checkPolicies(api: RestKube, add: Add): Promise<void> {
  const missing: string[] = [];
  let actions: unknown;
  for (const name of NODE_SCOPE_POLICIES) {
    for (const kind of ["validatingadmissionpolicies", "validatingadmissionpolicybindings"]) {
      const o = await readObject(api, `${ADMISSION_API}/${kind}/${name}`);
      if (o === 403)
        return add(
          "warning",
          "node-scoped writes",
          `could not tell whether the policies are installed: the credentials may not read ${kind} (the node-scoped-writes component grants that read)`,
        );
      if (typeof o === "number") missing.push(`${kind}/${name}`);
      else if (name === "plexus-node-claim-required" && kind.endsWith("bindings"))
        actions = (o.spec as { validationActions?: unknown } | undefined)?.validationActions;
    }
  }
  if (missing.length)
    return add(
      "warning",
      "node-scoped writes",
      `not installed (${missing.join(", ")} missing): this node's credentials can write the network-status of any pod in the cluster; see docs/node-scoped-writes.md`,
    );
  const noNode =
    Array.isArray(actions) && actions.includes("Deny") ? "refused" : "allowed with a warning";
  add(
    "ok",
    "node-scoped writes",
    `policies installed and bound; writes with a token that names no node are ${noNode}`,
  );
}

/** Both checks; nothing to say without an API server or a token. */
export async function checkNodeScope(input: {
  ctx: OpsContext;
  add: Add;
  readToken: (kubeconfig: string) => Promise<{ token?: string; from: string }>;
}): Promise<void> {
  const { conf } = input.ctx;
  if (conf.fileClusterDir || !conf.kubeconfig) return;
  try {
    checkTokenNode(await input.readToken(conf.kubeconfig), input.add);
  } catch {
    // The kubeconfig check above already said why the token cannot be read.
  }
  try {
    const retry = {
      requestTimeoutMs: conf.apiRequestTimeoutMs,
      totalTimeoutMs: conf.apiTotalTimeoutMs,
    };
    const api = await loadKubeApi(conf, {
      env: input.ctx.env,
      log: input.ctx.log,
      client: { retry },
    });
    if (!api) return;
    try {
      await checkPolicies(api, input.add);
    } finally {
      await api.close();
    }
  } catch (err) {
    input.add(
      "warning",
      "node-scoped writes",
      `could not tell whether the policies are installed: ${messageOf(err)}`,
    );
  }
}
