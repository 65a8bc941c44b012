/**
 * The release executables on the CPU each is for (`npm run build:release`, built here on demand):
 * the arm64 one under qemu-aarch64-static (Debian's arm64 glibc), the baseline amd64 one under
 * qemu-x86_64-static with a CPU model without AVX2 (Nehalem). Only Plexus is emulated: qemu-user
 * passes an execve on to the kernel, so the delegates (bridge, host-local from /usr/lib/cni,
 * x86-64) run natively, as they would on the node. Each answers VERSION and does a real ADD, CHECK
 * and DEL in a namespace `plx-<random>` (subnets 10.232.x.0/24), leaving nothing behind.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { REPO_ROOT, singleJson, TEST_PATH } from "../support/plexus-bin";
import {
  CNI_BIN_DIR,
  describeE2e,
  NOTHING_LEFT,
  useE2eScope,
  type E2eScope,
} from "../support/netns";
import {
  avx2ProbeElf,
  ensureRelease,
  RELEASE_DIR,
  RELEASE_FILES,
  releasePath,
  runCommand,
  type ReleaseFile,
} from "../support/release";
import {
  defaultNet,
  expectNetnsMatchesResult,
  expectOk,
  expectSilentOk,
  plexusConf,
  type Result100,
} from "./networks";

const TOOLS = [
  { command: "qemu-aarch64-static", pkg: "qemu-user-static" },
  { command: "qemu-x86_64-static", pkg: "qemu-user-static" },
  { command: "/lib/ld-linux-aarch64.so.1", pkg: "libc6:arm64 (dpkg --add-architecture arm64)" },
  { command: "sha256sum", pkg: "coreutils" },
];

/** A CPU model without AVX2 (and without AVX): what the baseline build is for. */
const NO_AVX2_CPU = "Nehalem";

interface Emulated {
  file: ReleaseFile;
  emulator: string[];
  subnet: string;
}

const EMULATED: Emulated[] = [
  { file: "plexus-linux-arm64", emulator: ["qemu-aarch64-static"], subnet: "10.232.1.0/24" },
  {
    file: "plexus-linux-amd64-baseline",
    emulator: ["qemu-x86_64-static", "-cpu", NO_AVX2_CPU],
    subnet: "10.232.2.0/24",
  },
];

const sha256 = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");
const timings: string[] = [];

const t = useE2eScope();

function emulated(
  emulation: Emulated,
  scope: E2eScope,
  command: string,
  stdin: string,
  env: Record<string, string> = {},
) {
  return runCommand([...emulation.emulator, releasePath(emulation.file)], {
    env: scope.env(command, env),
    stdin,
    timeoutMs: 60_000,
  });
}

