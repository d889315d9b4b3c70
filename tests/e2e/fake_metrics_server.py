#!/usr/bin/python3
"""A stand-in for metrics-server: serves metrics.k8s.io/v1beta1 over HTTPS to the
kube-apiserver's aggregation layer, with usage values the test controls.

    fake_metrics_server.py --address 192.0.2.2 --cert S.crt --key S.key \
        --client-ca ca.crt --ready-file /tmp/ready.json [--data initial.json]

HTTPS port (--address, --port, 0 = any free port):
  /healthz /readyz /livez                       "ok", no authentication
  /apis, /apis/metrics.k8s.io, /apis/metrics.k8s.io/v1beta1   discovery
  /apis/metrics.k8s.io/v1beta1/nodes[/NAME]     NodeMetricsList / NodeMetrics
  /apis/metrics.k8s.io/v1beta1/pods             PodMetricsList of all namespaces
  /apis/metrics.k8s.io/v1beta1/namespaces/NS/pods[/NAME]
  Everything but the health paths requires what metrics-server's request-header
  authentication requires: a client certificate signed by --client-ca whose CN is
  in --allowed-names (the aggregator's front-proxy-client) AND an X-Remote-User
  header. Otherwise 401. labelSelector/fieldSelector/limit are ignored.

Control port (plain HTTP on 127.0.0.1, --control-port, 0 = any free port):
  GET  /state                 {"nodes": ..., "pods": ..., "failure": ...}
  PUT  /nodes                 replace all node usages: {"NAME": {"cpu": "1500m", "memory": "2Gi"}}
  PATCH /nodes                merge: a null value removes that node
  PUT/PATCH /pods             likewise, keys "NAMESPACE/NAME", values
                              {"containers": {"CNAME": {"cpu": ..., "memory": ...}}}
                              or {"cpu": ..., "memory": ...} (one container "main")
  PUT  /failure               {"status": 503, "message": "..."}: resource paths (not
                              discovery/health) answer that; {"status": null} clears it
  GET  /requests?since=N      requests seen on the HTTPS port from index N:
                              {"next": M, "requests": [{"method", "path", "query", "user",
                              "groups", "client_cn", "status"}...]}

A usage entry may also carry "window" (Go duration text, default "30s") and
"timestamp" (RFC 3339; default: now) to serve stale or odd samples.

When both ports listen, the --ready-file gets {"pid", "address", "port",
"control_port"} (written atomically). SIGTERM stops the server.
Python 3 standard library only.
"""

import argparse
import json
import os
import signal
import socket
import ssl
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GROUP = "metrics.k8s.io"
VERSION = "v1beta1"
GV = f"{GROUP}/{VERSION}"
PREFIX = f"/apis/{GROUP}/{VERSION}"
HEALTH = ("/healthz", "/readyz", "/livez")
MAX_LOG = 5000


def now_rfc3339():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class State:
    """Usage values and the request log, shared by both servers' threads."""

    def __init__(self, nodes=None, pods=None):
        self.lock = threading.Lock()
        self.nodes = dict(nodes or {})
        self.pods = dict(pods or {})
        self.failure = None
        self.log = []
        self.dropped = 0  # entries dropped from the front of the log

    def record(self, entry):
        with self.lock:
            self.log.append(entry)
            if len(self.log) > MAX_LOG:
                drop = len(self.log) - MAX_LOG
                del self.log[:drop]
                self.dropped += drop

    def requests_since(self, since):
        with self.lock:
            start = max(0, since - self.dropped)
            return {"next": self.dropped + len(self.log), "requests": self.log[start:]}

    def snapshot(self):
        with self.lock:
            return {"nodes": json.loads(json.dumps(self.nodes)),
                    "pods": json.loads(json.dumps(self.pods)), "failure": self.failure}


def _usage(entry):
    return {k: str(entry[k]) for k in ("cpu", "memory") if k in entry and entry[k] is not None}


def node_object(name, entry):
    ts = entry.get("timestamp") or now_rfc3339()
    return {"kind": "NodeMetrics", "apiVersion": GV,
            "metadata": {"name": name, "creationTimestamp": now_rfc3339(),
                         "selfLink": f"{PREFIX}/nodes/{name}"},
            "timestamp": ts, "window": entry.get("window", "30s"), "usage": _usage(entry)}


def pod_containers(entry):
    containers = entry.get("containers")
    if containers is None:
        return [{"name": "main", "usage": _usage(entry)}]
    if isinstance(containers, dict):
        return [{"name": n, "usage": _usage(u)} for n, u in containers.items()]
    return [{"name": c["name"], "usage": _usage(c.get("usage", c))} for c in containers]


