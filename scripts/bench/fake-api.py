#!/usr/bin/env python3
"""A fake Kubernetes API server in Python (3.11, stdlib only) for the benchmarks.

The second harness of `npm run bench -- multus` and the one of `storm`: a figure measured against
it does not depend on the speed of the project's Node fake (test/support/fake-apiserver.ts).
HTTPS with the test certificate (test/support/tls/server.crt, the same CA as the Node fake, so the
same kubeconfig works), one thread per connection, HTTP/1.1 keep-alive, TCP_NODELAY, every answer
written in one piece with Content-Length. It serves what Plexus (thin and daemon mode) and Multus
v4.0.2 (thin and thick) ask for in the bench, as kube-apiserver answers it:

- GET of a pod or NAD; LIST (from the "watch cache": every object, the current resourceVersion)
  and WATCH (ADDED for each object when resourceVersion is unset or "0", then every change) of
  pods, NADs and ResourceSlices (none), per namespace or across, with field selectors;
- PATCH of a pod or its status (merge and strategic-merge patch, no storage precondition: a UID
  change is 422), PUT of a pod's status (JSON: a resourceVersion that does not match is 409, the
  stored spec is kept); each a new resourceVersion and a MODIFIED event;
- Multus thin writes protobuf, which this fake does not decode: its status update is answered with
  the pod as stored, its events with 201 (as scripts/bench/multus-front.mjs answers them);
- POST of an Event (core v1 or events.k8s.io/v1): 201, not stored.

Every request needs `Authorization: Bearer <token>` (401 otherwise); errors are metav1.Status.

    python3 fake-api.py --objects objects.json [--latency-ms N] [--log]
    python3 fake-api.py --objects - < objects.json

The objects file: {"token": "...", "pods": [...], "nads": [...]}, each as the Node fake's addPod
and addNad take them. The port is printed on stdout once the server listens. With a file, stdin
is a lifeline: the server exits when it reaches end of file (the harness died or closed it).
"""

import argparse
import json
import os
import re
import socket
import socketserver
import ssl
import sys
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

TLS_DIR = Path(__file__).resolve().parents[2] / "test" / "support" / "tls"
REASONS = {
    200: ("OK", ""),
    201: ("Created", ""),
    400: ("Bad Request", "BadRequest"),
    401: ("Unauthorized", "Unauthorized"),
    404: ("Not Found", "NotFound"),
    405: ("Method Not Allowed", "MethodNotAllowed"),
    409: ("Conflict", "Conflict"),
    415: ("Unsupported Media Type", "UnsupportedMediaType"),
    422: ("Unprocessable Entity", "Invalid"),
}
KINDS = {
    "pods": ("v1", "Pod", "PodList"),
    "nads": (
        "k8s.cni.cncf.io/v1",
        "NetworkAttachmentDefinition",
        "NetworkAttachmentDefinitionList",
    ),
    "resourceslices": ("resource.k8s.io/v1", "ResourceSlice", "ResourceSliceList"),
}
TRUE = {"1", "true", "True"}


class HttpError(Exception):
    """An answer other than 2xx, sent as kube-apiserver's metav1.Status."""

    def __init__(self, code, message, details=None):
        super().__init__(message)
        self.code = code
        self.details = details


def status_body(code, message, details=None):
    """The metav1.Status of an error, as apimachinery's errors.New… build it."""
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
    body.update(message=message, reason=REASONS.get(code, ("", "Unknown"))[1], code=code)
    if details:
        body["details"] = details
    return body


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def strategic_merge_patch(target, patch):
    """Strategic merge patch where it differs for pods: lists of named objects merge by name."""
    named = isinstance(patch, list) and isinstance(target, list)
    if named and all(isinstance(p, dict) and isinstance(p.get("name"), str) for p in patch):
        out = list(target)
        for p in patch:
            named_p = (j for j, t in enumerate(out) if isinstance(t, dict) and t.get("name"))
            same = (j for j in named_p if out[j]["name"] == p["name"])
            i = next(same, -1)
            if p.get("$patch") == "delete":
                if i >= 0:
                    del out[i]
            elif i >= 0:
                out[i] = strategic_merge_patch(out[i], p)
            else:
                out.append(p)
        return out
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if k == "$patch":
            continue
        if v is None:
            out.pop(k, None)
        else:
            out[k] = strategic_merge_patch(out.get(k), v)
    return out


PATCHES = {
    "application/merge-patch+json": merge_patch,
    "application/strategic-merge-patch+json": strategic_merge_patch,
}


