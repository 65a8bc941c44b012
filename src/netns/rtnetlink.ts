/**
 * The pod's default routes changed without any host tool (M4): a route netlink socket is opened
 * inside the pod's network namespace (setns(2) of this thread, the socket, setns back: a socket
 * stays in the namespace it was made in), and RTM_DELROUTE / RTM_NEWROUTE go over it, as `ip route
 * del default` and `ip route replace|append default via GW dev IF` send them.
 *
 * libc through bun:ffi: only the executable (Bun) has it. Under Node (development, unit tests)
 * {@link netlinkAvailable} is false and routes.ts falls back to the node's `nsenter` and `ip`.
 * The calls are synchronous: nothing else runs on this thread while it is in the pod's namespace.
 */
import { closeSync, constants, openSync } from "node:fs";
import { isIpText } from "../cni/ip-text";
import { libc, type Libc } from "../sys/libc";

const CLONE_NEWNET = 0x40000000;
const AF_INET = 2;
const AF_INET6 = 10;
const AF_NETLINK = 16;
const SOCK_RAW = 3;
const SOCK_CLOEXEC = 0x80000;
const NETLINK_ROUTE = 0;
const RTM_NEWROUTE = 24;
const RTM_DELROUTE = 25;
const NLMSG_ERROR = 2;
const NLM_F_REQUEST = 0x1;
const NLM_F_ACK = 0x4;
const NLM_F_REPLACE = 0x100;
const NLM_F_CREATE = 0x400;
const NLM_F_APPEND = 0x800;
const RT_TABLE_MAIN = 254;
const RTPROT_BOOT = 3;
const RT_SCOPE_UNIVERSE = 0;
const RT_SCOPE_NOWHERE = 255;
const RTN_UNICAST = 1;
const RTA_OIF = 4;
const RTA_GATEWAY = 5;
const MSG_DONTWAIT = 0x40;

/** Whether routes can be changed here without host tools (the executable). */
export function netlinkAvailable(): boolean {
  return libc() !== null;
}

/** A netlink failure: the kernel's errno (positive) and what was being done. */
export class NetlinkError extends Error {
  constructor(
    readonly errno: number,
    message: string,
  ) {
    super(message);
  }
}

/** A route netlink socket in `netns`, and each interface's index there. */
export function openRouteSocket(netns: string, ifNames: readonly string[]): RouteSocket {
  const lib = libc();
  if (!lib) throw new Error("rtnetlink needs bun:ffi (the executable)");
  const self = openSync("/proc/thread-self/ns/net", constants.O_RDONLY);
  let target: number | undefined;
  try {
    target = openSync(netns, constants.O_RDONLY);
    if (lib.setns(target, CLONE_NEWNET) !== 0)
      throw new NetlinkError(lib.errno(), `cannot enter ${netns}`);
    let sock = -1;
    const indexes = new Map<string, number>();
    try {
      sock = lib.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
      if (sock < 0) throw new NetlinkError(lib.errno(), "cannot open a route netlink socket");
      for (const name of ifNames) indexes.set(name, lib.if_nametoindex(Buffer.from(`${name}\0`)));
    } finally {
      // Back to the node's namespace before anything else runs on this thread (delegates are
      // spawned from it).
      if (lib.setns(self, CLONE_NEWNET) !== 0) {
        if (sock >= 0) lib.close(sock);
        // Staying in the pod's namespace is worse than any error in flight.
        // biome-ignore lint/correctness/noUnsafeFinally: see the line above
        throw new Error(`cannot return to the node's network namespace (errno ${lib.errno()})`);
      }
    }
    return new RouteSocket(lib, sock, indexes);
  } finally {
    closeSync(self);
    if (target !== undefined) closeSync(target);
  }
}

export class RouteSocket {
  private seq = 0;
  constructor(
    private readonly lib: Libc,
    private readonly fd: number,
    private readonly indexes: ReadonlyMap<string, number>,
  ) {}

  close(): void {
    this.lib.close(this.fd);
  }

  /** Removes one default route of the family; false when there is none left (ESRCH). */
  deleteDefault(family: 4 | 6): boolean {
    const errno = this.request(RTM_DELROUTE, 0, routeMessage(family, RT_SCOPE_NOWHERE, 0), []);
    // None left: IPv4 answers ESRCH, IPv6 ENOENT.
    if (errno === 3 /* ESRCH */ || errno === 2 /* ENOENT */) return false;
    if (errno !== 0) throw new NetlinkError(errno, "cannot remove a default route");
    return true;
  }

