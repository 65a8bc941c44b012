import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { silentLogger } from "../../../src/log/logger";
import { isReady, waitForReadiness } from "../../../src/orchestrate/readiness";

describe("N6.1.2 readiness indicator file", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "plx-ready-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("N6.1.2 without a readiness file configured, pods are never held", async () => {
    expect(await isReady(undefined)).toBe(true);
    await expect(waitForReadiness(undefined, 0, silentLogger())).resolves.toBeUndefined();
  });

  it("N6.1.2 blocks until the file appears, then proceeds", async () => {
    const file = join(dir, "ready");
    setTimeout(() => writeFileSync(file, ""), 150);
    const t0 = Date.now();
    await waitForReadiness(file, 5000, silentLogger());
    expect(Date.now() - t0).toBeGreaterThanOrEqual(100);
  });

  it("N6.1.2 gives up at the deadline with code 11 naming the file", async () => {
    const file = join(dir, "never");
    await expect(waitForReadiness(file, 200, silentLogger())).rejects.toMatchObject({
      code: 11,
      message: expect.stringContaining(file),
    });
  });
});
