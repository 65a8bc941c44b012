/**
 * The test TLS material (test/support/tls, see its README) and the kubeconfigs that point a
 * client at the fake server: token, token file or client certificate.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FakeApiServer } from "./types.ts";

const TLS_DIR = join(import.meta.dirname, "..", "tls");
export const TEST_CA_PEM = readFileSync(join(TLS_DIR, "ca.crt"), "utf8");
export const SERVER_CERT = readFileSync(join(TLS_DIR, "server.crt"), "utf8");
export const SERVER_KEY = readFileSync(join(TLS_DIR, "server.key"), "utf8");

export interface KubeconfigOptions {
  /** Directory to write into (default: a new temp dir). */
  dir?: string;
  fileName?: string;
  /** Token to put in the kubeconfig (default: the server's). */
  token?: string;
  /** Write the token to a file and reference it with `tokenFile` instead. */
  tokenFile?: boolean;
  /**
   * Authenticate with a test client certificate (test/support/tls/README.md) instead of a token:
   * inline (`client-certificate-data`/`client-key-data`) or as file paths
   * (`client-certificate`/`client-key`).
   */
  clientCertificate?: { name: ClientCertName; as: "data" | "file" };
}

/** The client certificates in test/support/tls (see its README). */
export type ClientCertName = "plexus" | "other" | "selfsigned";

export function clientCertFiles(name: ClientCertName): { cert: string; key: string } {
  return { cert: join(TLS_DIR, `client-${name}.crt`), key: join(TLS_DIR, `client-${name}.key`) };
}

/** Temp dirs writeKubeconfig made for a server, removed by that server's close(). */
export const ownedTempDirs = new WeakMap<object, string[]>();
function ownedTempDir(owner: object): string {
  const dir = mkdtempSync(join(tmpdir(), "plx-kubeconfig-"));
  ownedTempDirs.set(owner, [...(ownedTempDirs.get(owner) ?? []), dir]);
  return dir;
}

/** The `user:` lines of the kubeconfig: a token, a token file, or a client certificate. */
function authLines(token: string, where: { dir: string; options: KubeconfigOptions }): string {
  const { dir, options } = where;
  if (options.clientCertificate) {
    const files = clientCertFiles(options.clientCertificate.name);
    return options.clientCertificate.as === "file"
      ? `    client-certificate: ${files.cert}\n    client-key: ${files.key}`
      : `    client-certificate-data: ${readFileSync(files.cert).toString("base64")}\n    ` +
          `client-key-data: ${readFileSync(files.key).toString("base64")}`;
  }
  if (!options.tokenFile) return `    token: ${token}`;
  const tokenPath = join(dir, `${options.fileName ?? "kubeconfig"}.token`);
  writeFileSync(tokenPath, token);
  return `    tokenFile: ${tokenPath}`;
}

/** A kubeconfig (YAML, token auth, inline CA) pointing at the fake server; returns its path. */
export function writeKubeconfig(
  server: Pick<FakeApiServer, "url" | "caPem" | "token">,
  options: KubeconfigOptions = {},
): string {
  const dir = options.dir ?? ownedTempDir(server);
  const path = join(dir, options.fileName ?? "kubeconfig");
  const auth = authLines(options.token ?? server.token, { dir, options });
  // A plain-http server gets no TLS line at all, as `kubectl proxy` users write it.
  const tlsLines = server.url.startsWith("https:")
    ? [`    certificate-authority-data: ${Buffer.from(server.caPem).toString("base64")}`]
    : [];
  writeFileSync(
    path,
    [
      "apiVersion: v1",
      "kind: Config",
      "clusters:",
      "- name: fake",
      "  cluster:",
      `    server: ${server.url}`,
      ...tlsLines,
      "users:",
      "- name: plexus",
      "  user:",
      auth,
      "contexts:",
      "- name: fake",
      "  context:",
      "    cluster: fake",
      "    user: plexus",
      "current-context: fake",
      "",
    ].join("\n"),
  );
  return path;
}

/**
 * A CA the fake server's certificate does not chain to (PEM), made with openssl in `dir`: for
 * "wrong CA" tests.
 */
export function otherCaPem(dir: string): string {
  const args = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"];
  const out = ["-nodes", "-keyout", join(dir, "k.pem"), "-out", join(dir, "ca.pem")];
  execFileSync("openssl", [...args, ...out, "-subj", "/CN=other-ca", "-days", "1"], {
    stdio: "ignore",
  });
  return readFileSync(join(dir, "ca.pem"), "utf8");
}
