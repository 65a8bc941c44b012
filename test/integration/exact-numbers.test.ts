/**
 * B92 through dist/plexus (Bun, as it ships): the numbers of a NAD's config, and of an inline
 * delegate of the stdin config, reach the delegate as written (a huge integer, `1e2`, `-0`,
 * `1.50`), on ADD and on DEL, which takes the config from the container record. The delegate is
 * the fixture plugin (test/fixtures/noop-plugin.mjs); its `stdinText` is the bytes it was given.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Invocation } from "../support/plexus-bin";
import { useSandbox } from "./use-sandbox";

const ctx = useSandbox();
const POD_ARGS = "IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=web;K8S_POD_UID=uid-web";
/** Each as a delegate must see it: JSON.stringify of a float64 writes none of them so. */
const LITERALS = ['"mtu":12345678901234567890123', '"x":1e2', '"y":-0', '"z":1.50'];
/** Stands for LITERALS in a config built as an object, then replaced in its text. */
const SLOT = '"numbersSlot":0';

function withLiterals(text: string): string {
  expect(text).toContain(SLOT);
  return text.replace(SLOT, LITERALS.join(","));
}

/** What the delegate of `network` got on stdin for `command`, as text (one call each). */
function stdinTextOf(command: string, network: string): string {
  const calls = ctx.sb
    .invocations()
    .filter((inv) => inv.command === command && inv.network === network);
  expect(calls).toHaveLength(1);
  return (calls[0] as Invocation & { stdinText: string }).stdinText;
}

function expectLiterals(text: string): void {
  for (const literal of LITERALS) expect(text).toContain(literal);
}

/** The cluster: pod app/web selecting NAD app/exact (when `withNad`), as a manifest directory. */
function writeCluster(clusterDir: string, nadConfig: string | undefined): void {
  const pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      namespace: "app",
      name: "web",
      uid: "uid-web",
      annotations: { "k8s.v1.cni.cncf.io/networks": '[{"name":"exact"}]' },
    },
  };
  const nad = {
    apiVersion: "k8s.cni.cncf.io/v1",
    kind: "NetworkAttachmentDefinition",
    metadata: { namespace: "app", name: "exact" },
    spec: { config: nadConfig },
  };
  const objects = nadConfig === undefined ? [pod] : [nad, pod];
  const text = objects.map((x) => `---\n${JSON.stringify(x)}\n`).join("");
  writeFileSync(join(clusterDir, "objects.yaml"), text);
}

describe("B92 a huge integer, 1e2, -0 and 1.50 in a delegate's config reach it as written", () => {
  it("B92 a NAD's: as written on ADD, and on DEL from the record", async () => {
    const { sb } = ctx;
    const clusterDir = join(sb.root, "cluster");
    mkdirSync(clusterDir, { recursive: true });
    const nadConfig = withLiterals(
      JSON.stringify(sb.delegate("exact", { extra: { numbersSlot: 0 } })),
    );
    writeCluster(clusterDir, nadConfig);
    const conf = sb.config([sb.delegate("net-a")], { fileClusterDir: clusterDir });

    const add = await sb.run("ADD", conf, { CNI_ARGS: POD_ARGS });
    expect(add.code, add.stdout + add.stderr).toBe(0);
    expectLiterals(stdinTextOf("ADD", "exact"));
    // The record and libcni's result cache keep them as written too.
    const [record] = sb.recordFiles();
    expectLiterals(readFileSync(join(sb.cniDir, "records", record!), "utf8"));
    const cached = sb
      .resultFiles()
      .map((f) => JSON.parse(readFileSync(join(sb.cniDir, "results", f), "utf8")))
      .find((entry) => entry.networkName === "exact");
    expectLiterals(cached.config);

    // The NAD is gone: DEL can only have the config from the record.
    writeCluster(clusterDir, undefined);
    const del = await sb.run("DEL", conf, { CNI_ARGS: POD_ARGS });
    expect(del.code, del.stdout + del.stderr).toBe(0);
    expectLiterals(stdinTextOf("DEL", "exact"));
    expect(sb.recordFiles()).toEqual([]);
  });

  it("B92 an inline delegate's too; Plexus reads its own 3e1 as 30", async () => {
    const { sb } = ctx;
    const delegate = sb.delegate("inline", { extra: { numbersSlot: 0 } });
    const conf = sb.config([delegate], { delegateTimeoutSeconds: 777 });
    // Plexus's own number written as 3e1 is read as 30 (a delegate that ran at all had a deadline).
    const stdin = withLiterals(JSON.stringify(conf)).replace(
      '"delegateTimeoutSeconds":777',
      '"delegateTimeoutSeconds":3e1',
    );
    expect(stdin).toContain('"delegateTimeoutSeconds":3e1');

    const add = await sb.run("ADD", stdin);
    expect(add.code, add.stdout + add.stderr).toBe(0);
    expectLiterals(stdinTextOf("ADD", "inline"));
    const del = await sb.run("DEL", stdin);
    expect(del.code, del.stdout + del.stderr).toBe(0);
    expectLiterals(stdinTextOf("DEL", "inline"));
  });
});
