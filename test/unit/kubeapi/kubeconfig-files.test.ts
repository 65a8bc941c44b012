/**
 * The files a kubeconfig and the in-cluster service account name are input: a FIFO at any of those
 * paths fails with 7 at once instead of hanging the call, and symlinks are followed (a projected
 * service-account token is a symlink into a `..data` directory the kubelet swaps).
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Code } from "../../../src/cni/errors";
import { SERVICE_ACCOUNT_DIR } from "../../../src/config/defaults";
import { loadKubeSource, type KubeSource } from "../../../src/kubeapi/kubeconfig";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "plx-kubeconfig-files-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const fifo = (path: string) => execFileSync("mkfifo", [path]);

function kubeconfig(user: string, cluster = "    certificate-authority-data: Zm9v"): string {
  const path = join(dir, "kubeconfig");
  writeFileSync(
    path,
    [
      "apiVersion: v1",
      "current-context: c",
      "contexts: [{name: c, context: {cluster: k, user: u}}]",
      "clusters:",
      "- name: k",
      "  cluster:",
      "    server: https://127.0.0.1:6443",
      cluster,
      "users:",
      "- name: u",
      "  user:",
      user,
    ].join("\n"),
  );
  return path;
}

/** Settles within 2 s (a read blocked on a FIFO would not settle at all). */
async function settled<T>(
  pending: Promise<T>,
): Promise<{ ok: T } | { err: { code: number; message: string } }> {
  const timeout = new Promise<never>((_, reject) =>
    setTimeout(() => reject(new Error("still waiting after 2 s")), 2000),
  );
  return Promise.race([pending.then((ok) => ({ ok })), timeout]).catch((err) => ({ err }));
}

const env = {};

describe("B72 B15 FIFOs where a kubeconfig's files are", () => {
  it("B72 the kubeconfig itself is a FIFO: 7 naming it, at once", async () => {
    const path = join(dir, "kubeconfig");
    fifo(path);
    expect(await settled(loadKubeSource({ kubeconfig: path, env }))).toMatchObject({
      err: {
        code: Code.InvalidNetworkConfig,
        message: expect.stringMatching(/kubeconfig .*: cannot be read: it is a FIFO/),
      },
    });
  });

  it("B72 its token file is a FIFO: 7 naming the token file", async () => {
    fifo(join(dir, "token"));
    const path = kubeconfig("    tokenFile: token");
    expect(await settled(loadKubeSource({ kubeconfig: path, env }))).toMatchObject({
      err: {
        code: Code.InvalidNetworkConfig,
        message: expect.stringMatching(/token file .*token cannot be read: it is a FIFO/),
      },
    });
  });

  it("B72 its CA file is a FIFO: 7 naming the certificate-authority", async () => {
    fifo(join(dir, "ca.crt"));
    const path = kubeconfig("    token: t", "    certificate-authority: ca.crt");
    expect(await settled(loadKubeSource({ kubeconfig: path, env }))).toMatchObject({
      err: {
        code: Code.InvalidNetworkConfig,
        message: expect.stringMatching(
          /certificate-authority .*ca\.crt cannot be read: it is a FIFO/,
        ),
      },
    });
  });
});

describe("B72 the in-cluster service account's files", () => {
  const inCluster = { KUBERNETES_SERVICE_HOST: "10.0.0.1", KUBERNETES_SERVICE_PORT: "443" };
  const saDir = () => join(dir, SERVICE_ACCOUNT_DIR);

  it("B72 a FIFO as token or ca.crt: 7 naming the file, at once", async () => {
    mkdirSync(saDir(), { recursive: true });
    writeFileSync(join(saDir(), "ca.crt"), "ca");
    fifo(join(saDir(), "token"));
    expect(await settled(loadKubeSource({ env: inCluster, inClusterRoot: dir }))).toMatchObject({
      err: {
        code: Code.InvalidNetworkConfig,
        message: expect.stringMatching(/token cannot be read: it is a FIFO/),
      },
    });
    rmSync(join(saDir(), "ca.crt"));
    fifo(join(saDir(), "ca.crt"));
    expect(await settled(loadKubeSource({ env: inCluster, inClusterRoot: dir }))).toMatchObject({
      err: {
        code: Code.InvalidNetworkConfig,
        message: expect.stringMatching(/ca\.crt cannot be read: it is a FIFO/),
      },
    });
  });

  it("M11 a projected token (symlinks into ..data) is followed and read", async () => {
    const data = join(saDir(), "..2026_01_01_00_00_00.000000000");
    mkdirSync(data, { recursive: true });
    writeFileSync(join(data, "token"), "projected-token\n");
    writeFileSync(join(data, "ca.crt"), "ca");
    symlinkSync("..2026_01_01_00_00_00.000000000", join(saDir(), "..data"));
    symlinkSync("..data/token", join(saDir(), "token"));
    symlinkSync("..data/ca.crt", join(saDir(), "ca.crt"));
    const result = await settled(loadKubeSource({ env: inCluster, inClusterRoot: dir }));
    expect(result).toHaveProperty("ok");
    const source = (result as { ok: KubeSource }).ok;
    expect(await source.auth.headers()).toEqual({ authorization: "Bearer projected-token" });
    expect(source.tls?.ca?.toString()).toBe("ca");
  });
});
