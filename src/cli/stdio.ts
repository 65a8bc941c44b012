/**
 * The two ends of the CNI channel: stdin read with a cap (B12), stdout written once, synchronously.
 */
import { readSync, writeSync } from "node:fs";
import { CniError, Code } from "../cni/errors";

/**
 * Reads fd 0 synchronously (no stream machinery to load: every pod pays start-up time);
 * falls back to the stream when fd 0 is non-blocking (EAGAIN) or not readable that way.
 */
export async function readStdin(
  stream: NodeJS.ReadableStream | undefined,
  maxBytes: number,
): Promise<Uint8Array> {
  if (stream) return readStream(stream, maxBytes);
  const sync = readFd0(maxBytes);
  if (sync.complete) return Buffer.concat(sync.chunks);
  // fd 0 is non-blocking (a runtime may hand over such a pipe) and the writer is not done:
  // the rest comes through the stream, after what was read already (B12, B18: configs > 64 KiB).
  return readStream(process.stdin, maxBytes, sync.chunks);
}

function readFd0(maxBytes: number): { complete: boolean; chunks: Buffer[] } {
  const chunks: Buffer[] = [];
  let size = 0;
  for (;;) {
    const buf = Buffer.allocUnsafe(65536);
    let n: number;
    try {
      n = readSync(0, buf, 0, buf.byteLength, null);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "EOF") break;
      if (code === "EAGAIN" || (size === 0 && (code === "EISDIR" || code === "EINVAL")))
        return { complete: false, chunks };
      throw new CniError(Code.IoFailure, `cannot read stdin: ${code ?? String(err)}`, undefined, {
        cause: err,
      });
    }
    if (n === 0) break;
    size += n;
    if (size > maxBytes)
      throw new CniError(Code.Decoding, `stdin config is larger than the ${maxBytes}-byte limit`);
    chunks.push(buf.subarray(0, n));
  }
  return { complete: true, chunks };
}

async function readStream(
  stream: NodeJS.ReadableStream,
  maxBytes: number,
  already: Buffer[] = [],
): Promise<Uint8Array> {
  const chunks: Buffer[] = [...already];
  let size = chunks.reduce((n, c) => n + c.byteLength, 0);
  for await (const chunk of stream) {
    const buf = typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer);
    size += buf.byteLength;
    if (size > maxBytes) {
      throw new CniError(Code.Decoding, `stdin config is larger than the ${maxBytes}-byte limit`);
    }
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}

/**
 * Writes all of `text` to fd 1, retrying EAGAIN on a non-blocking pipe. A CNI call's only stdout
 * write.
 */
export function writeStdout(text: string): void {
  const buf = Buffer.from(text);
  let off = 0;
  while (off < buf.byteLength) {
    try {
      off += writeSync(1, buf, off);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EAGAIN") throw err;
    }
  }
}

/** What a CNI call (or a command) is given: its environment, arguments and stdin. */
export interface MainIo {
  env: Readonly<Record<string, string | undefined>>;
  argv: readonly string[];
  /** Defaults to fd 0, read synchronously without creating `process.stdin` (start-up cost). */
  stdin?: NodeJS.ReadableStream;
}
