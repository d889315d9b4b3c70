#!/usr/bin/python3
"""Throw-away Kubernetes 1.20 control plane for powerctl's end-to-end tests.

Starts etcd, kube-apiserver, kube-controller-manager and (optionally) the
default kube-scheduler on loopback, creates Node objects and keeps them alive
with a fake kubelet (there is no real kubelet: pods bound to managed nodes are
simply reported Running/Ready). Python 3 standard library only.

CLI (run with /usr/bin/python3):

    cluster.py up      --dir DIR [--bin-dir D] [--nodes a,b:8:32Gi] [--scheduler]
    cluster.py down    --dir DIR
    cluster.py status  --dir DIR
    cluster.py kubelet --dir DIR [--nodes a,b] [--label KEY]

Python API:

    from cluster import Cluster
    with Cluster.start("/tmp/c", nodes=["node-a", "node-b"], scheduler=True) as c:
        status, body = c.api("GET", "/api/v1/nodes")

See README.md next to this file.
"""

import argparse
import base64
import contextlib
import fcntl
import hashlib
import http.client
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.parse

K8S_VERSION = "1.20.2"
MANAGED_LABEL = "powerctl.test/fake-kubelet"
# Pod annotations understood by the fake kubelet.
ANNOTATION_PHASE = "powerctl.test/phase"   # "Succeeded" / "Failed": pod terminates
ANNOTATION_READY = "powerctl.test/ready"   # "false": pod Running but never Ready
# Node annotation: "false" makes the fake kubelet report the node Ready=False.
ANNOTATION_NODE_READY = "powerctl.test/node-ready"
NODE_TAINTS_TO_CLEAR = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
SA_ISSUER = "https://kubernetes.default.svc.cluster.local"
API_AUDIENCES = (SA_ISSUER,)
SERVICE_CIDR = "10.96.0.0/16"
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
THIS_FILE = os.path.abspath(__file__)
DEFAULT_NODE = {"cpu": "4", "memory": "16Gi", "pods": "110"}


def log(msg):
    print(f"cluster: {msg}", file=sys.stderr, flush=True)


def default_bin_dir():
    """$POWERCTL_K8S_BIN, else the cache of build-kubernetes.sh:
    $POWERCTL_CACHE (default /var/cache/powerctl)/kubernetes-1.20.2-reflect2/bin."""
    env = os.environ.get("POWERCTL_K8S_BIN")
    if env:
        return env
    cache = os.environ.get("POWERCTL_CACHE", "/var/cache/powerctl")
    return os.path.join(cache, f"kubernetes-{K8S_VERSION}-reflect2", "bin")


class ClusterError(Exception):
    pass


class ApiError(ClusterError):
    def __init__(self, method, path, status, body):
        self.method, self.path, self.status, self.body = method, path, status, body
        msg = body.get("message") if isinstance(body, dict) else body
        super().__init__(f"{method} {path} -> HTTP {status}: {msg}")


class WaitTimeout(ClusterError, TimeoutError):
    pass


def now_rfc3339():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def decision_label(pod_uid):
    """The label of the extender's decision Events that hold a decision about this pod."""
    return "powerctl.io/pod-" + pod_uid


def recorded_decisions(events, pod_uid, verb=None):
    """[(event, decision)] about the pod with this uid in `events` (the extender's
    PowerDecisions Events: each holds a batch of pods' decisions in annotation
    powerctl.io/decisions), oldest first; only `verb`'s ("prioritize", "filter") when given."""
    out = []
    for event in events:
        if event.get("reason") != "PowerDecisions":
            continue
        text = event["metadata"].get("annotations", {}).get("powerctl.io/decisions", "[]")
        for d in json.loads(text):
            if d.get("pod", {}).get("uid") == pod_uid and verb in (None, d.get("verb")):
                out.append((event, d))
    out.sort(key=lambda pair: pair[1].get("at", 0))
    return out


def wait_for(predicate, timeout=60.0, what="condition", interval=0.2, diagnose=None):
    """Polls predicate() until it returns something truthy and returns that.

    Exceptions raised by the predicate count as "not yet", except
    FatalWaitError, which aborts the wait at once. On timeout raises
    WaitTimeout naming `what`, the last value/exception and, if given, the
    text returned by diagnose().
    """
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            value = predicate()
            if value:
                return value
            last = f"last value: {value!r}"
        except FatalWaitError:
            raise
        except Exception as e:  # noqa: BLE001 - reported on timeout
            last = f"last error: {type(e).__name__}: {e}"
        if time.monotonic() >= deadline:
            extra = ""
            if diagnose is not None:
                try:
                    extra = "\n" + diagnose()
                except Exception as e:  # noqa: BLE001
                    extra = f"\n(diagnose failed: {e})"
            raise WaitTimeout(f"timed out after {timeout:g}s waiting for {what} ({last}){extra}")
        time.sleep(interval)


class FatalWaitError(ClusterError):
    """Raised from a wait_for predicate to abort waiting at once."""


# ---------------------------------------------------------------------------
# Processes

def free_ports(n=1):
    """n distinct free TCP ports on 127.0.0.1 (all held open while choosing)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def proc_start_time(pid):
    """Start time (clock ticks since boot) of pid, or None if it does not exist."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = data[data.rindex(")") + 2:].split()
    return int(fields[19])


