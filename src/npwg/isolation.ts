/**
 * N7.4, M5, B24: with `namespaceIsolation`, a pod may use only NADs of its own namespace, of the
 * `globalNamespaces`, and of `multusNamespace` (where the cluster-wide default networks live, as
 * in Multus). Applied to every reference, the default-network override included (Multus forgets
 * that one).
 */
import { CniError, Code } from "../cni/errors";

export interface IsolationConf {
  namespaceIsolation: boolean;
  globalNamespaces: readonly string[];
  multusNamespace: string;
}

export function checkNamespaceAccess(o: { podNamespace: string; ref: { namespace: string; name: string }; conf: IsolationConf; what?: string }): void {
  const { podNamespace, ref, conf } = o;
  if (!conf.namespaceIsolation) return;
  if (ref.namespace === podNamespace || ref.namespace === conf.multusNamespace || conf.globalNamespaces.includes(ref.namespace)) return;
  throw new CniError(
    Code.InvalidNetworkConfig,
    `${o.what ?? "network"} ${ref.namespace}/${ref.name} is refused for a pod in namespace ${podNamespace}: namespaceIsolation allows only the pod's namespace, ${conf.multusNamespace}${conf.globalNamespaces.length ? ` and the globalNamespaces (${conf.globalNamespaces.join(", ")})` : ""}`,
  );
}
