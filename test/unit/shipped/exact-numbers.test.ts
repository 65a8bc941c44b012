/**
 * B92 under Bun, the runtime of dist/plexus (the unit tests run on Node): the source-text JSON
 * API (`context.source`, JSON.rawJSON) that keeps a config's numbers as written, through
 * exact-numbers.ts, which drives the real modules from src/.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { describe, expect, it, onTestFinished } from "vitest";
import { numberLiteral } from "../../support/json-numbers";
import { propertyRuns } from "../../support/property";
import { bunPath } from "./bun-harness";

const HARNESS = fileURLToPath(new URL("./exact-numbers.ts", import.meta.url));
const LITERALS = ['"mtu":12345678901234567890123', '"x":1e2', '"y":-0', '"z":1.50'];

describe("B92 numbers as written, run by Bun", () => {
  it("B92 generated literals round-trip as written; a NAD's reach ADD's and DEL's stdin", () => {
    const dir = mkdtempSync(join(tmpdir(), "plx-shipped-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const literals = fc.sample(numberLiteral, propertyRuns({ seed: 20261128, numRuns: 300 }));
    const nadConfig = `{"cniVersion":"1.0.0","plugins":[{"type":"noop",${LITERALS.join(",")}}]}`;
    const out = execFileSync(bunPath(), [HARNESS, JSON.stringify({ literals, nadConfig, dir })], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
    });
    const answer = JSON.parse(out) as {
      roundTrips: string[];
      addStdin: string;
      delStdin: string;
      delegateTimeoutMs: number;
    };
    expect(answer.roundTrips).toEqual(literals.map((literal) => `{"n":[${literal}]}`));
    for (const literal of LITERALS) {
      expect(answer.addStdin).toContain(literal);
      expect(answer.delStdin).toContain(literal);
    }
    expect(answer.delegateTimeoutMs).toBe(30_000);
  });
});
