/** The runtime-tuning variables the executable runs without (src/cli/runtime-env.ts). */
import { describe, expect, it } from "vitest";
import { tuningVariables, withoutTuning } from "../../../src/cli/runtime-env";

describe("runtime-tuning variables", () => {
  it("B18 Bun's and Node's knobs are recognised; the CNI variables, PATH, proxies, the hosts' CA settings and the rest are kept", () => {
    const env = {
      BUN_OPTIONS: "--preload /x.js",
      BUN_BE_BUN: "1",
      BUN_INSPECT: "ws://x",
      BUN_CONFIG_VERBOSE_FETCH: "1",
      BUN_JSC_useJIT: "0",
      NODE_OPTIONS: "--require /x.js",
      NODE_TLS_REJECT_UNAUTHORIZED: "0",
      NODE_EXTRA_CA_CERTS: "/ca.pem",
      SSL_CERT_FILE: "/ca.pem",
      CNI_COMMAND: "ADD",
      CNI_ARGS: "IgnoreUnknown=1",
      PATH: "/usr/bin",
      HTTPS_PROXY: "http://proxy:3128",
      NODE_NAME: "node-1",
    };
    expect(tuningVariables(env).sort()).toEqual(
      [
        "BUN_BE_BUN",
        "BUN_CONFIG_VERBOSE_FETCH",
        "BUN_INSPECT",
        "BUN_JSC_useJIT",
        "BUN_OPTIONS",
        "NODE_OPTIONS",
        "NODE_TLS_REJECT_UNAUTHORIZED",
      ].sort(),
    );
    expect(withoutTuning(env)).toEqual({
      NODE_EXTRA_CA_CERTS: "/ca.pem",
      SSL_CERT_FILE: "/ca.pem",
      CNI_COMMAND: "ADD",
      CNI_ARGS: "IgnoreUnknown=1",
      PATH: "/usr/bin",
      HTTPS_PROXY: "http://proxy:3128",
      NODE_NAME: "node-1",
    });
  });
});
