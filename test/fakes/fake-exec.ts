/**
 * A scripted {@link PluginExec} for unit tests, after libcni's `pkg/invoke/fakes` and Multus's
 * fakeExec: answers per (CNI_COMMAND, CNI_IFNAME, plugin type), records every call in order with
 * its parsed stdin and env, and notices overlapping calls (N7.3).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CniError, Code } from "../../src/cni/errors";
import { convertResult } from "../../src/cni/result/convert";
import type { Result } from "../../src/cni/result/types";
import { ResultCache } from "../../src/exec/cache";
import type { ExecRequest, PluginExec } from "../../src/exec/plugin-exec";
import { silentLogger } from "../../src/log/logger";
import type { Deps } from "../../src/orchestrate/deps";
import { RecordStore } from "../../src/orchestrate/record";

export interface FakeCall {
  command: string;
  ifName: string;
  type: string;
  stdin: Record<string, unknown>;
  env: Record<string, string>;
  start: number;
  end: number;
}

export type FakeAnswer = { result: Record<string, unknown> } | { error: { code: number; msg: string } } | { throws: CniError };

type Matcher = { command?: string; ifName?: string; type?: string };

export class FakeExec implements PluginExec {
  readonly calls: FakeCall[] = [];
  private readonly rules: Array<{ m: Matcher; answer: FakeAnswer; delayMs: number }> = [];
  private running = 0;
  overlapped = false;
  /** Runs at the start of every exec call (e.g. to look at the file system at that moment). */
  onCall?: (c: Omit<FakeCall, "end">) => void;

  constructor(readonly types: readonly string[] = ["bridge", "macvlan", "tuning", "host-local"]) {}

  /** Later rules win. Without a matching rule ADD returns a result on the call's ifName and other verbs succeed. */
  on(m: Matcher, answer: FakeAnswer, delayMs = 0): this {
    this.rules.unshift({ m, answer, delayMs });
    return this;
  }

  async findInPath(type: string, dirs: readonly string[]): Promise<string> {
    if (!this.types.includes(type)) throw new CniError(Code.InvalidNetworkConfig, `plugin type=${JSON.stringify(type)} is missing from [${dirs.join(":")}]`);
    return `/fake/bin/${type}`;
  }

  async execPlugin(r: ExecRequest): Promise<Uint8Array> {
    const stdin = JSON.parse(Buffer.from(r.stdin).toString()) as Record<string, unknown>;
    const call = { command: r.env.CNI_COMMAND ?? "", ifName: r.env.CNI_IFNAME ?? "", type: String(stdin.type), stdin, env: r.env, start: performance.now() };
    this.onCall?.(call);
    if (this.running++ > 0) this.overlapped = true;
    try {
      const rule = this.rules.find(({ m }) => (!m.command || m.command === call.command) && (!m.ifName || m.ifName === call.ifName) && (!m.type || m.type === call.type));
      if (rule?.delayMs) await new Promise((res) => setTimeout(res, rule.delayMs));
      const answer = rule?.answer ?? (call.command === "ADD" ? { result: defaultResult(call.ifName, this.calls.length) } : { result: {} });
      if ("throws" in answer) throw answer.throws;
      if ("error" in answer) throw new CniError(answer.error.code, `${r.what}: ${answer.error.msg}`);
      if (call.command !== "ADD") return Buffer.from("");
      // Answers are written in the 1.x shape and printed in the version the plugin was asked for.
      const version = String(stdin.cniVersion);
      return Buffer.from(JSON.stringify(convertResult({ ...answer.result, cniVersion: "1.0.0" } as Result, version)));
    } finally {
      this.running--;
      this.calls.push({ ...call, end: performance.now() });
    }
  }

  /** `ADD eth0 bridge`, … in call order. */
  summary(): string[] {
    return this.calls.map((c) => `${c.command} ${c.ifName} ${c.type}`);
  }
}

export function defaultResult(ifName: string, n: number): Record<string, unknown> {
  return {
    interfaces: [{ name: ifName, mac: `0a:58:0a:00:00:${(n + 2).toString(16).padStart(2, "0")}`, sandbox: "/proc/self/ns/net" }],
    ips: [{ address: `10.0.${n}.2/24`, gateway: `10.0.${n}.1`, interface: 0 }],
  };
}

/** Deps over a temp cniDir; `dispose()` removes it. */
export function fakeDeps(exec: FakeExec): Deps & { cniDir: string; dispose(): void } {
  const cniDir = mkdtempSync(join(tmpdir(), "plx-unit-"));
  return {
    exec,
    cache: new ResultCache(cniDir),
    records: new RecordStore(cniDir),
    log: silentLogger(),
    baseEnv: { PATH: "/usr/bin", KEEP_ME: "1" },
    cniDir,
    dispose: () => rmSync(cniDir, { recursive: true, force: true }),
  };
}
