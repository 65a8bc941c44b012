/**
 * Errors as kube-apiserver answers them: a `metav1.Status` body with the HTTP code, its reason and
 * details (apimachinery's `errors.New…` constructors), written in one piece with Content-Length.
 */
import type { ServerResponse } from "node:http";

const REASONS: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  405: "MethodNotAllowed",
  409: "Conflict",
  410: "Expired",
  415: "UnsupportedMediaType",
  422: "Invalid",
  429: "TooManyRequests",
  500: "InternalError",
  503: "ServiceUnavailable",
  504: "Timeout",
};

/**
 * Plain fields, not parameter properties: the benchmark loads this file with Node's type stripping.
 */
export class HttpError extends Error {
  readonly code: number;
  readonly details?: Record<string, unknown>;
  reason?: string;
  /** A Status's own `metadata.continue` (an expired continuation's replacement token). */
  listContinue?: string;
  constructor(code: number, message: string, details?: Record<string, unknown>) {
    super(message);
    this.code = code;
    if (details) this.details = details;
  }
}

export function statusBody(
  code: number,
  message: string,
  reason = REASONS[code] ?? "Unknown",
  details?: Record<string, unknown>,
  listContinue?: string,
): Record<string, unknown> {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: listContinue ? { continue: listContinue } : {},
    status: "Failure",
    message,
    reason,
    ...(details ? { details } : {}),
    code,
  };
}

/** The Status of a thrown HttpError, with the Retry-After its details ask for. */
export function sendHttpError(res: ServerResponse, err: HttpError): void {
  const retryAfter = err.details?.retryAfterSeconds;
  send(
    res,
    err.code,
    statusBody(err.code, err.message, err.reason, err.details, err.listContinue),
    typeof retryAfter === "number" ? { "retry-after": String(retryAfter) } : {},
  );
}

export function send(
  res: ServerResponse,
  code: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const buf = Buffer.from(JSON.stringify(body));
  res.writeHead(code, {
    "content-type": "application/json",
    "content-length": String(buf.length),
    ...headers,
  });
  res.end(buf);
}

/**
 * A path no handler serves (a CRD not installed, an API group not enabled): kube-apiserver's
 * handler chain ends in its notfoundhandler, which answers with Go's `http.NotFound`: 404, the
 * plain text `404 page not found`, no metav1.Status (staging/src/k8s.io/apiserver/pkg/util/
 * notfoundhandler). Only a missing object gets a NotFound Status naming it.
 */
export function notServed(res: ServerResponse): void {
  const body = "404 page not found\n";
  res.writeHead(404, {
    "content-type": "text/plain; charset=utf-8",
    "x-content-type-options": "nosniff",
    "content-length": String(Buffer.byteLength(body)),
  });
  res.end(body);
}

export function notFound(resource: string, name: string): never {
  throw new HttpError(404, `${resource} "${name}" not found`, { name, kind: resource });
}

export function conflict(resource: string, name: string, why: string): never {
  throw new HttpError(409, `Operation cannot be fulfilled on ${resource} "${name}": ${why}`, {
    name,
    kind: resource,
  });
}

/** rest.BeforeUpdate's validation of object meta: the UID is immutable. */
export function invalidUid(name: string, uid: unknown): never {
  const what = `Invalid value: ${JSON.stringify(String(uid))}: field is immutable`;
  throw new HttpError(422, `Pod "${name}" is invalid: metadata.uid: ${what}`, {
    name,
    kind: "Pod",
    causes: [{ reason: "FieldValueInvalid", message: what, field: "metadata.uid" }],
  });
}

export function methodNotAllowed(method: string): HttpError {
  return new HttpError(405, `method ${method} not allowed`);
}

export function notFoundResource(): HttpError {
  return new HttpError(404, "the server could not find the requested resource");
}