def pid_alive(pid, start_time=None):
    """True if pid runs (zombies count as dead) and, if given, started at start_time."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return False
    fields = data[data.rindex(")") + 2:].split()
    if fields[0] in ("Z", "X", "x"):
        return False
    return start_time is None or int(fields[19]) == int(start_time)


def tail(path, lines=40):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            text = f.read().decode("utf-8", "replace")
    except OSError as e:
        return f"(cannot read {path}: {e})"
    return "\n".join(text.splitlines()[-lines:])


def terminate_pid(pid, start_time=None, timeout=10.0, popen=None, name=""):
    """SIGTERM, wait up to timeout, then SIGKILL. Returns True if it had to kill."""
    def alive():
        if popen is not None:
            return popen.poll() is None
        return pid_alive(pid, start_time)

    if not alive():
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    killed = False
    if alive():
        log(f"{name or pid} (pid {pid}) ignored SIGTERM for {timeout:g}s; sending SIGKILL")
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        killed = True
        deadline = time.monotonic() + 5
        while alive() and time.monotonic() < deadline:
            time.sleep(0.05)
    if popen is not None:
        with contextlib.suppress(Exception):
            popen.wait(timeout=1)
    return killed


# ---------------------------------------------------------------------------
# PKI (openssl CLI)

_OPENSSL_CNF = """\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = powerctl-e2e
[v3_ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,digitalSignature,keyEncipherment,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[v3_server]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth,clientAuth
subjectAltName = @sans
[v3_client]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = clientAuth
"""


def _openssl(*args, cwd=None):
    r = subprocess.run(["openssl", *args], cwd=cwd, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise ClusterError(f"openssl {' '.join(args)} failed ({r.returncode}):\n{r.stderr.strip()}")
    return r.stdout


def _genkey(path):
    _openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", path)
    os.chmod(path, 0o600)


def _subject(cn, orgs=()):
    def esc(s):
        return s.replace("\\", "\\\\").replace("/", "\\/")
    return "".join(f"/O={esc(o)}" for o in orgs) + f"/CN={esc(cn)}"


def _sign(pki, name, cn, orgs, ext_section, sans=()):
    key = os.path.join(pki, f"{name}.key")
    csr = os.path.join(pki, f"{name}.csr")
    crt = os.path.join(pki, f"{name}.crt")
    cnf = os.path.join(pki, f"{name}.cnf")
    text = _OPENSSL_CNF
    if sans:
        text += "[sans]\n" + "".join(
            f"{'IP' if kind == 'IP' else 'DNS'}.{i} = {value}\n"
            for i, (kind, value) in enumerate(sans, 1))
    with open(cnf, "w") as f:
        f.write(text)
    _genkey(key)
    _openssl("req", "-new", "-config", cnf, "-key", key, "-subj", _subject(cn, orgs), "-out", csr)
    _openssl("x509", "-req", "-in", csr, "-CA", os.path.join(pki, "ca.crt"),
             "-CAkey", os.path.join(pki, "ca.key"), "-set_serial", str(secrets.randbits(63)),
             "-days", "3650", "-sha256", "-extfile", cnf, "-extensions", ext_section, "-out", crt)
    os.unlink(csr)
    return crt, key


def make_pki(pki):
    """CA, apiserver serving cert and service-account key pair in directory pki."""
    os.makedirs(pki, exist_ok=True)
    cnf = os.path.join(pki, "ca.cnf")
    with open(cnf, "w") as f:
        f.write(_OPENSSL_CNF)
    ca_key, ca_crt = os.path.join(pki, "ca.key"), os.path.join(pki, "ca.crt")
    _genkey(ca_key)
    _openssl("req", "-x509", "-new", "-config", cnf, "-extensions", "v3_ca", "-key", ca_key,
             "-subj", "/CN=powerctl-e2e-ca", "-days", "3650", "-sha256", "-out", ca_crt)
    sans = [("IP", "127.0.0.1"), ("IP", "10.96.0.1"), ("DNS", "localhost"),
            ("DNS", "kubernetes"), ("DNS", "kubernetes.default"),
            ("DNS", "kubernetes.default.svc"), ("DNS", "kubernetes.default.svc.cluster.local")]
    _sign(pki, "apiserver", "kube-apiserver", (), "v3_server", sans)
    # client certificate the aggregator presents to extension apiservers
    _sign(pki, "front-proxy-client", "front-proxy-client", (), "v3_client")
    sa_key, sa_pub = os.path.join(pki, "sa.key"), os.path.join(pki, "sa.pub")
    _genkey(sa_key)
    _openssl("pkey", "-in", sa_key, "-pubout", "-out", sa_pub)


# ---------------------------------------------------------------------------
# REST

class RestClient:
    def __init__(self, server, ca, token=None, timeout=30.0):
        u = urllib.parse.urlsplit(server)
        self.server, self.host, self.port = server, u.hostname, u.port or 443
        self.ca, self.token, self.timeout = ca, token, timeout
        self._contexts = {}

    def _context(self, cert=None, key=None):
        k = (cert, key)
        ctx = self._contexts.get(k)
        if ctx is None:
            ctx = ssl.create_default_context(cafile=self.ca)
            if cert:
                ctx.load_cert_chain(cert, key)
            self._contexts[k] = ctx
        return ctx

    def api(self, method, path, body=None, token=None, content_type=None, query=None,
            cert=None, key=None, timeout=None, headers=None):
        """One HTTPS request. Returns (status, parsed JSON or text).

        token=None uses the client's default (admin) token; token="" sends none
        (anonymous or client-certificate auth). cert/key: client certificate.
        PATCH defaults to a JSON merge patch; a list body to a JSON patch.
        """
        if query:
            path += ("&" if "?" in path else "?") + urllib.parse.urlencode(query)
        hdrs = {"Accept": "application/json"}
        tok = self.token if token is None else token
        if tok and not cert:
            hdrs["Authorization"] = f"Bearer {tok}"
        data = None
        if body is not None:
            if isinstance(body, (bytes, str)):
                data = body.encode() if isinstance(body, str) else body
            else:
                data = json.dumps(body).encode()
            if content_type is None:
                if method.upper() == "PATCH":
                    content_type = ("application/json-patch+json" if isinstance(body, list)
                                    else "application/merge-patch+json")
                else:
                    content_type = "application/json"
            hdrs["Content-Type"] = content_type
        if headers:
            hdrs.update(headers)
        conn = http.client.HTTPSConnection(self.host, self.port, context=self._context(cert, key),
                                           timeout=timeout or self.timeout)
        try:
            conn.request(method.upper(), path, body=data, headers=hdrs)
            resp = conn.getresponse()
            raw = resp.read()
            status = resp.status
        finally:
            conn.close()
        text = raw.decode("utf-8", "replace")
        try:
            parsed = json.loads(text) if text else None
        except ValueError:
            parsed = text
        return status, parsed

    def request(self, method, path, body=None, ok=(200, 201, 202), **kw):
        """Like api() but returns only the body and raises ApiError on other statuses."""
        status, data = self.api(method, path, body, **kw)
        if status not in ok:
            raise ApiError(method, path, status, data)
        return data


# ---------------------------------------------------------------------------
# Kubeconfig

def _q(s):
    return json.dumps(str(s))  # a JSON string is a valid YAML double-quoted scalar


def write_kubeconfig(path, server, ca, token=None, client_cert=None, client_key=None,
                     user="user", namespace=None, cluster_name="powerctl-e2e", embed=False):
    """Writes a kubeconfig (YAML). embed=True inlines the CA and client
    certificate as *-data fields instead of referring to the files."""
    def ref(field, file_path):
        if embed:
            with open(file_path, "rb") as f:
                return f"{field}-data: {_q(base64.b64encode(f.read()).decode())}"
        return f"{field}: {_q(os.path.abspath(file_path))}"

    lines = [
        "apiVersion: v1",
        "kind: Config",
        "clusters:",
        f"- name: {_q(cluster_name)}",
        "  cluster:",
        f"    server: {_q(server)}",
        "    " + ref("certificate-authority", ca),
        "users:",
        f"- name: {_q(user)}",
        "  user:",
    ]
    if token:
        lines.append(f"    token: {_q(token)}")
    if client_cert:
        lines.append("    " + ref("client-certificate", client_cert))
        lines.append("    " + ref("client-key", client_key))
    if not token and not client_cert:
        lines[-1] = "  user: {}"
    lines += [
        "contexts:",
        f"- name: {_q(user + '@' + cluster_name)}",
        "  context:",
        f"    cluster: {_q(cluster_name)}",
        f"    user: {_q(user)}",
    ]
    if namespace:
        lines.append(f"    namespace: {_q(namespace)}")
    lines.append(f"current-context: {_q(user + '@' + cluster_name)}")
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return path


# ---------------------------------------------------------------------------
# Node helpers

def _hash16(s):
    return int.from_bytes(hashlib.sha256(s.encode()).digest()[:2], "big")


def node_ip(name):
    h = _hash16(name)
    return f"10.1.{h >> 8}.{(h & 0xFF) % 254 + 1}"


def pod_ip(uid):
    h = _hash16(uid)
    return f"10.244.{h >> 8}.{(h & 0xFF) % 254 + 1}"


def node_manifest(name, cpu="4", memory="16Gi", pods="110", labels=None, annotations=None,
                  taints=None, managed=True, capacity=None, unschedulable=False):
    lab = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
           "kubernetes.io/arch": "amd64"}
    if managed:
        lab[MANAGED_LABEL] = "true"
    lab.update(labels or {})
    cap = {"cpu": str(cpu), "memory": str(memory), "pods": str(pods),
           "ephemeral-storage": "100Gi"}
    cap.update({k: str(v) for k, v in (capacity or {}).items()})
    node = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": lab, "annotations": dict(annotations or {})},
        "spec": {},
        "status": {
            "capacity": cap, "allocatable": dict(cap),
            "addresses": [{"type": "InternalIP", "address": node_ip(name)},
                          {"type": "Hostname", "address": name}],
            "nodeInfo": _node_info(name),
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        },
    }
    if taints:
        node["spec"]["taints"] = list(taints)
    if unschedulable:
        node["spec"]["unschedulable"] = True
    return node


def _node_info(name):
    return {"machineID": hashlib.md5(name.encode()).hexdigest(),
            "systemUUID": hashlib.md5(("uuid" + name).encode()).hexdigest(),
            "bootID": hashlib.md5(("boot" + name).encode()).hexdigest(),
            "kernelVersion": "5.10.0-powerctl-e2e", "osImage": "powerctl fake kubelet",
            "containerRuntimeVersion": "fake://1.0", "kubeletVersion": f"v{K8S_VERSION}",
            "kubeProxyVersion": f"v{K8S_VERSION}", "operatingSystem": "linux",
            "architecture": "amd64"}


def node_is_ready(node):
    conds = {c.get("type"): c for c in node.get("status", {}).get("conditions") or []}
    ready = conds.get("Ready", {}).get("status") == "True"
    tainted = any(t.get("key") in NODE_TAINTS_TO_CLEAR for t in node.get("spec", {}).get("taints") or [])
    return ready and not tainted


def parse_node_spec(item):
    """'name', 'name:cpu', 'name:cpu:memory', 'name:cpu:memory:pods', or a dict."""
    if isinstance(item, dict):
        spec = dict(DEFAULT_NODE)
        spec.update(item)
        return spec
    parts = item.split(":")
    spec = dict(DEFAULT_NODE, name=parts[0])
    for k, v in zip(("cpu", "memory", "pods"), parts[1:]):
        if v:
            spec[k] = v
    return spec


# ---------------------------------------------------------------------------
# Fake kubelet

class FakeKubelet:
    """Keeps managed nodes Ready and reports their pods Running/Ready.

    Managed nodes: names given explicitly plus any node labelled
    `<label>=true`. Pods with a deletionTimestamp on managed nodes are
    finalized (deleted with gracePeriodSeconds=0).
    """

    def __init__(self, client, nodes=(), label=MANAGED_LABEL, interval=0.3, heartbeat=10.0,
                 watch_pid=None, watch_start_time=None, find_apiserver=None):
        self.client, self.names, self.label = client, set(nodes), label
        # () -> (pid, start_time) of the live kube-apiserver, or None: followed across restarts.
        self.find_apiserver = find_apiserver
        self.interval, self.heartbeat = interval, heartbeat
        self.watch_pid, self.watch_start_time = watch_pid, watch_start_time
        self._beats = {}
        self._deleting = {}
        self._errors = {}

    def _warn(self, key, msg):
        # rate-limit repeated identical complaints
        now = time.monotonic()
        last = self._errors.get((key, msg))
        if last is None or now - last > 30:
            self._errors[(key, msg)] = now
            log(f"kubelet: {msg}")

    def managed(self, node):
        md = node.get("metadata", {})
        return md.get("name") in self.names or (md.get("labels") or {}).get(self.label) == "true"

    def run_forever(self):
        log(f"kubelet: managing {sorted(self.names) or 'no named nodes'} "
            f"plus nodes labelled {self.label}=true")
        dead_since = None
        while True:
            if self.watch_pid:
                if pid_alive(self.watch_pid, self.watch_start_time):
                    dead_since = None
                elif self.find_apiserver and self.find_apiserver():
                    self.watch_pid, self.watch_start_time = self.find_apiserver()
                    log(f"kubelet: following the restarted kube-apiserver (pid {self.watch_pid})")
                    dead_since = None
                elif dead_since is None:
                    dead_since = time.monotonic()
                elif time.monotonic() - dead_since > (30 if self.find_apiserver else 5):
                    log("kubelet: kube-apiserver is gone; exiting")
                    return
            try:
                self.sync_once()
            except Exception as e:  # noqa: BLE001 - keep looping
                self._warn("sync", f"sync failed: {type(e).__name__}: {e}")
            time.sleep(self.interval)

    def sync_once(self):
        nodes = self.client.request("GET", "/api/v1/nodes")["items"]
        managed = {}
        for n in nodes:
            if self.managed(n):
                managed[n["metadata"]["name"]] = n
                try:
                    self._sync_node(n)
                except Exception as e:  # noqa: BLE001
                    self._warn(n["metadata"]["name"], f"node {n['metadata']['name']}: {e}")
        for name in list(self._beats):
            if name not in managed:
                del self._beats[name]
        if not managed:
            return
        pods = self.client.request("GET", "/api/v1/pods",
                                   query={"fieldSelector": "spec.nodeName!="})["items"]
        seen = set()
        for p in pods:
            node = managed.get(p.get("spec", {}).get("nodeName"))
            if node is None:
                continue
            seen.add(p["metadata"]["uid"])
            try:
                self._sync_pod(p, node)
            except Exception as e:  # noqa: BLE001
                md = p["metadata"]
                self._warn(md["uid"], f"pod {md['namespace']}/{md['name']}: {e}")
        for uid in list(self._deleting):
            if uid not in seen:
                del self._deleting[uid]

    def _sync_node(self, node):
        name = node["metadata"]["name"]
        status = node.get("status") or {}
        now = time.monotonic()
        conds = status.get("conditions") or []
        by_type = {c.get("type"): c for c in conds}
        ann = node["metadata"].get("annotations") or {}
        want_ready = ann.get(ANNOTATION_NODE_READY, "true").lower() != "false"
        ready = by_type.get("Ready", {}).get("status") == "True"
        if (ready != want_ready or not status.get("capacity") or not status.get("allocatable")
                or now - self._beats.get(name, 0) >= self.heartbeat):
            ts = now_rfc3339()
            want = {
                "Ready": ("True", "KubeletReady", "fake kubelet is posting ready status")
                if want_ready else
                ("False", "KubeletNotReady", f"annotation {ANNOTATION_NODE_READY}=false"),
                "MemoryPressure": ("False", "KubeletHasSufficientMemory", "fake"),
                "DiskPressure": ("False", "KubeletHasNoDiskPressure", "fake"),
                "PIDPressure": ("False", "KubeletHasSufficientPID", "fake"),
            }
            new = []
            for c in conds:
                if c.get("type") not in want:
                    new.append(c)
            for ctype, (st, reason, msg) in want.items():
                old = by_type.get(ctype, {})
                new.append({"type": ctype, "status": st, "reason": reason, "message": msg,
                            "lastHeartbeatTime": ts,
                            "lastTransitionTime": (old.get("lastTransitionTime") or ts)
                            if old.get("status") == st else ts})
            patch = {"conditions": new}
            if not status.get("capacity"):
                cap = node_manifest(name)["status"]["capacity"]
                patch["capacity"] = cap
            if not status.get("allocatable"):
                patch["allocatable"] = patch.get("capacity") or status.get("capacity")
            if not status.get("addresses"):
                patch["addresses"] = [{"type": "InternalIP", "address": node_ip(name)},
                                      {"type": "Hostname", "address": name}]
            if not (status.get("nodeInfo") or {}).get("kubeletVersion"):
                patch["nodeInfo"] = _node_info(name)
            self.client.request("PATCH", f"/api/v1/nodes/{name}/status", {"status": patch})
            self._renew_lease(node)
            self._beats[name] = now
        taints = ((node.get("spec") or {}).get("taints") or []) if want_ready else []
        ops = []
        for i in reversed(range(len(taints))):
            if taints[i].get("key") in NODE_TAINTS_TO_CLEAR:
                ops += [{"op": "test", "path": f"/spec/taints/{i}/key", "value": taints[i]["key"]},
                        {"op": "remove", "path": f"/spec/taints/{i}"}]
        if ops:
            status_code, body = self.client.api("PATCH", f"/api/v1/nodes/{name}", ops)
            if status_code not in (200, 409, 422):
                raise ApiError("PATCH", f"/api/v1/nodes/{name}", status_code, body)

    def _renew_lease(self, node):
        name = node["metadata"]["name"]
        renew = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + ".000000Z"
        base = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
        code, body = self.client.api("POST", base, {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "ownerReferences": [{
                "apiVersion": "v1", "kind": "Node", "name": name,
                "uid": node["metadata"]["uid"]}]},
            "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": renew}})
        if code == 409:
            code, body = self.client.api("PATCH", f"{base}/{name}", {"spec": {"renewTime": renew}})
        if code not in (200, 201, 404):
            self._warn(name, f"lease {name}: HTTP {code}: {body}")

    def _sync_pod(self, pod, node):
        md, spec, st = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
        ns, name, uid = md["namespace"], md["name"], md["uid"]
        path = f"/api/v1/namespaces/{ns}/pods/{name}"
        if md.get("deletionTimestamp"):
            last = self._deleting.get(uid)
            if last is None or time.monotonic() - last > 5:
                self._deleting[uid] = time.monotonic()
                code, body = self.client.api("DELETE", path, {
                    "apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                    "preconditions": {"uid": uid}})
                if code not in (200, 202, 404, 409):
                    raise ApiError("DELETE", path, code, body)
            return
        phase = st.get("phase")
        if phase in ("Succeeded", "Failed"):
            return
        ann = md.get("annotations") or {}
        target = ann.get(ANNOTATION_PHASE, "Running")
        if target not in ("Running", "Succeeded", "Failed"):
            target = "Running"
        ready = target == "Running" and ann.get(ANNOTATION_READY, "true").lower() != "false"
        containers = spec.get("containers") or []
        cstat = {c.get("name"): c for c in st.get("containerStatuses") or []}
        conds = {c.get("type"): c for c in st.get("conditions") or []}
        if (phase == target and st.get("podIP")
                and (conds.get("Ready", {}).get("status") == "True") == ready
                and all(c["name"] in cstat and bool(cstat[c["name"]].get("ready")) == ready
                        for c in containers)):
            return
        ts = now_rfc3339()
        started = st.get("startTime") or ts

        def cond(ctype, value, reason=None):
            value = "True" if value else "False"
            old = conds.get(ctype, {})
            c = {"type": ctype, "status": value, "lastProbeTime": None,
                 "lastTransitionTime": ((old.get("lastTransitionTime") or ts)
                                        if old.get("status") == value else ts)}
            if reason:
                c["reason"] = reason
            return c

        def container_status(c, init=False):
            cid = f"fake://{uid}/{c['name']}"
            s = {"name": c["name"], "image": c.get("image", ""), "imageID": "",
                 "containerID": cid, "restartCount": 0}
            if init or target != "Running":
                code = 1 if (target == "Failed" and not init) else 0
                s.update(ready=False, started=False, state={"terminated": {
                    "exitCode": code, "reason": "Completed" if code == 0 else "Error",
                    "startedAt": started, "finishedAt": ts, "containerID": cid}})
            else:
                s.update(ready=ready, started=True, state={"running": {"startedAt": started}})
            return s

        reason = None if target == "Running" else "PodCompleted"
        hostip = next((a["address"] for a in (node.get("status") or {}).get("addresses") or []
                       if a.get("type") == "InternalIP"), node_ip(node["metadata"]["name"]))
        ip = st.get("podIP") or (hostip if spec.get("hostNetwork") else pod_ip(uid))
        patch = {"status": {
            "phase": target,
            "conditions": [cond("Initialized", True), cond("Ready", ready, reason),
                           cond("ContainersReady", ready, reason), cond("PodScheduled", True)],
            "hostIP": hostip, "podIP": ip, "podIPs": [{"ip": ip}], "startTime": started,
            "containerStatuses": [container_status(c) for c in containers],
            "qosClass": st.get("qosClass"),
        }}
        if spec.get("initContainers"):
            patch["status"]["initContainerStatuses"] = [
                container_status(c, init=True) for c in spec["initContainers"]]
        if patch["status"]["qosClass"] is None:
            del patch["status"]["qosClass"]
        code, body = self.client.api("PATCH", f"{path}/status", patch)
        if code not in (200, 404, 409):
            raise ApiError("PATCH", f"{path}/status", code, body)


# ---------------------------------------------------------------------------
# Cluster

class Cluster:
    """A control plane described by DIR/state.json.

    Cluster.start(...) creates one (and owns it: leaving a `with` block stops
    it); Cluster.attach(dir) uses a running one (leaving `with` leaves it up).
    """

    def __init__(self, dir):
        self.dir = os.path.abspath(dir)
        self.state = {}
        self.owned = False
        self._popens = {}
        self.client = None

    # -- paths / state -----------------------------------------------------
    @property
    def state_path(self):
        return os.path.join(self.dir, "state.json")

    @property
    def kubeconfig(self):
        return self.state.get("kubeconfig") or os.path.join(self.dir, "admin.kubeconfig")

    @property
    def server(self):
        return self.state["server"]

    @property
    def ca(self):
        return self.state["ca"]

    @property
    def token(self):
        return self.state["admin_token"]

    @property
    def nodes(self):
        return list(self.state.get("nodes") or [])

    @property
    def processes(self):
        return list(self.state.get("processes") or [])

    def pids(self):
        return [p["pid"] for p in self.processes]

    @contextlib.contextmanager
    def _locked(self):
        os.makedirs(self.dir, exist_ok=True)
        with open(os.path.join(self.dir, "state.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _read_state(self):
        with open(self.state_path) as f:
            return json.load(f)

    def _write_state(self):
        tmp = f"{self.state_path}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump(self.state, f, indent=2, sort_keys=True)
            f.write("\n")
        os.replace(tmp, self.state_path)

    def _update_state(self, fn):
        with self._locked():
            if os.path.exists(self.state_path):
                disk = self._read_state()
                # keep process records other writers added
                mine = {p["pid"] for p in self.state.get("processes", [])}
                extra = [p for p in disk.get("processes", []) if p["pid"] not in mine]
                self.state.setdefault("processes", []).extend(extra)
            fn(self.state)
            self._write_state()

    # -- construction --------------------------------------------------------
    @classmethod
    def attach(cls, dir, timeout=10.0):
        c = cls(dir)
        if not os.path.exists(c.state_path):
            raise ClusterError(f"no cluster in {c.dir} (missing state.json)")
        c.state = c._read_state()
        if c.state.get("stopped"):
            raise ClusterError(f"cluster in {c.dir} was stopped")
        c.client = RestClient(c.server, c.ca, c.token)
        wait_for(lambda: c.api("GET", "/readyz")[0] == 200, timeout, f"kube-apiserver {c.server} /readyz")
        return c

    @classmethod
    def start(cls, dir=None, nodes=(), scheduler=False, bin_dir=None, timeout=120.0):
        """Starts a cluster in dir (a new temp dir if None). nodes: names,
        'name:cpu:memory:pods' strings or dicts with keys of create_node()."""
        if dir is None:
            dir = tempfile.mkdtemp(prefix="powerctl-e2e-")
        c = cls(dir)
        c.owned = True
        try:
            c._up(nodes, scheduler, bin_dir or default_bin_dir(), timeout)
        except BaseException:
            log("start-up failed; stopping what was started")
            with contextlib.suppress(Exception):
                c.stop()
            raise
        return c

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.owned:
            self.stop()

    # -- start-up ------------------------------------------------------------
    def _spawn(self, role, argv, log_name=None, env=None):
        logs = os.path.join(self.dir, "logs")
        os.makedirs(logs, exist_ok=True)
        log_path = os.path.join(logs, f"{log_name or role}.log")
        with open(log_path, "ab") as lf:
            lf.write(f"==== {now_rfc3339()} {' '.join(argv)}\n".encode())
            lf.flush()
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=lf, stderr=subprocess.STDOUT,
                                 cwd=self.dir, start_new_session=True,
                                 env=dict(os.environ, **(env or {})))
        self._popens[p.pid] = p
        rec = {"role": role, "pid": p.pid, "start_time": proc_start_time(p.pid), "log": log_path,
               "argv": argv}
        self._update_state(lambda s: s.setdefault("processes", []).append(rec))
        return p, rec

    def start_process(self, role, argv, env=None, log_name=None):
        """Starts an extra background process recorded in state.json, so that
        stop()/`down` terminates it (first: reverse start order). Returns its record."""
        _, rec = self._spawn(role, list(argv), log_name=log_name, env=env)
        log(f"started {role} (pid {rec['pid']}), log {rec['log']}")
        return rec

    def stop_process(self, rec_or_pid, timeout=10.0):
        pid = rec_or_pid["pid"] if isinstance(rec_or_pid, dict) else rec_or_pid
        rec = next((p for p in self.processes if p["pid"] == pid), {"pid": pid, "role": str(pid)})
        terminate_pid(pid, rec.get("start_time"), timeout, self._popens.get(pid), rec.get("role"))

    def _fail(self, role, rec, why):
        return FatalWaitError(f"{role} {why}; last lines of {rec['log']}:\n{tail(rec['log'])}")

    def _start_component(self, role, make_argv, nports, ready, timeout, attempts=3):
        """Spawns make_argv(ports) and polls ready(); retries with new ports if
        the process died because a port got taken meanwhile."""
        for attempt in range(1, attempts + 1):
            ports = free_ports(nports) if nports else []
            p, rec = self._spawn(role, make_argv(ports))

            def check():
                if p.poll() is not None:
                    raise self._fail(role, rec, f"exited with code {p.returncode}")
                return ready(ports)
            try:
                wait_for(check, timeout, f"{role} to become ready",
                         diagnose=lambda: f"last lines of {rec['log']}:\n{tail(rec['log'])}")
                log(f"{role} ready (pid {p.pid})")
                return ports, rec
            except FatalWaitError:
                if attempt < attempts and "address already in use" in tail(rec["log"], 200):
                    log(f"{role}: port collision, retrying with new ports")
                    continue
                raise

    def _up(self, node_specs, scheduler, bin_dir, timeout):
        t0 = time.monotonic()
        os.makedirs(self.dir, exist_ok=True)
        if os.path.exists(self.state_path):
            old = self._read_state()
            live = [p for p in old.get("processes", []) if pid_alive(p["pid"], p.get("start_time"))]
            if live:
                raise ClusterError(f"a cluster is already running in {self.dir} "
                                   f"(pids {[p['pid'] for p in live]}); run `down` first")
            os.unlink(self.state_path)
        bins = {}
        for b in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
            path = os.path.join(bin_dir, b)
            if not (os.access(path, os.X_OK) and os.path.getsize(path) > 0):
                raise ClusterError(f"{path} missing; build it with tests/e2e/build-kubernetes.sh "
                                   f"or set POWERCTL_K8S_BIN / --bin-dir")
            bins[b] = path
        etcd_bin = shutil.which("etcd") or "/usr/bin/etcd"
        deadline = time.monotonic() + timeout

        def left():
            return max(5.0, deadline - time.monotonic())

        pki = os.path.join(self.dir, "pki")
        log(f"creating certificates in {pki}")
        make_pki(pki)
        token = secrets.token_hex(24)
        tokens_csv = os.path.join(pki, "tokens.csv")
        with open(tokens_csv, "w") as f:
            f.write(f'{token},admin,admin,"system:masters"\n')
        os.chmod(tokens_csv, 0o600)
        ca = os.path.join(pki, "ca.crt")
        kubeconfig = os.path.join(self.dir, "admin.kubeconfig")
        self.state = {"dir": self.dir, "ca": ca, "ca_key": os.path.join(pki, "ca.key"),
                      "admin_token": token, "kubeconfig": kubeconfig, "bin_dir": bin_dir,
                      "k8s_version": K8S_VERSION, "processes": [], "nodes": [],
                      "etcd_data": os.path.join(self.dir, "etcd-data"), "ports": {}}
        self._update_state(lambda s: None)

        # etcd
        data = self.state["etcd_data"]
        shutil.rmtree(data, ignore_errors=True)

        def etcd_argv(ports):
            client, peer = (f"http://127.0.0.1:{p}" for p in ports)
            return [etcd_bin, "--name=e2e", f"--data-dir={data}",
                    f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
                    f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
                    f"--initial-cluster=e2e={peer}", "--initial-cluster-state=new",
                    "--snapshot-count=10000", "--quota-backend-bytes=2147483648",
                    "--logger=zap", "--log-outputs=stderr"]

        def etcd_ready(ports):
            conn = http.client.HTTPConnection("127.0.0.1", ports[0], timeout=2)
            try:
                conn.request("GET", "/health")
                r = conn.getresponse()
                return r.status == 200 and json.loads(r.read()).get("health") == "true"
            finally:
                conn.close()

        log("starting etcd")
        (etcd_port, peer_port), _ = self._start_component("etcd", etcd_argv, 2, etcd_ready, left())
        etcd_url = f"http://127.0.0.1:{etcd_port}"
        self._update_state(lambda s: s.update(etcd=etcd_url) or s["ports"].update(
            etcd_client=etcd_port, etcd_peer=peer_port))

        # kube-apiserver
        def apiserver_argv(ports):
            return [bins["kube-apiserver"],
                    f"--etcd-servers={etcd_url}",
                    "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
                    f"--secure-port={ports[0]}", "--insecure-port=0",
                    f"--cert-dir={pki}",
                    f"--tls-cert-file={pki}/apiserver.crt",
                    f"--tls-private-key-file={pki}/apiserver.key",
                    f"--client-ca-file={ca}",
                    f"--token-auth-file={tokens_csv}",
                    "--authorization-mode=RBAC",
                    f"--service-account-issuer={SA_ISSUER}",
                    f"--service-account-signing-key-file={pki}/sa.key",
                    f"--service-account-key-file={pki}/sa.pub",
                    f"--api-audiences={','.join(API_AUDIENCES)}",
                    f"--service-cluster-ip-range={SERVICE_CIDR}",
                    # the `kubernetes` Endpoints may not hold a loopback address
                    "--endpoint-reconciler-type=none",
                    # request-header authn, so delegating components (kube-scheduler's
                    # secure port, aggregated apiservers) can authenticate requests
                    f"--requestheader-client-ca-file={ca}",
                    "--requestheader-allowed-names=front-proxy-client",
                    "--requestheader-username-headers=X-Remote-User",
                    "--requestheader-group-headers=X-Remote-Group",
                    "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                    f"--proxy-client-cert-file={pki}/front-proxy-client.crt",
                    f"--proxy-client-key-file={pki}/front-proxy-client.key",
                    # There is no kube-proxy, so a Service's ClusterIP leads nowhere: the
                    # aggregator (and webhook calls, which no e2e test registers) dial an
                    # Endpoints address instead. Only APIServices backed by a Service are
                    # affected: see metrics_apiservice.py.
                    "--enable-aggregator-routing=true",
                    "--allow-privileged=true", "--profiling=false"]

        def apiserver_ready(ports):
            self.client = RestClient(f"https://127.0.0.1:{ports[0]}", ca, token, timeout=5)
            status, body = self.client.api("GET", "/readyz")
            return status == 200

        log("starting kube-apiserver")
        (api_port,), api_rec = self._start_component("kube-apiserver", apiserver_argv, 1,
                                                     apiserver_ready, left())
        server = f"https://127.0.0.1:{api_port}"
        self.client = RestClient(server, ca, token)
        write_kubeconfig(kubeconfig, server, ca, token=token, user="admin")
        self._update_state(lambda s: s.update(server=server) or s["ports"].update(apiserver=api_port))

        # kube-controller-manager
        def kcm_argv(ports):
            return [bins["kube-controller-manager"],
                    f"--kubeconfig={kubeconfig}", "--leader-elect=false",
                    "--controllers=*,-nodeipam,-nodelifecycle",
                    f"--service-account-private-key-file={pki}/sa.key",
                    f"--root-ca-file={ca}",
                    f"--cluster-signing-cert-file={ca}",
                    f"--cluster-signing-key-file={pki}/ca.key",
                    "--use-service-account-credentials=false",
                    "--port=0", "--secure-port=0"]

        def kcm_ready(ports):
            # the service-account and token controllers are running once the
            # default ServiceAccount has its token secret
            status, sa = self.client.api("GET", "/api/v1/namespaces/default/serviceaccounts/default")
            return status == 200 and bool(sa.get("secrets"))

        log("starting kube-controller-manager")
        self._start_component("kube-controller-manager", kcm_argv, 0, kcm_ready, left())

        if scheduler:
            sched_cfg = os.path.join(self.dir, "kube-scheduler.yaml")

            def sched_argv(ports):
                with open(sched_cfg, "w") as f:
                    f.write("apiVersion: kubescheduler.config.k8s.io/v1beta1\n"
                            "kind: KubeSchedulerConfiguration\n"
                            "clientConnection:\n"
                            f"  kubeconfig: {_q(kubeconfig)}\n"
                            "leaderElection:\n"
                            "  leaderElect: false\n"
                            f"healthzBindAddress: \"127.0.0.1:{ports[0]}\"\n"
                            f"metricsBindAddress: \"127.0.0.1:{ports[0]}\"\n")
                return [bins["kube-scheduler"], f"--config={sched_cfg}",
                        "--bind-address=127.0.0.1", f"--secure-port={ports[1]}",
                        f"--authentication-kubeconfig={kubeconfig}",
                        f"--authorization-kubeconfig={kubeconfig}"]

            def sched_ready(ports):
                conn = http.client.HTTPConnection("127.0.0.1", ports[0], timeout=2)
                try:
                    conn.request("GET", "/healthz")
                    r = conn.getresponse()
                    return r.status == 200 and r.read().strip() == b"ok"
                finally:
                    conn.close()

            log("starting kube-scheduler")
            (hz, sp), _ = self._start_component("kube-scheduler", sched_argv, 2, sched_ready, left())
            self._update_state(lambda s: s["ports"].update(scheduler_healthz=hz, scheduler_secure=sp))

        specs = [parse_node_spec(n) for n in node_specs or ()]
        for spec in specs:
            self.create_node(wait=False, **spec)
        log("starting fake kubelet")
        self._spawn("fake-kubelet", [PYTHON, THIS_FILE, "kubelet", "--dir", self.dir], "fake-kubelet")
        kubelet = self.processes[-1]
        names = [s["name"] for s in specs]
        if names:
            def nodes_ready():
                if not pid_alive(kubelet["pid"]):
                    raise self._fail("fake-kubelet", kubelet, "exited")
                return all(node_is_ready(self.request("GET", f"/api/v1/nodes/{n}")) for n in names)
            wait_for(nodes_ready, left(), f"nodes {names} to become Ready",
                     diagnose=lambda: tail(kubelet["log"]))
        self._update_state(lambda s: s.update(ready=True, started_at=now_rfc3339(),
                                              startup_seconds=round(time.monotonic() - t0, 1)))
        log(f"cluster up in {time.monotonic() - t0:.1f}s: {server}, kubeconfig {kubeconfig}")

    # -- shutdown --------------------------------------------------------------
    def stop(self, timeout=10.0):
        """Stops every recorded process (reverse start order) and removes etcd data. Idempotent."""
        if not self.state:
            return  # nothing recorded by this instance (load state.json first to stop another's)
        procs = list(self.state.get("processes", []))
        if os.path.exists(self.state_path):
            with self._locked():
                disk = self._read_state()
            if disk.get("dir") == self.state.get("dir"):
                mine = {p["pid"] for p in procs}
                procs += [p for p in disk.get("processes", []) if p["pid"] not in mine]
        for p in reversed(procs):
            terminate_pid(p["pid"], p.get("start_time"), timeout, self._popens.get(p["pid"]),
                          p["role"])
        for p in self._popens.values():
            with contextlib.suppress(Exception):
                p.wait(timeout=1)
        data = self.state.get("etcd_data") or os.path.join(self.dir, "etcd-data")
        shutil.rmtree(data, ignore_errors=True)
        if self.state:
            self.state["processes"] = procs
            self.state["stopped"] = True
            self.state["ready"] = False
            with self._locked():
                self._write_state()
        log(f"cluster in {self.dir} stopped")

    def restart_apiserver(self, timeout=90.0, while_down=None):
        """Stops kube-apiserver (SIGTERM, by its recorded PID), calls while_down() if given, and
        starts it again with the same arguments (so the same port and etcd data), then waits for
        /readyz. Clients see their connections and watches end, as in a control-plane upgrade."""
        rec = next(p for p in reversed(self.processes)
                   if p["role"] == "kube-apiserver" and pid_alive(p["pid"], p.get("start_time")))
        self.stop_process(rec)
        self._update_state(lambda s: s["processes"].remove(rec) if rec in s["processes"] else None)
        try:
            if while_down:
                while_down()
        finally:  # whatever while_down() found, the cluster must come back for the next tests
            proc, new = self._spawn("kube-apiserver", rec["argv"])

            def ready():
                if proc.poll() is not None:
                    raise self._fail("kube-apiserver", new, f"exited with code {proc.returncode}")
                try:
                    return self.client.api("GET", "/readyz")[0] == 200
                except OSError:
                    return False
            wait_for(ready, timeout, "kube-apiserver to be ready again",
                     diagnose=lambda: tail(new["log"]))
            log(f"kube-apiserver restarted (pid {proc.pid})")
        return new

    # -- API helpers -------------------------------------------------------
    def api(self, method, path, body=None, token=None, content_type=None, **kw):
        """(status, parsed JSON) of one request; admin token unless token given
        (token="" for none; cert=/key= for a client certificate)."""
        return self.client.api(method, path, body, token=token, content_type=content_type, **kw)

    def request(self, method, path, body=None, ok=(200, 201, 202), **kw):
        """Body of a request; raises ApiError on a status not in ok."""
        return self.client.request(method, path, body, ok=ok, **kw)

    def wait_for(self, predicate, timeout=60.0, what="condition", interval=0.2):
        return wait_for(predicate, timeout, what, interval)

    def ensure_namespace(self, name):
        code, body = self.api("POST", "/api/v1/namespaces",
                              {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        if code not in (201, 409):
            raise ApiError("POST", "/api/v1/namespaces", code, body)

    def create_node(self, name, cpu="4", memory="16Gi", pods="110", labels=None, annotations=None,
                    taints=None, managed=True, capacity=None, unschedulable=False, wait=True,
                    timeout=30.0):
        """Creates a Node (status included). managed=True labels it for the
        fake kubelet, which makes it Ready and removes the not-ready taint;
        wait=True waits for that. capacity: extra/overriding capacity entries."""
        node = node_manifest(name, cpu, memory, pods, labels, annotations, taints, managed,
                             capacity, unschedulable)
        created = self.request("POST", "/api/v1/nodes", node)
        if name not in self.state.get("nodes", []):
            self._update_state(lambda s: s.setdefault("nodes", []).append(name))
        if managed and wait:
            return self.wait_node_ready(name, timeout)
        return created

    def wait_node_ready(self, name, timeout=30.0):
        def ready():
            n = self.request("GET", f"/api/v1/nodes/{name}")
            return n if node_is_ready(n) else None
        return wait_for(ready, timeout, f"node {name} to be Ready without not-ready taint")

    def delete_node(self, name):
        code, body = self.api("DELETE", f"/api/v1/nodes/{name}")
        if code not in (200, 404):
            raise ApiError("DELETE", f"/api/v1/nodes/{name}", code, body)
        if name in self.state.get("nodes", []):
            self._update_state(lambda s: s["nodes"].remove(name) if name in s["nodes"] else None)

    def service_account_token(self, namespace, name, audiences=None, expiration_seconds=3600,
                              create=True):
        """A bound token for ServiceAccount namespace/name via the TokenRequest
        API (creating namespace and ServiceAccount if needed)."""
        if create:
            self.ensure_namespace(namespace)
            code, body = self.api("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts",
                                  {"apiVersion": "v1", "kind": "ServiceAccount",
                                   "metadata": {"name": name}})
            if code not in (201, 409):
                raise ApiError("POST", "serviceaccounts", code, body)
        spec = {"expirationSeconds": int(expiration_seconds)}
        if audiences:
            spec["audiences"] = list(audiences)
        path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"
        tr = self.request("POST", path, {"apiVersion": "authentication.k8s.io/v1",
                                         "kind": "TokenRequest", "spec": spec})
        return tr["status"]["token"]

    def issue_client_cert(self, user, groups=(), name=None):
        """A client certificate (CN=user, O=groups) signed by the cluster CA.
        Returns (cert_path, key_path)."""
        pki = os.path.join(self.dir, "pki")
        name = name or "client-" + "".join(ch if ch.isalnum() else "-" for ch in user)
        return _sign(pki, name, user, tuple(groups), "v3_client")

    def write_kubeconfig(self, path, token=None, client_cert=None, client_key=None, user=None,
                         namespace=None, embed=False):
        """Kubeconfig for another identity (bearer token or client certificate,
        e.g. from service_account_token() / issue_client_cert()). Returns path."""
        if not token and not client_cert:
            raise ValueError("write_kubeconfig needs token or client_cert/client_key")
        return write_kubeconfig(path, self.server, self.ca, token=token, client_cert=client_cert,
                                client_key=client_key, user=user or "e2e-user", namespace=namespace,
                                embed=embed)

    def log_path(self, role):
        for p in reversed(self.processes):
            if p["role"] == role:
                return p["log"]
        return None

    def log_tail(self, role, lines=40):
        path = self.log_path(role)
        return tail(path, lines) if path else f"(no process {role})"


# ---------------------------------------------------------------------------
# CLI

def _cmd_up(args):
    nodes = [n for n in (args.nodes or "").split(",") if n]
    c = Cluster.start(args.dir, nodes=nodes, scheduler=args.scheduler, bin_dir=args.bin_dir,
                      timeout=args.timeout)
    c.owned = False
    print(c.kubeconfig)
    return 0


def _cmd_down(args):
    c = Cluster(args.dir)
    if not os.path.exists(c.state_path):
        log(f"no state.json in {c.dir}; nothing to stop")
        shutil.rmtree(os.path.join(c.dir, "etcd-data"), ignore_errors=True)
        return 0
    with c._locked():
        c.state = c._read_state()
    c.stop(timeout=args.timeout)
    return 0


def _cmd_status(args):
    c = Cluster(args.dir)
    if not os.path.exists(c.state_path):
        print(f"no cluster in {c.dir}")
        return 1
    c.state = c._read_state()
    rc = 0
    for p in c.processes:
        alive = pid_alive(p["pid"], p.get("start_time"))
        rc |= 0 if alive else 1
        print(f"{p['role']:<24} pid {p['pid']:<8} {'running' if alive else 'gone':<8} {p['log']}")
    print(f"server {c.state.get('server')}\nkubeconfig {c.kubeconfig}")
    return rc


def _cmd_kubelet(args):
    c = Cluster(args.dir)
    c.state = c._read_state()
    api = next((p for p in c.processes if p["role"] == "kube-apiserver"), {})
    client = RestClient(c.server, c.ca, c.token, timeout=10)
    names = [n for n in (args.nodes or "").split(",") if n]
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))

    def find_apiserver():  # Cluster.restart_apiserver records the new process in state.json
        try:
            with c._locked():
                procs = c._read_state().get("processes", [])
        except (OSError, ValueError):
            return None
        live = [p for p in procs if p["role"] == "kube-apiserver" and pid_alive(p["pid"], p.get("start_time"))]
        return (live[-1]["pid"], live[-1].get("start_time")) if live else None
    FakeKubelet(client, names, label=args.label, interval=args.interval,
                watch_pid=api.get("pid"), watch_start_time=api.get("start_time"),
                find_apiserver=find_apiserver).run_forever()
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="start a cluster")
    up.add_argument("--dir", required=True)
    up.add_argument("--bin-dir", default=None, help="kube-* binaries (default: $POWERCTL_K8S_BIN "
                    f"or {default_bin_dir()})")
    up.add_argument("--nodes", default="", help="comma list of name[:cpu[:memory[:pods]]]")
    up.add_argument("--scheduler", action="store_true", help="also run the default kube-scheduler")
    up.add_argument("--timeout", type=float, default=120.0)
    up.set_defaults(fn=_cmd_up)
    down = sub.add_parser("down", help="stop the cluster in --dir")
    down.add_argument("--dir", required=True)
    down.add_argument("--timeout", type=float, default=10.0, help="SIGTERM grace per process")
    down.set_defaults(fn=_cmd_down)
    st = sub.add_parser("status", help="show recorded processes")
    st.add_argument("--dir", required=True)
    st.set_defaults(fn=_cmd_status)
    kl = sub.add_parser("kubelet", help="run the fake kubelet loop (foreground)")
    kl.add_argument("--dir", required=True)
    kl.add_argument("--nodes", default="", help="comma list of node names to manage")
    kl.add_argument("--label", default=MANAGED_LABEL,
                    help="also manage nodes with this label set to 'true'")
    kl.add_argument("--interval", type=float, default=0.3)
    kl.set_defaults(fn=_cmd_kubelet)
    args = ap.parse_args(argv)
    if args.cmd == "up":
        # turn SIGTERM/SIGHUP into an exception so a half-started cluster is cleaned up
        def _raise(signum, frame):
            raise SystemExit(128 + signum)
        signal.signal(signal.SIGTERM, _raise)
        signal.signal(signal.SIGHUP, _raise)
    try:
        return args.fn(args)
    except ClusterError as e:
        log(f"error: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
