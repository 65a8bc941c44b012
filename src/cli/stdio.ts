/** The two ends of the CNI channel: stdin read with a cap (B12), stdout written once, synchronously. */
import { writeSync } from "node:fs";
import { CniError, Code } from "../cni/errors";

export async function readStdin(stream: NodeJS.ReadableStream, maxBytes: number): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  let size = 0;
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

/** Writes all of `text` to fd 1, retrying EAGAIN on a non-blocking pipe. The only stdout write. */
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
