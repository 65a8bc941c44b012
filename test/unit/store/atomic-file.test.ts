/**
 * Atomic small-file writes (M7, B44, B46, B48): temp file + fsync + rename. Failures are made with
 * real file-system states (a file where a directory should be, a directory where the file should
 * be) and a write that fails after bytes reached the temp file.
 */
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  ioError,
  listStateFiles,
  removeFile,
  writeFileAtomic,
} from "../../../src/store/atomic-file";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "plx-atomic-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Every name in `d`, dot-files (temp files) included. */
const allNames = (dir: string) => readdirSync(dir).sort();

describe("writeFileAtomic", () => {
  it("M7 writes the bytes, mode 0600 by default, creating missing directories, leaving no temp file", async () => {
    const p = join(dir, "a", "b", "rec.json");
    await writeFileAtomic(p, '{"x":1}');
    expect(readFileSync(p, "utf8")).toBe('{"x":1}');
    expect(statSync(p).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, "a")).mode & 0o777).toBe(0o700);
    expect(allNames(join(dir, "a", "b"))).toEqual(["rec.json"]);
    await writeFileAtomic(join(dir, "bin"), new Uint8Array([0, 1, 2, 255]), 0o644);
    expect([...readFileSync(join(dir, "bin"))]).toEqual([0, 1, 2, 255]);
    expect(statSync(join(dir, "bin")).mode & 0o777).toBe(0o644);
  });

  it("B48 an earlier file is replaced by a new inode: a reader holding the old file still sees the old bytes", async () => {
    const p = join(dir, "rec.json");
    await writeFileAtomic(p, "old-contents");
    const fd = openSync(p, "r");
    try {
      await writeFileAtomic(p, "new");
      expect(readFileSync(p, "utf8")).toBe("new");
      const buf = Buffer.alloc(64);
      const n = readSync(fd, buf, 0, 64, 0);
      expect(buf.subarray(0, n).toString()).toBe("old-contents");
    } finally {
      closeSync(fd);
    }
    expect(allNames(dir)).toEqual(["rec.json"]);
  });

  it("B44 the target directory is a file: 5 naming the path, nothing created", async () => {
    writeFileSync(join(dir, "records"), "not a dir");
    await expect(writeFileAtomic(join(dir, "records", "c.json"), "x")).rejects.toMatchObject({
      code: 5,
      message: expect.stringContaining(join(dir, "records", "c.json")),
    });
    expect(allNames(dir)).toEqual(["records"]);
    expect(readFileSync(join(dir, "records"), "utf8")).toBe("not a dir");
  });

  it("B44 a missing parent that cannot be created (a file on the way) is 5", async () => {
    writeFileSync(join(dir, "f"), "");
    await expect(writeFileAtomic(join(dir, "f", "deeper", "x.json"), "x")).rejects.toMatchObject({
      code: 5,
    });
  });

  it("B46 the rename fails (a directory sits at the target): 5, the temp file is removed, the target untouched", async () => {
    const p = join(dir, "rec.json");
    mkdirSync(join(p, "inside"), { recursive: true });
    await expect(writeFileAtomic(p, "x".repeat(10_000))).rejects.toMatchObject({ code: 5 });
    expect(allNames(dir)).toEqual(["rec.json"]);
    expect(allNames(p)).toEqual(["inside"]);
  });

  it("B46 a write that fails after bytes reached the temp file leaves the old file whole and no temp file", async () => {
    const p = join(dir, "rec.json");
    await writeFileAtomic(p, "old");
    // The first length check lets the bytes be written; the next one fails, as ENOSPC would
    // mid-write.
    class FailingBytes extends Uint8Array {
      private reads = 0;
      override get byteLength(): number {
        if (++this.reads > 1)
          throw Object.assign(new Error("no space left on device"), { code: "ENOSPC" });
        return super.byteLength;
      }
    }
    const data = new FailingBytes(Buffer.from("new-and-longer-contents"));
    await expect(writeFileAtomic(p, data)).rejects.toMatchObject({
      code: 5,
      message: expect.stringContaining("ENOSPC"),
    });
    expect(readFileSync(p, "utf8")).toBe("old");
    expect(allNames(dir)).toEqual(["rec.json"]);
  });

  it("B46 a concurrent reader never sees a half-written file", async () => {
    const p = join(dir, "rec.json");
    const size = 512 * 1024;
    const A = "a".repeat(size);
    const B = "b".repeat(size);
    await writeFileAtomic(p, A);
    const reader = new Worker(
      `const { readFileSync } = require("node:fs");
       const { workerData, parentPort } = require("node:worker_threads");
       let reads = 0, torn = 0;
       const until = Date.now() + 300;
       while (Date.now() < until) {
         const s = readFileSync(workerData.p, "latin1");
         reads++;
         const other = s[0] === "a" ? "b" : "a";
         if (s.length !== workerData.size || s[0] !== s[s.length - 1] || s.indexOf(other) !== -1)
           torn++;
       }
       parentPort.postMessage({ reads, torn });`,
      { eval: true, workerData: { p, size } },
    );
    let report: { reads: number; torn: number } | undefined;
    const done = new Promise<void>((resolve, reject) => {
      reader.on("message", (m: { reads: number; torn: number }) => {
        report = m;
        resolve();
      });
      reader.on("error", reject);
    });
    let writes = 0;
    while (!report) {
      await writeFileAtomic(p, writes++ % 2 ? A : B);
      await new Promise((r) => setImmediate(r));
    }
    await done;
    await reader.terminate();
    expect(writes).toBeGreaterThan(5);
    expect(report.reads).toBeGreaterThan(5);
    expect(report.torn).toBe(0);
    expect(allNames(dir)).toEqual(["rec.json"]);
  });
});

describe("helpers", () => {
  it("C2.5 removeFile of a missing file is fine", async () => {
    await removeFile(join(dir, "never"));
    writeFileSync(join(dir, "x"), "");
    await removeFile(join(dir, "x"));
    expect(allNames(dir)).toEqual([]);
  });

  it("C2.9 listStateFiles leaves out temp files; a missing dir has none; a file in its place is 5", () => {
    writeFileSync(join(dir, "a.json"), "");
    writeFileSync(join(dir, ".a.json.tmp-1-2-x"), "");
    expect(listStateFiles(dir)).toEqual(["a.json"]);
    expect(listStateFiles(join(dir, "missing"))).toEqual([]);
    expect(() => listStateFiles(join(dir, "a.json"))).toThrow(expect.objectContaining({ code: 5 }));
  });

  it("C2.3 ioError is code 5 and keeps the errno code in the message", () => {
    const e = ioError(
      "cannot write /x",
      Object.assign(new Error("read-only file system"), { code: "EROFS" }),
    );
    expect(e.code).toBe(5);
    expect(e.message).toBe("cannot write /x: EROFS read-only file system");
  });
});
