"""Shared pieces of the HTTP load and kube-scheduler throughput benchmarks.

- A throw-away control plane from tests/e2e/cluster.py (etcd + kube-apiserver v1.20.2) holding N
  Node objects made in bulk over keep-alive connections: Ready, untainted, with realistic labels,
  allocatable and power annotations. The fake kubelet and kube-controller-manager are stopped once
  the cluster is up, so nothing else competes for the two cores while measuring.
- Telemetry through the real path: a real Prometheus (Debian's) scrapes an in-process exporter
  that serves node_exporter's `node_cpu_seconds_total` and ipmi_exporter's
  `ipmi_temperature_celsius` for every node (one target, `honor_labels`, `instance` =
  `<node>:9100`, as node_exporter relabelled per node would), so the extender's built-in model
  gets CPU and temperature readings for all N nodes instead of falling back to the unknown score.
- `powerctl schedule-server` started against that cluster, with readiness waits on its ops port.

Every process is started on free loopback ports and stopped by PID.
"""
import contextlib
import http.client
import http.server
import json
import os
import shutil
import socketserver
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("POWERCTL_SOURCE_DIR") or os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "e2e"))

import cluster as cl  # noqa: E402  (tests/e2e is on the path only from here)

BINARY = os.environ.get("POWERCTL_BINARY") or os.path.join(SOURCE_DIR, "build", "powerctl")
# tests/bench/noop_extender.cpp, built beside the powerctl binary.
NOOP_EXTENDER = os.environ.get("POWERCTL_NOOP_EXTENDER") or os.path.join(
    os.path.dirname(BINARY), "tests", "bench", "noop_extender")
PROMETHEUS = "/usr/bin/prometheus"
BENCH_LABEL = "powerctl.bench/node"
CPU_SIZES = (16, 32, 64)


def log(msg):
    """Progress on stderr (stdout carries the results)."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


SKIP = 77  # ctest's SKIP_RETURN_CODE


def require(*paths):
    """Exits with SKIP (ctest: skipped) when a tool the benchmark needs is missing."""
    missing = [p for p in paths if not (shutil.which(p) or os.access(p, os.X_OK))]
    if missing:
        print(f"skipped: {', '.join(missing)} not installed", file=sys.stderr)
        sys.exit(SKIP)


def node_name(i):
    """The name of bench node i."""
    return f"bench-node-{i:05d}"


def node_cpus(i):
    """Cores of bench node i: a mix of machine sizes."""
    return CPU_SIZES[i % len(CPU_SIZES)]


def node_manifest(i):
    """A Node as a kubelet would register it, plus MinimizePower's temperature-range labels and
    powerctl's power annotations (idle and max watts differ per node, so scores differ)."""
    name = node_name(i)
    cpus = node_cpus(i)
    node = cl.node_manifest(name, cpu=str(cpus), memory=f"{cpus * 4}Gi", pods="110", managed=False, labels={
        BENCH_LABEL: "true",
        "node.kubernetes.io/instance-type": f"bench.{cpus}xlarge",
        "topology.kubernetes.io/region": "bench-region",
        "topology.kubernetes.io/zone": f"bench-zone-{i % 3}",
        "ambient/min": "15", "ambient/max": "35",
        "cpu1/min": "30", "cpu1/max": "90",
        "cpu2/min": "30", "cpu2/max": "90",
    }, annotations={"powerctl.io/idle-watts": str(60 + (i * 7) % 90),
                    "powerctl.io/max-watts": str(250 + (i * 13) % 300)})
    now = cl.now_rfc3339()
    node["status"]["conditions"] = [
        {"type": t, "status": s, "reason": r, "message": r, "lastHeartbeatTime": now, "lastTransitionTime": now}
        for t, s, r in (("MemoryPressure", "False", "KubeletHasSufficientMemory"),
                        ("DiskPressure", "False", "KubeletHasNoDiskPressure"),
                        ("PIDPressure", "False", "KubeletHasSufficientPID"),
                        ("Ready", "True", "KubeletReady"))]
    return node


