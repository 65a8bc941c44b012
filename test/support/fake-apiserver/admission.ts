/**
 * The fake API server's admission, as kube-apiserver's ValidatingAdmissionPolicy plugin decides
 * (staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating): the policies and
 * bindings `deploy/` ships, their CEL evaluated by @bufbuild/cel over the request's user info,
 * object, old object, parameters and variables. And the bound service-account tokens whose node
 * the policies check: JWTs with the `kubernetes.io` claims a real TokenRequest gives, which the
 * server verifies and turns into the user's extra (`authentication.kubernetes.io/node-name`, …).
 *
 * What is modelled: matchConstraints.resourceRules (operations, groups, versions, resources with
 * `*`, `*` + `/*` and subresources), matchConditions, variables (an erroring one is left unbound,
 * so only an expression that uses it fails: kube-apiserver evaluates them lazily), validations
 * (expression, message, messageExpression, reason), failurePolicy, paramKind Pod with a paramRef
 * selector in the request's namespace, and the binding's validationActions: Deny (the first
 * failure, 403 or 422 by its reason, worded as admission.NewForbidden words it), Warn (a
 * `Warning` header) and Audit (kept for the test). And `authorizer`, the request's user asked of
 * the authorizer (k8s.io/apiserver/pkg/cel/library/authz.go: group, resource, subresource,
 * namespace, name, check, allowed): system:masters is allowed everything, as kube-apiserver's
 * privileged-group authorizer does, anyone else gets RBAC's answer over the manifests' roles
 * (rbac.ts). Anything else a manifest asks for is refused at load, or is an unknown function (an
 * error, so failurePolicy's), so the fake never silently enforces less than the cluster would.
 */
import { generateKeyPairSync, randomUUID, sign, verify } from "node:crypto";
import {
  type CelFunc,
  type CelInput,
  CelScalar,
  celEnv,
  celError,
  celMethod,
  isCelError,
  mapType,
  parse,
  plan,
} from "@bufbuild/cel";
import { strings } from "@bufbuild/cel/ext";
import { authorize, type RequestAttributes, rbacOf } from "./rbac.ts";

type Obj = Record<string, any>;

export const NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name";
const AUDIENCE = "https://kubernetes.default.svc.cluster.local";

