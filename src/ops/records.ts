/**
 * `plexus records list | show ID | rm ID [--teardown]`: the container records ADD writes before
 * its first delegate runs (<cniDir>/records/), which DEL runs from. A record whose DEL keeps
 * failing blocks nothing else, but it stays until a DEL succeeds; here a person can see it, tear
 * its attachments down with DEL's own code (teardown.ts) and remove it.
 */
import { existsSync, statSync } from "node:fs";
import { rm } from "node:fs/promises";
import { basename } from "node:path";
import { parseCniArgs } from "../cni/args";
import type { CniRequest } from "../cni/env";
import { escapeText, quote } from "../cni/quote";
import { parsePlexusConf, type PlexusConf } from "../config/plugin-conf";
import { createLogger } from "../log/logger";
import { callDeadline } from "../nodestate/runtime-conf";
import type { Deps } from "../orchestrate/deps";
import { withContainerLock } from "../nodestate/lock";
import { nodeDeps } from "../orchestrate/node-deps";
import { RecordStore, type ContainerRecord, type RecordRead } from "../nodestate/record";
import type { Attachment } from "../nodestate/record";
import { teardown } from "../nodestate/teardown";
import { acquireContainerLock } from "../store/container-lock";
import { silentLogger } from "../log/logger";
import {
  cniPathOf,
  exitCodeOf,
  ProblemError,
  UsageError,
  messageOf,
  type CommonFlags,
  type Output,
  processOutput,
  wantsJson,
} from "./context";
import { opsWiring } from "./loaders";
import { loadNodeConfig } from "./node-config";
import { ExitCode } from "../command/exit-codes";

export interface RecordsFlags extends CommonFlags {
  cniDir?: string | undefined;
  teardown?: boolean | undefined;
}

export interface RecordSummary {
  id: string;
  path: string;
  state: "ok" | "stale" | "pending" | "corrupt";
  /** Why stale or corrupt. */
  why?: string;
  pod?: string;
  containerId?: string;
  ifName?: string;
  netns?: string;
  networks?: string[];
  modified?: string;
  /** When its first DEL failed (state "pending"). */
  delFailedAt?: string;
  /**
   * State "pending": when housekeeping abandons it should its teardown keep failing (ISO time), or
   * "never" (retryDeleteOnError).
   */
  retryUntil?: string;
  /** State "pending": why each attachment's last DEL failed (`network@ifName: code N: message`). */
  lastErrors?: string[];
  /** The attachments hot-plug added to the running pod, and when (`network@ifName at ISO time`). */
  hotplugged?: string[];
}

/** The keys that say how long a pending record is retried (the node's Plexus config). */
export type RetryKeys = Pick<PlexusConf, "failedDelRetryMs" | "retryDeleteOnError">;

/**
 * The Plexus config, or (with --cni-dir) defaults when none can be read: listing needs only the
 * directory.
 */
function confFor(flags: RecordsFlags): PlexusConf {
  let conf: PlexusConf;
  try {
    conf = loadNodeConfig({ config: flags.config, confDir: flags.cniConfDir }).conf;
  } catch (err) {
    if (!flags.cniDir) throw err;
    conf = parsePlexusConf(
      { cniVersion: "1.1.0", name: "plexus", type: "plexus" },
      { requireNetworks: false },
    );
  }
  if (flags.cniDir) conf.cniDir = flags.cniDir;
  return conf;
}

const idOf = (path: string) => basename(path).replace(/\.json$/, "");

/**
 * A record whose network namespace is gone: its pod sandbox no longer exists, only DEL's cleanup is
 * left.
 */
export function summarise(read: RecordRead, store: RecordStore, retry?: RetryKeys): RecordSummary {
  if (read.state === "corrupt")
    return { id: idOf(read.path), path: read.path, state: "corrupt", why: read.reason };
  if (read.state !== "found") throw new Error("unreachable");
  const r = read.record;
  const path = store.path(r.containerId, r.ifName);
  const s: RecordSummary = {
    id: idOf(path),
    path,
    state: "ok",
    containerId: r.containerId,
    ifName: r.ifName,
    netns: r.netns,
    networks: r.attachments.map((a) => `${a.network}@${a.ifName}`),
  };
  if (r.pod) s.pod = `${r.pod.namespace}/${r.pod.name}`;
  const hot = r.attachments.filter((a) => a.hotpluggedAt);
  const at = (a: Attachment) => `${a.network}@${a.ifName} at ${a.hotpluggedAt}`;
  if (hot.length > 0) s.hotplugged = hot.map(at);
  try {
    s.modified = statSync(path).mtime.toISOString();
  } catch {
    // removed meanwhile
  }
  if (r.delFailedAt) Object.assign(s, pendingSummary(r, retry));
  else if (r.netns && !existsSync(r.netns)) {
    s.state = "stale";
    s.why =
      `its network namespace ${r.netns} is gone (the sandbox was removed, but no DEL ` +
      `succeeded)`;
  }
  return s;
}

