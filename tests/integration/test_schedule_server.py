"""powerctl schedule-server as a process: ports from the start line, probes, TLS/mTLS, SIGTERM."""
import http.client
import os
import queue
import re
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
import unittest

from support import BINARY, SOURCE_DIR, TempDirTest, clean_env, run

TLS = os.path.join(SOURCE_DIR, "tests", "fixtures", "tls")
START_LINE = re.compile(r"listening on (https?)://127\.0\.0\.1:(\d+)(\S*) \((.*)\), "
                        r"ops on http://127\.0\.0\.1:(\d+)")


class Server:
    """A running `powerctl schedule-server`; stderr is read on a thread so it never blocks."""

    def __init__(self, *args):
        self.proc = subprocess.Popen(
            [BINARY, "schedule-server", "--listen", "127.0.0.1:0", "--ops-listen", "127.0.0.1:0",
             *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env())
        self.lines = queue.Queue()
        self.stderr = []
        self.pump = threading.Thread(target=self._pump, daemon=True)
        self.pump.start()

    def _pump(self):
        for line in self.proc.stderr:
            self.stderr.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def wait_listening(self, timeout=20):
        """(scheme, main port, prefix, security, ops port) from the start line."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                break
            m = START_LINE.search(line)
            if m:
                return m.group(1), int(m.group(2)), m.group(3), m.group(4), int(m.group(5))
        raise AssertionError("no start line; stderr:\n" + "".join(self.stderr))

    def stop(self, sig=signal.SIGTERM, timeout=10):
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=timeout)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()  # by PID: only the process this test started
            self.proc.wait()
        self.pump.join(timeout=10)
        self.proc.stdout.close()
        self.proc.stderr.close()


def request(port, method, path, body=None, context=None):
    if context is None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    else:
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=context)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


def make_ca_and_server_cert(directory):
    """A new CA and a server certificate for 127.0.0.1 signed by it (openssl CLI)."""
    os.makedirs(directory, exist_ok=True)

    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=swap-ca",
            "-addext", "basicConstraints=critical,CA:TRUE")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1")
    with open(os.path.join(directory, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", "san.ext", "-out", "server.crt")


class ScheduleServerTest(TempDirTest):
    def start(self, *args):
        server = Server(*args)
        self.addCleanup(server.kill)
        return server

    def test_insecure_http_serves_probes_and_stops_on_sigterm(self):
        server = self.start("--insecure-http", "--url-prefix", "/sched/")
        scheme, port, prefix, security, ops = server.wait_listening()
        self.assertEqual((scheme, prefix), ("http", "/sched"))
        self.assertIn("insecure", security)
        self.assertEqual(request(ops, "GET", "/healthz"), (200, "ok\n"))
        status, body = request(ops, "GET", "/readyz")
        self.assertEqual(status, 200, body)
        self.assertEqual(request(port, "POST", "/sched/filter", "{}")[0], 400)  # no Pod: a reason, not a crash
        self.assertEqual(request(port, "GET", "/sched/filter")[0], 405)
        status, metrics = request(ops, "GET", "/metrics")
        self.assertEqual(status, 200)
        self.assertIn('path="/sched/filter",code="400"} 1', metrics)
        started = time.monotonic()
        self.assertEqual(server.stop(), 0, "".join(server.stderr))
        self.assertLess(time.monotonic() - started, 5)
        self.assertIn("SIGTERM", "".join(server.stderr))
        with self.assertRaises(OSError):
            request(ops, "GET", "/healthz")

    def test_sigint_also_stops_cleanly(self):
        server = self.start("--insecure-http")
        server.wait_listening()
        self.assertEqual(server.stop(signal.SIGINT), 0, "".join(server.stderr))

    def test_mutual_tls(self):
        server = self.start("--tls-cert", os.path.join(TLS, "server.crt"),
                            "--tls-key", os.path.join(TLS, "server.key"),
                            "--client-ca", os.path.join(TLS, "ca.crt"))
        scheme, port, prefix, security, ops = server.wait_listening()
        self.assertEqual((scheme, prefix, security), ("https", "/scheduler", "mTLS"))
        trusted = ssl.create_default_context(cafile=os.path.join(TLS, "ca.crt"))
        trusted.load_cert_chain(os.path.join(TLS, "client.crt"), os.path.join(TLS, "client.key"))
        self.assertEqual(request(port, "POST", "/scheduler/filter", "{}", trusted)[0], 400)
        anonymous = ssl.create_default_context(cafile=os.path.join(TLS, "ca.crt"))
        with self.assertRaises((ssl.SSLError, ConnectionError, http.client.HTTPException)):
            request(port, "POST", "/scheduler/filter", "{}", anonymous)
        self.assertEqual(request(ops, "GET", "/healthz"), (200, "ok\n"))  # ops stays plain
        self.assertEqual(server.stop(), 0)

    def test_tls_below_1_2_is_refused(self):
        server = self.start("--tls-cert", os.path.join(TLS, "server.crt"),
                            "--tls-key", os.path.join(TLS, "server.key"))
        _, port, _, _, ops = server.wait_listening()
        old = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        old.load_verify_locations(os.path.join(TLS, "ca.crt"))
        old.set_ciphers("DEFAULT:@SECLEVEL=0")  # let this client offer TLS 1.0/1.1 at all
        old.minimum_version = ssl.TLSVersion.TLSv1
        old.maximum_version = ssl.TLSVersion.TLSv1_1
        with self.assertRaises((ssl.SSLError, ConnectionError)):
            request(port, "POST", "/scheduler/filter", "{}", old)
        tls12 = ssl.create_default_context(cafile=os.path.join(TLS, "ca.crt"))
        tls12.maximum_version = ssl.TLSVersion.TLSv1_2
        self.assertEqual(request(port, "POST", "/scheduler/filter", "{}", tls12)[0], 400)
        deadline = time.monotonic() + 10  # the server counts the failure after the client saw it
        while not re.search(r'powerctl_tls_handshake_errors_total\{reason="protocol"\} [1-9]', request(ops, "GET", "/metrics")[1]):
            self.assertLess(time.monotonic(), deadline, "the refused handshake was not counted")
            time.sleep(0.05)
        # ...and logged as a warning naming the peer and the reason.
        while not any("failed on the scheduler port (protocol)" in line for line in server.stderr):
            self.assertLess(time.monotonic(), deadline, "no warning:\n" + "".join(server.stderr))
            time.sleep(0.05)
        self.assertTrue(any("TLS handshake with 127.0.0.1:" in line for line in server.stderr))

    def test_certificate_swapped_on_disk_is_used_without_restart(self):
        live = self.path("live")
        os.makedirs(live)
        for name in ("server.crt", "server.key"):
            shutil.copy(os.path.join(TLS, name), os.path.join(live, name))
        server = self.start("--tls-cert", os.path.join(live, "server.crt"),
                            "--tls-key", os.path.join(live, "server.key"))
        _, port, _, _, ops = server.wait_listening()
        old_ca = ssl.create_default_context(cafile=os.path.join(TLS, "ca.crt"))
        self.assertEqual(request(port, "POST", "/scheduler/filter", "{}", old_ca)[0], 400)

        new = self.path("new")
        make_ca_and_server_cert(new)
        # As the kubelet updates a Secret volume: each file replaced at once (rename).
        for name in ("server.key", "server.crt"):
            shutil.copy(os.path.join(new, name), os.path.join(live, name + ".tmp"))
            os.replace(os.path.join(live, name + ".tmp"), os.path.join(live, name))
        new_ca = ssl.create_default_context(cafile=os.path.join(new, "ca.crt"))

        def new_cert_served():
            try:
                return request(port, "POST", "/scheduler/filter", "{}", new_ca)[0] == 400
            except (ssl.SSLError, ConnectionError):
                return False
        deadline = time.monotonic() + 20
        while not new_cert_served():
            self.assertLess(time.monotonic(), deadline, "the new certificate was not picked up")
            time.sleep(0.1)
        with self.assertRaises(ssl.SSLError):
            request(port, "POST", "/scheduler/filter", "{}", old_ca)
        self.assertIn("TLS files reloaded", "".join(server.stderr))
        self.assertIn('powerctl_tls_reloads_total{result="ok"}', request(ops, "GET", "/metrics")[1])
        self.assertEqual(server.stop(), 0)

    def test_sigterm_lets_a_request_in_flight_finish(self):
        server = self.start("--insecure-http", "--drain-timeout", "10s")
        _, port, _, _, ops = server.wait_listening()
        body = b'{"Pod": {"metadata": {"name": "p"}}, "NodeNames": null, "Nodes": {"items": []}}'
        head = (b"POST /scheduler/filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                b"\r\nContent-Length: %d\r\n\r\n" % len(body))
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            # A first exchange proves the server accepted the connection (one still in the
            # listen backlog is reset when the listener closes, as with any server).
            s.sendall(head + body)
            first = http.client.HTTPResponse(s)
            first.begin()
            self.assertEqual(first.status, 200)
            first.read()
            s.sendall(head + body[:10])
            server.proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 10
            while request(ops, "GET", "/readyz")[0] != 503:  # draining has begun
                self.assertLess(time.monotonic(), deadline, "/readyz never said it was draining")
                time.sleep(0.05)
            s.sendall(body[10:])
            response = http.client.HTTPResponse(s)
            response.begin()
            answer = response.read()
            self.assertEqual(response.status, 200, answer)
            self.assertEqual(response.getheader("Connection"), "close")
            self.assertIn(b"FailedNodes", answer)
        self.assertEqual(server.proc.wait(timeout=10), 0, "".join(server.stderr))
        with self.assertRaises(OSError):  # and new connections are refused
            socket.create_connection(("127.0.0.1", port), timeout=2)

    def test_refuses_plain_http_without_the_flag(self):
        r = run("schedule-server", "--listen", "127.0.0.1:0", "--ops-listen", "127.0.0.1:0")
        self.assertUsageError(r, "--insecure-http")

    def test_tls_flag_mistakes_are_usage_errors(self):
        cert = os.path.join(TLS, "server.crt")
        self.assertUsageError(run("schedule-server", "--tls-cert", cert), "--tls-key")
        self.assertUsageError(
            run("schedule-server", "--insecure-http", "--tls-cert", cert, "--tls-key", cert),
            "--insecure-http")
        self.assertUsageError(run("schedule-server", "--insecure-http", "--listen", "8443"),
                              "--listen", "8443")
        self.assertUsageError(
            run("schedule-server", "--insecure-http", "--drain-timeout", "soon"), "--drain-timeout")

    def test_missing_certificate_file_is_named(self):
        r = run("schedule-server", "--listen", "127.0.0.1:0", "--ops-listen", "127.0.0.1:0",
                "--tls-cert", self.path("nope.crt"), "--tls-key", self.path("nope.key"))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("nope.crt", r.stderr)

    def test_port_in_use_fails_with_exit_1(self):
        first = self.start("--insecure-http")
        _, port, _, _, _ = first.wait_listening()
        r = run("schedule-server", "--insecure-http", "--listen", f"127.0.0.1:{port}",
                "--ops-listen", "127.0.0.1:0")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(str(port), r.stderr)


if __name__ == "__main__":
    unittest.main()
