#pragma once
// The model server script for predictor tests (see predict_test_support.h). It mimics the
// parts of TensorFlow Serving's REST API (model_servers/http_rest_api_handler.cc) and the V2
// inference protocol (KServe) that powerctl uses, including their error bodies, with one
// known model: watts = 100 + 200*cpu + 10*ambient + 5*cpu1 + 5*cpu2.
//
// Model names select behaviour: power (correct), batch1 (400 for more than one row),
// picky (400 for more than one row, and for a row with cpu > 0.9), nan (NaN for rows with
// cpu > 0.9), shape (two values per row), short (one row too few), negative (-5 W),
// hang (answers after 10 s). Any other name is 404 as on the real servers.
// GET /count returns {"path": number of POSTs}; GET /last returns the last POST body.

namespace powerctl::testsupport {

inline constexpr char kModelServerScript[] = R"py(
import http.server, json, os, re, struct, sys, threading, time

port_file = sys.argv[1]
lock = threading.Lock()
counts = {}
last = {"body": ""}
KNOWN = {"power", "batch1", "picky", "nan", "shape", "short", "negative", "hang"}
TF = re.compile(r"^/v1/models/([^/:]+)(?:/versions/(\d+)|/labels/([^/:]+))?:predict$", re.I)
V2 = re.compile(r"^/v2/models/([^/]+)(?:/versions/([^/]+))?/infer$")

class BadRequest(Exception):
    pass

def watts(row):
    cpu, amb, c1, c2 = row
    return 100.0 + 200.0 * cpu + 10.0 * amb + 5.0 * c1 + 5.0 * c2

def check_rows(rows):
    if not isinstance(rows, list):
        raise BadRequest("inputs must be a list")
    for row in rows:
        if (not isinstance(row, list) or len(row) != 4 or
                not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in row)):
            raise BadRequest("Expected tensor of shape [?,4], got a malformed row")
    # TF Serving converts DT_FLOAT inputs to float32 before the model sees them.
    return [[struct.unpack("f", struct.pack("f", v))[0] for v in row] for row in rows]

def run_model(name, rows):
    """Returns one list per row (the model's [N,1] output)."""
    if name in ("batch1", "picky") and len(rows) > 1:
        raise BadRequest("Input to reshape is a tensor with %d values, but the requested "
                         "shape has 4" % (4 * len(rows)))
    if name == "picky" and rows[0][0] > 0.9:
        raise BadRequest("cpu_fraction out of the trained range")
    if name == "hang":
        time.sleep(10)
    out = []
    for row in rows:
        w = watts(row)
        if name == "nan" and row[0] > 0.9:
            w = float("nan")
        if name == "negative":
            w = -5.0
        out.append([w, w] if name == "shape" else [w])
    return out[:-1] if name == "short" else out

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, code, obj):
        data = json.dumps(obj).encode()  # writes NaN as a bare token, as TF Serving does
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        with lock:
            self.reply(200, counts if self.path == "/count" else last)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode()
        with lock:
            counts[self.path] = counts.get(self.path, 0) + 1
            last["body"] = body
        try:
            m = TF.match(self.path)
            if m:
                return self.tfserving(m.group(1), m.group(2), m.group(3), body)
            m = V2.match(self.path)
            if m:
                return self.v2(m.group(1), m.group(2), body)
            self.reply(404, {"error": "Malformed request: POST " + self.path})
        except BadRequest as e:
            self.reply(400, {"error": str(e)})

    def tfserving(self, name, version, label, body):
        if name not in KNOWN:
            spec = "Specific(%s, %s)" % (name, version) if version else "Latest(%s)" % name
            return self.reply(404, {"error": "Servable not found for request: " + spec})
        if label is not None and label != "stable":
            raise BadRequest("Unrecognized servable version label: " + label)
        try:
            doc = json.loads(body)
        except ValueError:
            raise BadRequest("JSON Parse error: Invalid value.")
        sig = doc.get("signature_name", "serving_default")
        if not isinstance(sig, str):
            raise BadRequest("'signature_name' key must be a string value.")
        if sig != "serving_default":
            raise BadRequest('Serving signature name: "%s" not found in signature def' % sig)
        if ("instances" in doc) == ("inputs" in doc):
            raise BadRequest("Missing 'inputs' or 'instances' key")
        if "instances" in doc:
            return self.reply(200, {"predictions": run_model(name, check_rows(doc["instances"]))})
        inputs = doc["inputs"]
        if isinstance(inputs, dict):
            if list(inputs) != ["inputs"]:
                raise BadRequest("Missing 'inputs' key")
            inputs = inputs["inputs"]
        self.reply(200, {"outputs": run_model(name, check_rows(inputs))})

    def v2(self, name, version, body):
        if name not in KNOWN:
            return self.reply(404, {"error": "Model with name %s does not exist." % name})
        doc = json.loads(body)
        tensors = doc.get("inputs")
        if not isinstance(tensors, list) or len(tensors) != 1:
            raise BadRequest("expected exactly one input tensor")
        t = tensors[0]
        shape, data = t.get("shape"), t.get("data")
        if t.get("name") != "inputs" or t.get("datatype") != "FP32":
            raise BadRequest("unexpected inference input 'inputs' or datatype for model")
        if (not isinstance(shape, list) or len(shape) != 2 or shape[1] != 4
                or not isinstance(data, list) or len(data) != shape[0] * 4):
            raise BadRequest("unexpected shape for input 'inputs' for model '%s'" % name)
        rows = check_rows([data[i:i + 4] for i in range(0, len(data), 4)])
        out = run_model(name, rows)
        flat = [v for row in out for v in row]
        self.reply(200, {"model_name": name, "model_version": version or "1",
                         "outputs": [{"name": "outputs", "shape": [len(out), len(out[0]) if out else 1],
                                      "datatype": "FP32", "data": flat}]})

class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default backlog of 5 drops concurrent single-row requests

    def handle_error(self, request, client_address):
        pass  # clients that give up at their deadline are part of the tests

server = Server(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
)py";

}  // namespace powerctl::testsupport
