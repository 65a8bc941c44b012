/**
 * Paths in Plexus's config through dist/plexus: an ADD and the DEL of the same container may run
 * in different working directories, so a relative state path (cniDir, logFile, …) is refused
 * with code 7 before anything is written, in the working directory or anywhere else.
 */
import { mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cniError } from "../support/plexus-bin";
import { useSandbox } from "./use-sandbox";

const ctx = useSandbox();

describe("B91 a relative path in the config", () => {
  it.each([
    ["cniDir", "state"],
    ["cniDir", "./var/lib/cni/plexus"],
    ["logFile", "plexus.log"],
    ["multusCacheDir", "multus"],
    ["deviceInfoDir", "devinfo"],
  ])(
    "B91 ADD with %s %j fails 7 naming it; nothing written, no delegate run",
    async (key, value) => {
      const { sb } = ctx;
      const cwd = join(sb.root, "cwd");
      mkdirSync(cwd);
      const conf = sb.config([sb.delegate("net-a")], { [key]: value, logLevel: "debug" });
      const r = await sb.run("ADD", conf, {}, { cwd });
      const e = cniError(r);
      expect(e.code).toBe(7);
      expect(e.msg).toContain(`key "${key}" is ${JSON.stringify(value)}`);
      expect(e.msg).toMatch(/expected an absolute path/);
      expect(readdirSync(cwd)).toEqual([]);
      expect(sb.recordFiles()).toEqual([]);
      expect(sb.calls()).toEqual([]);
    },
  );

  it("B91 DEL with a relative cniDir fails 7 too, and writes nothing", async () => {
    const { sb } = ctx;
    const cwd = join(sb.root, "cwd");
    mkdirSync(cwd);
    const conf = sb.config([sb.delegate("net-a")], { cniDir: "state" });
    const e = cniError(await sb.run("DEL", conf, {}, { cwd }));
    expect(e.code).toBe(7);
    expect(e.msg).toContain('key "cniDir" is "state"');
    expect(readdirSync(cwd)).toEqual([]);
    expect(sb.calls()).toEqual([]);
  });
});
