/**
 * Run by Bun (pod-resources.test.ts starts it through bun-harness.ts): one query of kubelet's
 * pod-resources API as a CNI call of dist/plexus makes it (podDeviceIds), over Bun's own unix
 * socket (`Bun.connect`, kubelet/h2c.ts), which only Bun has. Prints one JSON line: the devices per
 * resource name, or the CniError's code and message.
 *
 * Input (argv[2], JSON): the query (socket, namespace, name, timeoutMs,
 * resourceNames).
 */
import { podDeviceIds } from "../../../src/kubelet/pod-devices";

const query = JSON.parse(process.argv[2] ?? "{}") as Parameters<typeof podDeviceIds>[0];
try {
  const devices = Object.fromEntries(await podDeviceIds(query));
  process.stdout.write(`${JSON.stringify({ ok: true, devices })}\n`);
} catch (err) {
  const e = err as { code?: unknown; message?: string };
  process.stdout.write(`${JSON.stringify({ ok: false, code: e.code, message: e.message })}\n`);
}
