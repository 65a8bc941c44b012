/**
 * FsNetworkSource reads a network's plugin folder (libcni 1.3: `<dir>/<network name>/*.conf`) on
 * demand, from real directories: only `.conf` entries that are not directories, in name order,
 * each through the shared-file reader, all of them within one config file's cap.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MAX_CONF_FILE_BYTES } from "../../../src/npwg/conf-dir";
import { FsNetworkSource } from "../../../src/planning/network-source";

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** A config directory holding `10-a.conflist` (network net-a) and, when given, its folder. */
function confDir(folder?: Record<string, string>): { dir: string; folder: string } {
  const dir = mkdtempSync(join(tmpdir(), "plx-unit-folder-"));
  roots.push(dir);
  const list = { cniVersion: "1.1.0", name: "net-a", plugins: [{ type: "bridge" }] };
  writeFileSync(join(dir, "10-a.conflist"), JSON.stringify(list));
  const path = join(dir, "net-a");
  if (folder) {
    mkdirSync(path);
    for (const [name, text] of Object.entries(folder)) writeFileSync(join(path, name), text);
  }
  return { dir, folder: path };
}

async function folderOf(dir: string, name = "net-a") {
  const [file] = await new FsNetworkSource(dir, undefined).confDirFiles();
  return file?.pluginFolder?.(name);
}

describe("N7.1 a network's plugin folder, as the node has it", () => {
  it("N7.1 its .conf files in name order; subdirectories, hidden names and other extensions left out", async () => {
    const { dir, folder } = confDir({
      "20-b.conf": '{"type":"b"}',
      "10-a.conf": '{"type":"a"}',
      ".30-tmp.conf": '{"type":"hidden"}',
      "40-c.conflist": '{"type":"c"}',
      "50-d.json": '{"type":"d"}',
    });
    mkdirSync(join(folder, "60-e.conf"));
    expect(await folderOf(dir)).toEqual({
      dir: folder,
      files: [
        { path: join(folder, "10-a.conf"), content: '{"type":"a"}' },
        { path: join(folder, "20-b.conf"), content: '{"type":"b"}' },
      ],
    });
  });

  it("N7.1 no folder, or a file where the folder would be: none; a folder that cannot be listed: why", async () => {
    const { dir, folder } = confDir();
    expect(await folderOf(dir)).toBeUndefined();
    writeFileSync(folder, "not a folder");
    expect(await folderOf(dir)).toBeUndefined();
    rmSync(folder);
    // A symlinked folder is followed, as libcni's os.ReadDir follows it.
    const elsewhere = mkdtempSync(join(tmpdir(), "plx-unit-folder-target-"));
    roots.push(elsewhere);
    writeFileSync(join(elsewhere, "a.conf"), '{"type":"a"}');
    symlinkSync(elsewhere, folder);
    expect((await folderOf(dir))?.files).toEqual([
      { path: join(folder, "a.conf"), content: '{"type":"a"}' },
    ]);
    // A link to itself cannot be listed (ELOOP): the network's folder is there, but unknown.
    rmSync(folder);
    symlinkSync("net-a", folder);
    expect(await folderOf(dir)).toEqual({
      dir: folder,
      files: [],
      problem: "cannot be listed (ELOOP)",
    });
  });

  it("N7.1 each file through the shared-file reader: a FIFO is not opened for reading, only named", async () => {
    const { dir, folder } = confDir({ "10-a.conf": '{"type":"a"}' });
    execFileSync("mkfifo", [join(folder, "20-fifo.conf")]);
    const read = await folderOf(dir);
    expect(read?.files[1]).toEqual({
      path: join(folder, "20-fifo.conf"),
      problem: "it is a FIFO, not a regular file",
    });
  });

  it("N7.1 the folder's files hold at most one config file's bytes in all", async () => {
    const half = `{"type":"a","pad":"${"x".repeat(MAX_CONF_FILE_BYTES / 2)}"}`;
    const { dir, folder } = confDir({ "10-a.conf": half, "20-b.conf": half });
    const read = await folderOf(dir);
    expect(read?.files[0]).toMatchObject({ path: join(folder, "10-a.conf") });
    expect(read?.files[1]).toMatchObject({ path: join(folder, "20-b.conf") });
    const second = read?.files[1] as { problem: string };
    expect(second.problem).toMatch(
      new RegExp(
        `more than the \\d+-byte limit \\(the folder's files may hold ` +
          `${MAX_CONF_FILE_BYTES} bytes in all\\)`,
      ),
    );
  });

  it("N7.1 a file given as a path reads the folder beside it; a listing reads each folder once", async () => {
    const { dir, folder } = confDir({ "10-a.conf": '{"type":"a"}' });
    const source = new FsNetworkSource(dir, undefined);
    const file = await source.readPath(join(dir, "10-a.conflist"));
    expect(file?.pluginFolder?.("net-a")?.dir).toBe(folder);
    const [listed] = await source.confDirFiles();
    const first = listed?.pluginFolder?.("net-a");
    rmSync(folder, { recursive: true });
    expect(listed?.pluginFolder?.("net-a")).toBe(first);
  });
});
