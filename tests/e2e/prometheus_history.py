"""A real Prometheus with a week of synthetic history, for tests that read the past.

The history is written as OpenMetrics text and backfilled with
`promtool tsdb create-blocks-from openmetrics`, which writes TSDB blocks for past
timestamps; Prometheus then serves them from --storage.tsdb.path. Each synthetic node has
ipmi_temperature_celsius sensors with known bounds, ipmi_dcmi_power_consumption_watts from
a known built-in-model curve (the exponent form, or 11 measured points) plus noise, and a
node_cpu_seconds_total idle counter, all with instance labels "<node>:<port>" so powerctl
maps them to the node by name. Prometheus runs on a free loopback port and is stopped by PID.
"""
import math
import os
import random
import subprocess
import time
import urllib.request

import cluster as cl

PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"
DAY = 86400
INTERVAL = 60  # seconds between samples


def available():
    return os.path.exists(PROMETHEUS) and os.path.exists(PROMTOOL)


class SyntheticNode:
    """sensors: (ambient, cpu1, cpu2) names; offset: added to every temperature.
    power_curve: 11 watts at 0 %, 10 %, ..., 100 % load, followed linearly instead of
    idle + (max - idle) * u^curve; load: utilisation at time t (default utilisation)."""

    def __init__(self, name, sensors=("Ambient", "CPU1", "CPU2"), offset=0.0, idle=110.0, max=380.0,
                 curve=0.9, power_curve=None, load=None):
        self.name, self.sensors, self.offset = name, sensors, offset
        self.idle, self.max, self.curve = idle, max, curve
        self.power_curve = power_curve
        self.load = load or utilisation

    def watts(self, u):
        """Power at utilisation u before noise."""
        if self.power_curve is None:
            return self.idle + (self.max - self.idle) * u ** self.curve
        x = u * 10
        i = min(int(x), 9)
        return self.power_curve[i] + (self.power_curve[i + 1] - self.power_curve[i]) * (x - i)

    # Bounds each temperature stays strictly inside and comes close to (offset included).
    def bounds(self):
        return {"ambient": (18.4 + self.offset, 34.2 + self.offset),
                "cpu1": (30.5 + self.offset, 80.5 + self.offset),
                "cpu2": (30.2 + self.offset, 70.2 + self.offset)}


def temperature(role, t):
    if role == 0:
        return 26.3 + 7.9 * math.sin(2 * math.pi * t / DAY)
    if role == 1:
        return 55.5 + 25 * math.sin(2 * math.pi * t / (3 * 3600))
    return 50.2 + 20 * math.cos(2 * math.pi * t / (5 * 3600))


def utilisation(t):
    """Constant for half an hour at a time, 0.05..0.95, the same for every node."""
    block = t // 1800
    h = (block * 6364136223846793005 + 1442695040888963407) % (1 << 64)
    return 0.05 + 0.9 * ((h >> 33) % 1000) / 999.0


def graduated_utilisation(t):
    """SPECpower's graduated load: an hour at each of 0 %, 10 %, ..., 100 % in turn, wobbling
    by up to 1 % (clamped to 0..1)."""
    block = t // 3600
    h = (block * 6364136223846793005 + 1442695040888963407) % (1 << 64)
    wobble = 0.01 * (((h >> 33) % 1001) / 500.0 - 1)
    return min(1.0, max(0.0, (block % 11) / 10 + wobble))


