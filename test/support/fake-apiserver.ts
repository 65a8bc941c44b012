/**
 * A fake Kubernetes API server the project owns: real node:https (or node:http) on 127.0.0.1:0,
 * answering as kube-apiserver does where Plexus depends on it (modelled on client-node's
 * `setupMockSystem` test server; kube-apiserver is the reference for every answer):
 *
 * - Authentication: the bearer token authenticates as the service account `deploy/` ships, with
 *   the extra of a token bound to a pod on `node` (default node-1); so does a bound token the
 *   server issued (`issueToken`: a signed JWT with the `kubernetes.io` claims, its own node or
 *   none). With `clientCertificates`, a client certificate signed by the test CA as its CN (user)
 *   and O (groups). Anything else is 401.
 * - Admission: the ValidatingAdmissionPolicies `deploy/` ships, on every write
 *   (fake-apiserver/admission.ts), on by default.
 * - Authorization: RBAC from the roles and bindings `deploy/` ships (fake-apiserver/rbac.ts), on by
 *   default: a request they do not grant is 403 Forbidden, worded as kube-apiserver words it;
 *   the cluster administrator token (`ADMIN_TOKEN`, system:masters) is not subject to it.
 * - Resources come from one registry table (`RESOURCES`): pods and their status subresource (GET,
 *   LIST, WATCH, PUT, merge and strategic-merge PATCH), NetworkAttachmentDefinitions (GET, LIST,
 *   WATCH), Events (create, core v1 and events.k8s.io/v1). A new resource is a row and a handler.
 * - Writes as the generic registry store does them: PUT carries the object's UID as a storage
 *   precondition (409); PATCH carries none, so a UID change is a validation error (422 Invalid,
 *   `metadata.uid` "field is immutable"); a resourceVersion that does not match is 409; a write
 *   that races another is re-read and re-applied inside the server (GuaranteedUpdate), never a 409
 *   to a patch without resourceVersion (the `racing-write` fault shows it; an injected 409 is the
 *   only way a client ever sees one).
 * - LIST as the cacher decides: resourceVersion unset is a quorum read from "etcd"; "0", or N
 *   without limit, is served from the watch cache (limit ignored, as before servers could page
 *   from it); limit with N, Exact and continue go to "etcd", at a snapshot of the requested
 *   revision, 410 Expired once compacted — continue tokens included, with the inconsistent-
 *   continue token kube-apiserver hands back. Every LIST is logged with where it was served from.
 * - WATCH of pods and NADs, per namespace and across namespaces: field and label selectors, one
 *   global resourceVersion, a history of events that watches resume from, and — as the watch
 *   cache — a resume from a compacted resourceVersion answered with a 200 stream whose only event
 *   is `ERROR` carrying a 410 `Expired` Status. Test controls: `dropWatches()`, `compactHistory()`,
 *   `watchCount()`.
 * - Every error is a `metav1.Status`; faults are injected per route; every request is logged.
 *
 * Every socket gets TCP_NODELAY and every response is written in one piece with Content-Length,
 * so benchmarks do not measure delayed ACKs. `await using` (or `close()`) destroys every socket.
 *
 * This file is the entry; each concern is a module of fake-apiserver/: `router` (paths →
 * handlers, the handler chain) over `status` (metav1.Status errors), `rbac` (authentication and
 * RBAC), `admission`, `store` (objects, resourceVersion, updates) with `patch` (PATCH semantics),
 * `list` (LIST's resourceVersion rules), `watch` (streams, bookmarks, 410 Expired), `selectors`,
 * `resources` (the registry table), `faults`, `kubeconfig` and `server` (the assembly). They
 * import each other with the `.ts` extension: the soak and the benchmarks load them with Node's
 * type stripping, whose resolver adds none.
 */
export type { Fault, FaultMatcher } from "./fake-apiserver/faults.ts";
export {
  type ClientCertName,
  clientCertFiles,
  type KubeconfigOptions,
  otherCaPem,
  TEST_CA_PEM,
  writeKubeconfig,
} from "./fake-apiserver/kubeconfig.ts";
export { mergePatch, strategicMergePatch } from "./fake-apiserver/patch.ts";
export {
  ADMIN_TOKEN,
  authorize,
  DEPLOY_DIR,
  forbiddenMessage,
  loadShippedRbac,
  type PolicyRule,
  type RbacPolicy,
  type RequestAttributes,
  serviceAccountUser,
  type UserInfo,
} from "./fake-apiserver/rbac.ts";
export {
  DRA_API_VERSION,
  DRA_GROUP,
  DRA_RESOURCE_DEFS,
  type DraResource,
  draKindOf,
  isNamespacedDra,
} from "./fake-apiserver/resources.ts";
export { startFakeApiServer } from "./fake-apiserver/server.ts";
export { statusBody } from "./fake-apiserver/status.ts";
export type {
  FakeApiServer,
  FakeApiServerOptions,
  KubeObject,
  LoggedRequest,
} from "./fake-apiserver/types.ts";
