/**
 * A client's unix socket as a byte stream: Bun's own socket (`Bun.connect`) in the executable,
 * `node:net` under Node (development and tests). In the executable, loading `node:net` (with
 * Node's streams) costs a short process more than what it sends (docs/benchmarks.md, "Levers,
 * measured"), so every CNI-path client of a unix socket (kubelet's pod-resources, the daemon's
 * delegate-runs hand-off) opens it here.
 */
import { type BunConnect, type BunSocketLike, bunConnect } from "./runtime";

/** What the connection needs of a byte stream. */
export interface ByteSocket {
  write(bytes: Uint8Array): void;
  end(): void;
  /** Closes at once, whatever is unsent: the peer broke the protocol. */
  destroy(): void;
  /** Bytes written and not yet taken by the operating system. */
  queuedBytes(): number;
}

export interface SocketEvents {
  data(bytes: Uint8Array): void;
  /** The socket is gone (closed by the peer, failed to connect, or errored). */
  close(reason: string): void;
  /** After end(): all that was written is with the operating system, the write side closed. */
  ended?(): void;
}

export type SocketOpener = (path: string, events: SocketEvents) => ByteSocket;

/** The unix socket at `path`: Bun's own socket in the executable, `node:net` under Node. */
export const openUnixSocket: SocketOpener = (path, events) => {
  const connect = bunConnect();
  return connect ? bunSocket(connect, path, events) : nodeSocket(path, events);
};

/** What Bun's socket has not taken yet: a write may take part, the rest waits for drain. */
class PendingWrites {
  private parts: Uint8Array[] = [];
  bytes = 0;

  push(bytes: Uint8Array): void {
    this.parts.push(bytes);
    this.bytes += bytes.length;
  }

  /** Writes what the socket takes; true when nothing is left. */
  writeTo(socket: BunSocketLike): boolean {
    while (this.parts.length) {
      const next = this.parts[0]!;
      const n = Math.min(Math.max(socket.write(next), 0), next.length);
      this.bytes -= n;
      if (n < next.length) {
        this.parts[0] = next.subarray(n);
        return false;
      }
      this.parts.shift();
    }
    return true;
  }

  clear(): void {
    this.parts = [];
    this.bytes = 0;
  }
}

function bunSocket(connect: BunConnect, path: string, events: SocketEvents): ByteSocket {
  let socket: BunSocketLike | undefined;
  const pending = new PendingWrites();
  let ending = false;
  let ended = false;
  let gone = false;
  let destroyed = false;
  const fail = (why: string) => {
    if (gone) return;
    gone = true;
    events.close(why);
  };
  const flush = () => {
    if (!socket || !pending.writeTo(socket) || !ending || ended) return;
    ended = true;
    socket.end();
    events.ended?.();
  };
  const connectFailed = (e: Error) =>
    fail(`cannot connect to ${path}: ${(e as NodeJS.ErrnoException).code ?? e.message}`);
  connect({
    unix: path,
    socket: {
      open: (s) => {
        socket = s;
        if (destroyed) s.terminate();
        else flush();
      },
      // Copied: the connection keeps partial frames across reads.
      data: (_s, d) => events.data(new Uint8Array(d)),
      drain: () => flush(),
      close: () => fail("connection closed"),
      end: () => fail("connection closed by the server"),
      error: (_s, e) => fail(e.message),
      connectError: (_s, e) => connectFailed(e),
    },
  }).catch(connectFailed);
  return {
    write: (bytes) => {
      if (gone || destroyed) return;
      pending.push(bytes);
      flush();
    },
    end: () => {
      ending = true;
      flush();
    },
    destroy: () => {
      destroyed = true;
      pending.clear();
      socket?.terminate();
    },
    queuedBytes: () => pending.bytes,
  };
}

function nodeSocket(path: string, events: SocketEvents): ByteSocket {
  const net = process.getBuiltinModule("node:net");
  const socket = net.connect(path);
  let gone = false;
  const fail = (why: string) => {
    if (gone) return;
    gone = true;
    events.close(why);
  };
  socket.on("data", (d: Buffer) => events.data(d));
  socket.on("error", (e: NodeJS.ErrnoException) =>
    fail(e.syscall === "connect" ? `cannot connect to ${path}: ${e.code ?? e.message}` : e.message),
  );
  socket.on("close", () => fail("connection closed"));
  return {
    write: (bytes) => {
      if (!gone && socket.writable) socket.write(bytes);
    },
    end: () => socket.end(() => events.ended?.()),
    destroy: () => socket.destroy(),
    queuedBytes: () => socket.writableLength,
  };
}
