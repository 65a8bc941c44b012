import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AVX2_BUILD_NAME, cpuinfoHasAvx2, executableToInstall } from "../../../src/install/self";

const processor = (machine: number, flags: string) =>
  `processor\t: ${machine}\nvendor_id\t: GenuineIntel\nmodel name\t: Test CPU\nflags\t\t: ` +
  `${flags}\nbugs\t\t:\n\n`;
const NEHALEM_FLAGS =
  "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr sse sse2 ssse3 cx16 sse4_1 sse4_2 popcnt";
const HASWELL_FLAGS = `${NEHALEM_FLAGS} avx f16c fma bmi1 avx2 bmi2 movbe`;
// What an arm64 node's /proc/cpuinfo holds: "Features", no "flags".
const ARM64 =
  "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 " +
  "atomics\n\n";

describe("cpuinfoHasAvx2", () => {
  it("M11 true only when every processor lists avx2 (avx alone, arm64 or an empty file: false)", () => {
    expect(cpuinfoHasAvx2(processor(0, HASWELL_FLAGS) + processor(1, HASWELL_FLAGS))).toBe(true);
    expect(cpuinfoHasAvx2(processor(0, NEHALEM_FLAGS))).toBe(false);
    expect(cpuinfoHasAvx2(processor(0, `${NEHALEM_FLAGS} avx`))).toBe(false);
    expect(cpuinfoHasAvx2(processor(0, HASWELL_FLAGS) + processor(1, NEHALEM_FLAGS))).toBe(false);
    expect(cpuinfoHasAvx2(ARM64)).toBe(false);
    expect(cpuinfoHasAvx2("")).toBe(false);
  });
});

describe("executableToInstall", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "plx-self-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const cpuinfo = (text: string) => {
    const p = join(dir, "cpuinfo");
    writeFileSync(p, text);
    return p;
  };

  it("M11 the AVX2 build beside the entry executable on a CPU with AVX2, the entry (baseline) one without", () => {
    const own = join(dir, "plexus");
    writeFileSync(own, "baseline");
    writeFileSync(join(dir, AVX2_BUILD_NAME), "avx2");
    expect(executableToInstall({ own, cpuinfoPath: cpuinfo(processor(0, HASWELL_FLAGS)) })).toBe(
      join(dir, AVX2_BUILD_NAME),
    );
    expect(executableToInstall({ own, cpuinfoPath: cpuinfo(processor(0, NEHALEM_FLAGS)) })).toBe(
      own,
    );
    expect(executableToInstall({ own, cpuinfoPath: join(dir, "no-such-cpuinfo") })).toBe(own);
  });

  it("M11 without an AVX2 build beside it (the arm64 image, dist/plexus) the entry executable itself; none when not compiled", () => {
    const own = join(dir, "plexus");
    writeFileSync(own, "arm64");
    expect(executableToInstall({ own, cpuinfoPath: cpuinfo(ARM64) })).toBe(own);
    expect(executableToInstall({ own, cpuinfoPath: cpuinfo(processor(0, HASWELL_FLAGS)) })).toBe(
      own,
    );
    expect(executableToInstall({ own: undefined })).toBeUndefined();
  });
});