  /** `ip route replace|append default via gateway dev ifName`. */
  addDefault(route: { gateway: string; ifName: string; mode: "replace" | "append" }): void {
    const v = !isIpText(route.gateway) ? 0 : route.gateway.includes(":") ? 6 : 4;
    if (v !== 4 && v !== 6) throw new NetlinkError(22, `${route.gateway} is not an IP address`);
    const index = this.indexes.get(route.ifName) ?? 0;
    if (index === 0) throw new NetlinkError(19, `the pod has no interface ${route.ifName} for it`);
    const flags = NLM_F_CREATE | (route.mode === "replace" ? NLM_F_REPLACE : NLM_F_APPEND);
    const oif = Buffer.alloc(4);
    oif.writeUInt32LE(index);
    const attrs = [attribute(RTA_GATEWAY, ipBytes(route.gateway, v)), attribute(RTA_OIF, oif)];
    const errno = this.request(
      RTM_NEWROUTE,
      flags,
      routeMessage(v, RT_SCOPE_UNIVERSE, RTN_UNICAST),
      attrs,
    );
    if (errno !== 0) throw new NetlinkError(errno, "the kernel refused the route");
  }

  /** Sends one request with NLM_F_ACK; returns the kernel's errno (0: done). */
  private request(type: number, flags: number, body: Buffer, attrs: Buffer[]): number {
    const seq = ++this.seq;
    const payload = Buffer.concat([body, ...attrs]);
    const msg = Buffer.alloc(16 + payload.length);
    msg.writeUInt32LE(msg.length, 0);
    msg.writeUInt16LE(type, 4);
    msg.writeUInt16LE(NLM_F_REQUEST | NLM_F_ACK | flags, 6);
    msg.writeUInt32LE(seq, 8);
    payload.copy(msg, 16);
    if (Number(this.lib.send(this.fd, msg, msg.length, 0)) < 0)
      throw new NetlinkError(this.lib.errno(), "cannot talk to the kernel");
    return this.ack(seq);
  }

  /** rtnetlink answers a request before send() returns: the ack is read without blocking. */
  private ack(seq: number): number {
    const buf = Buffer.alloc(8192);
    for (let tries = 0; tries < 100; tries++) {
      const n = Number(this.lib.recv(this.fd, buf, buf.length, MSG_DONTWAIT));
      if (n < 0) throw new NetlinkError(this.lib.errno(), "no answer from the kernel");
      for (let off = 0; off + 16 <= n; ) {
        const len = buf.readUInt32LE(off);
        if (len < 16) break;
        if (buf.readUInt16LE(off + 4) === NLMSG_ERROR && buf.readUInt32LE(off + 8) === seq)
          return -buf.readInt32LE(off + 16);
        off += (len + 3) & ~3;
      }
    }
    throw new NetlinkError(5, "no acknowledgement from the kernel");
  }
}

/** struct rtmsg for a default route (dst_len 0) in the main table. */
function routeMessage(family: 4 | 6, scope: number, type: number): Buffer {
  const m = Buffer.alloc(12);
  m.writeUInt8(family === 4 ? AF_INET : AF_INET6, 0);
  m.writeUInt8(RT_TABLE_MAIN, 4);
  m.writeUInt8(type === 0 ? 0 : RTPROT_BOOT, 5);
  m.writeUInt8(scope, 6);
  m.writeUInt8(type, 7);
  return m;
}

function attribute(type: number, data: Buffer): Buffer {
  const len = 4 + data.length;
  const a = Buffer.alloc((len + 3) & ~3);
  a.writeUInt16LE(len, 0);
  a.writeUInt16LE(type, 2);
  data.copy(a, 4);
  return a;
}

/** An address in network byte order (RTA_GATEWAY). */
export function ipBytes(ip: string, version: 4 | 6): Buffer {
  if (version === 4) return Buffer.from(ip.split(".").map(Number));
  const [head = "", tail = ""] = ip.split("::");
  const groups = (s: string) => (s === "" ? [] : s.split(":"));
  const h = groups(head);
  const t = groups(tail);
  // An IPv4-mapped tail (::ffff:1.2.3.4) is two groups.
  const expand = (g: string[]) =>
    g.flatMap((x) => (x.includes(".") ? ipv4Groups(x) : [Number.parseInt(x, 16)]));
  const he = expand(h);
  const te = expand(t);
  const all = ip.includes("::")
    ? [...he, ...new Array(8 - he.length - te.length).fill(0), ...te]
    : he;
  const b = Buffer.alloc(16);
  all.forEach((g, i) => b.writeUInt16BE(g, i * 2));
  return b;
}

function ipv4Groups(v4: string): number[] {
  const [a = 0, b = 0, c = 0, d = 0] = v4.split(".").map(Number);
  return [(a << 8) | b, (c << 8) | d];
}
