/**
 * The container lock's call mark reaches every delegate through the runtime config the verbs
 * build (orchestrate/deps.ts): libcni runs what it is given and knows nothing of the lock.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parsePlexusConf, type PlexusConf } from "../../../src/config/plugin-conf";
import { cmdAdd } from "../../../src/orchestrate/add";
import { cmdDel } from "../../../src/orchestrate/del";
import type { LockFactory, LockRequest } from "../../../src/store/container-lock";
import { cniRequest, FakeExec, fakeDeps } from "../../fakes/fake-exec";

function conf(): PlexusConf {
  return parsePlexusConf({
    cniVersion: "1.0.0",
    name: "plexus",
    type: "plexus",
    delegates: [
      { cniVersion: "1.0.0", name: "cluster", type: "bridge" },
      { cniVersion: "1.0.0", name: "blue", plugins: [{ type: "macvlan" }, { type: "tuning" }] },
    ],
  });
}

let exec: FakeExec;
let deps: ReturnType<typeof fakeDeps>;
const taken: LockRequest[] = [];
/** A lock that marks each call with its own value, as container-lock.ts does. */
const locks: LockFactory = async (request) => {
  taken.push(request);
  return { fd: undefined, marker: `mark-${taken.length}`, release: () => {} };
};

beforeEach(() => {
  exec = new FakeExec();
  // The node's own environment already names a call: the delegate's mark is this call's.
  deps = fakeDeps(exec, { baseEnv: { PATH: "/usr/bin", PLEXUS_CALL: "the-node's" } });
  taken.length = 0;
});
afterEach(() => deps.dispose());

describe("the call's mark in every delegate's environment", () => {
  it("ADD and DEL under the container's lock: each delegate gets PLEXUS_CALL of its own call", async () => {
    await cmdAdd(cniRequest("ADD"), conf(), { ...deps, locks });
    await cmdDel(cniRequest("DEL"), conf(), { ...deps, locks });
    expect(taken.map((t) => t.verb)).toEqual(["ADD", "DEL"]);
    const marks = exec.calls.map((c) => `${c.command} ${c.type} ${c.env.PLEXUS_CALL}`);
    expect(marks).toEqual([
      "ADD bridge mark-1",
      "ADD macvlan mark-1",
      "ADD tuning mark-1",
      "DEL tuning mark-2",
      "DEL macvlan mark-2",
      "DEL bridge mark-2",
    ]);
    for (const call of exec.calls) expect(call.env).toMatchObject({ PATH: "/usr/bin" });
  });

  it("without a lock (no flock here): the environment as the node gave it", async () => {
    await cmdAdd(cniRequest("ADD"), conf(), deps);
    expect(exec.calls.map((c) => c.env.PLEXUS_CALL)).toEqual([
      "the-node's",
      "the-node's",
      "the-node's",
    ]);
  });
});
