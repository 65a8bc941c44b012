/**
 * Diagnostics that know the delegates, through dist/plexus: a key no plugin of its type reads (a
 * macvlan NAD's `mastr`, a `cniVesion`) is named with the key meant by `validate`, `explain`,
 * `doctor` and ADD's log, never failing anything; `validate` names every missing binary, the IPAM
 * plugins' too; `explain` and a failed ADD name a `master` the node does not have; `plexus
 * hotplug` prints text unless `-o json`, and a NAD that does not exist fails it with 1. The
 * delegates are the fixture plugin under the reference plugins' names; the cluster is a manifest
 * directory (fileClusterDir).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cniError, runPlexus, singleJson, TEST_PATH, type Behaviours } from "../support/plexus-bin";
import { useSandbox } from "./use-sandbox";

const ctx = useSandbox();
const POD_ARGS = "IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=web;K8S_POD_UID=uid-web";
/** No node has an interface of this name (a valid one: 15 bytes at most). */
const ABSENT = "plx-absent0";

const nadObject = (name: string, config: Record<string, unknown>) => ({
  apiVersion: "k8s.cni.cncf.io/v1",
  kind: "NetworkAttachmentDefinition",
  metadata: { namespace: "app", name },
  spec: { config: JSON.stringify(config) },
});

/** A fixture delegate's config under a plugin `type`, driven by the debug file of `name`. */
function delegateOf(name: string, type: string, extra: Record<string, unknown>, b?: Behaviours) {
  return ctx.sb.delegate(name, { type, extra, ...(b ? { behaviours: b } : {}) });
}

/**
 * A node: Plexus's config in net.d (for the commands) and as the runtime's stdin (for ADD), the
 * fixture as default network net-a, and the cluster (pod app/web selecting `networks`, the NADs).
 */
function node(
  nads: Array<ReturnType<typeof nadObject>>,
  networks: string,
  annotations: Record<string, string> = {},
) {
  const { sb } = ctx;
  const clusterDir = join(sb.root, "cluster");
  const confDir = join(sb.root, "net.d");
  mkdirSync(clusterDir, { recursive: true });
  mkdirSync(confDir, { recursive: true });
  const pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      namespace: "app",
      name: "web",
      uid: "uid-web",
      annotations: {
        ...annotations,
        ...(networks ? { "k8s.v1.cni.cncf.io/networks": networks } : {}),
      },
    },
  };
  const yaml = [...nads, pod].map((x) => `---\n${JSON.stringify(x)}\n`).join("");
  writeFileSync(join(clusterDir, "objects.yaml"), yaml);
  const logFile = join(sb.root, "plexus.log");
  const conf = sb.config([sb.delegate("net-a")], {
    fileClusterDir: clusterDir,
    confDir,
    logFile,
    logLevel: "warn",
  });
  writeFileSync(join(confDir, "00-plexus.conf"), JSON.stringify(conf));
  const flags = ["--cni-conf-dir", confDir, "--cni-path", sb.binDir];
  const run = (...args: string[]) =>
    runPlexus({
      env: { PATH: TEST_PATH, PLX_IT_MARK: sb.marker },
      args: [...args, ...flags],
      cwd: sb.root,
    });
  const log = () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : "");
  /** The pod's annotations as ADD and hot-plug wrote them (the file cluster keeps them apart). */
  const written = (): Record<string, string> => {
    const path = join(clusterDir, "status", "app.web.json");
    return (
      JSON.parse(readFileSync(path, "utf8")) as {
        metadata: { annotations: Record<string, string> };
      }
    ).metadata.annotations;
  };
  return { conf, run, log, written };
}

const MASTR = "`mastr` is not a key of the macvlan plugin; did you mean `master`?";
const VESION = "`cniVesion` is not a key of the macvlan plugin; did you mean `cniVersion`?";
/** A macvlan NAD's config with `cniVesion` beside its cniVersion (a test takes the latter out). */
const vesion = () => ({ ...delegateOf("vesion", "macvlan", { master: "lo" }), cniVesion: "1.0.0" });

