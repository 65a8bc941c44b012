/**
 * RawExec under Node (node:child_process; the executable uses Bun.spawn, covered by the integration
 * tier): the outcomes the runner's handlers produce, over small shell scripts.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Code } from "../../../src/cni/errors";
import { RawExec } from "../../../src/invoke/raw-exec";
import { silentLogger } from "../../../src/log/logger";

const dir = mkdtempSync(join(tmpdir(), "plx-rawexec-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function script(name: string, body: string): string {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

const exec = new RawExec(silentLogger());
const run = (path: string, deadlineMs = 5000) =>
  exec.execPlugin({
    path,
    stdin: Buffer.from('{"x":1}'),
    env: { PATH: "/usr/bin:/bin" },
    deadlineMs,
    what: "plugin t",
  });

describe("RawExec on node:child_process", () => {
  it("C4.1 stdout of a plugin that exits 0, with its config on stdin", async () => {
    expect(Buffer.from(await run(script("cat", "cat"))).toString()).toBe('{"x":1}');
  });

  it("B53 a failed plugin's CNI error keeps its code", async () => {
    await expect(run(script("fail", `cat >/dev/null; echo '{"code":42,"msg":"nope"}'; exit 1`))).rejects.toMatchObject({
      code: 42,
      message: "plugin t: nope",
    });
  });

  it("B52 a plugin past its deadline is killed: 101", async () => {
    await expect(run(script("hang", "sleep 30"), 200)).rejects.toMatchObject({ code: Code.DelegateTimeout });
  });

  it("B61 more stdout than the cap: stopped, 100", async () => {
    await expect(run(script("flood", "cat >/dev/null; head -c 5000000 /dev/zero"))).rejects.toMatchObject({
      code: Code.InvalidResult,
    });
  });

  it("B9 a binary that is not there cannot be executed: 5", async () => {
    await expect(run(join(dir, "missing"))).rejects.toMatchObject({
      code: Code.IoFailure,
      message: expect.stringContaining("ENOENT"),
    });
  });
});
