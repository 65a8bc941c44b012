/**
 * STATUS as a polling runtime sends it (CRI-O and containerd 2 every few seconds), through
 * dist/plexus on a node with Kubernetes configured: each STATUS asks each 1.1.0 delegate once
 * (C2.8) and makes no request to the API server (B66), whatever the number of polls.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { startFakeApiServer, writeKubeconfig } from "../support/fake-apiserver";
import { useSandbox } from "./use-sandbox";

const ctx = useSandbox();

describe("C2.8 B66 STATUS under polling", () => {
  it("C2.8 B66 five polls: every 1.1.0 delegate asked once per poll, no API request at all", async () => {
    const { sb } = ctx;
    const api = await startFakeApiServer();
    onTestFinished(() => api.close());
    const conf = sb.config(
      [
        sb.delegate("net-a", { cniVersion: "1.1.0" }),
        sb.delegate("net-b", { cniVersion: "1.1.0" }),
        sb.delegate("net-c", { cniVersion: "1.0.0" }),
      ],
      {
        cniVersion: "1.1.0",
        withoutKubernetes: false,
        kubeconfig: writeKubeconfig(api),
        daemonSocket: join(sb.root, "no-daemon.sock"),
      },
    );
    for (let poll = 0; poll < 5; poll++) {
      const r = await sb.run("STATUS", conf);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toBe("");
    }
    expect(sb.calls()).toEqual(
      Array.from({ length: 5 }, () => ["STATUS net-a", "STATUS net-b"]).flat(),
    );
    expect(api.requests).toEqual([]);
  });

  it("C2.8 an installed node names its cluster network by file: STATUS asks that network's delegates", async () => {
    const { sb } = ctx;
    const file = join(sb.root, "10-cluster.conflist");
    const cluster = sb.delegate("cluster-net", { cniVersion: "1.1.0" });
    writeFileSync(file, JSON.stringify(cluster));
    const conf = sb.config([], { cniVersion: "1.1.0", clusterNetwork: file });
    const r = await sb.run("STATUS", conf);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(sb.calls()).toEqual(["STATUS cluster-net"]);
  });
});
