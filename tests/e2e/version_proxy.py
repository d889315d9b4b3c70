"""A TLS proxy in front of the real kube-apiserver that answers GET /version as another release.

Newer Kubernetes cannot be built on this machine (Debian packages 1.20.2 only), so the tests of
the 1.35+ lines run against the real 1.20 API server with this proxy in front: every request but
/version goes through unchanged (method, path, query, headers, body), so what powerctl sends
is still judged by a real server; only the version it reads is a later line's.
"""
import http.client
import http.server
import json
import os
import ssl
import threading

# Headers that describe one hop, not the request (RFC 9110 section 7.6.1).
_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te",
        "trailer", "host", "content-length"}


class VersionProxy:
    """Listens on 127.0.0.1 (a free port) with the API server's own serving certificate."""

    def __init__(self, upstream, pki_dir, git_version):
        self.git_version = git_version
        host, _, port = upstream.removeprefix("https://").partition(":")
        upstream_ctx = ssl.create_default_context(cafile=os.path.join(pki_dir, "ca.crt"))
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _version(self):
                major, minor = proxy.git_version.lstrip("v").split(".")[:2]
                body = json.dumps({"major": major, "minor": minor, "gitVersion": proxy.git_version,
                                   "gitCommit": "0" * 40, "gitTreeState": "clean",
                                   "buildDate": "2026-11-12T00:00:00Z", "goVersion": "go1.25.4",
                                   "compiler": "gc", "platform": "linux/amd64"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _forward(self):
                if self.path.split("?")[0] == "/version":
                    self._version()
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                conn = http.client.HTTPSConnection(host, int(port), context=upstream_ctx, timeout=60)
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    reply = conn.getresponse()
                    data = reply.read()
                finally:
                    conn.close()
                self.send_response(reply.status)
                for k, v in reply.getheaders():
                    if k.lower() not in _HOP:
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward  # noqa: N815

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        serving = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        serving.load_cert_chain(os.path.join(pki_dir, "apiserver.crt"),
                                os.path.join(pki_dir, "apiserver.key"))
        self.server.socket = serving.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)
