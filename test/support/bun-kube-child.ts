/**
 * Run by Bun (test/support/bun-kube.ts starts it): the API client exactly as the executable builds
 * it for a CNI call (`shortLived`: Bun's fetch), driven by JSON lines on stdin, one answer line per
 * request on stdout. Lets the client's fault tests run on the transport that ships.
 */
import { loadKubeApi } from "../../src/kubeapi/index";
import type { KubeApi } from "../../src/cluster/kube-api";
import type { KubeClientOptions } from "../../src/kubeapi/rest-kube";

interface Ask {
  id: number;
  op: "open" | "call";
  kubeconfig?: string;
  client?: KubeClientOptions;
  method?: string;
  args?: unknown[];
}

let kube: KubeApi | undefined;

async function answer(ask: Ask): Promise<unknown> {
  if (ask.op === "open") {
    kube = await loadKubeApi(
      { kubeconfig: ask.kubeconfig },
      { client: { ...ask.client, shortLived: true } },
    );
    if (!kube) throw new Error("no client");
    return null;
  }
  const fn = (kube as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[
    ask.method ?? ""
  ];
  if (typeof fn !== "function") throw new Error(`no method ${ask.method}`);
  return fn.apply(kube, ask.args ?? []);
}

async function reply(ask: Ask): Promise<void> {
  try {
    const value = await answer(ask);
    process.stdout.write(
      `${JSON.stringify({ id: ask.id, ok: true, value, requestCount: kube?.requestCount ?? 0 })}\n`,
    );
  } catch (err) {
    const e = err as { code?: unknown; message?: string; name?: string };
    const error = { code: e.code, message: e.message ?? String(err), name: e.name };
    const answer = { id: ask.id, ok: false, error, requestCount: kube?.requestCount ?? 0 };
    process.stdout.write(`${JSON.stringify(answer)}\n`);
  }
}

// Each request is answered when it is done, not in turn: calls a test makes at once run at once.
for await (const line of console as unknown as AsyncIterable<string>)
  void reply(JSON.parse(line) as Ask);