def write_gpu_exposition(out, first, last, dcgm=None, kepler=None):
    """GPU power as the exporters expose it, each device at a constant draw: `dcgm` maps a node to
    the watts of its devices as NVIDIA's dcgm-exporter shows them (DCGM_FI_DEV_POWER_USAGE in W,
    DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION in mJ since boot, DCGM_FI_DEV_GPU_UTIL; Hostname from
    NODE_NAME; with pod mapping a device used by a pod appears again with the pod's labels), and
    `kepler` the same for Kepler 0.11.4's kepler_node_gpu_watts and kepler_node_gpu_joules_total
    (a gauge and a counter per device, node_name). Labels and HELP texts are the exporters' own (etc/default-counters.csv of
    dcgm-exporter 4.5.3-4.8.2; power_collector.go of Kepler v0.11.4)."""
    def dcgm_labels(node, i, pod=None):
        labels = (f'gpu="{i}",UUID="GPU-{node}-{i:04d}",pci_bus_id="00000000:{0x3b + i:02X}:00.0",'
                  f'device="nvidia{i}",modelName="NVIDIA A100-SXM4-40GB",Hostname="{node}",'
                  f'DCGM_FI_DRIVER_VERSION="550.54.15",instance="10.244.9.{i + 10}:9400",job="dcgm-exporter"')
        if pod:
            labels += f',exported_pod="{pod}",exported_namespace="ml",exported_container="train"'
        return labels

    def dcgm_series(node, watts):
        # The first device is in use by a pod: dcgm-exporter repeats it with the pod's labels.
        for i, w in enumerate(watts):
            yield dcgm_labels(node, i), w
            if i == 0:
                yield dcgm_labels(node, i, pod="train-0"), w

    dcgm = dcgm or {}
    kepler = kepler or {}
    if dcgm:
        out.write("# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n")
        for node, watts in dcgm.items():
            for labels, w in dcgm_series(node, watts):
                for t in range(first, last + 1, INTERVAL):
                    out.write(f"DCGM_FI_DEV_POWER_USAGE{{{labels}}} {w:.3f} {t}\n")
        # A counter without the _total suffix: an OpenMetrics "unknown" keeps the name as scraped.
        out.write("# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).\n"
                  "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION unknown\n")
        for node, watts in dcgm.items():
            for labels, w in dcgm_series(node, watts):
                for t in range(first, last + 1, INTERVAL):
                    out.write(f"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{labels}}} {w * 1000 * (t - first + 86400):.0f} {t}\n")
        out.write("# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n")
        for node, watts in dcgm.items():
            for labels, w in dcgm_series(node, watts):
                for t in range(first, last + 1, INTERVAL):
                    out.write(f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} {min(100, w / 4):.0f} {t}\n")
    def kepler_labels(node, i):
        return (f'gpu="{i}",gpu_name="NVIDIA H100 80GB HBM3",gpu_uuid="GPU-{node}-{i:04d}",'
                f'node_name="{node}",vendor="nvidia",instance="10.244.7.3:28282",job="kepler"')

    if kepler:
        out.write("# HELP kepler_node_gpu_watts Total GPU power consumption in watts\n"
                  "# TYPE kepler_node_gpu_watts gauge\n")
        for node, watts in kepler.items():
            for i, w in enumerate(watts):
                for t in range(first, last + 1, INTERVAL):
                    out.write(f"kepler_node_gpu_watts{{{kepler_labels(node, i)}}} {w:.3f} {t}\n")
        out.write("# HELP kepler_node_gpu_joules Energy consumption of gpu at node level in joules\n"
                  "# TYPE kepler_node_gpu_joules counter\n")
        for node, watts in kepler.items():
            for i, w in enumerate(watts):
                for t in range(first, last + 1, INTERVAL):
                    out.write(f"kepler_node_gpu_joules_total{{{kepler_labels(node, i)}}} "
                              f"{w * (t - first) + 1000:.3f} {t}\n")


def write_openmetrics(path, nodes, first, last, seed=1234, gpus=None):
    rng = random.Random(seed)
    with open(path, "w") as out:
        for n in nodes:
            for role, sensor in enumerate(n.sensors):
                for t in range(first, last + 1, INTERVAL):
                    out.write(f'ipmi_temperature_celsius{{instance="{n.name}:9290",job="ipmi",'
                              f'name="{sensor}",id="{role + 1}"}} {temperature(role, t) + n.offset:.4f} {t}\n')
            for t in range(first, last + 1, INTERVAL):
                watts = n.watts(n.load(t)) + rng.gauss(0, 3)
                out.write(f'ipmi_dcmi_power_consumption_watts{{instance="{n.name}:9290",job="ipmi"}} '
                          f'{watts:.3f} {t}\n')
            idle_seconds = 1000.0
            for t in range(first, last + 1, INTERVAL):
                idle_seconds += (1 - n.load(t)) * INTERVAL
                out.write(f'node_cpu_seconds_total{{instance="{n.name}:9100",job="node",cpu="0",'
                          f'mode="idle"}} {idle_seconds:.3f} {t}\n')
        write_gpu_exposition(out, first, last, **(gpus or {}))
        out.write("# EOF\n")


class BackfilledPrometheus:
    """Prometheus serving `days` of history for `nodes` that ends about now."""

    def __init__(self, workdir, nodes, days=7, gpus=None):
        self.dir = workdir
        self.nodes = nodes
        self.gpus = gpus  # write_gpu_exposition's dcgm= and kepler=
        self.days = days
        self.proc = None
        self.url = None

    def start(self, timeout=120.0):
        data = os.path.join(self.dir, "data")
        os.makedirs(data, exist_ok=True)
        last = int(time.time()) // INTERVAL * INTERVAL - 2 * INTERVAL
        # Starts just inside a window of `days` that ends now.
        self.first = last - self.days * DAY + 10 * INTERVAL
        self.last = last
        history = os.path.join(self.dir, "history.om")
        write_openmetrics(history, self.nodes, self.first, last, gpus=self.gpus)
        r = subprocess.run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", history, data],
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise RuntimeError(f"promtool failed:\n{r.stdout}\n{r.stderr}")
        os.remove(history)
        config = os.path.join(self.dir, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1m\n")
        (port,) = cl.free_ports(1)
        self.url = f"http://127.0.0.1:{port}"
        self.log = os.path.join(self.dir, "prometheus.log")
        with open(self.log, "w") as logf:
            self.proc = subprocess.Popen([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={data}",
                                          f"--web.listen-address=127.0.0.1:{port}"],
                                         stdout=logf, stderr=subprocess.STDOUT)
        cl.wait_for(self._ready, timeout=timeout, what="Prometheus /-/ready",
                    diagnose=lambda: cl.tail(self.log))
        return self

    def _ready(self):
        if self.proc.poll() is not None:
            raise cl.FatalWaitError(f"Prometheus exited {self.proc.returncode}:\n{cl.tail(self.log)}")
        try:
            with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def stop(self):
        if self.proc is not None:
            cl.terminate_pid(self.proc.pid, popen=self.proc, name="prometheus")
            self.proc = None