def field(obj, path):
    """The value at a dotted path (`spec.nodeName`), "" when absent, as field selectors read it."""
    for part in path.split("."):
        obj = obj.get(part) if isinstance(obj, dict) else None
    return "" if obj is None else str(obj)


def selector_filter(namespace, field_selector):
    """A filter for a collection: its namespace (None: all) and `a=b,c!=d` field requirements."""
    reqs = []
    for term in filter(None, (field_selector or "").split(",")):
        m = re.fullmatch(r"([\w.]+)\s*(==|=|!=)\s*(.*)", term)
        if not m:
            raise HttpError(400, f"invalid field selector: {term!r}")
        reqs.append((m.group(1), m.group(2) != "!=", m.group(3)))

    def matches(obj):
        if namespace is not None and obj["metadata"].get("namespace") != namespace:
            return False
        return all((field(obj, path) == value) == equal for path, equal, value in reqs)

    return matches


class Store:
    """Objects by resource and "namespace/name", one global resourceVersion, a change history."""

    def __init__(self):
        self.cond = threading.Condition()
        self.rv = 1000
        self.uids = 0
        self.objects = {r: {} for r in KINDS}
        self.history = []

    def add(self, resource, obj):
        """A harness object as the Node fake's addPod/addNad store it (defaults, identity, RV)."""
        api_version, kind, _ = KINDS[resource]
        meta = dict(obj["metadata"])
        meta.setdefault("namespace", "default")
        self.uids += 1
        meta.setdefault("uid", f"{resource[:-1]}-uid-{self.uids}")
        if resource == "pods":
            now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            meta.setdefault("creationTimestamp", now)
            spec = {"nodeName": "node-1", "containers": [{"name": "main", "image": "busybox"}]}
            base = {"spec": spec, "status": {"phase": "Pending"}}
        else:
            base = {}
        self.rv += 1
        meta["resourceVersion"] = str(self.rv)
        stored = {"apiVersion": api_version, "kind": kind, **base, **obj, "metadata": meta}
        self.objects[resource][f"{meta['namespace']}/{meta['name']}"] = stored

    def get(self, resource, ns, name):
        with self.cond:
            obj = self.objects[resource].get(f"{ns}/{name}")
        if obj is None:
            # kube-apiserver's NewNotFound: the resource as `kind`, its group beside it.
            details = {"name": name, "kind": resource}
            what = resource
            if resource == "nads":
                details.update(group="k8s.cni.cncf.io", kind="network-attachment-definitions")
                what = "network-attachment-definitions.k8s.cni.cncf.io"
            raise HttpError(404, f'{what} "{name}" not found', details)
        return obj

    def update_pod(self, ns, name, *, mutate, sub):
        """An update as the generic registry store makes it: RV and UID checks, spec/status kept."""
        with self.cond:
            current = self.objects["pods"].get(f"{ns}/{name}")
            if current is None:
                raise HttpError(404, f'pods "{name}" not found', {"name": name, "kind": "pods"})
            nxt = mutate(current)
            meta = dict(nxt.get("metadata") or {})
            cur_meta = current["metadata"]
            if meta.get("resourceVersion") not in (None, "", cur_meta["resourceVersion"]):
                why = "the object has been modified; please apply your changes"
                why += " to the latest version and try again"
                what = f'Operation cannot be fulfilled on pods "{name}": {why}'
                raise HttpError(409, what, {"name": name, "kind": "pods"})
            if meta.get("uid") not in (None, "", cur_meta["uid"]):
                what = f'Invalid value: "{meta["uid"]}": field is immutable'
                what = f'Pod "{name}" is invalid: metadata.uid: {what}'
                raise HttpError(422, what, {"name": name, "kind": "Pod"})
            self.rv += 1
            meta.update(name=name, namespace=ns, uid=cur_meta["uid"], resourceVersion=str(self.rv))
            meta["creationTimestamp"] = cur_meta.get("creationTimestamp")
            stored = {**nxt, "apiVersion": "v1", "kind": "Pod", "metadata": meta}
            # The status subresource keeps the stored spec; the main resource keeps the status.
            stored["spec" if sub else "status"] = current.get("spec" if sub else "status")
            self.objects["pods"][f"{ns}/{name}"] = stored
            self.history.append((self.rv, "pods", "MODIFIED", stored))
            self.cond.notify_all()
            return stored

    def snapshot(self, resource, matches):
        """The matching objects and the resourceVersion they are at (LIST from the watch cache)."""
        with self.cond:
            return [o for o in self.objects[resource].values() if matches(o)], self.rv

    def changes_after(self, rv, resource, matches, timeout):
        """The matching changes after `rv`, waiting up to `timeout` s for one; and the RV seen."""
        with self.cond:
            if self.rv <= rv:
                self.cond.wait(timeout)
            seen = self.rv
            events = [
                (t, o)
                for (r, res, t, o) in self.history
                if r > rv and res == resource and matches(o)
            ]
        return events, seen


