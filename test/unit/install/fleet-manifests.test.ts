/**
 * The fleet view in deploy/, as `kubectl kustomize` renders it: the install container's readiness
 * probe (`plexus install --ready` on the installer's own conf dir, in every node layout; gone in
 * the uninstall patch), the version label `plexus status` falls back to, and deploy/monitoring/
 * (the PodMonitor's labels, the PrometheusRule and the Grafana dashboard ConfigMap) with PromQL
 * that passes the minimal check of test/support/promql.ts. That every metric they name is one
 * the daemon exposes is test/integration/fleet-metrics.test.ts, which scrapes one.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  LAYOUTS,
  type Manifest,
  patchLocally,
  renderKustomization,
  renderLayout,
} from "../../support/deploy-render";
import { REPO_ROOT } from "../../support/plexus-bin";
import { checkPromql, monitoringExpressions, templateMetrics } from "../../support/promql";

const daemonSetOf = (docs: Manifest[]) => docs.find((d) => d.kind === "DaemonSet")!;
const installOf = (ds: Manifest) =>
  ds.spec.template.spec.containers.find((c: { name: string }) => c.name === "install");
const flag = (command: string[], name: string) =>
  command.find((a) => a.startsWith(`${name}=`))?.slice(name.length + 1);
const monitoring = renderKustomization("monitoring");

describe("the install container's readiness probe: the node has switched", () => {
  it.each(LAYOUTS)(
    "M11 $name: `plexus install --ready` on the installer's own --cni-conf-dir, the layout's",
    (layout) => {
      const install = installOf(daemonSetOf(renderLayout(layout)));
      const probe = install.readinessProbe;
      expect(probe.exec.command).toEqual([
        "/usr/local/bin/plexus",
        "install",
        "--ready",
        `--cni-conf-dir=/host${layout.confDir}`,
      ]);
      expect(flag(probe.exec.command, "--cni-conf-dir")).toBe(
        flag(install.command, "--cni-conf-dir"),
      );
      // Mounted there: the probe reads the directory the installer writes.
      const mounts = install.volumeMounts.map((m: { mountPath: string }) => m.mountPath);
      expect(mounts).toContain(`/host${layout.confDir}`);
      expect(probe.timeoutSeconds).toBeGreaterThanOrEqual(2);
      expect(probe.httpGet).toBeUndefined();
    },
  );

  it("M11 every argument of the probe is a flag `plexus install` declares", () => {
    const sources = ["src/cli/commands.ts", "src/cli/node-path-options.ts"]
      .map((f) => readFileSync(join(REPO_ROOT, f), "utf8"))
      .join("\n");
    const probe = installOf(daemonSetOf(renderKustomization("."))).readinessProbe;
    for (const arg of probe.exec.command.slice(2))
      expect(sources, arg).toMatch(new RegExp(`"${arg.split("=")[0]}[ "]`));
  });

  it("M11 the uninstall patch drops it: the cleaner removes Plexus's config, so it could only fail", () => {
    const ds = daemonSetOf(renderKustomization("."));
    expect(installOf(ds).readinessProbe).toBeDefined();
    const patched = patchLocally(ds, "uninstall/daemonset-patch.yaml");
    expect(installOf(patched).readinessProbe).toBeUndefined();
  });

  it("the pod template's app.kubernetes.io/version is the version of the image deploy/ names", () => {
    const ds = daemonSetOf(renderKustomization("."));
    const tag = installOf(ds).image.split(":").at(-1);
    expect(ds.spec.template.metadata.labels["app.kubernetes.io/version"]).toBe(tag);
  });
});

describe("deploy/monitoring/: scrape, alerts, dashboard", () => {
  it("renders a PodMonitor, a PrometheusRule and a dashboard ConfigMap the Grafana sidecar loads", () => {
    expect(monitoring.map((d) => `${d.apiVersion} ${d.kind} ${d.metadata.name}`).sort()).toEqual([
      "monitoring.coreos.com/v1 PodMonitor plexus",
      "monitoring.coreos.com/v1 PrometheusRule plexus",
      "v1 ConfigMap plexus-dashboard",
    ]);
    const cm = monitoring.find((d) => d.kind === "ConfigMap")!;
    expect(cm.metadata.labels).toMatchObject({ grafana_dashboard: "1" });
    const dashboard = JSON.parse(cm.data["plexus.json"]);
    expect(dashboard.uid).toBe("plexus");
    const titles = dashboard.panels.map((p: { title: string }) => p.title);
    for (const t of [
      "Version per node",
      "Nodes switched",
      "Config state per node",
      "Pods missing networks",
      "Caches not synced",
      "Teardowns abandoned",
      "Delegate executions",
      "Delegate duration (p99)",
    ])
      expect(titles).toContain(t);
  });

  it("the PodMonitor labels every series job=plexus and with its node, which rules and panels use", () => {
    const pm = monitoring.find((d) => d.kind === "PodMonitor")!;
    expect(pm.spec.jobLabel).toBe("app.kubernetes.io/name");
    const ds = daemonSetOf(renderKustomization("."));
    expect(ds.spec.template.metadata.labels[pm.spec.jobLabel]).toBe("plexus");
    expect(pm.spec.podMetricsEndpoints[0].relabelings).toContainEqual({
      sourceLabels: ["__meta_kubernetes_pod_node_name"],
      targetLabel: "node",
    });
  });

  it("an alert for each failure the fleet view names, each with a severity and a summary", () => {
    const rule = monitoring.find((d) => d.kind === "PrometheusRule")!;
    const rules = rule.spec.groups.flatMap((g: { rules: unknown[] }) => g.rules) as Array<{
      alert: string;
      expr: string;
      labels: { severity: string };
      annotations: { summary: string; description: string };
    }>;
    const byName = new Map(rules.map((r) => [r.alert, r]));
    const wanted: Record<string, RegExp> = {
      PlexusDaemonDown: /^up\{job="plexus"\} == 0$/,
      PlexusDaemonCachesNotSynced: /plexus_daemon_cache_synced == 0/,
      PlexusPodsMissingNetworks: /plexus_pods_missing_networks > 0/,
      PlexusTeardownsAbandoned: /plexus_daemon_events_total\{reason="TeardownAbandoned"\}/,
      PlexusDelegateFailures: /plexus_delegate_executions_total\{result!="success"\}/,
      PlexusNodeNotSwitched: /plexus_node_config_state\{state="plexus"\} == 0/,
    };
    for (const [name, expr] of Object.entries(wanted)) {
      const r = byName.get(name);
      expect(r, name).toBeDefined();
      expect(r!.expr, name).toMatch(expr);
    }
    for (const r of rules) {
      expect(["critical", "warning", "info"], r.alert).toContain(r.labels.severity);
      expect(r.annotations.summary, r.alert).toBeTruthy();
      expect(r.annotations.description, r.alert).toBeTruthy();
    }
  });

  it("every PromQL expression of the rules and the dashboard passes the minimal check", () => {
    const exprs = monitoringExpressions(monitoring);
    expect(exprs.length).toBeGreaterThan(15);
    const problems = exprs.flatMap((e) => checkPromql(e).problems);
    expect(problems).toEqual([]);
    expect(templateMetrics(monitoring)).toEqual(["plexus_build_info"]);
  });

  it("the PromQL check is live: unbalanced brackets, unknown functions and empty selections fail", () => {
    expect(checkPromql("sum(rate(x_total[5m])").problems[0]).toMatch(/unclosed \(/);
    expect(checkPromql('up{job="a"]').problems[0]).toMatch(/unbalanced \]/);
    expect(checkPromql("rat(x_total[5m])").problems[0]).toMatch(/unknown function rat\(/);
    expect(checkPromql("sum by (node) ()").problems[0]).toMatch(/selects no metric/);
    expect(
      checkPromql(
        "histogram_quantile(0.99, sum by (le, verb) " +
          '(rate(a_bucket{node=~"$node"}[$__rate_interval])))' +
          " / on (node) group_left (version) b_info > bool 1 or vector(0)",
      ),
    ).toEqual({ metrics: ["a_bucket", "b_info"], problems: [] });
    // A label value that looks like a call is not one.
    expect(checkPromql('x{reason="rate("} == 1')).toEqual({ metrics: ["x"], problems: [] });
  });
});
