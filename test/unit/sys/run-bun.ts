/** Runs one case of bun-child.ts under the pinned Bun and returns the JSON it printed. */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
// @ts-expect-error: a plain .mjs module without types
import { bunPath } from "../../../scripts/bun-path.mjs";

const CHILD = fileURLToPath(new URL("./bun-child.ts", import.meta.url));

export function runBunCase(
  name: "runtime" | "libc" | "runner" | "orphans",
): Record<string, unknown> {
  const out = execFileSync(bunPath() as string, [CHILD, name], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
    timeout: 30_000,
  });
  return JSON.parse(out) as Record<string, unknown>;
}