describe("keys no plugin reads, named with the key meant", () => {
  it("validate: a macvlan's `mastr`, a `cniVesion`, an IPAM key; an unknown type is not judged", async () => {
    const { sb } = ctx;
    sb.installPlugin("host-local");
    const n = node(
      [
        nadObject("mv", delegateOf("mv", "macvlan", { mastr: "eth0" })),
        nadObject("listy", {
          cniVersion: "1.0.0",
          disableChek: true,
          plugins: [
            delegateOf("listy", "bridge", {
              cniVesion: "1.0.0",
              ipam: { type: "host-local", subnet: "10.9.0.0/24", rangeStrat: "10.9.0.9" },
            }),
          ],
        }),
        nadObject("own", delegateOf("own", "noop", { mastr: "eth0" })),
        nadObject("vesion", { ...vesion(), cniVersion: undefined }),
      ],
      "",
    );
    const r = await n.run("validate", "--all", "-o", "json");
    const findings = (nad: string, level: string): string[] =>
      (JSON.parse(r.stdout) as { reports: Array<{ nad: string; findings: Finding[] }> }).reports
        .find((x) => x.nad === `app/${nad}`)!
        .findings.filter((f) => f.level === level)
        .map((f) => f.msg);
    expect(findings("mv", "warning")).toContain(
      `NetworkAttachmentDefinition app/mv spec.config: ${MASTR}`,
    );
    expect(findings("listy", "warning")).toEqual(
      expect.arrayContaining([
        expect.stringContaining(
          "`disableChek` is not a conflist key (libcni reads no such key); did you mean " +
            "`disableCheck`?",
        ),
        expect.stringContaining(
          "plugin 0: `cniVesion` is not a key of the bridge plugin; did you mean `cniVersion`?",
        ),
        expect.stringContaining(
          'plugin 0: `rangeStrat` in "ipam" is not a key of the host-local IPAM plugin; ' +
            "did you mean `rangeStart`?",
        ),
      ]),
    );
    expect(findings("own", "warning")).toEqual([]);
    // The typo is why this NAD has no cniVersion: its error says so.
    expect(findings("vesion", "error")).toEqual([expect.stringContaining(VESION)]);
  });

  it("a NAD that fails for a typo: ADD's error names the key meant", async () => {
    const { sb } = ctx;
    const n = node([nadObject("vesion", { ...vesion(), cniVersion: undefined })], "vesion");
    const err = cniError(await sb.run("ADD", n.conf, { CNI_ARGS: POD_ARGS }));
    expect(err.msg).toContain("cniVersion missing is not supported");
    expect(err.msg).toContain(VESION);
    expect(sb.calls()).toEqual([]);
  });

  it("explain notes them, doctor names the default network's, ADD logs them and succeeds", async () => {
    const { sb } = ctx;
    const n = node(
      [nadObject("mv", delegateOf("mv", "macvlan", { master: "lo", mastr: "eth0" }))],
      "mv",
    );
    const explain = await n.run("explain", "app/web");
    expect(explain.stdout).toContain(MASTR);
    expect(explain.code, explain.stdout).toBe(0);

    const add = await sb.run("ADD", n.conf, { CNI_ARGS: POD_ARGS });
    expect(add.code, add.stdout + add.stderr).toBe(0);
    expect(sb.calls()).toEqual(["ADD net-a", "ADD mv"]);
    const warned = n
      .log()
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { level: number; msg: string })
      .filter((line) => line.msg.includes(MASTR));
    expect(warned).toEqual([expect.objectContaining({ level: 40 })]);

    // doctor: the default network is the node's own config, here a bridge with a typo.
    writeFileSync(
      join(sb.root, "net.d", "10-cbr0.conflist"),
      JSON.stringify({
        cniVersion: "1.0.0",
        name: "cbr0",
        plugins: [{ type: "bridge", bridg: "cni0" }],
      }),
    );
    sb.installPlugin("bridge");
    const conf = JSON.parse(readFileSync(join(sb.root, "net.d", "00-plexus.conf"), "utf8"));
    writeFileSync(
      join(sb.root, "net.d", "00-plexus.conf"),
      JSON.stringify({ ...conf, delegates: undefined, clusterNetwork: "cbr0" }),
    );
    const doctor = await n.run("doctor");
    expect(doctor.stdout).toMatch(
      new RegExp(
        "^warning +plugin keys +default network cbr0: plugin 0: `bridg` is not a key of the " +
          "bridge plugin; did you mean `bridge`\\?$",
        "m",
      ),
    );
  });
});

interface Finding {
  level: string;
  msg: string;
}

