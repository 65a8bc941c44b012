/**
 * What every person-facing command (explain, validate, doctor, records) starts from: the node's
 * Plexus config, the plugin search path, Kubernetes access built the way a CNI call builds it
 * (kubeFactory: the manifest directory, the daemon, else the API server) but read-only, and where
 * its output goes. Nothing here runs in a CNI call.
 */
import { escapeLines, escapeText, quote } from "../cni/quote";
import { kubeFactory, type KubeFactory } from "../sources/kube-factory";
import type { ResourceSlice } from "../cluster/dra-objects";
import type { KubeApi, PodEvent } from "../cluster/kube-api";
import {
  ObjectReader,
  type ReadAnswer,
  type ReadKind,
  type ReadRef,
  readThrough,
} from "../cluster/reads";
import { createLogger, type Logger } from "../log/logger";
import { loadNodeConfig, type NodeConfig } from "./node-config";
import { ExitCode } from "../command/exit-codes";

export interface Output {
  out(text: string): void;
  err(text: string): void;
}

/**
 * The terminal, last stop of every command's text (B98): a control or bidi character that a
 * renderer let through is escaped here, newlines kept. JSON output stays JSON (the escapes are
 * JSON's own, inside its strings).
 */
export const processOutput: Output = {
  out: (t) => void process.stdout.write(escapeLines(t)),
  err: (t) => void process.stderr.write(escapeLines(t)),
};

export interface CommonFlags {
  config?: string | undefined;
  cniConfDir?: string | undefined;
  cniPath?: string | undefined;
  kubeconfig?: string | undefined;
  output?: string | undefined;
  logLevel?: string | undefined;
}

export interface OpsContext extends NodeConfig {
  /** Where delegate binaries are looked up: binDir, then --cni-path ($CNI_PATH, else /opt/cni/bin). */
  cniPath: string[];
  kube: KubeFactory;
  log: Logger;
  json: boolean;
  env: Readonly<Record<string, string | undefined>>;
}

const DEFAULT_CNI_PATH = "/opt/cni/bin";

export function cniPathOf(
  flag: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
): string[] {
  return (flag ?? env.CNI_PATH ?? DEFAULT_CNI_PATH).split(":").filter(Boolean);
}

/** The command line asks for something that cannot be (exit 2). */
export class UsageError extends Error {}
/** What the command was asked about is not there, or not right (exit 1). */
export class ProblemError extends Error {}

/** The exit code for an error that stopped a command. */
export function exitCodeOf(err: unknown): number {
  if (err instanceof UsageError) return ExitCode.Usage;
  if (err instanceof ProblemError) return ExitCode.Problem;
  return ExitCode.CannotRun;
}

/** Whether --output asks for JSON (text otherwise); anything else is refused. */
export function wantsJson(output: string | undefined): boolean {
  if (output === undefined || output === "text") return false;
  if (output === "json") return true;
  throw new UsageError(`--output ${quote(output)}: expected text or json`);
}

export async function opsContext(
  flags: CommonFlags,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<OpsContext> {
  const json = wantsJson(flags.output);
  const node = loadNodeConfig({ config: flags.config, confDir: flags.cniConfDir });
  if (flags.kubeconfig) node.conf.kubeconfig = flags.kubeconfig;
  const log = await createLogger(
    { logLevel: flags.logLevel ?? "panic", logToStderr: true },
    { component: "ops" },
  );
  const kube = kubeFactory(node.conf, {
    env,
    log,
    client: {
      retry: {
        requestTimeoutMs: node.conf.apiRequestTimeoutMs,
        totalTimeoutMs: node.conf.apiTotalTimeoutMs,
      },
    },
  });
  return { ...node, cniPath: cniPathOf(flags.cniPath, env), kube, log, json, env };
}

/**
 * Reads pass through; writes (network-status, events) are kept, not sent: a person's question
 * must not change the cluster. The kept events are what ADD would have recorded.
 */
export class ReadOnlyKube extends ObjectReader implements KubeApi {
  readonly withheldEvents: PodEvent[] = [];
  constructor(private readonly inner: KubeApi) {
    super();
  }
  override read<K extends ReadKind>(kind: K, ref: ReadRef): Promise<ReadAnswer<K>> {
    return readThrough(this.inner, kind, ref);
  }
  /** DRA: the slice list passes through too. */
  async listResourceSlices(query: {
    nodeName?: string | undefined;
    driver: string;
  }): Promise<ResourceSlice[]> {
    return (await this.inner.listResourceSlices?.(query)) ?? [];
  }
  async setNetworkStatus(): Promise<void> {}
  async recordEvent(_pod: unknown, event: PodEvent): Promise<void> {
    this.withheldEvents.push(event);
  }
  async close(): Promise<void> {
    await this.inner.close?.();
  }
}

/**
 * A short error text for people: the message, without a stack, on one line; B98: a delegate's or
 * an object's text in it is escaped.
 */
/**
 * An ops command's body run the one way they all end: what it prints on success is the body's, a
 * failure is one line on stderr (`plexus <command>: <message>`) and the status its kind gives.
 */
export async function runOps(
  command: string,
  out: Output,
  body: () => Promise<number>,
): Promise<number> {
  try {
    return await body();
  } catch (err) {
    out.err(`plexus ${command}: ${messageOf(err)}\n`);
    return exitCodeOf(err);
  }
}

/** runOps for a command that needs something named: the usage line when it is asked about none. */
export function runAsked(
  r: { command: string; out: Output; asked: unknown; usage: string },
  body: () => Promise<number>,
): Promise<number> {
  return runOps(r.command, r.out, async () => {
    if (!r.asked) throw new UsageError(r.usage);
    return body();
  });
}

export function messageOf(err: unknown): string {
  return escapeText(err instanceof Error ? err.message : String(err));
}
