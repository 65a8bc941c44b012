/**
 * The ops commands end one way (runOps): a command asked about nothing says so on stderr as
 * `plexus <command>: …`, prints nothing on stdout, and exits 2 (the usage status).
 */
import { describe, expect, it } from "vitest";
import { ExitCode } from "../../../src/command/exit-codes";
import { explainMain } from "../../../src/ops/explain";
import { validateMain } from "../../../src/ops/validate";

function capture() {
  const seen = { out: "", err: "" };
  const output = {
    out: (t: string) => {
      seen.out += t;
    },
    err: (t: string) => {
      seen.err += t;
    },
  };
  return { seen, output };
}

describe("ops commands asked about nothing", () => {
  it("explain and validate answer with the usage status and one line naming what to give", async () => {
    const explain = capture();
    expect(await explainMain(undefined, {}, explain.output)).toBe(ExitCode.Usage);
    expect(explain.seen).toEqual({
      out: "",
      err: "plexus explain: name a pod (NAMESPACE/NAME) or give --file POD.yaml\n",
    });
    const validate = capture();
    expect(await validateMain(undefined, {}, validate.output)).toBe(ExitCode.Usage);
    expect(validate.seen.err).toBe(
      "plexus validate: name a NAD (NAMESPACE/NAME), or give --file NAD.yaml or --all\n",
    );
    expect(validate.seen.out).toBe("");
  });
});
