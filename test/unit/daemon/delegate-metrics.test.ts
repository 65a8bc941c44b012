/**
 * M20: the daemon's delegate series keep bounded labels whatever a run says: the result is
 * "success", a CNI code (the spec's and Plexus's own) or "other"; a plugin type that is not a
 * plain name counts as "other".
 */
import { describe, expect, it } from "vitest";
import { DaemonMetrics } from "../../../src/daemon/metrics";

const sources = {
  cacheStats: () => ({
    pods: 0,
    nads: 0,
    restarts: { pods: 0, nads: 0 },
    lists: { pods: 0, nads: 0 },
    errors: { pods: 0, nads: 0 },
  }),
  synced: () => true,
  apiRequests: () => 0,
  podsMissingNetworks: () => 0,
};

describe("M20 the daemon's delegate series", () => {
  it("M20 results: success, a CNI code as its number, any other code as other; odd names as other", async () => {
    const metrics = new DaemonMetrics(sources, { defaultMetrics: false });
    const run = { pluginType: "macvlan", verb: "ADD" as const, durationMs: 20 };
    metrics.delegateRan({ ...run, result: "success" });
    metrics.delegateRan({ ...run, result: 7 });
    metrics.delegateRan({ ...run, result: 101 });
    metrics.delegateRan({ ...run, result: 12345 });
    metrics.delegateRan({ ...run, pluginType: 'x"}\nfake_metric 1', result: 7 });
    const text = await metrics.render();
    expect(
      text.split("\n").filter((l) => l.startsWith("plexus_delegate_executions_total{")),
    ).toEqual([
      'plexus_delegate_executions_total{plugin_type="macvlan",verb="ADD",result="success"} 1',
      'plexus_delegate_executions_total{plugin_type="macvlan",verb="ADD",result="7"} 1',
      'plexus_delegate_executions_total{plugin_type="macvlan",verb="ADD",result="101"} 1',
      'plexus_delegate_executions_total{plugin_type="macvlan",verb="ADD",result="other"} 1',
      'plexus_delegate_executions_total{plugin_type="other",verb="ADD",result="7"} 1',
    ]);
    expect(text).toContain(
      'plexus_delegate_duration_seconds_sum{plugin_type="macvlan",verb="ADD"} 0.08',
    );
    expect(text).not.toMatch(/^fake_metric/m);
  });
});
