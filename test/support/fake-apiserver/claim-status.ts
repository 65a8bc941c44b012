/**
 * ResourceClaims (resource.k8s.io/v1) beyond GET: the status subresource, written as
 * kube-apiserver writes it (notes: /work/shared/notes/kube-apiserver.md, items 1–3):
 *
 * - PATCH with `application/apply-patch+yaml` (server-side apply; `fieldManager` required, 422
 *   without), `application/merge-patch+json`, and PUT; an update's manager is its `fieldManager`
 *   or its User-Agent's first word. Ownership per manager in `metadata.managedFields` (ssa.ts):
 *   `status.devices` a list-map keyed by driver, device, pool and shareID, each entry's
 *   `conditions` one keyed by type, `data` and `networkData.ips` atomic. A conflicting apply is
 *   409 with kube-apiserver's causes; `force=true` takes the fields.
 * - The status strategy: the spec and the metadata (labels, annotations, finalizers, owner
 *   references) stay as stored, whatever the write says; then validation (422 Invalid): every
 *   `status.devices` entry an allocated device of the claim, conditions, data and networkData
 *   within the API's limits, IPs as canonical interface addresses.
 * - Granular status authorization (DRAResourceClaimGranularStatusAuthorization, on by default
 *   from 1.36; `draGranularStatusAuthorization: false` turns it off): per driver whose entries
 *   the write adds, removes or changes, `associated-node:<verb>` (a service account whose token
 *   names the node the claim is allocated to, by a one-node selector) or `arbitrary-node:<verb>`
 *   on `resourceclaims/driver` named after the driver; a change of allocation or reservedFor
 *   needs `resourceclaims/binding` cluster-wide. A denial is 422 Invalid, a Forbidden cause.
 * - Then admission (403), then storage, where an empty `devices` or `reservedFor` list is left
 *   out (the Go type's `omitempty`). A write that changes nothing is not stored again.
 */
import { isIP } from "node:net";
import { load } from "js-yaml";
import type { AdmissionOutcome } from "./admission.ts";
import { isObject, mergePatch } from "./patch.ts";
import { authorize, forbiddenMessage, type RequestAttributes, type UserInfo } from "./rbac.ts";
import { DRA_API_VERSION, DRA_GROUP, objectKey, TRUE } from "./resources.ts";
import type { Call, ServerContext } from "./router.ts";
import {
  applyConfig,
  ConflictError,
  fromFieldsV1,
  type Manager,
  managerId,
  printPath,
  type Schema,
  SsaError,
  toFieldsV1,
  updateObject,
} from "./ssa.ts";
import { HttpError, methodNotAllowed } from "./status.ts";
import type { KubeObject } from "./types.ts";

type Obj = Record<string, unknown>;
type Answer = [number, unknown];

const LEAF: Schema = { kind: "atomic" };
const GRANULAR: Schema = { kind: "map" };

/** A ResourceClaim as its field manager sees it (k8s.io/api resource/v1 list and struct tags). */
const CLAIM_SCHEMA: Schema = {
  kind: "struct",
  fields: {
    spec: GRANULAR,
    status: {
      kind: "struct",
      fields: {
        allocation: GRANULAR,
        reservedFor: { kind: "listMap", keys: ["uid"], elem: GRANULAR },
        devices: {
          kind: "listMap",
          keys: ["driver", "device", "pool", "shareID"],
          elem: {
            kind: "struct",
            fields: {
              driver: LEAF,
              pool: LEAF,
              device: LEAF,
              shareID: LEAF,
              conditions: { kind: "listMap", keys: ["type"], elem: GRANULAR },
              data: LEAF,
              networkData: {
                kind: "struct",
                fields: { interfaceName: LEAF, ips: LEAF, hardwareAddress: LEAF },
              },
            },
          },
        },
      },
    },
  },
};

