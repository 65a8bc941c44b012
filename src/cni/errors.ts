/**
 * CNI error codes (C2.3 in docs/conformance.md) and the one error type every layer throws.
 *
 * A `const` object plus a derived union instead of an `enum`, so the codes are plain numbers
 * on the wire and in tests.
 */
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

export class CniError extends Error {
  override name = "CniError";
  constructor(
    readonly code: number,
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

  toJSON(cniVersion: string): CniErrorJson {
    const out: CniErrorJson = { cniVersion, code: this.code, msg: this.message };
    if (this.details) out.details = this.details;
    return out;
  }
}

/** Anything thrown becomes a CniError; an unexpected one becomes 999 with its message kept. */
export function isCniError(err: unknown): err is CniError {
  return err instanceof CniError;
}

export function asCniError(err: unknown): CniError {
  if (isCniError(err)) return err;
  if (err instanceof Error) return new CniError(Code.Internal, err.message, undefined, { cause: err });
  return new CniError(Code.Internal, String(err));
}

/**
 * Several failures collected by DEL and GC, which keep going past a failure (N7.2, C2.9).
 * The code is the first failure's; every message is kept, in order.
 */
export class AggregateCniError extends CniError {
  override name = "AggregateCniError";
  constructor(
    readonly errors: readonly CniError[],
    summary: string,
  ) {
    const first = errors[0];
    super(
      first?.code ?? Code.Internal,
      `${summary}: ${errors.map((e) => e.message).join("; ")}`,
      errors
        .map((e) => e.details)
        .filter(Boolean)
        .join("\n") || undefined,
    );
  }
}
