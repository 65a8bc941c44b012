/**
 * Delegate configs for the reference plugins and checks of a namespace against a CNI result,
 * shared by the e2e files. Every network gets host-local's `dataDir` from the test's scope.
 */
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { expect } from "vitest";
import { singleJson, type RunResult } from "../support/plexus-bin";
import { ResultCache } from "../../src/libcni/cache";
import { links, routes, type E2eScope, type LinkInfo, type Netns } from "../support/netns";

/** The delegates' version: containernetworking-plugins 1.1.1 speak CNI up to 1.0.0. */
export const PLUGIN_VERSION = "1.0.0";

export interface Ipam {
  type: string;
  [k: string]: unknown;
}

export function hostLocal(
  scope: E2eScope,
  subnet: string,
  extra: Record<string, unknown> = {},
): Ipam {
  return { type: "host-local", dataDir: scope.dataDir, subnet, ...extra };
}

export function bridgeNet(options: {
  name: string;
  bridge: string;
  ipam: Ipam;
  isGateway?: boolean;
  cniVersion?: string;
  extra?: Record<string, unknown>;
}) {
  return {
    cniVersion: options.cniVersion ?? PLUGIN_VERSION,
    name: options.name,
    type: "bridge",
    bridge: options.bridge,
    isGateway: options.isGateway ?? false,
    ipam: options.ipam,
    ...options.extra,
  };
}

/** The default network most tests use: bridge + host-local with a gateway and a default route. */
export function defaultNet(scope: E2eScope, subnet: string, name = "default-net") {
  return bridgeNet({
    name,
    bridge: scope.bridgeName(),
    isGateway: true,
    ipam: hostLocal(scope, subnet, { routes: [{ dst: "0.0.0.0/0" }] }),
  });
}

export function secondaryBridgeNet(scope: E2eScope, subnet: string, name = "bridge-net") {
  return bridgeNet({ name, bridge: scope.bridgeName(), ipam: hostLocal(scope, subnet) });
}

export function macvlanNet(options: { name: string; master: string; ipam: Ipam }) {
  return {
    cniVersion: PLUGIN_VERSION,
    name: options.name,
    type: "macvlan",
    master: options.master,
    mode: "bridge",
    ipam: options.ipam,
  };
}

export function ipvlanNet(options: { name: string; master: string; ipam: Ipam }) {
  return {
    cniVersion: PLUGIN_VERSION,
    name: options.name,
    type: "ipvlan",
    master: options.master,
    mode: "l2",
    ipam: options.ipam,
  };
}

/** Plexus's own config: the Multus thin keys, a per-test cniDir. */
export function plexusConf(
  scope: E2eScope,
  delegates: unknown[],
  extra: Record<string, unknown> = {},
) {
  return {
    cniVersion: "1.0.0",
    name: "plexus-e2e",
    type: "plexus",
    cniDir: scope.cniDir,
    delegates,
    delegateTimeoutSeconds: 20,
    ...extra,
  };
}

export interface Result100 {
  cniVersion: string;
  interfaces?: Array<{ name: string; mac?: string; mtu?: number; sandbox?: string }>;
  ips?: Array<{ address: string; gateway?: string; interface?: number }>;
  routes?: Array<{ dst: string; gw?: string }>;
  dns?: unknown;
}

/** C2.2 for a verb with output: exit 0 and stdout exactly one JSON object. */
export function expectOk(result: RunResult): Record<string, unknown> {
  expect(
    result.code,
    `exit code; stdout=${result.stdout} stderr=${result.stderr.slice(0, 2000)}`,
  ).toBe(0);
  return singleJson(result.stdout);
}

/** C2.2 for DEL/CHECK/STATUS/GC: exit 0 and nothing at all on stdout. */
export function expectSilentOk(result: RunResult): void {
  expect(
    result.code,
    `exit code; stdout=${result.stdout} stderr=${result.stderr.slice(0, 2000)}`,
  ).toBe(0);
  expect(result.stdout, "stdout of a successful DEL/CHECK/STATUS/GC").toBe("");
}