/** The claim's owned part: what managedFields describe (identity and metadata left out). */
function bodyOf(obj: Obj): Obj {
  const { apiVersion: _v, kind: _k, metadata: _m, ...body } = obj;
  return body;
}

const seconds = () => new Date().toISOString().replace(/\.\d+Z$/, "Z");

function managersOf(obj: KubeObject): Manager[] {
  const entries = Array.isArray(obj.metadata.managedFields) ? obj.metadata.managedFields : [];
  return entries.filter(isObject).map((e) => ({
    manager: String(e.manager ?? ""),
    operation: e.operation === "Apply" ? "Apply" : "Update",
    apiVersion: String(e.apiVersion ?? DRA_API_VERSION),
    ...(typeof e.subresource === "string" && e.subresource ? { subresource: e.subresource } : {}),
    ...(typeof e.time === "string" ? { time: e.time } : {}),
    set: fromFieldsV1(e.fieldsV1),
  }));
}

function managedFieldsOf(managers: Manager[]): Obj[] {
  return managers.map((m) => ({
    manager: m.manager,
    operation: m.operation,
    apiVersion: m.apiVersion,
    time: m.time ?? seconds(),
    fieldsType: "FieldsV1",
    fieldsV1: toFieldsV1(m.set),
    ...(m.subresource ? { subresource: m.subresource } : {}),
  }));
}

/** A test's claim, as if created through the API by one updater (`kubectl`) that owns it all. */
export function withCreatorOwnership<T extends { metadata: Obj }>(obj: T): T {
  if (obj.metadata.managedFields !== undefined) return obj;
  const self = { manager: "kubectl-create", operation: "Update" as const };
  const managers = updateObject({
    live: {},
    next: bodyOf(obj),
    schema: CLAIM_SCHEMA,
    managers: [],
    self: { ...self, apiVersion: DRA_API_VERSION },
  });
  return { ...obj, metadata: { ...obj.metadata, managedFields: managedFieldsOf(managers) } };
}

/** GET of a claim or its status; PATCH and PUT of its status. */
export function handleClaim(ctx: ServerContext, call: Call, ref: { ns: string; name: string }) {
  const live = ctx.store.objects("resourceclaims").get(objectKey(ref.ns, ref.name));
  if (call.method === "GET") return [200, live ?? claimNotFound(ref.name)] as Answer;
  if (call.info.subresource !== "status") throw methodNotAllowed(call.method);
  if (call.method !== "PATCH" && call.method !== "PUT") throw methodNotAllowed(call.method);
  if (!live) claimNotFound(ref.name);
  const write = statusWrite(call, live);
  return storeStatus(ctx, call, { live, ...write });
}

function claimNotFound(name: string): never {
  throw new HttpError(404, `resourceclaims.${DRA_GROUP} "${name}" not found`, {
    name,
    group: DRA_GROUP,
    kind: "resourceclaims",
  });
}

/** The write's new body and managers, as the PATCH or PUT handler's field manager makes them. */
function statusWrite(call: Call, live: KubeObject): { body: Obj; managers: Manager[] } {
  const contentType = (call.req.headers["content-type"] ?? "").split(";")[0]!.trim();
  const apply = call.method === "PATCH" && contentType === "application/apply-patch+yaml";
  const { manager, force } = patchOptions(call, apply);
  const liveBody = bodyOf(live);
  const managers = managersOf(live);
  const self = { manager, apiVersion: DRA_API_VERSION, subresource: "status" };
  try {
    if (apply) {
      const config = statusOnly(appliedObject(call, live));
      const out = applyConfig({
        live: liveBody,
        config,
        schema: CLAIM_SCHEMA,
        managers,
        self: { ...self, operation: "Apply" },
        force,
      });
      return { body: out.object as Obj, managers: out.managers };
    }
    const next = { ...liveBody, ...statusOnly(updatedObject(call, live, contentType)) };
    const after = { ...self, operation: "Update" as const };
    const schema = CLAIM_SCHEMA;
    return {
      body: next,
      managers: updateObject({ live: liveBody, next, schema, managers, self: after }),
    };
  } catch (err) {
    if (err instanceof ConflictError) throw conflictError(err);
    if (err instanceof SsaError) throw new HttpError(422, err.message);
    throw err;
  }
}