/**
 * A pending record: why it is there (each attachment's last DEL error) and when it goes
 * (abandoned once failedDelRetrySeconds have passed since its first failed DEL; never with
 * retryDeleteOnError).
 */
function pendingSummary(record: ContainerRecord, policy?: RetryKeys): Partial<RecordSummary> {
  const since = Date.parse(record.delFailedAt ?? "");
  const retryUntil = policy?.retryDeleteOnError
    ? "never"
    : policy && Number.isFinite(since)
      ? new Date(since + policy.failedDelRetryMs).toISOString()
      : undefined;
  const lastErrors = record.attachments.map((a) => {
    const e = a.lastDelError;
    return `${a.network}@${a.ifName}: ${e ? `code ${e.code}: ${e.msg}` : "?"}`;
  });
  const until =
    retryUntil === "never"
      ? "until it succeeds (retryDeleteOnError: never abandoned)"
      : retryUntil
        ? `until it succeeds or until ${retryUntil}, then abandons it (failedDelRetrySeconds)`
        : "until it succeeds or failedDelRetrySeconds have passed, then abandons it";
  return {
    state: "pending",
    ...(record.delFailedAt ? { delFailedAt: record.delFailedAt } : {}),
    ...(retryUntil ? { retryUntil } : {}),
    lastErrors,
    why:
      `its DEL failed at ${record.delFailedAt} (${lastErrors.join("; ")}); housekeeping ` +
      `(the daemon's timer, CNI GC, or a later DEL) retries it ${until}`,
  };
}

export async function listRecords(store: RecordStore, retry?: RetryKeys): Promise<RecordSummary[]> {
  const list = (await store.list()).map((r) => summarise(r, store, retry));
  return list.sort((a, b) => a.id.localeCompare(b.id));
}

async function find(
  store: RecordStore,
  id: string,
  policy: RetryKeys,
): Promise<{ read: RecordRead; summary: RecordSummary }> {
  const all = await store.list();
  const matches = all.filter((r) => {
    const s = summarise(r, store, policy);
    return s.id === id || s.containerId === id;
  });
  if (matches.length === 0)
    throw new ProblemError(`no record ${quote(id)} in ${store.dir}; see plexus records list`);
  if (matches.length > 1)
    throw new UsageError(
      `${matches.length} records match ${quote(id)} (one per interface); give the full ID from ` +
        `plexus records list`,
    );
  return { read: matches[0]!, summary: summarise(matches[0]!, store, policy) };
}

function renderRecordList(list: RecordSummary[], dir: string): string {
  if (list.length === 0) return `no container records in ${dir}\n`;
  const rows = list.map((s) => [
    s.id,
    s.state,
    s.pod ?? "-",
    s.networks?.join(",") ?? "-",
    s.modified ?? "-",
    s.why ?? (s.hotplugged ? `hot-plugged: ${s.hotplugged.join(", ")}` : ""),
  ]);
  // B98: a record's fields come from a file and the runtime; escaped before the widths are taken.
  for (const row of rows) row.forEach((cell, i) => (row[i] = escapeText(cell)));
  const head = ["ID", "STATE", "POD", "NETWORKS", "WRITTEN", "NOTE"];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const fmt = (r: string[]) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return `${[fmt(head), ...rows.map(fmt)].join("\n")}\n`;
}

/**
 * Runs DEL's teardown for a record's attachments (in reverse, every one tried) as the runtime's DEL
 * does: under the container's lock and within `delTimeoutSeconds`, so it never races a DEL or ADD
 * of the container. The record is read again under the lock (a DEL may have finished meanwhile)
 * and removed there when every attachment came down. Returns the failures, or "gone" when the
 * record was removed meanwhile (the runtime's DEL, or an ADD's rollback, did the work).
 */
