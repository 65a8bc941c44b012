// Multus's Kubernetes client writes protobuf (the pod status update, events), which the project's
// fake API server does not decode. For the Multus peer only, this HTTPS front (the fake's own
// certificate, so the same kubeconfig CA) answers those protobuf writes itself — the status update
// with the pod as stored, an event with 201 — and passes every other request through to the fake
// on a kept-alive connection. Every request Multus makes is counted here, with its bytes.
import { readFileSync } from "node:fs";
import { createServer, request, Agent } from "node:https";
import { join } from "node:path";

const TLS_DIR = new URL("../../test/support/tls/", import.meta.url).pathname;

/**
 * Answers one request whose body has been read: a protobuf write itself (the pod status update
 * with the pod as stored, an event with 201), anything else through to the fake API server.
 */
function answerOrPass({ api, agent, req, res, body, entry }) {
  const answer = (code, obj) => {
    const out = Buffer.from(JSON.stringify(obj));
    entry.outBytes = out.length;
    res.writeHead(code, { "content-type": "application/json", "content-length": out.length });
    res.end(out);
  };
  if (/protobuf/.test(req.headers["content-type"] ?? "")) {
    const status = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/status/.exec(req.url ?? "");
    if (status) return answer(200, api.getPod(status[1], status[2]) ?? {});
    return answer(201, {
      kind: "Event",
      apiVersion: "v1",
      metadata: { name: "e", namespace: "default" },
    });
  }
  const up = request(
    `${api.url}${req.url}`,
    { method: req.method, headers: { ...req.headers, host: new URL(api.url).host }, agent },
    (upRes) => {
      res.writeHead(upRes.statusCode ?? 502, upRes.headers);
      res.flushHeaders();
      upRes.on("data", (c) => {
        entry.outBytes += c.length;
        res.write(c);
      });
      upRes.on("end", () => res.end());
    },
  );
  up.on("error", () => answer(502, {}));
  up.end(body);
}

export async function startProtobufFront(api) {
  const agent = new Agent({ keepAlive: true, ca: api.caPem });
  const log = [];
  const server = createServer(
    {
      cert: readFileSync(join(TLS_DIR, "server.crt")),
      key: readFileSync(join(TLS_DIR, "server.key")),
    },
    (req, res) => {
      const chunks = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks);
        const entry = { method: req.method, path: req.url, inBytes: body.length, outBytes: 0 };
        log.push(entry);
        answerOrPass({ api, agent, req, res, body, entry });
      });
    },
  );
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    url: `https://127.0.0.1:${port}`,
    caPem: api.caPem,
    token: api.token,
    log,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
        agent.destroy();
      }),
  };
}
