/**
 * Device-info files (M10, NPWG device-info; src/npwg/device-info.ts) on generated input
 * (fast-check, fixed seed): the paths built from generated names never leave their directory and
 * exist only for names the device rule accepts; reading generated file contents (any bytes, JSON,
 * oversized, a FIFO, a symlink, a directory) gives found, missing or malformed, never an exception,
 * in bounded time.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deviceTextProblem } from "../../../src/npwg/device-id";
import {
  cniDeviceInfoPath,
  dpDeviceInfoPath,
  MAX_DEVICE_INFO_BYTES,
  readDeviceInfo,
  writeCniDeviceInfo,
} from "../../../src/npwg/device-info";
import { propertyRuns } from "../../support/property";

const SEED = 20261126;
const BOUND_MS = 2000;
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "plx-devinfo-prop-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Names as a device plugin, a NAD or an attacker might write them. */
const name = fc.oneof(
  fc.constantFrom("0000:3b:02.1", "intel.com/sriov_netdevice", "..", ".", "../../etc/shadow"),
  fc.constantFrom("a/../../b", "/abs"),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc
    .tuple(
      fc.string({ maxLength: 8 }),
      fc.constantFrom("/", "..", "\\", "\u0000", "\n", "/.."),
      fc.string({ maxLength: 8 }),
    )
    .map((parts) => parts.join("")),
  fc.nat({ max: 400 }).map((n) => "a".repeat(n)),
);

function expectInside(path: string | undefined, sub: string): void {
  if (path === undefined) return;
  const within = join(dir, sub);
  expect(dirname(path)).toBe(within);
  expect(resolve(path).startsWith(`${within}/`)).toBe(true);
  expect(basename(path)).not.toMatch(/^\.\.?$/);
  expect(Buffer.byteLength(basename(path))).toBeLessThanOrEqual(255);
}

describe("M10 device-info paths from generated names", () => {
  it("M10 the device plugin's path: only for names the rule accepts, one file in <dir>/dp", () => {
    fc.assert(
      fc.property(name, name, (resourceName, deviceID) => {
        const path = dpDeviceInfoPath(dir, resourceName, deviceID);
        if (deviceTextProblem(deviceID) !== undefined) expect(path).toBeUndefined();
        const badResource = deviceTextProblem(resourceName, "resourceName") !== undefined;
        if (badResource) expect(path).toBeUndefined();
        expectInside(path, "dp");
      }),
      propertyRuns({ seed: SEED, numRuns: 1000 }),
    );
  });

  it("M10 Plexus's copy: always one file in <dir>/cni, or none", () => {
    fc.assert(
      fc.property(name, name, name, (network, containerId, ifName) => {
        expectInside(cniDeviceInfoPath(dir, { network, containerId, ifName }), "cni");
      }),
      propertyRuns({ seed: SEED, numRuns: 1000 }),
    );
  });
});

/** What a device plugin (or anyone who can write its directory) may leave at the path. */
type Planted =
  | { kind: "bytes"; data: Uint8Array }
  | { kind: "text"; text: string }
  | { kind: "big"; size: number }
  | { kind: "fifo" }
  | { kind: "symlink" }
  | { kind: "dir" };

const planted: fc.Arbitrary<Planted> = fc.oneof(
  fc.uint8Array({ maxLength: 512 }).map((data) => ({ kind: "bytes" as const, data })),
  fc.jsonValue({ maxDepth: 4 }).map((v) => ({ kind: "text" as const, text: JSON.stringify(v) })),
  fc.string({ maxLength: 200 }).map((text) => ({ kind: "text" as const, text })),
  fc.integer({ min: MAX_DEVICE_INFO_BYTES - 2, max: MAX_DEVICE_INFO_BYTES + 1024 }).map((size) => ({
    kind: "big" as const,
    size,
  })),
  fc.constantFrom<Planted>({ kind: "fifo" }, { kind: "symlink" }, { kind: "dir" }),
);

let serial = 0;
function plant(planted: Planted): string {
  const path = join(dir, "read", `f${serial++}`);
  mkdirSync(dirname(path), { recursive: true });
  if (planted.kind === "bytes") writeFileSync(path, planted.data);
  else if (planted.kind === "text") writeFileSync(path, planted.text);
  else if (planted.kind === "big")
    writeFileSync(path, `{"a":"${"x".repeat(Math.max(0, planted.size - 8))}"}`);
  else if (planted.kind === "fifo") execFileSync("mkfifo", [path]);
  else if (planted.kind === "symlink") symlinkSync("/etc/hostname", path);
  else mkdirSync(path);
  return path;
}

describe("M10 B72 B73 reading generated device-info files", () => {
  it("M10 B72 B73 found (a JSON object within the cap) or malformed; no throw, no hang", () => {
    fc.assert(
      fc.property(planted, (p) => {
        const path = plant(p);
        const started = performance.now();
        const read = readDeviceInfo(path);
        expect(performance.now() - started).toBeLessThan(BOUND_MS);
        expect(["found", "malformed"]).toContain(read.state);
        if (read.state === "found") {
          expect(typeof read.info).toBe("object");
          expect(Array.isArray(read.info)).toBe(false);
          expect(Buffer.byteLength(read.text)).toBeLessThanOrEqual(MAX_DEVICE_INFO_BYTES);
        }
        if (["fifo", "symlink", "dir"].includes(p.kind)) expect(read.state).toBe("malformed");
      }),
      propertyRuns({ seed: SEED, numRuns: 200 }),
    );
  });

  it("M10 a JSON object written as Plexus's copy reads back as the same object", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 })), (info) => {
        const path = join(dir, "cni", `copy${serial++}`);
        writeCniDeviceInfo(path, JSON.stringify(info));
        const read = readDeviceInfo(path);
        expect(read).toMatchObject({ state: "found", info: JSON.parse(JSON.stringify(info)) });
      }),
      propertyRuns({ seed: SEED, numRuns: 100 }),
    );
  });
});
