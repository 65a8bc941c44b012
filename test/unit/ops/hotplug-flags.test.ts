import { describe, expect, it } from "vitest";
import { ExitCode } from "../../../src/command/exit-codes";
import { hotplugMain } from "../../../src/ops/hotplug";

function captured() {
  const text = { out: "", err: "" };
  const output = {
    out: (chunk: string) => void (text.out += chunk),
    err: (chunk: string) => void (text.err += chunk),
  };
  return { text, output };
}

describe("plexus explain --hot-plug: flags that are not for it", () => {
  for (const flag of ["file", "nads"] as const) {
    it(`--${flag} with --hot-plug is a usage error (2), before any cluster is asked`, async () => {
      const { text, output } = captured();
      const code = await hotplugMain("app/web", { dryRun: true, [flag]: "/x" }, output);
      expect(code).toBe(ExitCode.Usage);
      expect(text.out).toBe("");
      expect(text.err).toContain("--file and --nads are not for it");
    });
  }
});
