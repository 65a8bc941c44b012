import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FileCluster } from "../../../src/cluster/file-cluster";
import { NETWORK_STATUS_ANNOTATION } from "../../../src/npwg/types";

describe("FileCluster: manifests standing in for the API server", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "plx-fc-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("reads pods and NADs from multi-document YAML, JSON and Lists", async () => {
    writeFileSync(
      join(dir, "a.yaml"),
      [
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: demo\n  uid: u-1\n  " +
          "annotations:\n    k8s.v1.cni.cncf.io/networks: net-a\n",
        "apiVersion: k8s.cni.cncf.io/v1\nkind: NetworkAttachmentDefinition\nmetadata:\n  name: " +
          "net-a\n  namespace: demo\nspec:\n  config: " +
          '\'{"cniVersion":"1.0.0","type":"bridge"}\'\n',
      ].join("---\n"),
    );
    writeFileSync(
      join(dir, "b.json"),
      JSON.stringify({
        apiVersion: "v1",
        kind: "List",
        items: [{ apiVersion: "v1", kind: "Pod", metadata: { name: "db" } }],
      }),
    );
    writeFileSync(join(dir, "notes.txt"), "not a manifest");
    const fc = new FileCluster(dir);
    const pod = await fc.getPod("demo", "web");
    expect(pod.metadata.uid).toBe("u-1");
    expect(pod.metadata.annotations?.["k8s.v1.cni.cncf.io/networks"]).toBe("net-a");
    expect((await fc.getPod("default", "db")).metadata.namespace).toBe("default");
    expect((await fc.getNad("demo", "net-a"))?.spec?.config).toContain("bridge");
    expect(await fc.getNad("demo", "missing")).toBeUndefined();
    expect(fc.requestCount).toBe(4);
  });

  it("B38 a pod that is not among the manifests is code 3 naming it", async () => {
    const fc = new FileCluster(dir);
    await expect(fc.getPod("demo", "ghost")).rejects.toMatchObject({
      code: 3,
      message: expect.stringContaining("demo/ghost"),
    });
  });

  it("B71 a manifest pod named ../../../x is refused (7, naming the file); a status for such a name is never written", async () => {
    writeFileSync(
      join(dir, "evil.yaml"),
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ../../../x\n  namespace: demo\n",
    );
    await expect(new FileCluster(dir).getPod("demo", "../../../x")).rejects.toMatchObject({
      code: 7,
      message: expect.stringMatching(
        /evil\.yaml: Pod "demo\/\.\.\/\.\.\/\.\.\/x": the name is not a valid DNS-1123 subdomain/,
      ),
    });
    rmSync(join(dir, "evil.yaml"));
    const fc = new FileCluster(dir);
    for (const [namespace, name] of [
      ["demo", "../../../x"],
      ["../..", "x"],
      ["demo", "a/b"],
      ["Demo", "x"],
    ] as const) {
      await expect(fc.setNetworkStatus({ namespace, name }, "[]")).rejects.toMatchObject({
        code: 4,
      });
    }
    expect(readdirSync(dir)).toEqual([]);
    expect(existsSync(join(dir, "..", "x.json"))).toBe(false);
  });

  it("B72 B73 a FIFO or a symlink named *.yaml is skipped, not read (no hang, not followed)", async () => {
    execFileSync("mkfifo", [join(dir, "fifo.yaml")]);
    writeFileSync(
      join(dir, "..", `${basename(dir)}-outside.yaml`),
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: outside\n",
    );
    symlinkSync(join(dir, "..", `${basename(dir)}-outside.yaml`), join(dir, "link.yaml"));
    try {
      await expect(new FileCluster(dir).getPod("default", "outside")).rejects.toMatchObject({
        code: 3,
      });
    } finally {
      rmSync(join(dir, "..", `${basename(dir)}-outside.yaml`));
    }
  });

  it("a broken manifest is code 7 naming the file", async () => {
    writeFileSync(join(dir, "bad.yaml"), "kind: Pod\nmetadata: [unclosed\n");
    await expect(new FileCluster(dir).getNad("a", "b")).rejects.toMatchObject({
      code: 7,
      message: expect.stringContaining("bad.yaml"),
    });
  });

  it("B41 B84 one invalid manifest fails only the pods that need what it held, not every other pod", async () => {
    writeFileSync(join(dir, "bad.yaml"), "apiVersion: v1\nkind: Pod\nmetadata: [unclosed s3cret\n");
    writeFileSync(
      join(dir, "good.json"),
      JSON.stringify({
        kind: "List",
        items: [
          { apiVersion: "v1", kind: "Pod", metadata: { name: "web", namespace: "x" } },
          {
            apiVersion: "k8s.cni.cncf.io/v1",
            kind: "NetworkAttachmentDefinition",
            metadata: { name: "n", namespace: "x" },
          },
          {
            apiVersion: "k8s.cni.cncf.io/v2",
            kind: "NetworkAttachmentDefinition",
            metadata: { name: "v2", namespace: "x" },
          },
        ],
      }),
    );
    const fc = new FileCluster(dir);
    expect((await fc.getPod("x", "web")).metadata.name).toBe("web");
    expect((await fc.getNad("x", "n"))?.metadata.name).toBe("n");
    const failure = fc.getPod("x", "other");
    await expect(failure).rejects.toMatchObject({
      code: 7,
      message: expect.stringContaining("bad.yaml is not valid YAML"),
    });
    await expect(failure).rejects.toMatchObject({ message: expect.not.stringContaining("s3cret") });
    await expect(fc.getNad("x", "v2")).rejects.toMatchObject({
      code: 7,
      message: expect.stringContaining("has apiVersion k8s.cni.cncf.io/v2"),
    });
  });

  it("N5 writes the network-status to a pod-shaped document under status/, and events as JSON lines (M9)", async () => {
    const fc = new FileCluster(dir);
    const status = JSON.stringify([
      { name: "cbr0", interface: "eth0", ips: ["10.1.0.2"], default: true },
    ]);
    await fc.setNetworkStatus({ namespace: "demo", name: "web", uid: "u-1" }, status);
    const doc = JSON.parse(readFileSync(fc.statusPath("demo", "web"), "utf8"));
    expect(doc.metadata).toMatchObject({ namespace: "demo", name: "web", uid: "u-1" });
    expect(doc.metadata.annotations[NETWORK_STATUS_ANNOTATION]).toBe(status);
    await fc.recordEvent(
      { namespace: "demo", name: "web" },
      { type: "Normal", reason: "AddedInterface", message: "Add eth0 [10.1.0.2/24] from cbr0" },
    );
    const events = readFileSync(join(dir, "status", "events.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      reason: "AddedInterface",
      type: "Normal",
      involvedObject: { kind: "Pod", name: "web" },
    });
  });

  it("B41 a FIFO named like a manifest is skipped instead of blocking the call forever", async () => {
    execFileSync("mkfifo", [join(dir, "trap.yaml")]);
    writeFileSync(
      join(dir, "p.json"),
      JSON.stringify({ apiVersion: "v1", kind: "Pod", metadata: { name: "db", namespace: "x" } }),
    );
    expect((await new FileCluster(dir).getPod("x", "db")).metadata.name).toBe("db");
  });

  it("B41 a manifest over the size cap is refused from its size, naming it, before it is read", async () => {
    const big = join(dir, "big.yaml");
    writeFileSync(big, "");
    truncateSync(big, 50 * 1024 * 1024);
    await expect(new FileCluster(dir).getPod("x", "db")).rejects.toMatchObject({
      code: 7,
      message: expect.stringMatching(/big\.yaml is 52428800 bytes, larger than the \d+-byte limit/),
    });
  });
});
