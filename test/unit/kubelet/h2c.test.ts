/**
 * The HTTP/2 client under the pod-resources calls (M10) against Node's own HTTP/2 server
 * (nghttp2) on a unix socket: what kubelet's server may do that the grpc-js fake does not:
 * answers over the 64 KiB window in many frames, padded frames, a header block split into
 * CONTINUATION frames, a PING, a stream reset, GOAWAY; each ends in an answer or a GrpcError.
 */
import * as http2 from "node:http2";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { GrpcError, GrpcStatus, UnixGrpcChannel } from "../../../src/kubelet/grpc-unary";

/** The 5-byte gRPC prefix and `n` bytes of message. */
const message = (size: number) => {
  const out = Buffer.alloc(5 + size, 0x61);
  out[0] = 0;
  out.writeUInt32BE(size, 1);
  return out;
};

type Handler = (stream: http2.ServerHttp2Stream, session: http2.ServerHttp2Session) => void;

describe("M10 HTTP/2 client for unary gRPC calls", () => {
  let dir: string;
  let socket: string;
  let server: http2.Http2Server;
  let handler: Handler;
  const channels: UnixGrpcChannel[] = [];

  const requestHeaders = new WeakMap<http2.ServerHttp2Stream, http2.IncomingHttpHeaders>();
  const sessions: http2.ServerHttp2Session[] = [];
  const start = async (options: http2.ServerOptions = {}) => {
    server = http2.createServer(options);
    server.on("session", (s) => sessions.push(s));
    server.on("stream", (stream, headers) => {
      requestHeaders.set(stream, headers);
      // A reset stream emits an error on the server's side too: expected here.
      stream.on("error", () => {});
      handler(stream, stream.session as http2.ServerHttp2Session);
    });
    await new Promise<void>((resolve) => server.listen(socket, resolve));
  };
  const call = (budgetMs = 2000) => {
    const channel = new UnixGrpcChannel({ socket, maxMessageBytes: 1 << 20 });
    channels.push(channel);
    return channel.unary({
      path: "/t.S/M",
      request: Buffer.from("hi"),
      deadline: Date.now() + budgetMs,
    });
  };
  const ok = (
    stream: http2.ServerHttp2Stream,
    body: Buffer,
    trailers: Record<string, string> = {},
  ) => {
    stream.respond(
      { ":status": 200, "content-type": "application/grpc" },
      { waitForTrailers: true },
    );
    stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0", ...trailers }));
    stream.end(body);
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "plx-h2c-"));
    socket = join(dir, "s.sock");
  });
  afterEach(async () => {
    for (const c of channels.splice(0)) c.close();
    for (const s of sessions.splice(0)) s.destroy();
    await new Promise((resolve) => server?.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  it("M10 an answer of 300 KiB comes in many frames past the initial window; the request reached the server whole", async () => {
    let request: { headers: http2.IncomingHttpHeaders; body: Buffer } | undefined;
    handler = (stream) => {
      const parts: Buffer[] = [];
      stream.on("data", (c: Buffer) => parts.push(c));
      stream.on("end", () => {
        request = { headers: requestHeaders.get(stream)!, body: Buffer.concat(parts) };
        ok(stream, message(300 * 1024));
      });
    };
    await start();
    const answer = await call();
    expect(answer.length).toBe(300 * 1024);
    expect(request?.body).toEqual(Buffer.from([0, 0, 0, 0, 2, 0x68, 0x69]));
    expect(request?.headers).toMatchObject({
      ":method": "POST",
      ":path": "/t.S/M",
      "content-type": "application/grpc",
      te: "trailers",
      "grpc-timeout": expect.stringMatching(/^\d+m$/),
    });
  });

  it("M10 padded frames, a PING and a header block in CONTINUATION frames are read", async () => {
    const longMessage = "x".repeat(40_000);
    handler = (stream, session) => {
      session.ping(() => {});
      ok(stream, message(10), { "grpc-message": longMessage });
    };
    await start({
      paddingStrategy: http2.constants.PADDING_STRATEGY_MAX,
      maxSendHeaderBlockLength: 100_000,
    });
    expect((await call()).length).toBe(10);
  });

  it("M10 a status other than OK is a GrpcError with the server's message", async () => {
    handler = (stream) => {
      stream.respond(
        {
          ":status": 200,
          "content-type": "application/grpc",
          "grpc-status": "12",
          "grpc-message": "no%20Get",
        },
        {
          endStream: true,
        },
      );
    };
    await start();
    await expect(call()).rejects.toMatchObject({
      code: GrpcStatus.UNIMPLEMENTED,
      details: "no Get",
    });
  });

  it("M10 a stream reset and a lost connection are UNAVAILABLE; after GOAWAY or a loss the next call opens a new connection", async () => {
    let n = 0;
    handler = (stream, session) => {
      n++;
      if (n === 1) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      else if (n === 2) {
        ok(stream, message(1));
        // The server is going away once this stream is done: the next call must not use this
        // connection.
        stream.on("close", () => session.goaway(http2.constants.NGHTTP2_NO_ERROR, stream.id));
      } else if (n === 3) session.socket.destroy();
      else ok(stream, message(3));
    };
    await start();
    const channel = new UnixGrpcChannel({ socket, maxMessageBytes: 1 << 20 });
    channels.push(channel);
    const once = () =>
      channel.unary({ path: "/t.S/M", request: Buffer.alloc(0), deadline: Date.now() + 2000 });
    await expect(once()).rejects.toMatchObject({
      code: GrpcStatus.UNAVAILABLE,
      details: expect.stringMatching(/reset/),
    });
    expect((await once()).length).toBe(1);
    // The GOAWAY left the server and reached the client before the next call.
    await expect.poll(() => sessions[0]?.state.outboundQueueSize).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await expect(once()).rejects.toBeInstanceOf(GrpcError);
    expect((await once()).length).toBe(3);
    expect(sessions.length).toBe(3);
  });

  it("M10 no server, no answer in time, an answer too large: UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED", async () => {
    await expect(call()).rejects.toMatchObject({
      code: GrpcStatus.UNAVAILABLE,
      details: expect.stringMatching(/cannot connect/),
    });
    handler = (stream) => {
      if (seen++ === 0) return; // never answers
      ok(stream, message(2 << 20));
    };
    let seen = 0;
    await start();
    await expect(call(200)).rejects.toMatchObject({ code: GrpcStatus.DEADLINE_EXCEEDED });
    await expect(call()).rejects.toMatchObject({ code: GrpcStatus.RESOURCE_EXHAUSTED });
  });
});
