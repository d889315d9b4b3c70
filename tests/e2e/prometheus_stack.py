"""A real Prometheus scraping a real node_exporter, for end-to-end tests.

node_exporter (Debian's prometheus-node-exporter) serves this machine's real CPU counters and,
through its textfile collector, whatever ipmi_exporter series a test writes. Prometheus scrapes
it every second and relabels `instance` to a node name (`<node>:9100`), the way clusters map
scrape targets to Kubernetes nodes. A series written with a `node` label is kept only by that
node's job, so per-node values (write_node_metric) map to exactly one series per node. Both
listen on free loopback ports and are stopped by PID.
"""
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import cluster as cl

NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"
PROMETHEUS = "/usr/bin/prometheus"


def available():
    return os.access(NODE_EXPORTER, os.X_OK) and os.access(PROMETHEUS, os.X_OK)


class PrometheusStack:
    def __init__(self, node_name, *more_nodes):
        """One scrape job per node, all of the same node_exporter, relabelled to that node."""
        self.node_name = node_name
        self.node_names = [node_name, *more_nodes]
        self.dir = tempfile.mkdtemp(prefix="powerctl-prom-")
        self.textfile_dir = os.path.join(self.dir, "textfile")
        os.makedirs(self.textfile_dir)
        self.procs = []

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
        return f"http://127.0.0.1:{self.prometheus_port}"

    def write_ipmi(self, temperatures, watts=None):
        """temperatures: {"Ambient": 23, "CPU1": 41, ...}; replaced atomically."""
        lines = ["# TYPE ipmi_temperature_celsius gauge"]
        for i, (name, value) in enumerate(sorted(temperatures.items())):
            lines.append(f'ipmi_temperature_celsius{{id="{i + 1}",name="{name}"}} {value}')
        if watts is not None:
            lines += ["# TYPE ipmi_dcmi_power_consumption_watts gauge", f"ipmi_dcmi_power_consumption_watts {watts}"]
        tmp = os.path.join(self.textfile_dir, "ipmi.prom.tmp")
        with open(tmp, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(tmp, os.path.join(self.textfile_dir, "ipmi.prom"))

    def write_node_metric(self, metric, values):
        """values: {node: number}; series `metric{node="<node>"}` (a policy metric), replaced atomically."""
        lines = [f"# TYPE {metric} gauge"] + [f'{metric}{{node="{n}"}} {v}' for n, v in sorted(values.items())]
        tmp = os.path.join(self.textfile_dir, f"{metric}.prom.tmp")
        with open(tmp, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(tmp, os.path.join(self.textfile_dir, f"{metric}.prom"))

    def _spawn(self, name, argv):
        with open(os.path.join(self.dir, name + ".log"), "w") as log:
            p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.procs.append((name, p))
        return p

    def start(self):
        self.exporter_port, self.prometheus_port = cl.free_ports(2)
        self._spawn("node-exporter", [NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{self.exporter_port}",
                                      "--collector.disable-defaults", "--collector.cpu", "--collector.textfile",
                                      f"--collector.textfile.directory={self.textfile_dir}"])
        config = os.path.join(self.dir, "prometheus.yml")
        with open(config, "w") as f:
            f.write(f"""global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
""" + "".join(f"""  - job_name: node-{i}
    static_configs:
      - targets: ["127.0.0.1:{self.exporter_port}"]
    relabel_configs:
      - target_label: instance
        replacement: "{name}:9100"
    metric_relabel_configs:
      - source_labels: [node]
        regex: "|{name}"
        action: keep
""" for i, name in enumerate(self.node_names)) + """""")
        self._prometheus_argv = [PROMETHEUS, f"--config.file={config}",
                                 f"--storage.tsdb.path={os.path.join(self.dir, 'data')}",
                                 f"--web.listen-address=127.0.0.1:{self.prometheus_port}"]
        self._spawn("prometheus", self._prometheus_argv)
        cl.wait_for(self._ready, 60, "Prometheus /-/ready", diagnose=self.logs)

    def stop_prometheus(self):
        """Stops Prometheus only (node_exporter keeps running); start_prometheus() brings it
        back on the same port with the same data."""
        for name, p in [x for x in self.procs if x[0] == "prometheus"]:
            cl.terminate_pid(p.pid, popen=p, name=name)
            self.procs.remove((name, p))

    def start_prometheus(self):
        self._spawn("prometheus", self._prometheus_argv)
        cl.wait_for(self._ready, 60, "Prometheus /-/ready again", diagnose=self.logs)

    def _ready(self):
        for name, p in self.procs:
            if p.poll() is not None:
                raise AssertionError(f"{name} exited {p.returncode}:\n{self.logs()}")
        try:
            with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def query(self, promql):
        data = urllib.parse.urlencode({"query": promql}).encode()
        with urllib.request.urlopen(self.url + "/api/v1/query", data=data, timeout=5) as r:
            return json.load(r)["data"]["result"]

    def wait_for_series(self, promql, timeout=60):
        """Waits until `promql` returns at least one series (rate() needs two scrapes)."""
        return cl.wait_for(lambda: self.query(promql), timeout, f"Prometheus series {promql}",
                           diagnose=self.logs)

    def wait_for_cpu(self, *nodes, timeout=60):
        """Waits until each node's CPU rate (two scrapes of its job) can be computed."""
        for node in nodes or self.node_names:
            self.wait_for_series(
                f'rate(node_cpu_seconds_total{{mode="idle",instance="{node}:9100"}}[1m])', timeout)

    def logs(self):
        return "\n".join(f"--- {name}\n{cl.tail(os.path.join(self.dir, name + '.log'))}" for name, _ in self.procs)

    def stop(self):
        for name, p in reversed(self.procs):
            cl.terminate_pid(p.pid, popen=p, name=name)
        self.procs = []
        shutil.rmtree(self.dir, True)
