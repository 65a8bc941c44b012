/**
 * B98: a tenant's string with controls (U+009B is CSI to a terminal, U+009D is OSC) and bidi
 * controls (U+202E) reaches an admin escaped: `plexus validate` and `plexus explain` through the
 * built binary on a node directory, and the Events Plexus writes, to the API server (Node's client
 * and Bun's, as the executable runs it) and to a file cluster.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FileCluster } from "../../src/cluster/file-cluster";
import type { KubeApi, PodEvent } from "../../src/cluster/kube-api";
import { loadKubeApi } from "../../src/kubeapi/index";
import { startFakeApiServer, writeKubeconfig } from "../support/fake-apiserver";
import { bunKubeApi } from "../support/bun-kube";
import { requirePlexusBinary, runPlexus, TEST_PATH } from "../support/plexus-bin";

const EVIL = "br\u009b1A\u009b2K\u202eidge";
const SHOWN = "br\\u009b1A\\u009b2K\\u202eidge";
/** U+009B and U+202E as UTF-8 puts them on the terminal. */
const RAW_BYTES = [Buffer.from([0xc2, 0x9b]), Buffer.from([0xe2, 0x80, 0xae])];
/** Every character B98 names: the controls (Cc), U+2028/2029 and the bidi controls. */
const UNSAFE = /[\p{Cc}\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/u;

function expectNoRawControls(text: string, what: string): void {
  const bytes = Buffer.from(text, "utf8");
  for (const raw of RAW_BYTES) expect(bytes.includes(raw), what).toBe(false);
  for (const line of text.split("\n")) expect(line, what).not.toMatch(UNSAFE);
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "plx-b98-"));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const nad = {
  apiVersion: "k8s.cni.cncf.io/v1",
  kind: "NetworkAttachmentDefinition",
  metadata: { namespace: "app", name: "evil" },
  spec: { config: JSON.stringify({ cniVersion: "1.0.0", type: EVIL }) },
};

/**
 * A node directory: Plexus's conflist over a file cluster, the default network, and pod app/web
 * selecting NAD app/evil, whose plugin type carries CSI and RLO. Returns the flags that use it.
 */
function nodeDir(): string[] {
  const confDir = join(dir, "net.d");
  const cluster = join(dir, "cluster");
  mkdirSync(confDir, { recursive: true });
  mkdirSync(cluster, { recursive: true });
  const plexus = { type: "plexus", clusterNetwork: "cbr0", confDir, fileClusterDir: cluster };
  writeFileSync(
    join(confDir, "00-plexus.conflist"),
    JSON.stringify({
      cniVersion: "1.0.0",
      name: "plexus",
      plugins: [{ ...plexus, cniDir: join(dir, "state") }],
    }),
  );
  writeFileSync(
    join(confDir, "10-cbr0.conflist"),
    JSON.stringify({
      cniVersion: "1.0.0",
      name: "cbr0",
      plugins: [{ type: "bridge", ipam: { type: "host-local", subnet: "10.77.0.0/24" } }],
    }),
  );
  const web = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      namespace: "app",
      name: "web",
      annotations: { "k8s.v1.cni.cncf.io/networks": "evil" },
    },
  };
  const yaml = [nad, web].map((o) => `---\n${JSON.stringify(o)}\n`).join("");
  writeFileSync(join(cluster, "objects.yaml"), yaml);
  return ["--cni-conf-dir", confDir, "--cni-path", "/usr/lib/cni"];
}

const run = (args: string[]) => runPlexus({ env: { PATH: TEST_PATH }, args });

describe("B98 the admin commands through the binary", () => {
  beforeAll(() => requirePlexusBinary());

  it("B98 plexus validate shows a NAD type with U+009B and U+202E escaped, from the cluster and --file", async () => {
    const flags = nodeDir();
    const file = join(dir, "evil-nad.yaml");
    writeFileSync(file, JSON.stringify(nad));
    for (const args of [
      ["validate", "app/evil", ...flags],
      ["validate", "--file", file, ...flags],
    ]) {
      const r = await run(args);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stdout).toContain(`config parses (from spec.config): ${SHOWN}`);
      expect(r.stdout).toContain(`plugin type="${SHOWN}" is missing`);
      expectNoRawControls(r.stdout, `${args.join(" ")} stdout`);
      expectNoRawControls(r.stderr, `${args.join(" ")} stderr`);
    }
  });

  it("B98 plexus explain shows it escaped in the text; -o json stays JSON for the same value", async () => {
    const flags = nodeDir();
    const r = await run(["explain", "app/web", ...flags]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toContain(`plugin 1: type ${SHOWN} → MISSING`);
    expect(r.stdout).toContain(`"type": "${SHOWN}"`);
    expectNoRawControls(r.stdout, "explain stdout");
    expectNoRawControls(r.stderr, "explain stderr");
    const json = await run(["explain", "app/web", ...flags, "-o", "json"]);
    expectNoRawControls(json.stdout, "explain -o json stdout");
    const parsed = JSON.parse(json.stdout) as { attachments: { plugins: { type: string }[] }[] };
    expect(parsed.attachments[1]!.plugins[0]!.type).toBe(EVIL);
  });
});

/** A HotplugFailed event as orchestrate/hotplug.ts writes it: the delegate's own error text. */
const event: PodEvent = {
  type: "Warning",
  reason: "HotplugFailed",
  message: `plugin type="${EVIL}" failed: \u009d0;pwned\u0007 (nothing changed)`,
};
const SHOWN_MESSAGE = `plugin type="${SHOWN}" failed: \\u009d0;pwned\\u0007 (nothing changed)`;

describe("B98 an Event's message leaves the process escaped", () => {
  for (const runtime of ["node", "bun"] as const)
    it(`B98 to the API server (${runtime === "node" ? "Node's https" : "Bun's fetch, as the executable"})`, async () => {
      await using server = await startFakeApiServer();
      server.addPod({ metadata: { name: "web", namespace: "app", uid: "uid-1" } });
      const kubeconfig = writeKubeconfig(server);
      const client = { retry: { requestTimeoutMs: 5_000, totalTimeoutMs: 10_000 } };
      const kube: KubeApi | undefined =
        runtime === "bun"
          ? await bunKubeApi(kubeconfig, client)
          : await loadKubeApi({ kubeconfig }, { client });
      try {
        await kube!.recordEvent({ namespace: "app", name: "web", uid: "uid-1" }, event);
      } finally {
        await kube?.close?.();
      }
      const events = server.events();
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ reason: "HotplugFailed", message: SHOWN_MESSAGE });
      expectNoRawControls(JSON.stringify(events[0]), "the Event");
    });

  it("B98 to a file cluster's events.jsonl", async () => {
    const cluster = mkdtempSync(join(dir, "cluster-"));
    await new FileCluster(cluster).recordEvent({ namespace: "app", name: "web" }, event);
    const text = readFileSync(join(cluster, "status", "events.jsonl"), "utf8");
    expectNoRawControls(text, "events.jsonl");
    expect(JSON.parse(text)).toMatchObject({ reason: "HotplugFailed", message: SHOWN_MESSAGE });
  });
});