/** The result cache's file names of a container's attachments ([network, ifName] pairs), sorted. */
export function cacheNames(
  scope: E2eScope,
  containerId: string,
  ...attachments: Array<[string, string]>
): string[] {
  const cache = new ResultCache(scope.cniDir);
  return attachments
    .map(([networkName, ifName]) => basename(cache.path({ networkName, containerId, ifName })))
    .sort();
}

/** The cached (libcni-style) result of one delegate attachment, as Plexus stored it. */
export function cachedResult(
  scope: E2eScope,
  network: string,
  containerId: string,
  ifName: string,
): Result100 {
  const entry = JSON.parse(
    readFileSync(
      new ResultCache(scope.cniDir).path({ networkName: network, containerId, ifName }),
      "utf8",
    ),
  ) as { result: Result100 };
  return entry.result;
}

function normDst(dst: string): string {
  if (dst === "0.0.0.0/0") return "default";
  return dst;
}

/**
 * The namespace matches a (1.x-shaped) result: every sandbox interface exists there with the
 * result's MAC (and MTU when given) and exactly the result's addresses; every route of the
 * result is installed (a route without `gw` goes via that family's gateway, as the plugins'
 * `ConfigureIface` does); every host-side interface of the result exists on the host (with its
 * MAC, bridges excepted).
 * Returns the namespace's links for further checks.
 */
export function expectNetnsMatchesResult(
  ns: Netns,
  result: Result100,
  opts: { ifName: string },
): LinkInfo[] {
  const nsLinks = links(ns.name);
  const byName = new Map(nsLinks.map((l) => [l.name, l]));
  const ifaces = result.interfaces ?? [];
  const sandboxed = ifaces.map((i, idx) => ({ ...i, idx })).filter((i) => i.sandbox);
  expect(
    sandboxed.map((i) => i.name),
    "sandbox interfaces of the result",
  ).toEqual([opts.ifName]);
  for (const i of sandboxed) {
    expect(i.sandbox).toBe(ns.path);
    const l = byName.get(i.name);
    expect(l, `interface ${i.name} inside ${ns.name}`).toBeDefined();
    expect(l!.mac).toBe(i.mac?.toLowerCase());
    if (i.mtu !== undefined) expect(l!.mtu).toBe(i.mtu);
    const want = (result.ips ?? []).filter((ip) => ip.interface === i.idx).map((ip) => ip.address);
    expect(want.length, `result has addresses for ${i.name}`).toBeGreaterThan(0);
    expect([...l!.addresses].sort(), `addresses of ${i.name} in ${ns.name}`).toEqual(
      [...want].sort(),
    );
  }
  const nsRoutes = routes(ns.name);
  for (const r of result.routes ?? []) {
    const fam4 = !r.dst.includes(":");
    if (!fam4) continue;
    const gw = r.gw ?? (result.ips ?? []).find((ip) => !ip.address.includes(":"))?.gateway;
    const hit = nsRoutes.find(
      (nr) => nr.dst === normDst(r.dst) && nr.gateway === gw && nr.dev === opts.ifName,
    );
    expect(
      hit,
      `route ${JSON.stringify(r)} via ${gw} in ${ns.name}: ${JSON.stringify(nsRoutes)}`,
    ).toBeDefined();
  }
  const host = new Map(links().map((l) => [l.name, l]));
  for (const i of ifaces.filter((x) => !x.sandbox)) {
    const h = host.get(i.name);
    expect(h, `host interface ${i.name} of the result`).toBeDefined();
    // A Linux bridge's MAC follows its ports unless set, so only the other host links are compared.
    if (h!.kind !== "bridge")
      expect(h!.mac, `MAC of host interface ${i.name}`).toBe(i.mac?.toLowerCase());
  }
  return nsLinks;
}
