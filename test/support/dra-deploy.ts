/**
 * `deploy/` as an operator renders it for DRA claim status on Kubernetes 1.36: the shipped
 * kustomization plus the dra-claim-status component, its placeholder driver list replaced by a
 * patch of their own naming the drivers (docs/dra.md). A temporary directory the fake API server
 * reads its RBAC and admission from (`rbac: { deployDir }`, `admission: { deployDir }`); removed
 * on dispose.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { DEPLOY_DIR } from "./fake-apiserver";

export interface DraDeployDir extends Disposable {
  dir: string;
}

export function draDeployDir(drivers: readonly string[]): DraDeployDir {
  const dir = mkdtempSync(join(tmpdir(), "plexus-dra-deploy-"));
  const patch = {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: { name: "plexus-dra-claim-status" },
    rules: [
      {
        apiGroups: ["resource.k8s.io"],
        resources: ["resourceclaims/driver"],
        verbs: ["associated-node:patch"],
        resourceNames: drivers,
      },
    ],
  };
  writeFileSync(join(dir, "drivers.yaml"), JSON.stringify(patch));
  const kustomization = {
    apiVersion: "kustomize.config.k8s.io/v1beta1",
    kind: "Kustomization",
    resources: [relative(dir, DEPLOY_DIR)],
    components: [relative(dir, join(DEPLOY_DIR, "components", "dra-claim-status"))],
    patches: [{ path: "drivers.yaml" }],
  };
  writeFileSync(join(dir, "kustomization.yaml"), JSON.stringify(kustomization));
  return { dir, [Symbol.dispose]: () => rmSync(dir, { recursive: true, force: true }) };
}
