/**
 * `plexus records retry`: one housekeeping pass over the node's records of failed DELs
 * (nodestate/pending.ts), each pending record retried with a budget of its own, abandoned after
 * `failedDelRetrySeconds` (its TeardownAbandoned event written as a CNI call writes events: the
 * daemon, else the API). The node daemon's timer runs it as a process of its own, as the runtime
 * runs a CNI call, so that the delegates' process handling (subreaper, leftover processes, the
 * container lock) never touches the daemon; `--housekeeper SECONDS` then stamps the node so that
 * DELs leave these retries to the daemon for that long. A person may run it too (a podman host
 * has no daemon), without that flag.
 */
import { parseCniArgs } from "../cni/args";
import type { CniRequest } from "../cni/env";
import { quote } from "../cni/quote";
import { MAX_HOUSEKEEPER_AHEAD_MS } from "../nodestate/record";
import { housekeep } from "../nodestate/pending";
import { cniPathOf, exitCodeOf, messageOf, processOutput, UsageError } from "./context";
import type { CommonFlags } from "./context";
import { nodePassDeps } from "./loaders";
import { ExitCode } from "../command/exit-codes";

export interface RetryFlags extends CommonFlags {
  /** Set by the daemon: seconds until its pass after next, for the stamp DELs read. */
  housekeeper?: string | undefined;
}

/** One pass; exit 0 when it ran (what is still pending is in `plexus records list`). */
export async function recordsRetryMain(flags: RetryFlags, out = processOutput): Promise<number> {
  try {
    const stampMs = stampSeconds(flags.housekeeper);
    const bindings = { component: "housekeeping" };
    const { conf, log, deps } = await nodePassDeps({ flags, bindings });
    const req: CniRequest = {
      command: "GC",
      containerId: "",
      netns: "",
      ifName: "",
      args: parseCniArgs(""),
      rawArgs: "",
      path: cniPathOf(flags.cniPath, process.env),
    };
    const pending = () => deps.records.listPending().length;
    const before = pending();
    const errors = await housekeep(req, conf, deps);
    for (const e of errors) log.warn({ code: e.code, err: e.message }, "a retry failed");
    if (stampMs !== undefined) await deps.records.markHousekeeper(Date.now() + stampMs);
    const after = `${pending()} still pending (plexus records list)`;
    out.out(`retried ${before} pending record(s); ${after}\n`);
    return ExitCode.Ok;
  } catch (err) {
    out.err(`plexus records retry: ${messageOf(err)}\n`);
    return exitCodeOf(err);
  }
}

function stampSeconds(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n) || n <= 0 || n * 1000 > MAX_HOUSEKEEPER_AHEAD_MS)
    throw new UsageError(`--housekeeper ${quote(value)}: expected 0 < seconds ≤ 7200`);
  return n * 1000;
}