describe("what fails inside a plugin, named before and when it does", () => {
  it("validate lists every missing binary: sriov and its IPAM plugin whereabouts", async () => {
    const n = node(
      [
        nadObject("sr", {
          cniVersion: "1.0.0",
          type: "sriov",
          ipam: { type: "whereabouts", range: "10.1.0.0/24" },
        }),
      ],
      "",
    );
    const r = await n.run("validate", "app/sr");
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('error   network "sr": plugin type="sriov" is missing');
    expect(r.stdout).toContain(
      `error   network "sr": plugin sriov's ipam: plugin type="whereabouts" is missing`,
    );
  });

  it("explain names a master the node does not have; lo passes", async () => {
    const absent = node([nadObject("mv", delegateOf("mv", "macvlan", { master: ABSENT }))], "mv");
    const r = await absent.run("explain", "app/web");
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(
      `code 999: pod app/web: ADD of network "app/mv" (net1) failed: network "mv": plugin ` +
        `macvlan: master "${ABSENT}" does not exist on this node (no /sys/class/net/${ABSENT})`,
    );
    const lo = node([nadObject("mv", delegateOf("mv", "macvlan", { master: "lo" }))], "mv");
    const fine = await lo.run("explain", "app/web");
    expect([fine.code, fine.stdout]).toEqual([0, expect.stringContaining("ADD would succeed")]);
  });

  it("a failed ADD names the missing master; with the master there, the plugin's error as it is", async () => {
    const { sb } = ctx;
    const linkNotFound: Behaviours = {
      ADD: { do: "error", error: { code: 999, msg: "Link not found" } },
    };
    const absent = node(
      [nadObject("mv", delegateOf("mv", "macvlan", { master: ABSENT }, linkNotFound))],
      "mv",
    );
    const err = cniError(await sb.run("ADD", absent.conf, { CNI_ARGS: POD_ARGS }));
    expect(err.code).toBe(999);
    expect(err.msg).toMatch(
      /^pod app\/web: ADD of network "app\/mv" \(net1\) failed: .*Link not found/,
    );
    expect(err.msg).toMatch(
      new RegExp(
        `Link not found \\(macvlan's "master" "${ABSENT}" is not an interface of this node ` +
          `\\(no /sys/class/net/${ABSENT}\\)\\)$`,
      ),
    );
    const lo = node(
      [nadObject("mv", delegateOf("mv", "macvlan", { Master: "lo" }, linkNotFound))],
      "mv",
    );
    const plain = cniError(
      await sb.run("ADD", lo.conf, { CNI_ARGS: POD_ARGS, CNI_CONTAINERID: "ctr2" }),
    );
    expect(plain.msg).toMatch(/Link not found$/);
  });
});

describe("plexus hotplug: -o and its exit statuses", () => {
  it("text unless -o json; a NAD that does not exist is 1 (nothing changed), in either", async () => {
    const { sb } = ctx;
    const netB = nadObject("net-b", delegateOf("net-b", "noop", {}));
    const n = node([netB], "");
    const add = await sb.run("ADD", n.conf, { CNI_ARGS: POD_ARGS });
    expect(add.code, add.stdout + add.stderr).toBe(0);

    node([netB], "net-b", n.written());
    const attached = await n.run("hotplug", "app/web", "-o", "text");
    expect([attached.code, attached.stdout]).toEqual([
      0,
      "app/web (container ctr1):\n  attached app/net-b on net1\n",
    ]);
    const again = await n.run("hotplug", "app/web", "-o", "json");
    expect(again.code).toBe(0);
    expect(singleJson(again.stdout)).toMatchObject({ state: "reconciled", attached: [] });

    node([netB], "net-b, absent", n.written());
    const missing = await n.run("hotplug", "app/web");
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe("");
    expect(missing.stderr).toContain(
      "no NetworkAttachmentDefinition absent exists in namespace app",
    );
    const json = await n.run("hotplug", "app/web", "-o", "json");
    expect(json.code).toBe(1);
    expect(singleJson(json.stdout)).toMatchObject({ pod: "app/web", state: "failed" });

    const del = await sb.run("DEL", n.conf, { CNI_ARGS: POD_ARGS });
    expect(del.code, del.stdout + del.stderr).toBe(0);
    expect(sb.recordFiles()).toEqual([]);
  });
});
