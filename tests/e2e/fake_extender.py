"""A minimal scheduler extender over HTTPS with client-certificate checks, for e2e tests.

It answers filter (all nodes pass) and prioritize (by node name order) in kube-scheduler's
wire format and records every call with the client certificate's common name, so a test
can prove that kube-scheduler called it over mutual TLS.
"""
import http.server
import json
import socket
import ssl
import threading


class FakeExtender:
    def __init__(self, host="127.0.0.1"):
        """Binds a free port now, so it can go into the scheduler configuration before
        the certificates that configuration comes with exist."""
        self.calls = []  # (verb, client CN, node names)
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind((host, 0))
        self.port = self.sock.getsockname()[1]
        self.server = None
        self.thread = None

    def start(self, cert, key, client_ca=None):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(cert, key)
        if client_ca:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(client_ca)
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                verb = self.path.rsplit("/", 1)[-1]
                peer = self.connection.getpeercert() or {}
                cn = next((v for rdn in peer.get("subject", ()) for k, v in rdn if k == "commonName"), None)
                names = body.get("NodeNames")
                if names is None and body.get("Nodes"):
                    names = [n["metadata"]["name"] for n in body["Nodes"]["items"]]
                names = names or []
                with outer.lock:
                    outer.calls.append((verb, cn, list(names)))
                if verb == "filter":
                    reply = {"Nodes": None, "NodeNames": names, "FailedNodes": {},
                             "FailedAndUnresolvableNodes": None, "Error": ""}
                elif verb == "prioritize":
                    reply = [{"Host": n, "Score": 10 - min(i, 10)} for i, n in enumerate(sorted(names))]
                else:
                    reply = {"NodeNameToMetaVictims": body.get("NodeNameToMetaVictims") or {}}
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def server_bind(self):
                pass  # the socket is bound already (its port went into the scheduler config)

        self.sock.listen(16)
        self.server = Server(("127.0.0.1", self.port), Handler, bind_and_activate=False)
        self.server.socket = context.wrap_socket(self.sock, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()
        else:
            self.sock.close()

    def calls_of(self, verb):
        with self.lock:
            return [c for c in self.calls if c[0] == verb]