async function tearDownRecord(
  found: ContainerRecord,
  conf: PlexusConf,
  flags: RecordsFlags,
): Promise<string[] | "gone"> {
  const log = await createLogger(
    { logLevel: flags.logLevel ?? "info", logToStderr: true },
    { component: "records", containerId: found.containerId },
  );
  const deps: Deps = { ...nodeDeps(conf, log, process.env), ...opsWiring };
  const deadline = callDeadline("DEL", conf);
  const lock = { verb: "DEL", req: found, conf, deps, deadlineAt: deadline.at };
  return withContainerLock(lock, async (locked): Promise<string[] | "gone"> => {
    const read = await locked.records.read(found.containerId, found.ifName);
    if (read.state !== "found") return "gone";
    const record = read.record;
    // DEL with CNI_NETNS="" when the namespace is gone (containerd does the same): plugins release
    // host-side state.
    const netns = record.netns && existsSync(record.netns) ? record.netns : "";
    const req: CniRequest = {
      command: "DEL",
      containerId: record.containerId,
      netns,
      ifName: record.ifName,
      args: parseCniArgs(record.cniArgs),
      rawArgs: record.cniArgs,
      path: cniPathOf(flags.cniPath, process.env),
    };
    const ctx = { containerId: record.containerId, netns, cniArgs: record.cniArgs, deadline };
    const errors = await teardown(record.attachments, ctx, req, conf, locked);
    if (errors.length === 0) await locked.records.delete(record.containerId, record.ifName);
    return errors.map((e) => e.error.message);
  });
}

async function removeIdleLock(cniDir: string, containerId: string, ifName: string): Promise<void> {
  const lock = await acquireContainerLock({
    cniDir,
    containerId,
    ifName,
    deadlineAt: Date.now(),
    verb: "records rm",
    log: silentLogger(),
  }).catch(() => undefined);
  lock?.release({ remove: true });
}

export async function recordsMain(
  action: "list" | "show" | "rm",
  id: string | undefined,
  flags: RecordsFlags,
  out: Output = processOutput,
): Promise<number> {
  try {
    const json = wantsJson(flags.output);
    const conf = confFor(flags);
    const store = new RecordStore(conf.cniDir);
    if (action === "list") {
      const list = await listRecords(store, conf);
      out.out(json ? `${JSON.stringify(list, null, 2)}\n` : renderRecordList(list, store.dir));
      return ExitCode.Ok;
    }
    const { read, summary } = await find(store, id!, conf);
    if (action === "show") {
      const shown = read.state === "found" ? { ...summary, record: read.record } : summary;
      out.out(`${JSON.stringify(shown, null, 2)}\n`);
      return ExitCode.Ok;
    }
    if (flags.teardown && read.state === "found") {
      const errors = await tearDownRecord(read.record, conf, flags);
      if (errors === "gone") {
        out.out(
          `record ${summary.id} was removed while this waited for the container's lock (a DEL ` +
            `ran)\n`,
        );
        return ExitCode.Ok;
      }
      if (errors.length) {
        out.err(
          `record ${summary.id} kept: tearing its attachments down ` +
            `failed:\n${errors.map((e) => `  - ${e}`).join("\n")}\nfix the cause (a missing ` +
            `plugin binary, its config) and run this again, or remove the record without ` +
            `--teardown\n`,
        );
        return ExitCode.Problem;
      }
      out.out(`tore down ${read.record.attachments.length} attachment(s) of ${summary.id}\n`);
    } else if (read.state === "found") {
      out.err(
        `removing ${summary.id} without tearing its attachments down: their host interfaces and ` +
          `IP reservations stay (use --teardown to run DEL first)\n`,
      );
    }
    if (read.state === "found" && !flags.teardown) {
      await store.delete(read.record.containerId, read.record.ifName);
      // The container has no state left: its lock file goes too (unless a call holds it now).
      await removeIdleLock(conf.cniDir, read.record.containerId, read.record.ifName);
    } else if (read.state !== "found") await rm(summary.path, { force: true });
    out.out(`removed record ${summary.id}\n`);
    return ExitCode.Ok;
  } catch (err) {
    out.err(`plexus records ${action}: ${messageOf(err)}\n`);
    return exitCodeOf(err);
  }
}