def pod_object(key, entry):
    ns, name = key.split("/", 1)
    ts = entry.get("timestamp") or now_rfc3339()
    return {"kind": "PodMetrics", "apiVersion": GV,
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": now_rfc3339(),
                         "selfLink": f"{PREFIX}/namespaces/{ns}/pods/{name}"},
            "timestamp": ts, "window": entry.get("window", "30s"),
            "containers": pod_containers(entry)}


def status_object(code, reason, message, details=None):
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}
    if details:
        body["details"] = details
    return body


def discovery(path):
    version = {"groupVersion": GV, "version": VERSION}
    group = {"name": GROUP, "versions": [version], "preferredVersion": version}
    if path == "/apis":
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [group]}
    if path == f"/apis/{GROUP}":
        return dict(group, kind="APIGroup", apiVersion="v1")
    if path == PREFIX:
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GV, "resources": [
            {"name": "nodes", "singularName": "", "namespaced": False, "kind": "NodeMetrics",
             "verbs": ["get", "list"]},
            {"name": "pods", "singularName": "", "namespaced": True, "kind": "PodMetrics",
             "verbs": ["get", "list"]}]}
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-metrics-server/1"

    def log_message(self, fmt, *args):  # one line per request on stderr (the log file)
        sys.stderr.write("%s %s\n" % (now_rfc3339(), fmt % args))

    def _send(self, code, body, content_type="application/json"):
        data = (json.dumps(body) if not isinstance(body, (bytes, str)) else body)
        data = data.encode() if isinstance(data, str) else data
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        return code

    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"null") if n else None


class MetricsHandler(Handler):
    """The HTTPS side that the aggregator talks to."""

    def _client_cn(self):
        cert = self.connection.getpeercert() if isinstance(self.connection, ssl.SSLSocket) else None
        for rdn in (cert or {}).get("subject", ()):
            for key, value in rdn:
                if key == "commonName":
                    return value
        return None

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        path = url.path.rstrip("/") or "/"
        state = self.server.state
        cn = self._client_cn()
        user = self.headers.get("X-Remote-User")
        groups = self.headers.get_all("X-Remote-Group") or []
        status = self._serve(path, cn, user)
        state.record({"method": self.command, "path": path, "query": url.query, "user": user,
                      "groups": groups, "client_cn": cn, "status": status, "time": time.time()})

    do_HEAD = do_GET

    def _serve(self, path, cn, user):
        state = self.server.state
        if path in HEALTH:
            return self._send(200, "ok", "text/plain")
        # request-header authentication as metrics-server does it: the front proxy's
        # certificate (verified by the TLS layer against --client-ca) plus the user header
        if cn is None or cn not in self.server.allowed_names or not user:
            why = ("no client certificate" if cn is None else
                   f"client certificate CN {cn!r} is not an allowed front proxy" if
                   cn not in self.server.allowed_names else "no X-Remote-User header")
            return self._send(401, status_object(401, "Unauthorized", f"Unauthorized: {why}"))
        disc = discovery(path)
        if disc is not None:
            return self._send(200, disc)
        if not path.startswith(PREFIX + "/"):
            return self._send(404, status_object(404, "NotFound", "the server could not find "
                                                 "the requested resource"))
        with state.lock:
            failure = state.failure
            nodes = dict(state.nodes)
            pods = dict(state.pods)
        if failure:
            code = int(failure.get("status") or 500)
            return self._send(code, status_object(code, failure.get("reason", "InternalError"),
                                                  failure.get("message", "injected failure")))
        parts = path[len(PREFIX) + 1:].split("/")
        if parts == ["nodes"]:
            return self._send(200, {"kind": "NodeMetricsList", "apiVersion": GV,
                                    "metadata": {"selfLink": f"{PREFIX}/nodes"},
                                    "items": [node_object(n, e) for n, e in sorted(nodes.items())]})
        if len(parts) == 2 and parts[0] == "nodes":
            if parts[1] in nodes:
                return self._send(200, node_object(parts[1], nodes[parts[1]]))
            return self._not_found("nodes", parts[1])
        ns = None
        if len(parts) >= 3 and parts[0] == "namespaces" and parts[2] == "pods":
            ns, parts = parts[1], parts[2:]
        if parts == ["pods"]:
            items = [pod_object(k, e) for k, e in sorted(pods.items())
                     if ns is None or k.split("/", 1)[0] == ns]
            return self._send(200, {"kind": "PodMetricsList", "apiVersion": GV,
                                    "metadata": {"selfLink": path}, "items": items})
        if len(parts) == 2 and parts[0] == "pods" and ns is not None:
            key = f"{ns}/{parts[1]}"
            if key in pods:
                return self._send(200, pod_object(key, pods[key]))
            return self._not_found("pods", parts[1])
        return self._send(404, status_object(404, "NotFound", "the server could not find the "
                                             "requested resource"))

    def _not_found(self, kind, name):
        resource = "nodemetrics" if kind == "nodes" else "podmetrics"
        return self._send(404, status_object(404, "NotFound",
                                             f'{resource}.{GROUP} "{name}" not found',
                                             {"name": name, "group": GROUP, "kind": kind}))


