/**
 * The commands' exit statuses are one table in the code (src/command/exit-codes.ts) and one table
 * in the docs (docs/troubleshooting.md): the two say the same codes.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ExitCode } from "../../../src/command/exit-codes";
import { REPO_ROOT } from "../../support/plexus-bin";

const PAGE = join(REPO_ROOT, "docs", "troubleshooting.md");

/** The status column of the table under "Exit statuses of the commands". */
function documentedStatuses(markdown: string): number[] {
  const section = markdown
    .split(/^## /m)
    .find((s) => s.startsWith("Exit statuses of the commands"));
  if (!section) return [];
  return [...section.matchAll(/^\| (\d+) \|/gm)].map((m) => Number(m[1]));
}

describe("the commands' exit statuses", () => {
  it("docs/troubleshooting.md documents exactly the codes of src/command/exit-codes.ts", () => {
    const documented = documentedStatuses(readFileSync(PAGE, "utf8"));
    const defined = Object.values(ExitCode).sort((a, b) => a - b);
    expect(documented).toEqual(defined);
  });
});
