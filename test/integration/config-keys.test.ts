/**
 * Multus configs decoded as Multus decodes them, through the built binary (M1): keys in other
 * cases work, unknown keys reach the log file whatever logLevel says, a conflist fed by hand is
 * explained, an ADD naming a pod without a way to Kubernetes fails (7), and the person-facing
 * commands exit 0/1/2/3 (usage errors 2).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cniError, runPlexus, singleJson, TEST_PATH } from "../support/plexus-bin";
import { useSandbox } from "./use-sandbox";

const ctx = useSandbox();
const POD_ARGS = "IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=web;K8S_POD_UID=uid-web";

describe("M1 keys in other cases and unknown keys, through the binary", () => {
  it("B75 M1 a Multus config with its keys in other cases attaches its delegate (Delegates, CNIVersion, Type…)", async () => {
    const { sb } = ctx;
    const delegate = sb.delegate("net-a") as Record<string, unknown>;
    const upper = Object.fromEntries(
      Object.entries(delegate).map(([k, v]) => [k === "type" ? "Type" : k, v]),
    );
    const conf = {
      CNIVersion: "1.0.0",
      Name: "multus-cni-network",
      TYPE: "plexus",
      CNIDir: sb.cniDir,
      Delegates: [upper],
    };
    const r = await sb.run("ADD", conf, { CNI_ARGS: "IgnoreUnknown=1" });
    expect(r.code, r.stdout).toBe(0);
    expect(singleJson(r.stdout)).toMatchObject({ ips: [{ address: "10.1.2.3/24" }] });
    // The delegate got the keys Plexus reads spelled canonically, its own keys as given.
    expect(sb.invocations().map((i) => (i.stdin as Record<string, unknown>).type)).toEqual([
      "noop",
    ]);
  });

  it("M1 unknown keys are written to the log file even at Multus's default level (panic), with a suggestion", async () => {
    const { sb } = ctx;
    const logFile = join(sb.root, "plexus.log");
    const conf = sb.config([sb.delegate("net-a")], {
      logFile,
      clusterNetwrok: "x",
      chrootDir: "/hostroot",
    });
    const r = await sb.run("ADD", conf, { CNI_ARGS: "IgnoreUnknown=1" });
    expect(r.code, r.stdout).toBe(0);
    const log = readFileSync(logFile, "utf8");
    expect(log).toContain("`clusterNetwrok` is not a Plexus key; did you mean `clusterNetwork`?");
    expect(log).toContain(
      "`chrootDir` is a key of Multus's thick-plugin daemon: accepted, has no effect here",
    );
    // Nothing else at that level: the log stays Multus's default otherwise.
    expect(log.split("\n").filter(Boolean)).toHaveLength(2);
  });

  it("M1 without a log file and at level panic, a config with unknown keys writes nothing anywhere but its result", async () => {
    const { sb } = ctx;
    const r = await sb.run(
      "ADD",
      sb.config([sb.delegate("net-a")], { clusterNetwrok: "x", logToStderr: true }),
      {
        CNI_ARGS: "IgnoreUnknown=1",
      },
    );
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
  });

  it("B75 M1 the installed conflist fed to the binary by hand: code 7 saying it is a conflist and what libcni hands over", async () => {
    const { sb } = ctx;
    const conflist = {
      cniVersion: "1.0.0",
      name: "plexus-cni-network",
      plugins: [{ type: "plexus", clusterNetwork: "/x" }],
    };
    const e = cniError(await sb.run("ADD", conflist, { CNI_ARGS: "IgnoreUnknown=1" }));
    expect(e.code).toBe(7);
    expect(e.msg).toContain('is a conflist (it has "plugins")');
    expect(e.msg).toContain(
      "it would hand Plexus: " +
        '{"type":"plexus","clusterNetwork":"/x","name":"plexus-cni-network","cniVersion":"1.0.0"}',
    );
  });
});

describe("M1 M11 no silent default network only, through the binary", () => {
  it("M1 an ADD naming a pod with no kubeconfig, in-cluster env or fileClusterDir fails with 7 and runs nothing", async () => {
    const { sb } = ctx;
    const e = cniError(
      await sb.run("ADD", sb.config([sb.delegate("net-a")], { withoutKubernetes: false }), {
        CNI_ARGS: POD_ARGS,
      }),
    );
    expect(e.code).toBe(7);
    expect(e.msg).toMatch(
      /pod app\/web: CNI_ARGS name a pod, but the config gives no way to reach Kubernetes/,
    );
    expect(sb.invocations()).toEqual([]);
    expect(sb.recordFiles()).toEqual([]);
  });

  it('M1 with "withoutKubernetes": true the same ADD attaches the default network, on purpose', async () => {
    const { sb } = ctx;
    const r = await sb.run("ADD", sb.config([sb.delegate("net-a")], { withoutKubernetes: true }), {
      CNI_ARGS: POD_ARGS,
    });
    expect(r.code, r.stdout).toBe(0);
  });

  it("B15 a kubeconfig that cannot be read still fails with 7", async () => {
    const { sb } = ctx;
    const conf = sb.config([sb.delegate("net-a")], {
      kubeconfig: join(sb.root, "absent.kubeconfig"),
    });
    expect(cniError(await sb.run("ADD", conf, { CNI_ARGS: POD_ARGS })).code).toBe(7);
  });
});

describe("operator exit codes: 0 fine, 1 a problem, 2 usage, 3 could not run", () => {
  const run = (args: string[]) => runPlexus({ env: { PATH: TEST_PATH }, args });

  it("usage errors exit 2: unknown option, missing argument, unknown command, bad --output, a refused Multus flag", async () => {
    for (const args of [
      ["doctor", "--no-such-option"],
      ["explain", "--file"],
      ["completion"],
      ["frobnicate"],
      ["doctor", "--output", "yaml", "--config", "/dev/null"],
      ["install", "--skip-tls-verify"],
    ]) {
      const r = await run(args);
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(2);
      expect(r.stdout).toBe("");
    }
  });

  it("a config that cannot be read: explain and validate exit 3 (could not run); doctor reports it as a problem (1)", async () => {
    const { sb } = ctx;
    const missing = join(sb.root, "absent.conf");
    expect((await run(["explain", "app/web", "--config", missing])).code).toBe(3);
    expect((await run(["validate", "--all", "--config", missing])).code).toBe(3);
    expect((await run(["doctor", "--config", missing, "--cni-conf-dir", sb.root])).code).toBe(1);
  });

  it("M1 explain of a pod on a node whose config cannot reach Kubernetes: exit 1 with the error ADD gives", async () => {
    const { sb } = ctx;
    const file = join(sb.root, "p.conf");
    writeFileSync(
      file,
      JSON.stringify(sb.config([sb.delegate("net-a")], { withoutKubernetes: false })),
    );
    const r = await run(["explain", "app/web", "--config", file]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toContain(
      "CNI_ARGS name a pod, but the config gives no way to reach Kubernetes",
    );
  });

  it("M12 doctor shows the auxiliary chain ADD would run, and an error for one that cannot run", async () => {
    const { sb } = ctx;
    const netd = join(sb.root, "netd");
    mkdirSync(join(netd, "chain"), { recursive: true });
    writeFileSync(
      join(netd, "10-a.conf"),
      JSON.stringify({ cniVersion: "1.0.0", name: "a", type: "noop" }),
    );
    writeFileSync(join(netd, "chain", "t.conf"), JSON.stringify({ type: "tuning" }));
    const file = join(sb.root, "p.conf");
    // The plugins are looked up as a call would: binDir first.
    const write = (extra: Record<string, unknown>) =>
      writeFileSync(
        file,
        JSON.stringify(
          sb.config([], {
            auxiliaryCNIChainName: "chain",
            confDir: netd,
            binDir: sb.binDir,
            ...extra,
          }),
        ),
      );
    write({ clusterNetwork: join(netd, "10-a.conf") });
    const noTuning = await run(["doctor", "--config", file, "--cni-conf-dir", sb.root]);
    expect(noTuning.stdout).toMatch(
      /error +auxiliary chain +network "chain": plugin type="tuning" is missing/,
    );
    sb.installPlugin("noop");
    sb.installPlugin("tuning");
    const ok = await run(["doctor", "--config", file, "--cni-conf-dir", sb.root]);
    expect(ok.stdout).toMatch(
      /ok +auxiliary chain +chain: passthru → tuning from .*netd\/chain, after every pod's networks/,
    );
    write({ clusterNetwork: "a" });
    const bad = await run(["doctor", "--config", file, "--cni-conf-dir", sb.root]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(
      /error +auxiliary chain +.*needs "clusterNetwork" to be a file path.*every ADD fails/,
    );
  });

  it("B75 M1 doctor names a mistyped key with the nearest known one", async () => {
    const { sb } = ctx;
    const file = join(sb.root, "p.conf");
    writeFileSync(file, JSON.stringify(sb.config([sb.delegate("net-a")], { clusterNetwrok: "x" })));
    const r = await run(["doctor", "--config", file, "--cni-conf-dir", sb.root]);
    expect(r.stdout).toMatch(
      /warning +config keys +.*`clusterNetwrok` is not a Plexus key; did you mean `clusterNetwork`\?/,
    );
    expect(existsSync(file)).toBe(true);
  });

  it("M1 a typo that breaks the config is named in the ADD's error and by doctor", async () => {
    const { sb } = ctx;
    const conf = { ...sb.config([]), clusterNetwrok: "/etc/cni/net.d/10-default.conflist" };
    const hint = "`clusterNetwrok` is not a Plexus key; did you mean `clusterNetwork`?";
    const e = cniError(await sb.run("ADD", conf, { CNI_ARGS: "IgnoreUnknown=1" }));
    expect(e.code).toBe(7);
    expect(e.msg).toContain("names no network");
    expect(e.msg).toContain(hint);
    const file = join(sb.root, "p.conf");
    writeFileSync(file, JSON.stringify(conf));
    const r = await run(["doctor", "--config", file, "--cni-conf-dir", sb.root]);
    expect(r.code).toBe(1);
    const line = r.stdout.split("\n").find((l) => l.includes("names no network"));
    expect(line).toContain(hint);
  });
});
