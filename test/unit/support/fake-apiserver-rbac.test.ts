/**
 * The fake API server's authentication and RBAC (test/support/fake-apiserver/rbac.ts), pinned to
 * kube-apiserver's: the RBAC authorizer's rule matching (allow-only; RoleBindings only in their
 * namespace; `*`, subresources, resourceNames), the Forbidden wording of
 * responsewriters.forbiddenMessage, the discovery paths open to every authenticated user, and the
 * authenticators' order (x509 before the bearer token).
 */
import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import {
  ADMIN_TOKEN,
  type Authenticators,
  authenticate,
  authorize,
  denied,
  forbiddenMessage,
  loadShippedRbac,
  type RbacPolicy,
  type RequestAttributes,
  serviceAccountUser,
} from "../../support/fake-apiserver/rbac";

const SA = serviceAccountUser("kube-system", "plexus");
const attrs = (over: Partial<RequestAttributes>): RequestAttributes => ({
  verb: "get",
  apiGroup: "",
  resource: "pods",
  subresource: "",
  namespace: "ns1",
  name: "p1",
  ...over,
});

describe("the shipped RBAC (deploy/)", () => {
  const shipped = loadShippedRbac();

  it("defines the plexus service account, as serviceaccount.MakeUsername names it", () => {
    expect(shipped.serviceAccounts).toContainEqual(SA);
    expect(SA).toEqual({
      name: "system:serviceaccount:kube-system:plexus",
      groups: [
        "system:serviceaccounts",
        "system:serviceaccounts:kube-system",
        "system:authenticated",
      ],
    });
  });

  it("grants exactly the calls Plexus makes: get pods, patch pods/status, create events", () => {
    expect(authorize(shipped, SA, attrs({}))).toBe(true);
    expect(authorize(shipped, SA, attrs({ verb: "patch", subresource: "status" }))).toBe(true);
    expect(authorize(shipped, SA, attrs({ verb: "create", resource: "events", name: "" }))).toBe(
      true,
    );
    // A grant on pods/status is no grant on pods, and the reverse.
    expect(authorize(shipped, SA, attrs({ verb: "patch" }))).toBe(false);
    expect(authorize(shipped, SA, attrs({ verb: "get", subresource: "status" }))).toBe(false);
    expect(authorize(shipped, SA, attrs({ verb: "delete" }))).toBe(false);
    expect(authorize(shipped, SA, attrs({ resource: "secrets" }))).toBe(false);
  });

  it("restricts the admission-policy reads to their resourceNames", () => {
    const policy = attrs({
      apiGroup: "admissionregistration.k8s.io",
      resource: "validatingadmissionpolicies",
      namespace: "",
      name: "plexus-node-scoped-writes",
    });
    expect(authorize(shipped, SA, policy)).toBe(true);
    expect(authorize(shipped, SA, { ...policy, name: "someone-elses" })).toBe(false);
    expect(authorize(shipped, SA, { ...policy, verb: "list", name: "" })).toBe(false);
  });

  it("grants nothing to another service account or user", () => {
    expect(authorize(shipped, serviceAccountUser("default", "plexus"), attrs({}))).toBe(false);
    expect(authorize(shipped, { name: "plexus", groups: [] }, attrs({}))).toBe(false);
  });
});

describe("RBAC rule matching, as the RBAC authorizer", () => {
  const policy: RbacPolicy = {
    clusterRoles: new Map([
      ["any-status", [{ apiGroups: [""], resources: ["*/status"], verbs: ["*"] }]],
    ]),
    roles: new Map([["team/readers", [{ apiGroups: ["*"], resources: ["*"], verbs: ["get"] }]]]),
    bindings: [
      {
        kind: "RoleBinding",
        namespace: "team",
        roleRef: { kind: "Role", name: "readers" },
        subjects: [{ kind: "Group", name: "devs" }],
      },
      {
        kind: "ClusterRoleBinding",
        namespace: undefined,
        roleRef: { kind: "ClusterRole", name: "any-status" },
        subjects: [{ kind: "User", name: "alice" }],
      },
    ],
    serviceAccounts: [],
  };
  const dev = { name: "bob", groups: ["devs"] };

  it("a RoleBinding grants only in its own namespace", () => {
    expect(authorize(policy, dev, attrs({ namespace: "team" }))).toBe(true);
    expect(authorize(policy, dev, attrs({ namespace: "other" }))).toBe(false);
    expect(authorize(policy, dev, attrs({ namespace: "" }))).toBe(false);
  });

  it("`*/status` matches every status subresource and no main resource", () => {
    const alice = { name: "alice", groups: [] };
    expect(authorize(policy, alice, attrs({ verb: "update", subresource: "status" }))).toBe(true);
    expect(authorize(policy, alice, attrs({ verb: "update" }))).toBe(false);
  });
});