class KeepAliveApi:
    """Admin requests to the API server over one keep-alive HTTPS connection per thread
    (cluster.RestClient opens a connection per request, too slow for thousands of objects)."""

    def __init__(self, cluster):
        u = urllib.parse.urlsplit(cluster.server)
        self.host, self.port, self.token = u.hostname, u.port, cluster.token
        self.context = ssl.create_default_context(cafile=cluster.ca)
        self.local = threading.local()

    def call(self, method, path, body=None, content_type="application/json"):
        """(status, parsed JSON) of one request; reconnects once if the connection was closed."""
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        for attempt in (1, 2):
            conn = getattr(self.local, "conn", None)
            if conn is None:
                conn = self.local.conn = http.client.HTTPSConnection(self.host, self.port, context=self.context,
                                                                     timeout=60)
            try:
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
                return resp.status, (json.loads(raw) if raw else None)
            except (http.client.HTTPException, OSError):
                conn.close()
                self.local.conn = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def ok(self, method, path, body=None, expect=(200, 201), **kw):
        """Like call() but raises unless the status is in expect."""
        status, doc = self.call(method, path, body, **kw)
        if status not in expect:
            raise cl.ApiError(method, path, status, doc)
        return doc

    def parallel(self, fn, items, workers=8):
        """fn(item) for every item on `workers` threads (each with its own connection)."""
        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(fn, items))


def create_nodes(api, first, count):
    """Creates bench nodes first..first+count-1 and removes the not-ready taint that the API
    server's admission adds at creation, so the scheduler sees them Ready and schedulable."""
    def make(i):
        api.ok("POST", "/api/v1/nodes", node_manifest(i))
        api.ok("PATCH", f"/api/v1/nodes/{node_name(i)}", {"spec": {"taints": None}},
               content_type="application/merge-patch+json")
    t0 = time.monotonic()
    api.parallel(make, range(first, first + count))
    log(f"created nodes {first}..{first + count - 1} in {time.monotonic() - t0:.1f}s")


@contextlib.contextmanager
def bench_cluster(workdir):
    """An API server (no scheduler, kubelet or controller manager left running) in workdir."""
    c = cl.Cluster.start(os.path.join(workdir, "cluster"), nodes=(), scheduler=False)
    try:
        for rec in c.processes:
            if rec["role"] in ("fake-kubelet", "kube-controller-manager"):
                c.stop_process(rec)
        yield c
    finally:
        c.stop()


class _ExporterHandler(http.server.BaseHTTPRequestHandler):
    """GET /metrics: node_exporter CPU counters and ipmi temperatures for every node."""

    def do_GET(self):  # noqa: N802 (http.server's naming)
        body = self.server.exposition().encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class _ExporterServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

    def __init__(self, node_count):
        super().__init__(("127.0.0.1", 0), _ExporterHandler)
        self.node_count = node_count
        self.t0 = time.time() - 3600

    def exposition(self):
        """Counters that grow at a constant rate: node i uses (i % 5 + 1) / 10 of its cores."""
        elapsed = time.time() - self.t0
        lines = ["# TYPE node_cpu_seconds_total counter"]
        temps = ["# TYPE ipmi_temperature_celsius gauge"]
        for i in range(self.node_count):
            inst = f'instance="{node_name(i)}:9100"'
            busy = node_cpus(i) * ((i % 5) + 1) / 10
            lines.append(f'node_cpu_seconds_total{{{inst},cpu="0",mode="user"}} {elapsed * busy:.3f}')
            lines.append(f'node_cpu_seconds_total{{{inst},cpu="0",mode="idle"}} '
                         f'{elapsed * (node_cpus(i) - busy):.3f}')
            temps.append(f'ipmi_temperature_celsius{{{inst},id="1",name="Ambient"}} {20 + i % 8}')
            temps.append(f'ipmi_temperature_celsius{{{inst},id="2",name="CPU1"}} {40 + i % 30}')
            temps.append(f'ipmi_temperature_celsius{{{inst},id="3",name="CPU2"}} {42 + i % 30}')
        return "\n".join(lines + temps) + "\n"