/** fieldManager (required for apply, at most 128 characters) and force (apply only). */
function patchOptions(call: Call, apply: boolean): { manager: string; force: boolean } {
  const given = call.q.get("fieldManager") ?? "";
  const force = call.q.has("force");
  const invalid = (field: string, why: string) =>
    new HttpError(422, `PatchOptions.meta.k8s.io "" is invalid: ${field}: ${why}`, {
      group: "meta.k8s.io",
      kind: "PatchOptions",
      causes: [{ reason: "FieldValueInvalid", message: why, field }],
    });
  if (apply && !given) throw invalid("fieldManager", "Required value: is required for apply patch");
  if (!apply && force)
    throw invalid("force", "Forbidden: may not be specified for non-apply patch");
  if (given.length > 128) throw invalid("fieldManager", "Too long: may not be more than 128 bytes");
  const agent = String(call.req.headers["user-agent"] ?? "").split("/")[0]!;
  return { manager: given || agent, force: TRUE.has(call.q.get("force") ?? "") };
}

/** Only the status of a write counts: the strategy resets spec and metadata. */
function statusOnly(obj: Obj): Obj {
  return obj.status === undefined ? {} : { status: obj.status };
}

function parseWriteBody(call: Call, yaml: boolean): Obj {
  let v: unknown;
  try {
    v = yaml ? load(call.body) : JSON.parse(call.body);
  } catch (err) {
    throw new HttpError(400, `error decoding the request body: ${(err as Error).message}`);
  }
  if (!isObject(v)) throw new HttpError(400, "the body of the request is not an object");
  return v;
}

/** An apply's object: this claim, by apiVersion, kind and name (400 otherwise, as the handler). */
function appliedObject(call: Call, live: KubeObject): Obj {
  const obj = parseWriteBody(call, true);
  if (obj.apiVersion !== DRA_API_VERSION || obj.kind !== "ResourceClaim")
    throw new HttpError(
      400,
      `the apiVersion and kind of an apply to resourceclaims must be ${DRA_API_VERSION} ` +
        `ResourceClaim, not ${String(obj.apiVersion)} ${String(obj.kind)}`,
    );
  const meta = isObject(obj.metadata) ? obj.metadata : {};
  if (meta.name !== undefined && meta.name !== live.metadata.name)
    throw new HttpError(
      400,
      `the name of the object (${String(meta.name)}) does not match the name on the URL ` +
        `(${live.metadata.name})`,
    );
  return obj;
}

/** A merge patch applied to the stored claim, or a PUT's object (its resourceVersion checked). */
function updatedObject(call: Call, live: KubeObject, contentType: string): Obj {
  if (call.method === "PUT") {
    const next = parseWriteBody(call, false);
    const rv = isObject(next.metadata) ? next.metadata.resourceVersion : undefined;
    if (rv !== undefined && rv !== live.metadata.resourceVersion)
      throw new HttpError(
        409,
        `Operation cannot be fulfilled on resourceclaims.${DRA_GROUP} "${live.metadata.name}": ` +
          "the object has been modified; please apply your changes to the latest version and " +
          "try again",
      );
    return next;
  }
  if (contentType !== "application/merge-patch+json")
    throw new HttpError(
      415,
      `the fake API server does not implement patch type ${JSON.stringify(contentType)} ` +
        "for resourceclaims/status",
    );
  return mergePatch(live, parseWriteBody(call, false)) as Obj;
}

