/**
 * A killed test run's leftovers (namespaces, links, mounts, temp dirs, processes) are swept by the
 * next run, and only its own: the sweeper is run here on a scope of its own (a unique prefix and
 * temp root), with a killed run's state planted by hand beside things that are not ours.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { otherLiveRuns, sweepLeftovers } from "../support/leftovers";
import { describeE2e, randomHex } from "../support/netns";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const undo of cleanups.splice(0).reverse()) undo();
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z ");
  } catch {
    return false;
  }
}

/**
 * A `sleep` that outlives its parent, as a killed run's daemon or delegate does: started through a
 * shell that exits at once, so it is nobody's child here. `arg0` names the sleeping shell.
 */
function orphan(options: { cwd?: string; env?: NodeJS.ProcessEnv; arg0?: string }): number {
  const arg0 = options.arg0 ?? "sleep";
  const start = `bash -c 'exec -a "$0" sleep 60' '${arg0}' >/dev/null 2>&1 & echo $!`;
  const r = spawnSync("sh", ["-c", start], {
    cwd: options.cwd,
    env: { PATH: process.env.PATH, ...options.env },
    encoding: "utf8",
  });
  const pid = Number(r.stdout.trim());
  cleanups.push(() => alive(pid) && process.kill(pid, "SIGKILL"));
  return pid;
}

function plantKilledRun(prefix: string, root: string) {
  const dir = join(root, `${prefix}-e2e-x`);
  const mount = join(dir, "cni");
  mkdirSync(mount, { recursive: true });
  execFileSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", mount]);
  writeFileSync(join(mount, "record.json"), "{}");
  execFileSync("ip", ["netns", "add", `${prefix}-ns`]);
  execFileSync("ip", ["link", "add", `${prefix}a`, "type", "veth", "peer", "name", `${prefix}b`]);
  return {
    dir,
    mount,
    byArg: orphan({ arg0: `${dir}/daemon.sock` }),
    byCwd: orphan({ cwd: dir }),
    byEnv: orphan({ env: { CNI_NETNS: `/run/netns/${prefix}-ns` } }),
  };
}

describeE2e("e2e a killed run's leftovers", () => {
  it("are swept: the prefix's processes, mounts, netns, links, temp dirs; nothing else", () => {
    const prefix = `plxsw${randomHex(3)}`;
    const root = mkdtempSync(join(tmpdir(), "plx-sweep-"));
    cleanups.push(() => {
      spawnSync("umount", ["-l", join(root, `${prefix}-e2e-x`, "cni")]);
      spawnSync("ip", ["netns", "delete", `${prefix}-ns`]);
      spawnSync("ip", ["link", "delete", `${prefix}a`]);
      rmSync(root, { recursive: true, force: true });
    });
    const killed = plantKilledRun(prefix, root);
    const notOurs = join(root, `other-${prefix}`);
    mkdirSync(notOurs);
    const bystander = orphan({ cwd: notOurs });

    const found = sweepLeftovers({ prefix, tmpRoot: root });

    expect(found.kept).toEqual([]);
    expect(found.processes).toHaveLength(3);
    for (const pid of [killed.byArg, killed.byCwd, killed.byEnv]) {
      expect(alive(pid), `${pid}`).toBe(false);
    }
    expect(found.mounts).toEqual([killed.mount]);
    expect(found.netns).toEqual([`${prefix}-ns`]);
    expect(found.links).toHaveLength(1); // one end of the veth pair takes the other with it
    expect(execFileSync("ip", ["-o", "link", "show"], { encoding: "utf8" })).not.toContain(prefix);
    expect(existsSync(killed.dir)).toBe(false);
    expect(existsSync(notOurs)).toBe(true);
    expect(alive(bystander)).toBe(true);
  });

  it("a run sees another test run, soak or demo from any checkout, never its own ancestors", () => {
    const users = /plxsw-user-[0-9a-f]+/;
    const name = `plxsw-user-${randomHex(3)}`;
    expect(otherLiveRuns({ users })).toEqual([]);
    const other = orphan({ arg0: name });
    expect(otherLiveRuns({ users })).toEqual([other]);
    process.kill(other, "SIGKILL");
    spawnSync("sleep", ["0.2"]);
    expect(otherLiveRuns({ users })).toEqual([]);
    // This very run matches the real pattern, but is never "another" run.
    expect(otherLiveRuns()).not.toContain(process.pid);
  });
});
