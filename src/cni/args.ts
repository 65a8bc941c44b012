/** CNI_ARGS parsing (C2.1, B6): `K=V;K=V`, as libcni's `types.LoadArgs` splits it. */
import { CniError, Code } from "./errors";

export type CniArgs = ReadonlyMap<string, string>;

/**
 * Every pair must be exactly `KEY=VALUE` (one `=`, non-empty key); an empty string means no args.
 * A key given twice is refused: two `K8S_POD_NAME`s make the pod's identity ambiguous, and
 * picking one silently could attach or detach the wrong pod (B6).
 */
export function parseCniArgs(raw: string | undefined): CniArgs {
  const out = new Map<string, string>();
  if (raw === undefined || raw === "") return out;
  for (const pair of raw.split(";")) {
    const kv = pair.split("=");
    if (kv.length !== 2 || kv[0] === "") {
      throw new CniError(
        Code.InvalidEnv,
        `CNI_ARGS is invalid: pair ${JSON.stringify(pair)} is not KEY=VALUE (pairs are separated by ';', with no trailing ';')`,
      );
    }
    const [k, v] = kv as [string, string];
    if (out.has(k)) {
      throw new CniError(Code.InvalidEnv, `CNI_ARGS is invalid: key ${k} is given more than once`);
    }
    out.set(k, v);
  }
  return out;
}

/** Pod identity from CNI_ARGS (K2). Absent name or namespace → not a pod of a cluster (B7). */
export interface PodRef {
  namespace: string;
  name: string;
  uid?: string;
  infraContainerId?: string;
}

export function podFromArgs(args: CniArgs): PodRef | undefined {
  const namespace = args.get("K8S_POD_NAMESPACE");
  const name = args.get("K8S_POD_NAME");
  if (!namespace || !name) return undefined;
  const ref: PodRef = { namespace, name };
  const uid = args.get("K8S_POD_UID");
  if (uid) ref.uid = uid;
  const infra = args.get("K8S_POD_INFRA_CONTAINER_ID");
  if (infra) ref.infraContainerId = infra;
  return ref;
}