/** 409 as kube-apiserver's NewApplyConflict words it, one cause per field. */
function conflictError(err: ConflictError): HttpError {
  const who = (m: Manager) =>
    m.operation === "Apply"
      ? `"${m.manager}"${m.subresource ? ` with subresource "${m.subresource}"` : ""}`
      : `"${m.manager}" using ${m.apiVersion}${m.time ? ` at ${m.time}` : ""}`;
  const causes = err.conflicts.flatMap((c) =>
    c.paths.map((p) => ({
      reason: "FieldManagerConflict",
      message: `conflict with ${who(c.manager)}`,
      field: printPath(p),
    })),
  );
  const message =
    causes.length === 1
      ? `Apply failed with 1 conflict: ${causes[0]!.message}: ${causes[0]!.field}`
      : `Apply failed with ${causes.length} conflicts: ` +
        err.conflicts
          .map(
            (c) =>
              `conflicts with ${who(c.manager)}:\n` +
              c.paths.map((p) => `- ${printPath(p)}`).join("\n"),
          )
          .join("\n");
  const e = new HttpError(409, message, { causes });
  e.reason = "Conflict";
  return e;
}

/** Validation, granular authorization, admission, then the claim as stored. */
function storeStatus(
  ctx: ServerContext,
  call: Call,
  write: { live: KubeObject; body: Obj; managers: Manager[] },
): Answer {
  const { live } = write;
  const liveBody = bodyOf(live);
  // The strategy: the spec as stored (metadata is not in the body at all).
  const body = omitEmpty({
    ...write.body,
    ...(liveBody.spec !== undefined ? { spec: liveBody.spec } : {}),
  });
  const name = live.metadata.name;
  const errors = validateStatus(body);
  errors.push(
    ...authorizeStatus(ctx, call, {
      live: liveBody,
      next: body,
      ns: live.metadata.namespace ?? "",
    }),
  );
  if (errors.length) throw invalid(name, errors);
  if (unchanged(liveBody, body, { before: managersOf(live), after: write.managers }))
    return [200, live];
  const next: KubeObject = {
    apiVersion: DRA_API_VERSION,
    kind: "ResourceClaim",
    ...body,
    metadata: { ...live.metadata, managedFields: managedFieldsOf(write.managers) },
  };
  const outcome: AdmissionOutcome = ctx.admission.review({
    info: call.info,
    user: call.user,
    operation: "UPDATE",
    object: next,
    oldObject: live,
  });
  if (outcome.warnings.length) (call.logged.warnings ??= []).push(...outcome.warnings);
  if (outcome.denial) {
    const e = new HttpError(outcome.denial.code, outcome.denial.message, outcome.denial.details);
    e.reason = outcome.denial.reason;
    throw e;
  }
  const stored = { ...next, metadata: { ...next.metadata, resourceVersion: ctx.store.nextRv() } };
  const key = objectKey(live.metadata.namespace ?? "", name);
  ctx.store.record([ctx.store.put("resourceclaims", key, stored)]);
  return [200, stored];
}

/** The Go type's `omitempty` lists of the status: an empty one is not stored. */
function omitEmpty(body: Obj): Obj {
  if (!isObject(body.status)) return body;
  const status = { ...body.status };
  for (const k of ["devices", "reservedFor"])
    if (Array.isArray(status[k]) && status[k].length === 0) delete status[k];
  return { ...body, status };
}

function unchanged(
  before: Obj,
  after: Obj,
  managers: { before: Manager[]; after: Manager[] },
): boolean {
  const sets = (ms: Manager[]) =>
    JSON.stringify(ms.map((m) => [managerId(m), [...m.set].sort()]).sort());
  return (
    JSON.stringify(before) === JSON.stringify(after) &&
    sets(managers.before) === sets(managers.after)
  );
}

/** One validation error: its field path, Go's error type and the detail. */
interface FieldError {
  field: string;
  type:
    | "Required value"
    | "Invalid value"
    | "Duplicate value"
    | "Too many"
    | "Too long"
    | "Forbidden"
    | "Unsupported value";
  detail: string;
}