class Telemetry:
    """The exporter (a thread of this process) and a real Prometheus scraping it."""

    def __init__(self, workdir, node_count, scrape_interval="2s"):
        self.dir = os.path.join(workdir, "prometheus")
        os.makedirs(self.dir, exist_ok=True)
        self.node_count = node_count
        self.scrape_interval = scrape_interval
        self.exporter = None
        self.proc = None

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        """Starts both and waits until Prometheus has CPU rates for every node."""
        self.exporter = _ExporterServer(self.node_count)
        threading.Thread(target=self.exporter.serve_forever, daemon=True).start()
        self.port, = cl.free_ports(1)
        config = os.path.join(self.dir, "prometheus.yml")
        with open(config, "w") as f:
            f.write(f"""global:
  scrape_interval: {self.scrape_interval}
  evaluation_interval: {self.scrape_interval}
scrape_configs:
  - job_name: bench-nodes
    honor_labels: true
    static_configs:
      - targets: ["127.0.0.1:{self.exporter.server_address[1]}"]
""")
        self.log_path = os.path.join(self.dir, "prometheus.log")
        with open(self.log_path, "w") as out:
            self.proc = subprocess.Popen([PROMETHEUS, f"--config.file={config}",
                                          f"--storage.tsdb.path={os.path.join(self.dir, 'data')}",
                                          f"--web.listen-address=127.0.0.1:{self.port}"],
                                         stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        query = 'count(sum by (instance) (rate(node_cpu_seconds_total{mode!="idle"}[1m])))'
        cl.wait_for(lambda: self._count(query) >= self.node_count, 120,
                    f"Prometheus CPU rates for {self.node_count} nodes", diagnose=lambda: cl.tail(self.log_path))

    def _count(self, promql):
        if self.proc.poll() is not None:
            raise cl.FatalWaitError(f"prometheus exited {self.proc.returncode}:\n{cl.tail(self.log_path)}")
        try:
            data = urllib.parse.urlencode({"query": promql}).encode()
            with urllib.request.urlopen(self.url + "/api/v1/query", data=data, timeout=5) as r:
                result = json.load(r)["data"]["result"]
            return int(float(result[0]["value"][1])) if result else 0
        except OSError:
            return 0

    def stop(self):
        """Stops Prometheus by PID and the exporter thread."""
        if self.proc is not None:
            cl.terminate_pid(self.proc.pid, popen=self.proc, name="prometheus")
            self.proc = None
        if self.exporter is not None:
            self.exporter.shutdown()
            self.exporter.server_close()
            self.exporter = None


def write_powerctl_config(path, prometheus_url, extra=""):
    """powerctl.yaml: CPU and temperatures from Prometheus (the built-in model's inputs)."""
    with open(path, "w") as f:
        f.write(f"""namespace: powerctl-bench
telemetry:
  cpuSource: prometheus
  temperatureSource: prometheus
  prometheusUrl: {prometheus_url}
  refreshInterval: 5s
{extra}""")
    return path


def powerctl_env():
    """The environment without POWERCTL_* variables, so only the given config counts."""
    return {k: v for k, v in os.environ.items() if not k.startswith("POWERCTL_")}


class ScheduleServer:
    """`powerctl schedule-server` on free loopback ports, stopped by PID."""

    def __init__(self, workdir, config, kubeconfig, tls_dir=None, threads=2, extra_args=()):
        self.workdir, self.config, self.kubeconfig, self.tls_dir = workdir, config, kubeconfig, tls_dir
        self.threads = threads
        self.extra_args = list(extra_args)  # e.g. --decision-events=false, for ablations
        self.proc = None
        self.port = self.ops_port = None

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    @property
    def pid(self):
        return self.proc.pid

    name = "schedule-server"

    def command(self):
        """The server's argv, on self.port and self.ops_port."""
        argv = [BINARY, "schedule-server", "-c", self.config, "--kubeconfig", self.kubeconfig,
                f"--listen=127.0.0.1:{self.port}", f"--ops-listen=127.0.0.1:{self.ops_port}",
                f"--threads={self.threads}"]
        if self.tls_dir:
            argv += [f"--tls-cert={self.tls_dir}/server.crt", f"--tls-key={self.tls_dir}/server.key",
                     f"--client-ca={self.tls_dir}/ca.crt"]
        else:
            argv.append("--insecure-http")
        return argv + self.extra_args

    def start(self, port=None):
        """Starts the server (plain HTTP unless tls_dir) and waits until /readyz has no degraded
        dependency other than the TASPolicy CRD, which these benchmarks do not install."""
        self.port = port or cl.free_ports(1)[0]
        self.ops_port, = cl.free_ports(1)
        self.log_path = os.path.join(self.workdir, f"{self.name}.log")
        with open(self.log_path, "w") as out:
            self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=powerctl_env())
        cl.wait_for(self._ready, 60, f"{self.name} ready", diagnose=self.diagnose)

    def _get(self, path):
        if self.proc.poll() is not None:
            raise cl.FatalWaitError(f"schedule-server exited {self.proc.returncode}:\n{cl.tail(self.log_path)}")
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ops_port}{path}", timeout=10) as r:
            return r.read().decode()

    def _ready(self):
        try:
            state = json.loads(self._get("/readyz"))
        except (OSError, ValueError):
            return False
        return [d for d in state.get("degraded", []) if d["name"] != "policies"] == []

    def diagnose(self):
        """/readyz and the end of the log, for wait failures."""
        try:
            readyz = self._get("/readyz")
        except OSError as e:
            readyz = str(e)
        return f"{readyz}\n{cl.tail(self.log_path)}"

    def wait_predicted(self, node, timeout=120):
        """Waits until the server predicts a power delta for `node`: its cluster cache has the
        node and the background telemetry refresh has its readings."""
        def predicted():
            doc = json.loads(self._get(f"/v1/predictions?cpu=500m&node={node}"))
            return all(n.get("deltaWatts") is not None for n in doc.get("nodes", [])) and doc.get("nodes")
        cl.wait_for(predicted, timeout, f"the extender's prediction for {node}", interval=0.5,
                    diagnose=self.diagnose)

    def memory(self):
        """VmRSS and VmHWM (peak RSS) in MiB, from /proc/PID/status."""
        out = {}
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    out[key] = round(int(value.split()[0]) / 1024, 1)
        return out

    def heap(self):
        """The allocator's view (powerctl_heap_bytes on /metrics), MiB by state."""
        out = {}
        for line in self._get("/metrics").splitlines():
            if line.startswith('powerctl_heap_bytes{state="'):
                state, _, value = line[len('powerctl_heap_bytes{state="'):].partition('"} ')
                out[state] = round(float(value) / 2**20, 1)
        return out

    def sample_memory(self, interval=0.25):
        """Context manager: samples VmRSS and the heap every `interval` s while open; .peak is
        then the sample with the highest VmRSS (with the heap figures of that moment)."""
        server = self

        class Sampler:
            peak = None

            def __enter__(self):
                self.stop = threading.Event()
                self.thread = threading.Thread(target=self.run, daemon=True)
                self.thread.start()
                return self

            def run(self):
                while not self.stop.wait(interval):
                    try:
                        sample = dict(server.memory(), **{f"heap_{k}": v for k, v in server.heap().items()})
                    except (OSError, ValueError):
                        continue
                    if self.peak is None or sample["VmRSS"] > self.peak["VmRSS"]:
                        self.peak = sample

            def __exit__(self, *exc):
                self.stop.set()
                self.thread.join()

        return Sampler()

    def reset_peak(self):
        """Starts VmHWM afresh at the current VmRSS (Linux: 5 > /proc/PID/clear_refs), so the
        next memory() reports the peak since now."""
        with open(f"/proc/{self.proc.pid}/clear_refs", "w") as f:
            f.write("5")

    def verb_latency(self):
        """Server-side mean seconds and count per verb, from the ops port's /metrics."""
        sums, counts = {}, {}
        for line in self._get("/metrics").splitlines():
            for suffix, target in (("_sum", sums), ("_count", counts)):
                prefix = "powerctl_extender_request_duration_seconds" + suffix + "{"
                if line.startswith(prefix):
                    labels, _, value = line[len(prefix):].partition("} ")
                    verb = dict(kv.split("=", 1) for kv in labels.split(","))["verb"].strip('"')
                    target[verb] = target.get(verb, 0) + float(value)
        return {v: {"count": int(counts[v]), "mean_ms": round(1000 * sums[v] / counts[v], 3)}
                for v in counts if counts[v]}

    def decision_records(self):
        """The decision records so far: decisions by result, and the Events written for them
        (several decisions share one when they are batched)."""
        out = {}
        for line in self._get("/metrics").splitlines():
            for prefix, key in (('powerctl_extender_decision_events_total{result="', None),
                                ("powerctl_extender_decision_event_writes_total", "events")):
                if line.startswith(prefix):
                    rest = line[len(prefix):]
                    if key is None:
                        key, _, rest = rest.partition('"}')
                    out[key] = int(float(rest.split()[-1]))
        return out

    def stop(self):
        """Stops the server by PID (SIGTERM, then SIGKILL after a timeout)."""
        if self.proc is not None:
            cl.terminate_pid(self.proc.pid, popen=self.proc, name=self.name)
            self.proc = None