def read_body(handler):
    """The request body: Content-Length or chunked."""
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        parts = []
        while True:
            size = int(handler.rfile.readline().split(b";")[0], 16)
            if size == 0:
                handler.rfile.readline()
                return b"".join(parts)
            parts.append(handler.rfile.read(size))
            handler.rfile.readline()
    return handler.rfile.read(int(handler.headers.get("Content-Length") or 0))


def parse_json(body):
    try:
        value = json.loads(body or b"null")
    except ValueError as err:
        raise HttpError(400, f"the body of the request was in an unknown format: {err}") from None
    if not isinstance(value, dict):
        raise HttpError(400, "the body of the request was in an unknown format: not an object")
    return value


def handle_pod(server, req):
    """GET of a pod; PATCH of it or its status; PUT of its status (JSON, or Multus's protobuf)."""
    ns, name, sub = req["groups"][0], req["groups"][1], req["groups"][2] is not None
    store, method, ctype = server.store, req["method"], req["ctype"]
    if method == "GET":
        return 200, store.get("pods", ns, name)
    if method == "PUT" and sub and "protobuf" in ctype:
        return 200, store.get("pods", ns, name)
    if method == "PUT" and sub:
        nxt = parse_json(req["body"])
        if nxt.get("kind") not in (None, "Pod"):
            raise HttpError(400, f"kind {nxt['kind']} does not match Pod")
        return 200, store.update_pod(ns, name, mutate=lambda _cur: nxt, sub=True)
    if method == "PATCH":
        apply = PATCHES.get(ctype)
        if apply is None:
            raise HttpError(415, f"the fake API server does not implement patch type {ctype!r}")
        patch = parse_json(req["body"])
        return 200, store.update_pod(ns, name, mutate=lambda cur: apply(cur, patch), sub=sub)
    raise HttpError(405, f"method {method} not allowed")


def handle_nad(server, req):
    if req["method"] != "GET":
        raise HttpError(405, f"method {req['method']} not allowed")
    return 200, server.store.get("nads", req["groups"][0], req["groups"][1])


def handle_event(server, req):
    """POST of an Event: 201 with the event (protobuf, which is not decoded: a minimal one)."""
    if req["method"] != "POST":
        raise HttpError(405, f"method {req['method']} not allowed")
    ns = req["groups"][0]
    ev = {"kind": "Event", "apiVersion": "v1"}
    if "protobuf" not in req["ctype"]:
        ev = parse_json(req["body"])
    meta = dict(ev.get("metadata") or {})
    with server.store.cond:
        server.store.uids += 1
        uid = server.store.uids
    meta.setdefault("name", f"{meta.get('generateName', 'e.')}{uid:x}")
    meta.update(namespace=ns, uid=f"event-uid-{uid}")
    return 201, {**ev, "metadata": meta}


def collection(resource):
    """LIST or WATCH of `resource` (its namespace from the path, or all)."""

    def handle(server, req):
        if req["method"] != "GET":
            raise HttpError(405, f"method {req['method']} not allowed")
        q = req["query"]
        if q.get("labelSelector"):
            raise HttpError(400, "label selectors are not implemented by this fake")
        ns = req["groups"][0] if req["groups"] else None
        matches = selector_filter(ns, q.get("fieldSelector"))
        if q.get("watch") in TRUE:
            return "watch", (resource, matches)
        items, rv = server.store.snapshot(resource, matches)
        api_version, _, list_kind = KINDS[resource]
        meta = {"resourceVersion": str(rv)}
        return 200, {"apiVersion": api_version, "kind": list_kind, "metadata": meta, "items": items}

    return handle


NADS_PATH = r"/apis/k8s\.cni\.cncf\.io/v1"
ROUTES = [
    (r"/api/v1/namespaces/([^/]+)/pods/([^/]+)(/status)?", handle_pod),
    (NADS_PATH + r"/namespaces/([^/]+)/network-attachment-definitions/([^/]+)", handle_nad),
    (r"/api/v1/(?:namespaces/([^/]+)/)?pods", collection("pods")),
    (NADS_PATH + r"/(?:namespaces/([^/]+)/)?network-attachment-definitions", collection("nads")),
    (r"/apis/resource\.k8s\.io/v1/resourceslices", collection("resourceslices")),
    (r"/api/v1/namespaces/([^/]+)/events", handle_event),
    (r"/apis/events\.k8s\.io/v1/namespaces/([^/]+)/events", handle_event),
]
ROUTES = [(re.compile(pattern), handler) for pattern, handler in ROUTES]