const REASONS: Record<FieldError["type"], string> = {
  "Required value": "FieldValueRequired",
  "Invalid value": "FieldValueInvalid",
  "Duplicate value": "FieldValueDuplicate",
  "Too many": "FieldValueTooMany",
  "Too long": "FieldValueTooLong",
  Forbidden: "FieldValueForbidden",
  "Unsupported value": "FieldValueNotSupported",
};

/** 422 Invalid as NewInvalid words it: one error as it is, several in brackets. */
function invalid(name: string, errors: FieldError[]): HttpError {
  const text = (e: FieldError) => `${e.field}: ${e.type}: ${e.detail}`;
  const all = errors.map(text);
  const what = all.length === 1 ? all[0] : `[${all.join(", ")}]`;
  const e = new HttpError(422, `ResourceClaim.${DRA_GROUP} "${name}" is invalid: ${what}`, {
    name,
    group: DRA_GROUP,
    kind: "ResourceClaim",
    causes: errors.map((x) => ({
      reason: REASONS[x.type],
      message: `${x.type}: ${x.detail}`,
      field: x.field,
    })),
  });
  e.reason = "Invalid";
  return e;
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** (driver, pool, device, shareID) of an entry or an allocation result. */
function deviceKey(entry: Obj): string {
  return JSON.stringify([entry.driver, entry.pool, entry.device, entry.shareID ?? null]);
}

/** validateResourceClaimStatusUpdate's part for status.devices. */
function validateStatus(body: Obj): FieldError[] {
  const status = isObject(body.status) ? body.status : {};
  const allocation = isObject(status.allocation) ? status.allocation : undefined;
  const results = list(isObject(allocation?.devices) ? allocation.devices.results : undefined);
  const allocated = new Set(results.filter(isObject).map(deviceKey));
  const seen = new Set<string>();
  return list(status.devices).flatMap((raw, i) => {
    const at = `status.devices[${i}]`;
    const entry = isObject(raw) ? raw : {};
    const errors: FieldError[] = ["driver", "pool", "device"]
      .filter((k) => !str(entry[k]))
      .map((k) => ({ field: `${at}.${k}`, type: "Required value", detail: "" }));
    if (errors.length) return errors;
    const id = `${String(entry.driver)}/${String(entry.pool)}/${String(entry.device)}`;
    if (seen.has(deviceKey(entry)))
      errors.push({ field: at, type: "Duplicate value", detail: JSON.stringify(id) });
    seen.add(deviceKey(entry));
    if (!allocated.has(deviceKey(entry)))
      errors.push({
        field: at,
        type: "Invalid value",
        detail: `${JSON.stringify(id)}: must be an allocated device in the claim`,
      });
    return [...errors, ...validateEntry(entry, at)];
  });
}

function tooLong(field: string, value: unknown, max: number): FieldError[] {
  return typeof value === "string" && Buffer.byteLength(value) > max
    ? [{ field, type: "Too long", detail: `may not be more than ${max} bytes` }]
    : [];
}

function validateEntry(entry: Obj, at: string): FieldError[] {
  const errors: FieldError[] = [];
  const conditions = list(entry.conditions);
  if (conditions.length > 8)
    errors.push({
      field: `${at}.conditions`,
      type: "Too many",
      detail: `${conditions.length}: must have at most 8 items`,
    });
  conditions.forEach((c, j) => errors.push(...validateCondition(c, `${at}.conditions[${j}]`)));
  if (entry.data !== undefined) {
    if (!isObject(entry.data))
      errors.push({
        field: `${at}.data`,
        type: "Invalid value",
        detail: "must be a valid JSON object",
      });
    else errors.push(...tooLong(`${at}.data`, JSON.stringify(entry.data), 10 * 1024));
  }
  if (entry.networkData !== undefined)
    errors.push(...validateNetworkData(entry.networkData, `${at}.networkData`));
  return errors;
}

const CONDITION_TYPE = new RegExp(
  "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?" +
    "[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$",
);
const CONDITION_REASON = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;

/** metav1.Condition's validation (ValidateCondition). */
function validateCondition(raw: unknown, at: string): FieldError[] {
  const c = isObject(raw) ? raw : {};
  const errors: FieldError[] = [];
  if (!str(c.type) || !CONDITION_TYPE.test(String(c.type)))
    errors.push({
      field: `${at}.type`,
      type: "Invalid value",
      detail: `${JSON.stringify(c.type ?? "")}: must be a qualified name`,
    });
  if (!["True", "False", "Unknown"].includes(String(c.status)))
    errors.push({
      field: `${at}.status`,
      type: "Unsupported value",
      detail: `${JSON.stringify(c.status ?? "")}: supported values: "False", "True", "Unknown"`,
    });
  if (!str(c.reason) || !CONDITION_REASON.test(String(c.reason)))
    errors.push({
      field: `${at}.reason`,
      type: "Invalid value",
      detail:
        `${JSON.stringify(c.reason ?? "")}: a condition reason must start with alphabetic ` +
        "character, optionally followed by a string of alphanumeric characters or '_,:', and " +
        "must end with an alphanumeric character or '_'",
    });
  if (!str(c.lastTransitionTime) || Number.isNaN(Date.parse(String(c.lastTransitionTime))))
    errors.push({
      field: `${at}.lastTransitionTime`,
      type: "Required value",
      detail: "must be set",
    });
  errors.push(...tooLong(`${at}.message`, c.message, 32768));
  return errors;
}

function validateNetworkData(raw: unknown, at: string): FieldError[] {
  const data = isObject(raw) ? raw : {};
  const errors = [
    ...tooLong(`${at}.interfaceName`, data.interfaceName, 256),
    ...tooLong(`${at}.hardwareAddress`, data.hardwareAddress, 128),
  ];
  const ips = list(data.ips);
  if (ips.length > 16)
    errors.push({
      field: `${at}.ips`,
      type: "Too many",
      detail: `${ips.length}: must have at most 16 items`,
    });
  const seen = new Set<unknown>();
  ips.forEach((ip, k) => {
    const field = `${at}.ips[${k}]`;
    if (seen.has(ip)) errors.push({ field, type: "Duplicate value", detail: JSON.stringify(ip) });
    seen.add(ip);
    const problem = interfaceAddressProblem(String(ip));
    if (problem)
      errors.push({ field, type: "Invalid value", detail: `${JSON.stringify(ip)}: ${problem}` });
  });
  return errors;
}

/** IsValidInterfaceAddress: an address in CIDR form (host bits allowed), in canonical form. */
export function interfaceAddressProblem(text: string): string | undefined {
  const bad = "must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)";
  const m = /^([^/]+)\/(\d+)$/.exec(text);
  const family = m ? isIP(m[1]!) : 0;
  if (!m || family === 0 || Number(m[2]) > (family === 4 ? 32 : 128)) return bad;
  const address = family === 4 ? m[1]! : new URL(`http://[${m[1]}]`).hostname.slice(1, -1);
  const canonical = `${address}/${Number(m[2])}`;
  return canonical === text
    ? undefined
    : `must be in canonical form (${JSON.stringify(canonical)})`;
}

/** The one node the allocation names by `metadata.name` (nodeNameFromAllocation), or none. */
function allocatedNode(body: Obj): string | undefined {
  const status = isObject(body.status) ? body.status : {};
  const allocation = isObject(status.allocation) ? status.allocation : {};
  const selector = isObject(allocation.nodeSelector) ? allocation.nodeSelector : {};
  const terms = list(selector.nodeSelectorTerms);
  if (terms.length !== 1 || !isObject(terms[0])) return undefined;
  const term = terms[0];
  const fields = list(term.matchFields);
  if (list(term.matchExpressions).length !== 0 || fields.length !== 1) return undefined;
  const f = isObject(fields[0]) ? fields[0] : {};
  const values = list(f.values);
  if (f.key !== "metadata.name" || f.operator !== "In" || values.length !== 1) return undefined;
  return str(values[0]);
}

/** saAssociatedWithAllocatedNode: a service account whose token names exactly that node. */
function associated(user: UserInfo, body: Obj): boolean {
  if (!/^system:serviceaccount:[^:]+:[^:]+$/.test(user.name)) return false;
  const nodes = user.extra?.["authentication.kubernetes.io/node-name"] ?? [];
  const node = allocatedNode(body);
  return nodes.length === 1 && node !== undefined && nodes[0] === node;
}

/** The drivers whose entries were added, removed or changed (getModifiedDrivers). */
function modifiedDrivers(before: Obj, after: Obj): string[] {
  const entries = (body: Obj) => {
    const status = isObject(body.status) ? body.status : {};
    return new Map(
      list(status.devices)
        .filter(isObject)
        .map((e) => [deviceKey(e), e]),
    );
  };
  const [old, now] = [entries(before), entries(after)];
  const drivers = new Set<string>();
  for (const key of new Set([...old.keys(), ...now.keys()]))
    if (JSON.stringify(old.get(key)) !== JSON.stringify(now.get(key)))
      drivers.add(String((old.get(key) ?? now.get(key))!.driver));
  return [...drivers].sort();
}

/** The request's verb (`patch` for every PATCH, server-side apply included; `update` for PUT). */
const requestVerb = (call: Call) => (call.method === "PUT" ? "update" : "patch");

/** AuthorizedForDeviceStatus and AuthorizedForBinding, as Forbidden field errors. */
function authorizeStatus(
  ctx: ServerContext,
  call: Call,
  write: { live: Obj; next: Obj; ns: string },
): FieldError[] {
  if (ctx.draGranularStatusAuthorization === false) return [];
  const user = call.user;
  const allowed = (attrs: RequestAttributes) =>
    !ctx.rbac || user.groups.includes("system:masters") || authorize(ctx.rbac, user, attrs);
  const verb = requestVerb(call);
  const errors: FieldError[] = [];
  const status = (b: Obj) => (isObject(b.status) ? b.status : {});
  const [old, now] = [status(write.live), status(write.next)];
  const same = (k: string) => JSON.stringify(old[k]) === JSON.stringify(now[k]);
  if (!same("allocation") || !same("reservedFor")) {
    const attrs = {
      verb,
      apiGroup: DRA_GROUP,
      resource: "resourceclaims",
      subresource: "binding",
      namespace: "",
      name: "",
    };
    if (!allowed(attrs))
      errors.push({
        field: "status",
        type: "Forbidden",
        detail:
          'changing status.allocation or status.reservedFor requires resource="resourceclaims/' +
          `binding", verb="${verb}" permission: ${forbiddenMessage(user, attrs)}`,
      });
  }
  const prefixes = associated(user, write.next)
    ? ["associated-node", "arbitrary-node"]
    : ["arbitrary-node"];
  for (const driver of modifiedDrivers(write.live, write.next)) {
    const attrs = (prefix: string) => ({
      verb: `${prefix}:${verb}`,
      apiGroup: DRA_GROUP,
      resource: "resourceclaims",
      subresource: "driver",
      namespace: write.ns,
      name: driver,
    });
    if (prefixes.some((p) => allowed(attrs(p)))) continue;
    const verbs = prefixes.map((p) => `${p}:${verb}`).join(" ");
    errors.push({
      field: "status.devices",
      type: "Forbidden",
      detail:
        `changing status.devices requires resource="resourceclaims/driver", verb="[${verbs}]" ` +
        `permission: ${forbiddenMessage(user, attrs(prefixes[0]!))}`,
    });
  }
  return errors;
}