class ControlHandler(Handler):
    """Plain HTTP on loopback: the test sets usages and reads the request log."""

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        state = self.server.state
        if url.path == "/state":
            return self._send(200, state.snapshot())
        if url.path == "/requests":
            q = urllib.parse.parse_qs(url.query)
            return self._send(200, state.requests_since(int(q.get("since", ["0"])[0])))
        if url.path == "/healthz":
            return self._send(200, "ok", "text/plain")
        return self._send(404, {"error": f"no {url.path}"})

    def _update(self, merge):
        path = urllib.parse.urlsplit(self.path).path
        try:
            body = self._body()
        except ValueError as e:
            return self._send(400, {"error": f"invalid JSON: {e}"})
        state = self.server.state
        if path in ("/nodes", "/pods"):
            if not isinstance(body, dict):
                return self._send(400, {"error": "expected a JSON object"})
            if path == "/pods" and any("/" not in k for k in body):
                return self._send(400, {"error": "pod keys are NAMESPACE/NAME"})
            with state.lock:
                target = state.nodes if path == "/nodes" else state.pods
                if not merge:
                    target.clear()
                for k, v in body.items():
                    if v is None:
                        target.pop(k, None)
                    else:
                        target[k] = v
            return self._send(200, state.snapshot())
        if path == "/failure":
            with state.lock:
                state.failure = body if body and body.get("status") else None
            return self._send(200, state.snapshot())
        return self._send(404, {"error": f"no {path}"})

    def do_PUT(self):
        self._update(merge=False)

    def do_POST(self):
        self._update(merge=False)

    def do_PATCH(self):
        self._update(merge=True)


class TLSServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, addr, handler, context):
        self.context = context
        super().__init__(addr, handler)

    def get_request(self):
        sock, addr = super().get_request()
        sock.settimeout(60)
        # the handshake happens in the request's thread (finish_request), not the accept loop
        return self.context.wrap_socket(sock, server_side=True,
                                        do_handshake_on_connect=False), addr

    def finish_request(self, request, client_address):
        request.do_handshake()
        super().finish_request(request, client_address)

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if isinstance(exc, (ssl.SSLError, ConnectionError, TimeoutError)):
            self.state.record({"method": None, "path": None, "query": "", "user": None,
                               "groups": [], "client_cn": None, "status": None,
                               "error": f"{type(exc).__name__}: {exc}", "time": time.time()})
            sys.stderr.write(f"{now_rfc3339()} connection from {client_address}: {exc}\n")
            return
        super().handle_error(request, client_address)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--address", required=True, help="IP address to listen on (HTTPS)")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--control-port", type=int, default=0, help="plain HTTP on 127.0.0.1")
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--client-ca", required=True, help="CA of the front proxy's client cert")
    ap.add_argument("--allowed-names", default="front-proxy-client",
                    help="comma list of accepted client certificate CNs")
    ap.add_argument("--data", help='JSON file {"nodes": {...}, "pods": {...}} to start with')
    ap.add_argument("--ready-file", required=True)
    args = ap.parse_args(argv)

    initial = {}
    if args.data:
        with open(args.data) as f:
            initial = json.load(f)
    state = State(initial.get("nodes"), initial.get("pods"))

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    ctx.load_verify_locations(args.client_ca)
    ctx.verify_mode = ssl.CERT_OPTIONAL  # no cert: 401 from the handler, as metrics-server

    family = socket.AF_INET6 if ":" in args.address else socket.AF_INET
    TLSServer.address_family = family
    https = TLSServer((args.address, args.port), MetricsHandler, ctx)
    https.state, https.allowed_names = state, set(filter(None, args.allowed_names.split(",")))
    control = ThreadingHTTPServer(("127.0.0.1", args.control_port), ControlHandler)
    control.daemon_threads = True
    control.state = state

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    signal.signal(signal.SIGINT, lambda *a: stop.set())
    threads = [threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
               for s in (https, control)]
    for t in threads:
        t.start()
    ready = {"pid": os.getpid(), "address": args.address, "port": https.server_address[1],
             "control_port": control.server_address[1]}
    tmp = f"{args.ready_file}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(ready, f)
    os.replace(tmp, args.ready_file)
    sys.stderr.write(f"{now_rfc3339()} serving {GV} on https://{args.address}:{ready['port']}, "
                     f"control on http://127.0.0.1:{ready['control_port']}\n")
    sys.stderr.flush()
    stop.wait()
    for s in (https, control):
        s.shutdown()
        s.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
