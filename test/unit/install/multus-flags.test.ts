/**
 * Multus thin entrypoint's flags on `plexus install` (M11): aliases rewritten, the others refused
 * by name.
 */
import { describe, expect, it } from "vitest";
import { translateMultusFlags } from "../../../src/install/multus-flags";

describe("M11 Multus installer flags", () => {
  it("M11 flags with exactly a Plexus flag's meaning are aliases, in pflag's spellings too", () => {
    expect(
      translateMultusFlags([
        "--multus-conf-file=auto",
        "--multus-bin-file",
        "/usr/src/multus-cni/bin/multus",
        "--multus-kubeconfig-file-host=/etc/cni/net.d/multus.d/multus.kubeconfig",
        "--multus-master-cni-file-name=10-calico.conflist",
        "--multus-log-level=debug",
        "--multus-log-file=/var/log/multus.log",
        "--skip-multus-binary-copy=true",
        "--cleanup-config-on-exit=false",
        "--namespace-isolation=true",
        "--multus-log-to-stderr=false",
        "--cni-conf-dir=/host/etc/cni/net.d",
      ]),
    ).toEqual([
      "--plexus-conf-file=auto",
      "--bin-file",
      "/usr/src/multus-cni/bin/multus",
      "--kubeconfig-file-host=/etc/cni/net.d/multus.d/multus.kubeconfig",
      "--primary-config-file-name=10-calico.conflist",
      "--log-level=debug",
      "--log-file=/var/log/multus.log",
      "--skip-binary-copy",
      "--namespace-isolation",
      "--no-log-to-stderr",
      "--cni-conf-dir=/host/etc/cni/net.d",
    ]);
    expect(translateMultusFlags(["--multus-log-to-stderr"])).toEqual([]);
  });

  it.each([
    [
      "--multus-autoconfig-dir=/host/etc/cni/other",
      /--multus-autoconfig-dir .*differs from --cni-conf-dir/,
    ],
    ["--override-network-name", /--network-name/],
    ["--rename-conf-file=true", /never renames/],
    ["--skip-tls-verify", /always verifies .*--ca-file/],
    ["--force-cni-version=true", /use --cni-version/],
  ])("M11 %s is refused, naming what to use instead", (flag, message) => {
    expect(() => translateMultusFlags([flag])).toThrow(message);
  });

  it("M11 --multus-cni-conf-dir is --nad-conf-dir; --take-over-multus=false, its negation", () => {
    const nads = "--multus-cni-conf-dir=/host/etc/cni/multus/net.d";
    expect(translateMultusFlags([nads, "--take-over-multus=false"])).toEqual([
      "--nad-conf-dir=/host/etc/cni/multus/net.d",
      "--no-take-over-multus",
    ]);
    expect(translateMultusFlags(["--take-over-multus=true"])).toEqual([]);
  });

  it("M11 Multus's DaemonSet args are accepted as they are (its autoconfig dir agrees with --cni-conf-dir)", () => {
    expect(
      translateMultusFlags([
        "--multus-conf-file=auto",
        "--multus-autoconfig-dir=/host/etc/cni/net.d",
        "--cni-conf-dir=/host/etc/cni/net.d",
      ]),
    ).toEqual(["--plexus-conf-file=auto", "--cni-conf-dir=/host/etc/cni/net.d"]);
    expect(translateMultusFlags(["--multus-autoconfig-dir", "/host/etc/cni/net.d/"])).toEqual([]);
  });

  it("M11 a boolean given a value other than true or false is refused", () => {
    expect(() => translateMultusFlags(["--namespace-isolation=yes"])).toThrow(
      /expected true or false/,
    );
  });
});
