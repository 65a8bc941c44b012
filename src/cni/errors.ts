/**
 * CNI error codes (C2.3 in docs/conformance.md) and the one error type every layer throws.
 *
 * A `const` object plus a derived union instead of an `enum`, so the codes are plain numbers
 * on the wire and in tests.
 */
import { escapeText } from "./quote";
export const Code = {
  IncompatibleVersion: 1,
  UnsupportedField: 2,
  UnknownContainer: 3,
  InvalidEnv: 4,
  IoFailure: 5,
  Decoding: 6,
  InvalidNetworkConfig: 7,
  TryAgainLater: 11,
  /** STATUS: the plugin cannot serve ADD right now (C2.8). */
  PluginNotAvailable: 50,
  /** STATUS: ADD may work but with limited connectivity (C2.8). */
  PluginLimited: 51,
  /** Plexus-specific (100+): a delegate printed something that is not a CNI result. */
  InvalidResult: 100,
  /** A delegate did not finish within its deadline. */
  DelegateTimeout: 101,
  /** A delegate died (signal, crash) without a CNI error. */
  DelegateFailed: 102,
  /** A requested attachment property (IP, MAC, default route) was not honoured by the delegate. */
  VerificationFailed: 103,
  /** The Kubernetes API could not be reached or refused the request. */
  ApiFailure: 104,
  /** Anything not mapped to a code above (skel's catch-all). */
  Internal: 999,
} as const;
export type Code = (typeof Code)[keyof typeof Code];

export interface CniErrorJson {
  cniVersion: string;
  code: number;
  msg: string;
  details?: string;
}

/**
 * A code another program chose (a delegate's error JSON, the daemon's answer), passed on unchanged:
 * the spec lets a plugin use codes of its own (100+), so it may be outside the union. A documented
 * cast rather than a wider type: Plexus branches only on its own codes (and on 1–7, the
 * configuration errors); a foreign code is carried and printed, never tested against.
 */
export function passedOnCode(code: number): Code {
  return code as Code;
}

export class CniError extends Error {
  override name = "CniError";
  constructor(
    readonly code: Code,
    msg: string,
    readonly details?: string,
    options?: ErrorOptions,
  ) {
    super(msg, options);
  }

  /** Same code and details, message prefixed with context (libcni's `pluginDescription` style). */
  withContext(prefix: string): CniError {
    return new CniError(this.code, `${prefix}: ${this.message}`, this.details, { cause: this });
  }

  /**
   * The error as the runtime reads it. B98: the runtime copies `msg` into the pod's Events, which
   * `kubectl describe` prints: text from outside in it (a NAD's type, a delegate's own error) is
   * escaped as every other text output is.
   */
  toJSON(cniVersion: string): CniErrorJson {
    const out: CniErrorJson = { cniVersion, code: this.code, msg: escapeText(this.message) };
    if (this.details) out.details = escapeText(this.details);
    return out;
  }
}

/** Anything thrown becomes a CniError; an unexpected one becomes 999 with its message kept. */
export function isCniError(err: unknown): err is CniError {
  return err instanceof CniError;
}

/**
 * File-system failures on Plexus's own state (a full or read-only cniDir, a disk error, too many
 * open files): the node's condition, not a bug, so an I/O error (5) the runtime can report, never
 * the catch-all 999.
 */
const FS_ERROR_CODES = new Set([
  "ENOSPC",
  "EDQUOT",
  "EIO",
  "EROFS",
  "EACCES",
  "EPERM",
  "EMFILE",
  "ENFILE",
]);

export function asCniError(err: unknown): CniError {
  if (isCniError(err)) return err;
  const errno = (err as { code?: unknown } | null)?.code;
  if (err instanceof Error && typeof errno === "string" && FS_ERROR_CODES.has(errno)) {
    const message = err.message.startsWith(errno) ? err.message : `${errno}: ${err.message}`;
    return new CniError(Code.IoFailure, message, undefined, { cause: err });
  }
  if (err instanceof Error)
    return new CniError(Code.Internal, err.message, undefined, { cause: err });
  return new CniError(Code.Internal, String(err));
}

/**
 * Several failures of one operation that keeps going past a failure (DEL and GC, N7.2, C2.9; ADD's
 * rollback). The code is the first failure's; `errors` holds each one, with its code and cause.
 */
export class AggregateCniError extends CniError {
  override name = "AggregateCniError";
  constructor(
    readonly errors: readonly CniError[],
    message: string,
    details?: string,
  ) {
    super(errors[0]?.code ?? Code.Internal, message, details, { cause: errors[0] });
  }
}

/**
 * "One error, else an aggregate": undefined for no failure, the failure itself for one, else an
 * AggregateCniError whose message is the summary then every message, in order.
 * With `lead` (the error being handled when these happened, as ADD's cause before its rollback's
 * failures): the lead alone when there are none, else an aggregate with the lead's code, message
 * (then the summary and the others') and details.
 */
export function oneError(
  errors: readonly CniError[],
  summary: string,
  opts: { lead?: CniError } = {},
): CniError | undefined {
  const { lead } = opts;
  if (errors.length === 0) return lead;
  const listed = `${summary}: ${errors.map((e) => e.message).join("; ")}`;
  if (lead)
    return new AggregateCniError([lead, ...errors], `${lead.message}; ${listed}`, lead.details);
  if (errors.length === 1) return errors[0];
  const details = errors
    .map((e) => e.details)
    .filter(Boolean)
    .join("\n");
  return new AggregateCniError(errors, listed, details || undefined);
}

/** Throws {@link oneError}'s error, if any. */
export function failIfAny(
  errors: readonly CniError[],
  summary: string,
  opts: { lead?: CniError } = {},
): void {
  const err = oneError(errors, summary, opts);
  if (err) throw err;
}