class NoopExtender(ScheduleServer):
    """tests/bench/noop_extender on free loopback ports: the same server and wire code as
    schedule-server with no decision, for the floor of an extender's cost. Same TLS files, same
    readiness and /metrics reading; it has no cluster, telemetry or predictions."""

    name = "noop-extender"

    def command(self):
        argv = [NOOP_EXTENDER, "--port", str(self.port), "--ops-port", str(self.ops_port),
                "--threads", str(self.threads)]
        if self.tls_dir:
            argv += ["--tls-cert", f"{self.tls_dir}/server.crt", "--tls-key", f"{self.tls_dir}/server.key",
                     "--client-ca", f"{self.tls_dir}/ca.crt"]
        return argv

    def wait_predicted(self, node, timeout=120):
        """Nothing to wait for: it predicts nothing."""


@contextlib.contextmanager
def workdir(prefix, keep=False):
    """A temporary directory, removed afterwards unless keep."""
    d = tempfile.mkdtemp(prefix=prefix)
    try:
        yield d
    finally:
        if keep:
            log(f"kept {d}")
        else:
            shutil.rmtree(d, True)


def machine():
    """'N cores, <CPU model>' of this machine, for the results."""
    model = "unknown CPU"
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{os.cpu_count()} cores, {model}"


def cpu_seconds(pid):
    """CPU time (user + system, every thread) of process `pid` so far, in seconds, from
    /proc/PID/stat; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    # Fields after the command (which may hold spaces or parentheses): state is field 3,
    # utime 14 and stime 15.
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu_seconds(pid, name):
    """CPU seconds so far of the threads of process `pid` named `name` (/proc/PID/task/*/comm),
    e.g. the extender's decision writer, "powerctl-events"; None when there is none."""
    total, found = 0.0, False
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read().strip() != name:
                    continue
            found = True
            total += cpu_seconds(f"{pid}/task/{tid}") or 0.0
        except OSError:
            continue
    return total if found else None


def loadavg():
    """The 1-minute load average when the measurement started (other builds share the machine)."""
    return loadavgs()[0]


def loadavgs():
    """The 1-, 5- and 15-minute load averages, as `uptime` shows them."""
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]
