/**
 * The daemon's housekeeping pass: `plexus records retry` (ops/housekeeping.ts) run as a process of
 * its own, as the runtime runs a CNI call. The delegates it runs then have their own parent, which
 * makes itself their subreaper and kills what they leave behind: in the daemon, that would take
 * the daemon's other children too. Its log goes to the daemon's stderr.
 */
import { spawn } from "node:child_process";
import type { HousekeepingPass } from "../daemon/main";
import { selfArgs } from "./self-command";

export function housekeepingPass(flags: Record<string, string | undefined>): HousekeepingPass {
  return ({ intervalMs }) =>
    new Promise<void>((resolve, reject) => {
      const args = selfArgs({ command: ["records", "retry"], flags });
      // DELs leave the retries to the daemon until the pass after next is due.
      args.push("--housekeeper", String((2 * intervalMs) / 1000));
      const child = spawn(process.execPath, args, { stdio: ["ignore", "ignore", "inherit"] });
      child.once("error", reject);
      child.once("exit", (code, signal) => {
        const how = signal ?? `exit status ${code}`;
        if (code === 0) resolve();
        else reject(new Error(`plexus records retry ended with ${how}`));
      });
    });
}
