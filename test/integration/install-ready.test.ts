/**
 * `plexus install --ready`, the install container's readiness probe, run as the kubelet runs it:
 * the bundled binary with the DaemonSet's probe arguments over a conf dir, before and after the
 * installer took over from Multus, with --no-take-over-multus, and with the installer's other
 * flags beside it (a probe written from the install command keeps working).
 */
import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runPlexus } from "../support/plexus-bin";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function confDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "plx-install-ready-"));
  dirs.push(dir);
  const calico = { cniVersion: "1.0.0", name: "k8s-pod-network", plugins: [{ type: "calico" }] };
  writeFileSync(join(dir, "10-calico.conflist"), JSON.stringify(calico));
  const multus = { cniVersion: "1.0.0", name: "multus-cni-network", type: "multus" };
  writeFileSync(join(dir, "00-multus.conf"), JSON.stringify({ ...multus, delegates: [calico] }));
  const plexus = { cniVersion: "1.0.0", name: "plexus-cni-network", plugins: [{ type: "plexus" }] };
  writeFileSync(join(dir, "00-plexus.conflist"), JSON.stringify(plexus));
  return dir;
}

const ready = (args: string[]) => runPlexus({ env: {}, args: ["install", "--ready", ...args] });

describe("plexus install --ready (the bundled binary)", () => {
  it("M14 not ready while Multus's config sorts first; ready once the take-over renamed it", async () => {
    const dir = confDir();
    const before = await ready([`--cni-conf-dir=${dir}`]);
    expect(before.code).toBe(1);
    expect(before.stdout).toMatch(/^not switched: the runtime's first config is Multus's /);
    expect(before.stderr).toBe("");
    renameSync(join(dir, "00-multus.conf"), join(dir, "00-multus.conf.plexus-moved"));
    const after = await ready([`--cni-conf-dir=${dir}`]);
    expect(after).toMatchObject({ code: 0, stderr: "" });
    expect(after.stdout).toBe(
      `switched: the runtime's first config is Plexus's ${join(dir, "00-plexus.conflist")}\n`,
    );
  });

  it("M14 with --no-take-over-multus, Multus's config first is ready: the way back can roll out", async () => {
    const r = await ready([`--cni-conf-dir=${confDir()}`, "--no-take-over-multus"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^handed back \(--no-take-over-multus\)/);
  });

  it("M11 the installer's other flags (and Multus's aliases) may stand beside it; they change nothing", async () => {
    const dir = confDir();
    rmSync(join(dir, "00-multus.conf"));
    const r = await ready([
      `--cni-conf-dir=${dir}`,
      "--cni-bin-dir=/nonexistent",
      "--host-prefix=/host",
      "--multus-log-level=debug",
      "--skip-multus-binary-copy=true",
    ]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^switched: /);
  });
});
