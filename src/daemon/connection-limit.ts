/**
 * Bounds on the health port's connections (`--health-address`, often 0.0.0.0: any pod of the node
 * can reach it). Without them, connections opened and left idle (or sending a request's headers a
 * byte at a time) pile up until the process runs out of descriptors, and then neither the
 * kubelet's probes nor the CNI calls on the unix socket get one. Two bounds, as HTTP servers bound
 * a peer (nghttp2, Go's net/http): a connection with no request in flight is closed after `idleMs`;
 * and at most `maxConnections` are open at once: a new one past that replaces the longest-idle
 * connection, so a probe always gets in (a connection only refused when all of them are busy
 * answering, which a health answer never is for long).
 *
 * In the Bun executable the server sees a connection once its first bytes arrive: one that never
 * sends a byte is not counted here, and Bun closes it after its own idle timeout.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";

interface ConnectionLimits {
  maxConnections: number;
  idleMs: number;
}

/** Probes and a scrape need a handful; the rest is headroom. */
const HEALTH_CONNECTION_LIMITS: ConnectionLimits = { maxConnections: 64, idleMs: 5_000 };

interface Tracked {
  /** Requests in flight on the connection. */
  busy: number;
  timer: NodeJS.Timeout | undefined;
}

export function limitConnections(server: Server, limits = HEALTH_CONNECTION_LIMITS): void {
  // In order of last use: the first idle one is the longest idle.
  const open = new Map<Socket, Tracked>();
  const arm = (socket: Socket, t: Tracked) => {
    clearTimeout(t.timer);
    t.timer = setTimeout(() => socket.destroy(), limits.idleMs);
    t.timer.unref?.();
  };
  server.on("connection", (socket: Socket) => {
    if (open.size >= limits.maxConnections) {
      const idle = [...open].find(([, t]) => t.busy === 0)?.[0];
      if (!idle) return void socket.destroy();
      forget(open, idle);
      idle.destroy();
    }
    const t: Tracked = { busy: 0, timer: undefined };
    open.set(socket, t);
    arm(socket, t);
    socket.once("close", () => forget(open, socket));
  });
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    const t = open.get(socket);
    if (!t) return;
    t.busy++;
    clearTimeout(t.timer);
    open.delete(socket);
    open.set(socket, t);
    res.once("close", () => {
      t.busy--;
      if (t.busy === 0 && open.has(socket)) arm(socket, t);
    });
  });
}

function forget(open: Map<Socket, Tracked>, socket: Socket): void {
  clearTimeout(open.get(socket)?.timer);
  open.delete(socket);
}
