/**
 * A scripted {@link PluginExec} for unit tests, after libcni's `pkg/invoke/fakes` and Multus's
 * fakeExec: answers per (CNI_COMMAND, CNI_IFNAME, plugin type), records every call in order with
 * its parsed stdin and env, and notices overlapping calls (N7.3).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CniRequest, parseEnv } from "../../src/cni/env";
import { CniError, Code, passedOnCode } from "../../src/cni/errors";
import { convertResult } from "../../src/cni/result/convert";
import type { Result } from "../../src/cni/result/types";
import { ResultCache } from "../../src/libcni/cache";
import type { ExecRequest, PluginExec } from "../../src/invoke/plugin-exec";
import { silentLogger, type Logger } from "../../src/log/logger";
import type { Deps } from "../../src/orchestrate/deps";
import { eagerLoaders } from "../../src/ops/loaders";
import { fakeNetns } from "./fake-netns";
import { RecordStore } from "../../src/nodestate/record";

export interface FakeCall {
  command: string;
  ifName: string;
  containerId: string;
  type: string;
  /** The path findInPath gave and the exec was asked to run. */
  path: string;
  stdin: Record<string, unknown>;
  env: Record<string, string>;
  start: number;
  end: number;
}

/**
 * `result`: printed in the version the plugin was asked for (written in the 1.x shape);
 * `stdout`: printed verbatim (garbage, another version's result);
 * `error`: the plugin failed with that CNI error (as RawExec reports it); `throws`: thrown as is.
 */
export type FakeAnswer =
  | { result: Record<string, unknown> }
  | { stdout: string }
  | { error: { code: number; msg: string; details?: string } }
  | { throws: unknown };

type Matcher = { command?: string; ifName?: string; type?: string; containerId?: string };
type RuleOptions = { delayMs?: number; times?: number };

export class FakeExec implements PluginExec {
  readonly calls: FakeCall[] = [];
  private readonly rules: Array<{ m: Matcher; answer: FakeAnswer; delayMs: number; left: number }> =
    [];
  /** Every findInPath lookup, in order. */
  readonly lookups: Array<{ type: string; dirs: readonly string[] }> = [];
  private running = 0;
  overlapped = false;
  /** Runs at the start of every exec call (e.g. to look at the file system at that moment). */
  onCall?: (c: Omit<FakeCall, "end">) => void;

  constructor(readonly types: readonly string[] = ["bridge", "macvlan", "tuning", "host-local"]) {}

  /**
   * Later rules win. Without a matching rule ADD returns a result on the call's ifName and other
   * verbs succeed. `times` limits how often a rule answers (then it is spent).
   */
  on(matcher: Matcher, answer: FakeAnswer, opts: number | RuleOptions = 0): this {
    const o = typeof opts === "number" ? { delayMs: opts } : opts;
    this.rules.unshift({ m: matcher, answer, delayMs: o.delayMs ?? 0, left: o.times ?? Infinity });
    return this;
  }

  async findInPath(type: string, dirs: readonly string[]): Promise<string> {
    this.lookups.push({ type, dirs: [...dirs] });
    if (!this.types.includes(type))
      throw new CniError(
        Code.InvalidNetworkConfig,
        `plugin type=${JSON.stringify(type)} is missing from [${dirs.join(":")}]`,
      );
    return `/fake/bin/${type}`;
  }

  async execPlugin(request: ExecRequest): Promise<Uint8Array> {
    const stdin = JSON.parse(Buffer.from(request.stdin).toString()) as Record<string, unknown>;
    const call = {
      command: request.env.CNI_COMMAND ?? "",
      ifName: request.env.CNI_IFNAME ?? "",
      containerId: request.env.CNI_CONTAINERID ?? "",
      type: String(stdin.type),
      path: request.path,
      stdin,
      env: { ...request.env },
      start: performance.now(),
    };
    this.onCall?.(call);
    if (this.running++ > 0) this.overlapped = true;
    try {
      const rule = this.rules.find(
        ({ m, left }) =>
          left > 0 &&
          (!m.command || m.command === call.command) &&
          (!m.ifName || m.ifName === call.ifName) &&
          (!m.type || m.type === call.type) &&
          (!m.containerId || m.containerId === call.containerId),
      );
      if (rule) rule.left--;
      if (rule?.delayMs) await new Promise((res) => setTimeout(res, rule.delayMs));
      const answer =
        rule?.answer ??
        (call.command === "ADD"
          ? { result: defaultResult(call.ifName, this.calls.length) }
          : { result: {} });
      if ("throws" in answer) throw answer.throws;
      if ("error" in answer)
        throw new CniError(
          passedOnCode(answer.error.code),
          `${request.what}: ${answer.error.msg}`,
          answer.error.details,
        );
      if ("stdout" in answer) return Buffer.from(answer.stdout);
      if (call.command !== "ADD") return Buffer.from("");
      // Answers are written in the 1.x shape and printed in the version the plugin was asked for.
      const version = String(stdin.cniVersion);
      return Buffer.from(
        JSON.stringify(convertResult({ ...answer.result, cniVersion: "1.0.0" } as Result, version)),
      );
    } finally {
      this.running--;
      this.calls.push({ ...call, end: performance.now() });
    }
  }

