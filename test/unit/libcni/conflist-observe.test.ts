/**
 * M20: the one place every delegate runs (runPlugin) tells `observe` of each run: the plugin
 * type, the verb, the process's time and its result (success or the CNI code), without changing
 * what the run did. The built-in passthru and a plugin never started are no runs.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ConfList } from "../../../src/cni/conf";
import {
  addNetworkList,
  type DelegateRun,
  delNetworkList,
  PASSTHRU_PLUGIN,
  type RuntimeConf,
} from "../../../src/libcni/conflist";
import { vouch, vouchForAdd } from "../../../src/libcni/vouch";
import { FakeExec, fakeDeps } from "../../fakes/fake-exec";

const rt: RuntimeConf = {
  containerId: "ctr1",
  netns: "/proc/self/ns/net",
  ifName: "eth0",
  args: "",
  path: ["/opt/cni/bin"],
  capabilityArgs: {},
  baseEnv: {},
  deadlineMs: 1000,
};
const list = (...types: string[]): ConfList => ({
  cniVersion: "1.0.0",
  name: "net-a",
  plugins: types.map((type) => (type === "passthru" ? { ...PASSTHRU_PLUGIN } : { type })),
});
const RESULT = { interfaces: [{ name: "eth0" }], ips: [{ address: "10.1.0.2/24" }] };

let exec: FakeExec;
let deps: ReturnType<typeof fakeDeps>;
let runs: DelegateRun[];
beforeEach(() => {
  exec = new FakeExec(["bridge", "tuning"]);
  exec.on({ command: "ADD", type: "bridge" }, { result: RESULT });
  exec.on({ command: "ADD", type: "tuning" }, { result: RESULT });
  runs = [];
  deps = { ...fakeDeps(exec), observe: (run) => runs.push(run) };
});
afterEach(() => deps.dispose());

describe("M20 each delegate run told to observe", () => {
  it("M20 plugin type, verb, time and result: success, or the CNI code the run failed with", async () => {
    await addNetworkList(vouchForAdd(list("bridge", "tuning")), rt, deps);
    exec.on({ command: "DEL", type: "bridge" }, { error: { code: 7, msg: "no" } });
    await expect(delNetworkList(vouch(list("bridge", "tuning")), rt, deps)).rejects.toThrow();
    expect(runs.map(({ durationMs, ...rest }) => rest)).toEqual([
      { pluginType: "bridge", verb: "ADD", result: "success" },
      { pluginType: "tuning", verb: "ADD", result: "success" },
      { pluginType: "tuning", verb: "DEL", result: "success" },
      { pluginType: "bridge", verb: "DEL", result: 7 },
    ]);
    for (const run of runs) expect(run.durationMs).toBeGreaterThanOrEqual(0);
  });

  it("M20 the built-in passthru (no process) and a plugin whose binary is missing are no runs", async () => {
    await expect(
      addNetworkList(vouchForAdd(list("passthru", "bridge", "ghost")), rt, deps),
    ).rejects.toMatchObject({ code: 7 });
    expect(runs.map((r) => `${r.verb} ${r.pluginType} ${r.result}`)).toEqual([
      "ADD bridge success",
    ]);
  });

  it("M20 an observer that throws changes nothing: the result and the error are the run's", async () => {
    deps.observe = () => {
      throw new Error("observer broke");
    };
    await expect(addNetworkList(vouchForAdd(list("bridge")), rt, deps)).resolves.toMatchObject({
      ips: [{ address: "10.1.0.2/24" }],
    });
    exec.on({ command: "DEL", type: "bridge" }, { error: { code: 11, msg: "later" } });
    await expect(delNetworkList(vouch(list("bridge")), rt, deps)).rejects.toMatchObject({
      code: 11,
    });
  });
});
