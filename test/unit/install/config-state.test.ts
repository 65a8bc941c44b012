/**
 * Whether a node has switched: the config the runtime runs from the conf dir (the first usable
 * file by name, the pick the installer and doctor make), classified as Plexus's, Multus's,
 * another plugin's or none; the verdict `plexus install --ready` (the install container's
 * readiness probe) gives on it, and that command over a real directory.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  classifyRuntimeConfig,
  readRuntimeConfig,
  switchedVerdict,
} from "../../../src/install/config-state";
import { PLEXUS_CONF_NAME } from "../../../src/install/options";
import { installReadyMain } from "../../../src/install/ready";

const DIR = "/host/etc/cni/net.d";
const file = (name: string, value: unknown) => ({
  path: `${DIR}/${name}`,
  content: typeof value === "string" ? value : JSON.stringify(value),
});
const PLEXUS = file(PLEXUS_CONF_NAME, {
  cniVersion: "1.0.0",
  name: "plexus-cni-network",
  plugins: [{ type: "plexus", clusterNetwork: "/etc/cni/net.d/10-calico.conflist" }],
});
const MULTUS = file("00-multus.conf", {
  cniVersion: "0.3.1",
  name: "multus-cni-network",
  type: "multus",
  delegates: [{ cniVersion: "0.3.1", name: "k8s-pod-network", type: "calico" }],
});
const CALICO = file("10-calico.conflist", {
  cniVersion: "1.0.0",
  name: "k8s-pod-network",
  plugins: [{ type: "calico" }],
});
const expectTakeOver = { confDir: DIR, plexusName: PLEXUS_CONF_NAME, takeOverMultus: true };

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("the config the node's runtime runs", () => {
  it("M11 the first usable file by name decides: Plexus's, Multus's, another plugin's, or none", () => {
    expect(classifyRuntimeConfig([CALICO, PLEXUS])).toMatchObject({
      state: "plexus",
      path: PLEXUS.path,
    });
    // Multus's 00-multus.conf sorts before 00-plexus.conflist: the runtime still runs Multus.
    expect(classifyRuntimeConfig([PLEXUS, MULTUS, CALICO])).toMatchObject({
      state: "multus",
      path: MULTUS.path,
    });
    expect(classifyRuntimeConfig([CALICO])).toMatchObject({ state: "other", path: CALICO.path });
    expect(classifyRuntimeConfig([])).toEqual({ state: "none", warnings: [] });
  });

  it("M11 a broken or empty file is skipped as the installer skips it, and named in the warnings", () => {
    const broken = file("00-aaa.conf", "{not json");
    const found = classifyRuntimeConfig([broken, CALICO, PLEXUS]);
    expect(found.state).toBe("plexus");
    expect(found.warnings.join("\n")).toContain("00-aaa.conf");
  });

  it("M14 a Multus config that wraps Plexus (Plexus among its delegates) is Multus's, not Plexus's", () => {
    const wrapping = file("00-multus.conf", {
      cniVersion: "1.0.0",
      name: "multus-cni-network",
      type: "multus",
      delegates: [{ cniVersion: "1.0.0", name: "plexus-cni-network", type: "plexus" }],
    });
    expect(classifyRuntimeConfig([wrapping, PLEXUS]).state).toBe("multus");
  });
});

describe("the switch verdict (plexus install --ready)", () => {
  it("M11 ready only when the installer's own file is first; anything else says what is first and why", () => {
    const verdict = (files: Array<{ path: string; content: string }>) =>
      switchedVerdict(classifyRuntimeConfig(files), expectTakeOver);
    expect(verdict([PLEXUS, CALICO])).toEqual({
      ready: true,
      message: `switched: the runtime's first config is Plexus's ${PLEXUS.path}`,
    });
    const multus = verdict([MULTUS, PLEXUS, CALICO]);
    expect(multus.ready).toBe(false);
    expect(multus.message).toMatch(/^not switched: the runtime's first config is Multus's .*00-m/);
    const primaryOnly = verdict([CALICO]);
    expect(primaryOnly.ready).toBe(false);
    expect(primaryOnly.message).toContain(`${CALICO.path}, not ${PLEXUS.path}`);
    expect(verdict([]).message).toContain(`no usable CNI config in ${DIR}`);
    // A config of type plexus under another name is not what the installer keeps right.
    const other = file("00-aaa.conflist", JSON.parse(PLEXUS.content));
    expect(verdict([other, PLEXUS])).toMatchObject({ ready: false });
  });

  it("M14 with --no-take-over-multus the node handed back to Multus is done too, as is one without Multus", () => {
    const handBack = { ...expectTakeOver, takeOverMultus: false };
    const found = classifyRuntimeConfig([MULTUS, PLEXUS, CALICO]);
    expect(switchedVerdict(found, handBack)).toMatchObject({ ready: true });
    expect(switchedVerdict(found, expectTakeOver)).toMatchObject({ ready: false });
    expect(switchedVerdict(classifyRuntimeConfig([PLEXUS]), handBack)).toMatchObject({
      ready: true,
    });
    expect(switchedVerdict(classifyRuntimeConfig([CALICO]), handBack)).toMatchObject({
      ready: false,
    });
  });
});

describe("plexus install --ready over a conf dir", () => {
  const run = (flags: { cniConfDir: string; takeOverMultus?: boolean }) => {
    const lines: string[] = [];
    const code = installReadyMain(flags, (line) => lines.push(line));
    return { code, out: lines.join("") };
  };
  const confDir = () => {
    const dir = mkdtempSync(join(tmpdir(), "plx-ready-"));
    dirs.push(dir);
    return dir;
  };

  it("B90 a FIFO sorting before Plexus's config is what the runtime loads first: not switched", () => {
    const dir = confDir();
    writeFileSync(join(dir, PLEXUS_CONF_NAME), PLEXUS.content);
    execFileSync("mkfifo", [join(dir, "00-a-planted.conf")]);
    const found = readRuntimeConfig(dir);
    expect(found).toMatchObject({ state: "other", path: join(dir, "00-a-planted.conf") });
    expect(run({ cniConfDir: dir }).code).toBe(1);
    rmSync(join(dir, "00-a-planted.conf"));
    expect(run({ cniConfDir: dir }).code).toBe(0);
  });

  it("M11 exits 1 until Plexus's config is first, then 0; one line each time; writes nothing", () => {
    const dir = confDir();
    writeFileSync(join(dir, "10-calico.conflist"), CALICO.content);
    writeFileSync(join(dir, "00-multus.conf"), MULTUS.content);
    writeFileSync(join(dir, PLEXUS_CONF_NAME), PLEXUS.content);
    const before = readRuntimeConfig(dir);
    const blocked = run({ cniConfDir: dir });
    expect(blocked.code).toBe(1);
    expect(blocked.out).toMatch(/^not switched: .*Multus's .*00-multus\.conf.*\n$/);
    expect(blocked.out.split("\n")).toHaveLength(2);
    expect(readRuntimeConfig(dir)).toEqual(before);
    // The take-over's rename: Multus's config moves aside, Plexus's comes first.
    rmSync(join(dir, "00-multus.conf"));
    expect(run({ cniConfDir: dir })).toEqual({
      code: 0,
      out: `switched: the runtime's first config is Plexus's ${join(dir, PLEXUS_CONF_NAME)}\n`,
    });
  });

  it("M11 a missing conf dir is not switched (exit 1); a relative one is a usage error (exit 2)", () => {
    expect(run({ cniConfDir: join(confDir(), "absent") }).code).toBe(1);
    const relative = run({ cniConfDir: "etc/cni/net.d" });
    expect(relative.code).toBe(2);
    expect(relative.out).toContain("--cni-conf-dir must be absolute");
  });

  it("M11 a file name with a control character is escaped in the probe's line", () => {
    const dir = confDir();
    writeFileSync(join(dir, "00-\u001b[31mred.conf"), CALICO.content);
    const { out } = run({ cniConfDir: dir });
    expect(out).not.toContain("\u001b");
    expect(out).toContain("red.conf");
  });
});
