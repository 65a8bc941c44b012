/**
 * docs/conformance.md stays true: every requirement ID that src/, deploy/ or test/ cites has a
 * definition in docs/requirements.json, and the page is what scripts/conformance.mjs writes from
 * it and the tree (which files cite an ID, which test titles name it).
 */
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "../../..");

describe("docs/conformance.md", () => {
  it("defines every cited requirement ID and is up to date (else: npm run conformance)", () => {
    const r = spawnSync(process.execPath, ["scripts/conformance.mjs", "--check"], {
      cwd: ROOT,
      encoding: "utf8",
      timeout: 30_000,
    });
    const why =
      `docs/conformance.md is stale or an ID has no definition: run \`npm run ` +
      `conformance\` (after defining new IDs in docs/requirements.json) and commit ` +
      `both.\n${r.stderr}${r.error ?? ""}`;
    expect(r.status, why).toBe(0);
  });
});