/** kube-apiserver's user.Info as admission sees it. */
export interface AdmissionUser {
  name: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

/** What a bound token is bound to (a TokenRequest's boundObjectRef: the pod, and its node). */
export interface TokenBinding {
  namespace: string;
  serviceAccount: string;
  /** The node the pod runs on; absent: a token that names no node (a legacy or unbound token). */
  node?: string | undefined;
  pod?: string | undefined;
  expiresInSeconds?: number;
}

export interface TokenIssuer {
  issue(b: TokenBinding): string;
  /** The user a token authenticates as, or undefined when it is not ours, not a JWT or expired. */
  authenticate(token: string): AdmissionUser | undefined;
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

/** An ES256 signer, as the API server's service-account key issues bound tokens. */
export function createTokenIssuer(
  issuer = "https://kubernetes.default.svc.cluster.local",
): TokenIssuer {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const kid = randomUUID();
  return {
    issue(tokenRequest) {
      const now = Math.floor(Date.now() / 1000);
      const claims = {
        aud: [AUDIENCE],
        exp: now + (tokenRequest.expiresInSeconds ?? 3600),
        iat: now,
        nbf: now,
        iss: issuer,
        jti: randomUUID(),
        sub: `system:serviceaccount:${tokenRequest.namespace}:${tokenRequest.serviceAccount}`,
        "kubernetes.io": {
          namespace: tokenRequest.namespace,
          ...(tokenRequest.node
            ? { node: { name: tokenRequest.node, uid: `node-uid-${tokenRequest.node}` } }
            : {}),
          ...(tokenRequest.pod
            ? {
                pod: {
                  name: tokenRequest.pod,
                  uid: `pod-uid-${tokenRequest.namespace}-${tokenRequest.pod}`,
                },
              }
            : {}),
          serviceaccount: {
            name: tokenRequest.serviceAccount,
            uid: `sa-uid-${tokenRequest.namespace}-${tokenRequest.serviceAccount}`,
          },
        },
      };
      const input = `${b64({ alg: "ES256", kid })}.${b64(claims)}`;
      const sig = sign("sha256", Buffer.from(input), {
        key: privateKey,
        dsaEncoding: "ieee-p1363",
      });
      return `${input}.${sig.toString("base64url")}`;
    },
    authenticate(token) {
      const parts = token.split(".");
      if (parts.length !== 3) return undefined;
      const signed = Buffer.from(`${parts[0]}.${parts[1]}`);
      const sig = Buffer.from(parts[2]!, "base64url");
      if (!verify("sha256", signed, { key: publicKey, dsaEncoding: "ieee-p1363" }, sig))
        return undefined;
      const claims = JSON.parse(Buffer.from(parts[1]!, "base64url").toString("utf8")) as Obj;
      if (typeof claims.exp !== "number" || claims.exp * 1000 <= Date.now()) return undefined;
      return userOfClaims(claims);
    },
  };
}

/** serviceaccount.UserInfo: the user name, groups and extra of a bound token's claims. */
function userOfClaims(claims: Obj): AdmissionUser {
  const k = claims["kubernetes.io"] as Obj;
  const extra: Record<string, string[]> = {
    "authentication.kubernetes.io/credential-id": [`JTI=${claims.jti}`],
  };
  if (k.pod) {
    extra["authentication.kubernetes.io/pod-name"] = [k.pod.name];
    extra["authentication.kubernetes.io/pod-uid"] = [k.pod.uid];
  }
  if (k.node) {
    extra[NODE_NAME_EXTRA] = [k.node.name];
    extra["authentication.kubernetes.io/node-uid"] = [k.node.uid];
  }
  return {
    name: claims.sub,
    uid: k.serviceaccount.uid,
    groups: [
      "system:serviceaccounts",
      `system:serviceaccounts:${k.namespace}`,
      "system:authenticated",
    ],
    extra,
  };
}

// ---------------------------------------------------------------------------------------------
// Policies
// ---------------------------------------------------------------------------------------------

interface AdmissionRequest {
  operation: "CREATE" | "UPDATE" | "DELETE" | "CONNECT";
  resource: { group: string; version: string; resource: string };
  subResource: string;
  kind: { group: string; version: string; kind: string };
  namespace: string;
  name: string;
  userInfo: AdmissionUser;
  object: Obj | null;
  oldObject: Obj | null;
}

/** A denial as kube-apiserver answers it: the Status's code, reason, message and details. */
interface AdmissionDenial {
  code: number;
  reason: string;
  message: string;
  details: Obj;
}

export interface AdmissionOutcome {
  denial?: AdmissionDenial;
  warnings: string[];
  audit: string[];
}

type Program = (vars: Record<string, CelInput>) => unknown;

interface CompiledPolicy {
  name: string;
  failurePolicy: "Fail" | "Ignore";
  paramKind?: { apiVersion: string; kind: string };
  rules: Obj[];
  matchConditions: { name: string; program: Program; expression: string }[];
  variables: { name: string; program: Program }[];
  validations: {
    expression: string;
    program: Program;
    message?: string;
    messageProgram?: Program;
    reason?: string;
  }[];
}

interface CompiledBinding {
  name: string;
  policy: string;
  actions: string[];
  paramRef?: { selector?: Obj; parameterNotFoundAction?: string };
}

interface AdmissionPolicies {
  policies: CompiledPolicy[];
  bindings: CompiledBinding[];
}

type Env = ReturnType<typeof celEnv>;

/** Whether the request's user may do what the attributes say (the authorizer chain's decision). */
type Authorize = (user: AdmissionUser, attributes: RequestAttributes) => boolean;

const AUTHZ = mapType(CelScalar.STRING, CelScalar.DYN);
/** The key that marks a map as the authorizer, a check being built, or a decision. */
const AUTHZ_KIND = "\u0000authz";

/**
 * The authz library over maps: `authorizer` is a map whose builder methods return maps with one
 * more attribute, `check(verb)` a map holding the decision. `current` is the user of the request
 * being evaluated (evaluation is synchronous).
 */
function authzFuncs(decide: Authorize, current: { user?: AdmissionUser }): CelFunc[] {
  const state = (target: unknown, kind: string): Map<string, unknown> | undefined => {
    const m = target as Partial<Pick<Map<string, unknown>, "get" | "entries">>;
    return m.get?.(AUTHZ_KIND) === kind ? new Map(m.entries!()) : undefined;
  };
  const builder = (name: string, from: string[], to: string) =>
    celMethod(name, AUTHZ, [CelScalar.STRING], AUTHZ, function (value) {
      const m = from.map((k) => state(this, k)).find(Boolean);
      if (!m) return celError(`no such overload: ${name} on this value`) as never;
      return new Map([...m, [AUTHZ_KIND, to], [name, value]]) as never;
    });
  const check = celMethod("check", AUTHZ, [CelScalar.STRING], AUTHZ, function (verb) {
    const m = state(this, "resource");
    if (!m || !current.user) return celError("no such overload: check on this value") as never;
    const text = (k: string) => String(m.get(k) ?? "");
    const attributes: RequestAttributes = {
      verb,
      apiGroup: text("group"),
      resource: text("resource"),
      subresource: text("subresource"),
      namespace: text("namespace"),
      name: text("name"),
    };
    return new Map<string, unknown>([
      [AUTHZ_KIND, "decision"],
      ["allowed", decide(current.user, attributes)],
    ]) as never;
  });
  const allowed = celMethod("allowed", AUTHZ, [], CelScalar.BOOL, function () {
    const m = state(this, "decision");
    return m ? m.get("allowed") === true : (celError("no such overload: allowed") as never);
  });
  return [
    builder("group", ["authorizer"], "group"),
    builder("resource", ["group"], "resource"),
    ...["subresource", "namespace", "name"].map((k) => builder(k, ["resource"], "resource")),
    check,
    allowed,
  ];
}

const AUTHORIZER: CelInput = new Map([[AUTHZ_KIND, "authorizer"]]);

function compileIn(env: Env, expression: string, where: string): Program {
  try {
    const p = plan(env, parse(expression));
    return (vars) => p(vars as never);
  } catch (err) {
    throw new Error(`fake admission: ${where}: ${(err as Error).message}`);
  }
}

function refuseUnsupported(policy: Obj): void {
  const m = policy.spec?.matchConstraints ?? {};
  for (const k of ["excludeResourceRules", "namespaceSelector", "objectSelector"])
    if (m[k] && Object.keys(m[k]).length)
      throw new Error(
        `fake admission: policy ${policy.metadata.name}: matchConstraints.${k} is not modelled`,
      );
  if (policy.spec?.auditAnnotations)
    throw new Error("fake admission: auditAnnotations are not modelled");
}

function compilePolicy(env: Env, doc: Obj): CompiledPolicy {
  refuseUnsupported(doc);
  const name = doc.metadata.name as string;
  const s = doc.spec ?? {};
  const at = (what: string) => `policy ${name} ${what}`;
  const compile = (expression: string, where: string) => compileIn(env, expression, where);
  return {
    name,
    failurePolicy: s.failurePolicy ?? "Fail",
    paramKind: s.paramKind,
    rules: s.matchConstraints?.resourceRules ?? [],
    matchConditions: (s.matchConditions ?? []).map((c: Obj) => ({
      name: c.name,
      expression: c.expression,
      program: compile(c.expression, at(`matchCondition ${c.name}`)),
    })),
    variables: (s.variables ?? []).map((v: Obj) => ({
      name: v.name,
      program: compile(v.expression, at(v.name)),
    })),
    validations: (s.validations ?? []).map((v: Obj, i: number) => ({
      expression: v.expression,
      program: compile(v.expression, at(`validation ${i}`)),
      message: v.message,
      messageProgram: v.messageExpression
        ? compile(v.messageExpression, at(`message ${i}`))
        : undefined,
      reason: v.reason,
    })),
  };
}

/** The policies and bindings among rendered manifests (deploy/ through its kustomization). */
function loadAdmissionPolicies(env: Env, docs: readonly Obj[]): AdmissionPolicies {
  const out: AdmissionPolicies = { policies: [], bindings: [] };
  for (const d of docs) {
    if (d.kind === "ValidatingAdmissionPolicy") out.policies.push(compilePolicy(env, d));
    else if (d.kind === "ValidatingAdmissionPolicyBinding") {
      if (d.spec?.matchResources)
        throw new Error("fake admission: a binding's matchResources is not modelled");
      out.bindings.push({
        name: d.metadata.name,
        policy: d.spec.policyName,
        actions: d.spec.validationActions ?? [],
        paramRef: d.spec.paramRef,
      });
    }
  }
  return out;
}

/** A NamedRuleWithOperations against the request: `*`, `*` + `/*`, `pods/*`, `*` + `/status`. */
function ruleMatches(rule: Obj, request: AdmissionRequest): boolean {
  const has = (list: unknown, v: string) =>
    Array.isArray(list) && (list.includes("*") || list.includes(v));
  if (!has(rule.operations, request.operation) || !has(rule.apiGroups, request.resource.group))
    return false;
  if (!has(rule.apiVersions, request.resource.version)) return false;
  return (rule.resources as string[]).some((pattern) => {
    const [res, sub = ""] = pattern.split("/");
    if (!request.subResource)
      return !pattern.includes("/") && (res === "*" || res === request.resource.resource);
    return (
      (res === "*" || res === request.resource.resource) &&
      (sub === "*" || sub === request.subResource)
    );
  });
}

/** JSON as CEL values: objects are maps, integers ints (as Kubernetes' int64 fields), null null. */
function toCel(value: unknown): CelInput {
  if (value === null || value === undefined) return null;
  if (Array.isArray(value)) return value.map(toCel);
  if (typeof value === "number") return Number.isInteger(value) ? BigInt(value) : value;
  if (typeof value === "object")
    return new Map(Object.entries(value as Obj).map(([k, x]) => [k, toCel(x)]));
  return value as CelInput;
}

function requestValue(request: AdmissionRequest): CelInput {
  const u = request.userInfo;
  return toCel({
    operation: request.operation,
    resource: request.resource,
    subResource: request.subResource,
    kind: request.kind,
    namespace: request.namespace,
    name: request.name,
    userInfo: { username: u.name, uid: u.uid ?? "", groups: u.groups, extra: u.extra ?? {} },
  });
}

type Decision = { message: string; reason: string };

/**
 * The message of a failed validation: messageExpression's string, else message, else the
 * expression.
 */
function failureMessage(
  validation: CompiledPolicy["validations"][number],
  vars: Record<string, CelInput>,
): string {
  const m = validation.messageProgram?.(vars);
  if (typeof m === "string" && m.trim() && !m.includes("\n")) return m;
  return validation.message?.trim() || `failed expression: ${validation.expression}`;
}

/**
 * One evaluation of a policy's validations (per parameter when it has some): failures and errors.
 */
function validate(policy: CompiledPolicy, base: Record<string, CelInput>): Decision[] {
  const variables = new Map<string, CelInput>();
  const vars = { ...base, variables };
  for (const v of policy.variables) {
    const value = v.program(vars);
    if (!isCelError(value)) variables.set(v.name, value as CelInput);
  }
  const out: Decision[] = [];
  for (const v of policy.validations) {
    const ok = v.program(vars);
    if (ok === true) continue;
    if (ok === false) out.push({ message: failureMessage(v, vars), reason: v.reason ?? "" });
    else if (policy.failurePolicy === "Fail") out.push(evalError(v.expression, ok));
  }
  return out;
}

function evalError(expression: string, got: unknown): Decision {
  const why = isCelError(got) ? got.message : `expected a bool, got ${String(got)}`;
  return { message: `expression '${expression}' resulted in error: ${why}`, reason: "" };
}

/**
 * matchConditions: all true to apply; an error is the failurePolicy's (kube-apiserver's matcher).
 */
function conditionsMatch(
  policy: CompiledPolicy,
  vars: Record<string, CelInput>,
): boolean | Decision {
  for (const c of policy.matchConditions) {
    const v = c.program(vars);
    if (v === false) return false;
    if (v !== true) {
      if (policy.failurePolicy === "Ignore") return false;
      return evalError(c.expression, v);
    }
  }
  return true;
}

/**
 * Objects of a policy's paramKind for a binding (Pods: in the request's namespace, by selector).
 */
type ParamLookup = (q: {
  apiVersion: string;
  kind: string;
  namespace: string;
  selector: Obj;
}) => Obj[];

function decisionsFor(query: {
  policy: CompiledPolicy;
  binding: CompiledBinding;
  base: Record<string, CelInput>;
  r: AdmissionRequest;
  paramsOf: ParamLookup;
}): Decision[] {
  const { policy, binding } = query;
  if (!policy.paramKind) return validate(policy, { ...query.base, params: null });
  const ref = binding.paramRef;
  if (!ref?.selector)
    throw new Error(`fake admission: binding ${binding.name}: only paramRef.selector is modelled`);
  const params = query.paramsOf({
    ...policy.paramKind,
    namespace: query.r.namespace,
    selector: ref.selector,
  });
  if (params.length === 0) {
    if (ref.parameterNotFoundAction !== "Deny") return [];
    const why = "no params found for policy binding with `Deny` parameterNotFoundAction";
    return policy.failurePolicy === "Fail"
      ? [{ message: `failed to configure binding: ${why}`, reason: "" }]
      : [];
  }
  return params.flatMap((p) => validate(policy, { ...query.base, params: toCel(p) }));
}

const REASON_CODES: Record<string, number> = { Forbidden: 403, Unauthorized: 401, Invalid: 422 };

/**
 * admission.NewForbidden's Status with the decision's reason and code (the plugin's dispatcher).
 */
function denialOf(request: AdmissionRequest, message: string, reason: string): AdmissionDenial {
  const why = reason || "Invalid";
  const name = request.name || String(request.object?.metadata?.name ?? "");
  const resource = request.resource.group
    ? `${request.resource.resource}.${request.resource.group}`
    : request.resource.resource;
  return {
    code: REASON_CODES[why] ?? 400,
    reason: why,
    message: `${resource} "${name}" is forbidden: ${message}`,
    details: {
      name,
      ...(request.resource.group ? { group: request.resource.group } : {}),
      kind: request.resource.resource,
      causes: [{ message }],
    },
  };
}

/** Every binding's policy against one request, as the validating admission plugin runs them. */
function admit(
  admissionPolicies: AdmissionPolicies,
  admissionRequest: AdmissionRequest,
  paramsOf: ParamLookup,
): AdmissionOutcome {
  const out: AdmissionOutcome = { warnings: [], audit: [] };
  const base = {
    request: requestValue(admissionRequest),
    object: toCel(admissionRequest.object),
    oldObject: toCel(admissionRequest.oldObject),
    authorizer: AUTHORIZER,
  };
  for (const binding of admissionPolicies.bindings) {
    const policy = admissionPolicies.policies.find((x) => x.name === binding.policy);
    if (!policy?.rules.some((rule) => ruleMatches(rule, admissionRequest))) continue;
    const matched = conditionsMatch(policy, { ...base, params: null, variables: new Map() });
    if (matched === false) continue;
    const decisions =
      matched === true
        ? decisionsFor({ policy, binding, base, r: admissionRequest, paramsOf })
        : [matched];
    const first = decisions[0];
    if (!first) continue;
    const where = `ValidatingAdmissionPolicy '${policy.name}' with binding '${binding.name}'`;
    for (const d of decisions) {
      if (binding.actions.includes("Warn"))
        out.warnings.push(`Validation failed for ${where}: ${d.message}`);
      if (binding.actions.includes("Audit")) out.audit.push(`${where}: ${d.message}`);
    }
    if (binding.actions.includes("Deny") && !out.denial)
      out.denial = denialOf(
        admissionRequest,
        `${where} denied request: ${first.message}`,
        first.reason,
      );
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The fake API server's side: tokens, the review of a write, GETs of the installed policies.
// ---------------------------------------------------------------------------------------------

const GROUP = "admissionregistration.k8s.io";
const KINDS: Record<string, string> = { pods: "Pod", events: "Event" };

export interface FakeAdmission {
  issueToken(b: Omit<TokenBinding, "namespace" | "serviceAccount">): string;
  authenticate(token: string): AdmissionUser | undefined;
  review(w: {
    info: {
      apiGroup: string;
      apiVersion: string;
      resource: string;
      subresource: string;
      namespace: string;
      name: string;
    };
    user: AdmissionUser;
    operation: AdmissionRequest["operation"];
    object: Obj | null;
    oldObject: Obj | null;
  }): AdmissionOutcome;
  /** GET of an installed policy or binding (`plexus doctor` asks); undefined for other groups. */
  serve(
    info: { apiGroup: string; resource: string; name: string },
    method: string,
  ): [number, unknown] | undefined;
  readonly audit: string[];
}

function labelsMatch(selector: Obj, object: Obj): boolean {
  if (selector.matchExpressions?.length)
    throw new Error("fake admission: matchExpressions are not modelled");
  const labels = (object.metadata?.labels ?? {}) as Record<string, string>;
  return Object.entries((selector.matchLabels ?? {}) as Record<string, string>).every(
    ([k, v]) => labels[k] === v,
  );
}

function notFound(resource: string, name: string): [number, unknown] {
  const message = `${resource}.${GROUP} "${name}" not found`;
  const details = { name, group: GROUP, kind: resource };
  return [
    404,
    {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message,
      reason: "NotFound",
      details,
      code: 404,
    },
  ];
}

/** kube-apiserver's authorizer chain as the fake has it: system:masters first, then RBAC. */
function authorizerOf(docs: readonly Obj[]): Authorize {
  const rbac = rbacOf(docs);
  return (user, attributes) =>
    user.groups.includes("system:masters") || authorize(rbac, user, attributes);
}

export function createFakeAdmission(options: {
  /** The rendered manifests: their policies and bindings, and the roles `authorizer` asks. */
  docs: readonly Obj[];
  user: AdmissionUser;
  pods: () => Iterable<Obj>;
}): FakeAdmission {
  const current: { user?: AdmissionUser } = {};
  const funcs = [...strings, ...authzFuncs(authorizerOf(options.docs), current)];
  const policies = loadAdmissionPolicies(celEnv({ funcs }), options.docs);
  const installed = options.docs.filter((d) => d.apiVersion === `${GROUP}/v1`);
  const [, , namespace = "default", serviceAccount = "default"] = options.user.name.split(":");
  const issuer = createTokenIssuer();
  const audit: string[] = [];
  const paramsOf: ParamLookup = (q) => {
    if (q.apiVersion !== "v1" || q.kind !== "Pod")
      throw new Error(`fake admission: paramKind ${q.kind} is not modelled`);
    return [...options.pods()].filter(
      (p) => p.metadata?.namespace === q.namespace && labelsMatch(q.selector, p),
    );
  };
  return {
    issueToken: (b) => issuer.issue({ ...b, namespace, serviceAccount }),
    authenticate: (token) => issuer.authenticate(token),
    review(write) {
      const i = write.info;
      const request: AdmissionRequest = {
        operation: write.operation,
        resource: { group: i.apiGroup, version: i.apiVersion, resource: i.resource },
        subResource: i.subresource,
        kind: { group: i.apiGroup, version: i.apiVersion, kind: KINDS[i.resource] ?? "" },
        namespace: i.namespace,
        name: i.name,
        userInfo: write.user,
        object: write.object,
        oldObject: write.oldObject,
      };
      current.user = write.user;
      try {
        const outcome = admit(policies, request, paramsOf);
        audit.push(...outcome.audit);
        return outcome;
      } finally {
        current.user = undefined;
      }
    },
    serve(info, method) {
      if (info.apiGroup !== GROUP) return undefined;
      const kind = {
        validatingadmissionpolicies: "ValidatingAdmissionPolicy",
        validatingadmissionpolicybindings: "ValidatingAdmissionPolicyBinding",
      }[info.resource];
      if (method !== "GET" || !kind || !info.name)
        return [405, { kind: "Status", status: "Failure", code: 405 }];
      const found = installed.find((d) => d.kind === kind && d.metadata?.name === info.name);
      return found ? [200, found] : notFound(info.resource, info.name);
    },
    audit,
  };
}