describeE2e(
  "e2e release executables on their CPU (qemu-user)",
  () => {
    beforeAll(() => {
      const ms = ensureRelease();
      if (ms > 0) timings.push(`build:release ${Math.round(ms)} ms`);
    }, 300_000);

    afterAll(() => {
      process.stderr.write(`release e2e timings: ${timings.join("; ")}\n`);
    });

    it("SHA256SUMS names executables and SBOMs, `sha256sum -c` passes; ELFs for their CPUs", () => {
      const sums = readFileSync(join(RELEASE_DIR, "SHA256SUMS"), "utf8");
      expect(
        sums
          .trim()
          .split("\n")
          .map((l) => l.split(/\s+/)[1]),
      ).toEqual(RELEASE_FILES.flatMap((f) => [f, `${f}.cdx.json`]));
      const check = spawnSync("sha256sum", ["-c", "SHA256SUMS"], {
        cwd: RELEASE_DIR,
        encoding: "utf8",
      });
      expect(check.status, check.stdout + check.stderr).toBe(0);
      const machine = (f: ReleaseFile) => readFileSync(releasePath(f)).readUInt16LE(18);
      expect(RELEASE_FILES.map(machine)).toEqual([0x3e, 0x3e, 0xb7]); // x86-64, x86-64, aarch64
    });

    it("each SBOM names its executable's SHA-256, the bundled packages, the Bun runtime", () => {
      type Pkg = { devDependencies: { bun: string } };
      const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as Pkg;
      const production = ["@kubernetes/client-node", "commander", "js-yaml", "pino", "prom-client"];
      for (const f of RELEASE_FILES) {
        const sbom = JSON.parse(readFileSync(join(RELEASE_DIR, `${f}.cdx.json`), "utf8"));
        const subject = sbom.metadata.component;
        expect(sbom.bomFormat).toBe("CycloneDX");
        expect(subject.name).toBe(f);
        expect(subject.hashes).toEqual([{ alg: "SHA-256", content: sha256(releasePath(f)) }]);
        expect(subject.licenses).toEqual([{ license: { id: "Apache-2.0" } }]);
        const names = sbom.components.map((c: { name: string }) => c.name);
        // The production dependencies package.json names, all bundled; no dev dependency.
        expect(names).toEqual(expect.arrayContaining(production));
        expect(names).not.toContain("vitest");
        const runtime = names.find((n: string) => n.startsWith("@oven/bun-linux-"));
        const bun = sbom.components.find((c: { name: string }) => c.name === runtime);
        expect(bun.version).toBe(pkg.devDependencies.bun);
        expect(sbom.serialNumber).toMatch(/^urn:uuid:[0-9a-f-]{36}$/);
      }
    });

    it(`control: the emulator withholds AVX2 on the ${NO_AVX2_CPU} model (an AVX2 probe dies of SIGILL there and runs on the host's model)`, () => {
      const probe = join(t.scope.root, "avx2-probe");
      writeFileSync(probe, avx2ProbeElf(), { mode: 0o755 });
      const there = spawnSync("qemu-x86_64-static", ["-cpu", NO_AVX2_CPU, probe], {
        encoding: "utf8",
      });
      expect(there.signal ?? there.status).toBe("SIGILL");
      const withAvx2 = spawnSync("qemu-x86_64-static", ["-cpu", "Haswell", probe], {
        encoding: "utf8",
      });
      expect(withAvx2.status, withAvx2.stderr).toBe(0);
    });

    for (const e of EMULATED) {
      it(`C2.2 C2.4 C2.6 ${e.file} under ${e.emulator.join(" ")}: VERSION, then ADD, CHECK and DEL on a real bridge, leaving nothing`, async () => {
        const { scope } = t;
        const version = await emulated(e, scope, "VERSION", "");
        expect(singleJson(version.stdout)).toHaveProperty("supportedVersions");
        const conf = JSON.stringify(plexusConf(scope, [defaultNet(scope, e.subnet, "rel-net")]));
        const ns = scope.addNetns();
        const env = { CNI_CONTAINERID: "ctr-rel", CNI_NETNS: ns.path, CNI_IFNAME: "eth0" };
        // The delegates are x86-64 executables: qemu-aarch64 could not run them, so an ADD that
        // works under it shows qemu handed the delegate's execve to the kernel (native, as on a
        // node).
        expect(readFileSync(join(CNI_BIN_DIR, "bridge")).readUInt16LE(18)).toBe(0x3e);
        const add = await emulated(e, scope, "ADD", conf, env);
        const result = expectOk(add) as unknown as Result100;
        expect(result.ips?.map((i) => i.address)).toEqual([e.subnet.replace(/0\/24$/, "2/24")]);
        expectNetnsMatchesResult(ns, result, { ifName: "eth0" });
        const check = await emulated(e, scope, "CHECK", conf, env);
        expectSilentOk(check);
        const del = await emulated(e, scope, "DEL", conf, env);
        expectSilentOk(del);
        expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
        const ms = (r: { durationMs: number }) => Math.round(r.durationMs);
        timings.push(
          `${e.file}: VERSION ${ms(version)} ms, ADD ${ms(add)} ms, CHECK ${ms(check)} ms, DEL ` +
            `${ms(del)} ms`,
        );
      });
    }

    it(`the default amd64 build on the ${NO_AVX2_CPU} model: runs there exactly when Bun's x64 runtime is its baseline one`, async () => {
      const bunVersion = (
        JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
          devDependencies: { bun: string };
        }
      ).devDependencies.bun;
      const runtime = (name: string) =>
        join(REPO_ROOT, ".cache/bun-runtimes", `${name}-${bunVersion}`, "bun");
      const sameRuntime =
        sha256(runtime("bun-linux-x64")) === sha256(runtime("bun-linux-x64-baseline"));
      const r = await runCommand(
        ["qemu-x86_64-static", "-cpu", NO_AVX2_CPU, releasePath("plexus-linux-amd64")],
        {
          env: { PATH: TEST_PATH, CNI_COMMAND: "VERSION" },
        },
      );
      timings.push(
        `plexus-linux-amd64 on ${NO_AVX2_CPU}: ` +
          `${sameRuntime ? "same runtime as baseline" : "AVX2 runtime"}, VERSION ` +
          `${r.signal ?? r.code}`,
      );
      if (sameRuntime) expect(singleJson(r.stdout)).toHaveProperty("supportedVersions");
      else expect(r.signal ?? r.code).toBe("SIGILL");
    });
  },
  { tools: TOOLS },
);
