/**
 * Run by Bun (daemon-socket.test.ts starts it through bun-harness.ts): a CNI call's questions to
 * `plexus daemon` as dist/plexus asks them (DaemonKube and daemonPodDevices over Bun's fetch on
 * the daemon's unix socket, kubeapi/http-transport.ts), with no direct API client behind them.
 * Prints one JSON line: each answer (or the CniError's code and message), how many requests went to
 * the daemon, and why the client gave up on the daemon, if it did.
 *
 * Input (argv[2], JSON): the socket, and `asks`: DaemonKube methods with their arguments, or
 * `podDevices` with a pod's namespace, name and resource names.
 */
import { DaemonKube } from "../../../src/daemon-client/client";
import { daemonPodDevices } from "../../../src/daemon-client/pod-devices-client";

interface Ask {
  method: "getPod" | "getNad" | "setNetworkStatus" | "podDevices";
  args: unknown[];
}

const input = JSON.parse(process.argv[2] ?? "{}") as { socketPath: string; asks: Ask[] };
const kube = new DaemonKube({
  socketPath: input.socketPath,
  timeoutMs: 10_000,
  writeTimeoutMs: 10_000,
  direct: async () => undefined,
});

async function answer(ask: Ask): Promise<unknown> {
  if (ask.method !== "podDevices")
    return (kube[ask.method] as (...args: unknown[]) => Promise<unknown>)(...ask.args);
  const [namespace, name, resourceNames] = ask.args as [string, string, string[]];
  const query = { namespace, name, resourceNames, timeoutMs: 10_000 };
  return Object.fromEntries(await daemonPodDevices({ socketPath: input.socketPath, ...query }));
}

const answers: unknown[] = [];
for (const ask of input.asks) {
  try {
    answers.push({ ok: true, value: (await answer(ask)) ?? null });
  } catch (err) {
    const e = err as { code?: unknown; message?: string };
    answers.push({ ok: false, code: e.code, message: e.message });
  }
}
const counts = { daemonRequests: kube.daemonRequestCount, fallbackReason: kube.fallbackReason };
process.stdout.write(`${JSON.stringify({ answers, ...counts })}\n`);
