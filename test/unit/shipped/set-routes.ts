/**
 * Run by Bun (default-route.test.ts starts it, through bun-harness.ts, in a user and network
 * namespace of its own): the pod's default routes set as the verbs of dist/plexus set them
 * (hostNetns.setDefaultRoutes: route netlink through bun:ffi, netns/rtnetlink.ts, no host tool).
 * Prints one JSON line: ok, or the CniError's code and message.
 *
 * Input (argv[2], JSON): the pod's namespace (a path) and the routes (gateway, interface).
 */
import type { DefaultRoute } from "../../../src/netns/index";
import { hostNetns } from "../../../src/netns/index";

const input = JSON.parse(process.argv[2] ?? "{}") as { netns: string; routes: DefaultRoute[] };
try {
  await hostNetns.setDefaultRoutes(input.netns, input.routes);
  process.stdout.write(`${JSON.stringify({ ok: true })}\n`);
} catch (err) {
  const e = err as { code?: unknown; message?: string };
  process.stdout.write(`${JSON.stringify({ ok: false, code: e.code, message: e.message })}\n`);
}
