/**
 * The node kubeconfig (M11, B50): it names a token FILE kept fresh by the installer, never an
 * embedded token; the plugin's own loader accepts it; a refresh is atomic, so a reader racing
 * the installer sees the old token or the new one, never a torn or empty file.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readCredentials, renderKubeconfig, syncFile } from "../../../src/install/kubeconfig";
import { loadKubeconfigFile } from "../../../src/kubeapi/kubeconfig";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "plx-kc-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("node kubeconfig", () => {
  it("M11 names the token file and CA file, embeds no token, and loads with the plugin's kubeconfig loader", async () => {
    const token = join(dir, "token");
    const ca = join(dir, "ca.crt");
    writeFileSync(token, "secret-token-1");
    writeFileSync(ca, "not really a CA");
    const path = join(dir, "plexus.kubeconfig");
    await syncFile(
      path,
      renderKubeconfig({ server: "https://10.96.0.1:443", tokenFileHost: token, caFileHost: ca }),
    );
    const text = readFileSync(path, "utf8");
    expect(JSON.parse(text).users[0].user.tokenFile).toBe(token);
    expect(text).not.toMatch(/^\s*token:/m);
    expect(text).not.toContain("secret-token-1");
    const load = async () => {
      const src = await loadKubeconfigFile(path);
      if ("plugin" in src) throw new Error("expected a token-file kubeconfig");
      return src;
    };
    const src = await load();
    expect(src.server).toBe("https://10.96.0.1:443");
    // The token file is read when the kubeconfig is loaded, i.e. in every CNI process: a
    // refreshed copy is what the next pod's ADD uses.
    expect((await src.auth.headers()).authorization).toBe("Bearer secret-token-1");
    await syncFile(token, "secret-token-2");
    expect((await (await load()).auth.headers()).authorization).toBe("Bearer secret-token-2");
    expect(String(src.tls?.ca)).toBe("not really a CA");
  });

  it("M11 syncFile writes 0600 only when the content differs and says what it did", async () => {
    const p = join(dir, "sub", "token");
    expect(await syncFile(p, "a")).toBe("created");
    expect(await syncFile(p, "a")).toBe("unchanged");
    expect(await syncFile(p, "b")).toBe("updated");
    const { statSync } = await import("node:fs");
    expect(statSync(p).mode & 0o777).toBe(0o600);
    expect(readCredentials({ tokenFile: join(dir, "none"), caFile: p })).toEqual({
      missing: expect.stringMatching(/token .*none is missing or empty/),
    });
  });

  it("B50 a reader racing token refreshes sees the old token or the new one, never a torn or empty file", async () => {
    const p = join(dir, "token");
    const a = "A".repeat(300_000);
    const b = "B".repeat(200_001);
    await syncFile(p, a);
    const reader = new Worker(
      `const { readFileSync } = require("node:fs");
       const { parentPort, workerData } = require("node:worker_threads");
       const seen = new Set(); let reads = 0; const end = Date.now() + 900;
       while (Date.now() < end) {
         const t = readFileSync(workerData, "utf8");
         reads++;
         seen.add(t.length + ":" + t[0] + t[t.length - 1] + ":" + (new Set(t).size));
       }
       parentPort.postMessage({ reads, seen: [...seen] });`,
      { eval: true, workerData: p },
    );
    const result = new Promise<{ reads: number; seen: string[] }>((resolve, reject) => {
      reader.once("message", resolve);
      reader.once("error", reject);
    });
    let writes = 0;
    const end = Date.now() + 700;
    while (Date.now() < end) {
      await syncFile(p, writes % 2 ? a : b);
      writes++;
    }
    const r = await result;
    expect(writes).toBeGreaterThan(10);
    expect(r.reads).toBeGreaterThan(10);
    // Every read was one whole version: length 300000 of A's or 200001 of B's, one distinct
    // character.
    expect(r.seen.every((s) => s === "300000:AA:1" || s === "200001:BB:1")).toBe(true);
  });
});

describe("node kubeconfig: JSON, as the installer writes it, or YAML, as people write it", () => {
  it("M11 the same kubeconfig as JSON, as block YAML and as a YAML flow mapping loads the same", async () => {
    const token = join(dir, "token");
    const ca = join(dir, "ca.crt");
    writeFileSync(token, "t1");
    writeFileSync(ca, "ca");
    const input = { server: "https://10.96.0.1:443", tokenFileHost: token, caFileHost: ca };
    const json = renderKubeconfig(input);
    const obj = JSON.parse(json);
    const blockYaml = [
      "apiVersion: v1",
      "clusters:",
      `- {name: plexus, cluster: {server: "${input.server}", certificate-authority: "${ca}"}}`,
      "users:",
      `- name: plexus`,
      "  user:",
      `    tokenFile: "${token}"`,
      "contexts: [{name: plexus, context: {cluster: plexus, user: plexus}}]",
      "current-context: plexus",
    ].join("\n");
    // Starts with "{" but is not JSON: the YAML parser must still get it.
    const flowYaml =
      `{apiVersion: v1, current-context: plexus, clusters: [{name: plexus, cluster: {server: ` +
      `"${input.server}", certificate-authority: "${ca}"}}], users: [{name: plexus, user: ` +
      `{tokenFile: "${token}"}}], contexts: [{name: plexus, context: {cluster: plexus, user: ` +
      `plexus}}]}`;
    expect(obj.extensions[0].name).toBe("plexus");
    const texts: [string, string][] = [
      ["json", json],
      ["block", blockYaml],
      ["flow", flowYaml],
    ];
    for (const [name, text] of texts) {
      const path = join(dir, `${name}.kubeconfig`);
      writeFileSync(path, text);
      const src = await loadKubeconfigFile(path);
      if ("plugin" in src) throw new Error(`${name}: expected a token-file kubeconfig`);
      expect({ name, server: src.server, ca: String(src.tls?.ca) }).toEqual({
        name,
        server: input.server,
        ca: "ca",
      });
      expect((await src.auth.headers()).authorization).toBe("Bearer t1");
    }
  });
});

describe("what the installer reads and writes on the node is input (B72, B73)", () => {
  it("B80 never writes through a symlinked plexus.d: the link's target stays as it was", async () => {
    mkdirSync(join(dir, "elsewhere"));
    writeFileSync(join(dir, "elsewhere", "token"), "theirs");
    symlinkSync(join(dir, "elsewhere"), join(dir, "plexus.d"));
    const write = syncFile(join(dir, "plexus.d", "token"), "mine");
    await expect(write).rejects.toThrow(/is a symbolic link/);
    expect(readFileSync(join(dir, "elsewhere", "token"), "utf8")).toBe("theirs");
    expect(readdirSync(join(dir, "elsewhere"))).toEqual(["token"]);
  });

  it("B80 a FIFO at an output is replaced, never read; at a source it is refused, saying what it is", async () => {
    execFileSync("mkfifo", [join(dir, "out"), join(dir, "token")]);
    expect(await syncFile(join(dir, "out"), "text")).toBe("created");
    expect(readFileSync(join(dir, "out"), "utf8")).toBe("text");
    writeFileSync(join(dir, "ca.crt"), "ca");
    const tokenFile = join(dir, "token");
    expect(readCredentials({ tokenFile, caFile: join(dir, "ca.crt") })).toEqual({
      missing: `service-account token ${tokenFile} is not usable: it is a FIFO, not a regular file`,
    });
  });
});