describe("the Forbidden answer and the discovery paths", () => {
  it("words a denial as responsewriters.forbiddenMessage", () => {
    expect(forbiddenMessage(SA, attrs({ verb: "delete" }))).toBe(
      'pods "p1" is forbidden: User "system:serviceaccount:kube-system:plexus" cannot delete ' +
        'resource "pods" in API group "" in the namespace "ns1"',
    );
    const slices = attrs({
      verb: "create",
      apiGroup: "resource.k8s.io",
      resource: "resourceslices",
      namespace: "",
      name: "",
    });
    expect(forbiddenMessage(SA, slices)).toBe(
      "resourceslices.resource.k8s.io is forbidden: User " +
        '"system:serviceaccount:kube-system:plexus" cannot create resource "resourceslices" in ' +
        "API group " +
        '"resource.k8s.io" at the cluster scope',
    );
  });

  it("opens GET of discovery paths to an authenticated user; other non-resource paths are denied", () => {
    const policy = loadShippedRbac();
    const ask = (method: string, path: string) =>
      denied(policy, { user: SA, info: undefined, method, path });
    expect(ask("GET", "/version")).toBeUndefined();
    expect(ask("GET", "/apis/resource.k8s.io")).toBeUndefined();
    expect(ask("POST", "/version")).toBe(
      'forbidden: User "system:serviceaccount:kube-system:plexus" cannot post path "/version"',
    );
    expect(ask("GET", "/metrics")).toMatch(/cannot get path "\/metrics"/);
  });

  it("lets system:masters past RBAC, and everyone past it when RBAC is off", () => {
    const policy = loadShippedRbac();
    const info = attrs({ verb: "delete", resource: "secrets" });
    const admin = { name: "kubernetes-admin", groups: ["system:masters"] };
    expect(denied(policy, { user: admin, info, method: "DELETE", path: "/x" })).toBeUndefined();
    expect(denied(undefined, { user: SA, info, method: "DELETE", path: "/x" })).toBeUndefined();
    expect(denied(policy, { user: SA, info, method: "DELETE", path: "/x" })).toMatch(
      /^secrets "p1" is forbidden/,
    );
  });
});

describe("authentication, as kube-apiserver's authenticators", () => {
  const bound = { name: "system:serviceaccount:kube-system:plexus", groups: ["bound"] };
  const authn: Authenticators = {
    clientCertificates: true,
    token: () => "own-token",
    tokenUser: SA,
    boundToken: (token) => (token === "bound-token" ? bound : undefined),
  };
  const request = (authorization: string | undefined, socket: object = {}) =>
    ({ headers: authorization ? { authorization } : {}, socket }) as unknown as IncomingMessage;

  it("takes the server's token, the administrator's and a bound token; anything else is nobody", () => {
    expect(authenticate(request("Bearer own-token"), authn)).toEqual({ user: SA, by: "token" });
    expect(authenticate(request(`Bearer ${ADMIN_TOKEN}`), authn)?.user.groups).toContain(
      "system:masters",
    );
    expect(authenticate(request("Bearer bound-token"), authn)).toEqual({
      user: bound,
      by: "token",
    });
    expect(authenticate(request("Bearer other"), authn)).toBeUndefined();
    expect(authenticate(request("own-token"), authn)).toBeUndefined();
    expect(authenticate(request(undefined), authn)).toBeUndefined();
  });

  it("authenticates a verified client certificate first, as its CN and O", () => {
    const socket = {
      authorized: true,
      getPeerCertificate: () => ({ subject: { CN: "node-admin", O: ["ops", "dev"] } }),
    };
    expect(authenticate(request("Bearer own-token", socket), authn)).toEqual({
      user: { name: "node-admin", groups: ["ops", "dev", "system:authenticated"] },
      by: "client-certificate",
    });
    // A certificate that did not verify authenticates nobody; the token still does.
    const unverified = { ...socket, authorized: false };
    expect(authenticate(request("Bearer own-token", unverified), authn)?.by).toBe("token");
    expect(authenticate(request(undefined, unverified), authn)).toBeUndefined();
    // Without clientCertificates the server never asked for one.
    const noCerts = { ...authn, clientCertificates: false };
    expect(authenticate(request("Bearer own-token", socket), noCerts)?.by).toBe("token");
  });
});