class Handler(BaseHTTPRequestHandler):
    """One connection: its requests in turn (keep-alive), each answered in one write."""

    protocol_version = "HTTP/1.1"

    def setup(self):
        self.request.do_handshake()
        super().setup()

    def log_message(self, *_args):
        pass

    def answer(self, code, obj):
        body = json.dumps(obj, separators=(",", ":")).encode()
        head = f"HTTP/1.1 {code} {REASONS[code][0]}\r\nContent-Type: application/json\r\n"
        head += f"Content-Length: {len(body)}\r\n\r\n"
        self.wfile.write(head.encode() + body)

    def dispatch(self):
        url = urlsplit(self.path)
        body = read_body(self)
        if self.server.log:
            agent = self.headers.get("User-Agent", "")
            print(self.command, self.path, agent, file=sys.stderr, flush=True)
        if self.server.latency:
            time.sleep(self.server.latency)
        if self.headers.get("Authorization") != f"Bearer {self.server.token}":
            return self.answer(401, status_body(401, "Unauthorized"))
        req = {
            "method": self.command,
            "query": {k: v[-1] for k, v in parse_qs(url.query).items()},
            "ctype": (self.headers.get("Content-Type") or "").split(";")[0].strip(),
            "body": body,
        }
        for pattern, handler in ROUTES:
            m = pattern.fullmatch(url.path)
            if m:
                req["groups"] = m.groups()
                try:
                    code, out = handler(self.server, req)
                except HttpError as err:
                    return self.answer(err.code, status_body(err.code, str(err), err.details))
                if code == "watch":
                    return self.watch(*out, query=req["query"])
                return self.answer(code, out)
        why = "the server could not find the requested resource"
        return self.answer(404, status_body(404, why))

    do_GET = do_PUT = do_PATCH = do_POST = do_DELETE = dispatch

    def chunk(self, data):
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    def watch(self, resource, matches, *, query):
        """A watch stream (chunked): ADDED for each object from RV unset or 0, then every change."""
        head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        self.wfile.write(f"{head}Transfer-Encoding: chunked\r\n\r\n".encode())
        since = query.get("resourceVersion", "")
        timeout = float(query.get("timeoutSeconds") or 3600)
        deadline = time.monotonic() + timeout
        def line(kind, obj):
            return json.dumps({"type": kind, "object": obj}, separators=(",", ":")).encode() + b"\n"

        if since in ("", "0"):
            items, rv = self.server.store.snapshot(resource, matches)
            if items:
                self.chunk(b"".join(line("ADDED", o) for o in items))
        else:
            rv = int(since)
        while (left := deadline - time.monotonic()) > 0:
            events, rv = self.server.store.changes_after(rv, resource, matches, min(left, 5))
            if events:
                self.chunk(b"".join(line(t, o) for t, o in events))
        self.wfile.write(b"0\r\n\r\n")


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, *, store, token, latency_ms, log):
        super().__init__(("127.0.0.1", 0), Handler)
        self.store, self.token, self.latency, self.log = store, token, latency_ms / 1000, log
        self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.tls.load_cert_chain(TLS_DIR / "server.crt", TLS_DIR / "server.key")

    def server_bind(self):
        # HTTPServer's own would look the address up in DNS (getfqdn) for a name nothing reads.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def get_request(self):
        # The TLS handshake runs in the connection's thread (Handler.setup), not in accept's.
        sock, addr = self.socket.accept()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def handle_error(self, request, client_address):
        # A client that goes away mid-request (a CNI call that ended, a daemon stopped) is normal.
        if not isinstance(sys.exc_info()[1], (OSError, ssl.SSLError)):
            super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    what = 'JSON file of {"token", "pods", "nads"}; - for stdin'
    ap.add_argument("--objects", required=True, help=what)
    ap.add_argument("--latency-ms", type=float, default=0, help="added before every answer")
    ap.add_argument("--log", action="store_true", help="one line per request on stderr")
    args = ap.parse_args()
    data = json.load(sys.stdin if args.objects == "-" else open(args.objects, encoding="utf-8"))
    store = Store()
    for resource in ("pods", "nads"):
        for obj in data.get(resource, []):
            store.add(resource, obj)
    server = Server(store=store, token=data["token"], latency_ms=args.latency_ms, log=args.log)
    print(server.server_address[1], flush=True)
    if args.objects != "-":
        # Nothing to save: exit at once, open watch streams and all.
        threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