  /** N7.3: throws unless every call ended before the next one started. */
  assertSerial(): void {
    if (this.overlapped) throw new Error("FakeExec: two delegate calls ran at the same time");
    const byStart = [...this.calls].sort((a, b) => a.start - b.start);
    for (let i = 1; i < byStart.length; i++) {
      const [prev, cur] = [byStart[i - 1]!, byStart[i]!];
      if (cur.start < prev.end)
        throw new Error(
          `FakeExec: ${cur.command} ${cur.ifName} ${cur.type} started before ` +
            `${prev.command} ${prev.ifName} ${prev.type} ended`,
        );
    }
  }

  /** `ADD eth0 bridge`, … in call order. */
  summary(): string[] {
    return this.calls.map((c) => `${c.command} ${c.ifName} ${c.type}`);
  }
}

function defaultResult(ifName: string, index: number): Record<string, unknown> {
  return {
    interfaces: [
      {
        name: ifName,
        mac: `0a:58:0a:00:00:${(index + 2).toString(16).padStart(2, "0")}`,
        sandbox: "/proc/self/ns/net",
      },
    ],
    ips: [{ address: `10.0.${index}.2/24`, gateway: `10.0.${index}.1`, interface: 0 }],
  };
}

export interface LogLine {
  level: string;
  obj: Record<string, unknown>;
  msg: string;
}

/** A Logger that keeps what it is told (to check that a fallback was warned about, B47). */
export function recordingLogger(lines: LogLine[] = []): Logger & { lines: LogLine[] } {
  const fn =
    (level: string) =>
    (a: object | string, b?: string): void => {
      lines.push(
        typeof a === "string"
          ? { level, obj: {}, msg: a }
          : { level, obj: a as Record<string, unknown>, msg: b ?? "" },
      );
    };
  const log = {
    ...silentLogger(),
    level: "trace",
    lines,
    trace: fn("trace"),
    debug: fn("debug"),
    info: fn("info"),
    warn: fn("warn"),
    error: fn("error"),
    fatal: fn("fatal"),
    child: () => log,
  };
  return log;
}

/**
 * Deps over a temp cniDir (mkdtemp) and a logger that records silently; `dispose()` removes the
 * dir.
 */
export function fakeDeps(
  exec: FakeExec,
  opts: { baseEnv?: Record<string, string> } = {},
): Deps & { cniDir: string; logs: LogLine[]; dispose(): void } {
  const cniDir = mkdtempSync(join(tmpdir(), "plx-unit-"));
  const log = recordingLogger();
  return {
    exec,
    cache: new ResultCache(cniDir),
    records: new RecordStore(cniDir),
    log,
    logs: log.lines,
    baseEnv: opts.baseEnv ?? { PATH: "/usr/bin", KEEP_ME: "1" },
    netns: fakeNetns(),
    load: eagerLoaders,
    cniDir,
    dispose: () => rmSync(cniDir, { recursive: true, force: true }),
  };
}

/** The netns path unit tests give verbs: this process's own, which passes the netns check. */
const TEST_NETNS = "/proc/self/ns/net";

/**
 * A parsed CNI request for unit tests: container ctr1 on eth0 in {@link TEST_NETNS}; `extra`
 * overrides any variable.
 */
export function cniRequest(command: string, extra: Record<string, string> = {}): CniRequest {
  return parseEnv({
    CNI_COMMAND: command,
    CNI_CONTAINERID: "ctr1",
    CNI_NETNS: TEST_NETNS,
    CNI_IFNAME: "eth0",
    CNI_PATH: "/opt/cni/bin",
    CNI_ARGS: "IgnoreUnknown=1",
    ...extra,
  });
}
