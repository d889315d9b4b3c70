"""Strict validation of rendered objects against one Kubernetes line's OpenAPI definitions.

The fixtures (tests/fixtures/openapi/<line>.json, see its README) hold the upstream definitions
of the kinds powerctl renders. The rules are those of a strict kubeconform run: an unknown
field is an error, as are a missing required field and a value of the wrong type.
"""
import json
import os

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "openapi")

# apiVersion group -> the definitions' package prefix
_PACKAGES = {
    "": "io.k8s.api.core",
    "apps": "io.k8s.api.apps",
    "rbac.authorization.k8s.io": "io.k8s.api.rbac",
    "networking.k8s.io": "io.k8s.api.networking",
    "policy": "io.k8s.api.policy",
    "apiextensions.k8s.io": "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions",
}
# Strings on the wire that YAML or JSON may also carry as numbers.
_NUMERIC_STRINGS = {"io.k8s.apimachinery.pkg.api.resource.Quantity"}


def load(line):
    with open(os.path.join(FIXTURES, f"{line}.json")) as f:
        return json.load(f)["definitions"]


def definition_name(obj):
    group, _, version = obj["apiVersion"].rpartition("/")
    package = _PACKAGES.get(group)
    return f"{package}.{version}.{obj['kind']}" if package else None


def problems(definitions, obj):
    """Every way `obj` breaks its kind's schema, as "path: what"; [] when it conforms. Kinds
    with no upstream definition (custom resources) are judged by their CRD, not here."""
    name = definition_name(obj)
    if name is None:
        return []
    if name not in definitions:
        return [f"{obj['apiVersion']} {obj['kind']}: not served by this line"]
    found = []
    _check(definitions, {"$ref": f"#/definitions/{name}"}, obj, obj["kind"], found)
    return found


def _resolve(definitions, schema):
    seen = 0
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name not in definitions:  # a fixture's declared gap (its source.missing): unchecked
            return {}
        schema = definitions[name]
        seen += 1
        if seen > 64:
            raise ValueError(f"$ref loop at {name}")
    return schema


def _check(definitions, schema, value, path, found):
    ref = schema.get("$ref", "").rsplit("/", 1)[-1]
    schema = _resolve(definitions, schema)
    if ref in _NUMERIC_STRINGS:
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            found.append(f"{path}: a quantity must be a string or a number")
        return
    kind = schema.get("type")
    if schema.get("format") == "int-or-string":
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            found.append(f"{path}: must be an integer or a string")
        return
    if kind == "string":
        if not isinstance(value, str):
            found.append(f"{path}: must be a string, not {type(value).__name__}")
    elif kind == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            found.append(f"{path}: must be an integer")
    elif kind == "number":
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            found.append(f"{path}: must be a number")
    elif kind == "boolean":
        if not isinstance(value, bool):
            found.append(f"{path}: must be a boolean")
    elif kind == "array":
        if not isinstance(value, list):
            found.append(f"{path}: must be a list")
            return
        for i, item in enumerate(value):
            _check(definitions, schema.get("items", {}), item, f"{path}[{i}]", found)
    elif kind == "object" or "properties" in schema:
        _check_object(definitions, schema, value, path, found)


def _check_object(definitions, schema, value, path, found):
    if not isinstance(value, dict):
        found.append(f"{path}: must be an object")
        return
    properties = schema.get("properties")
    extra = schema.get("additionalProperties")
    for field in schema.get("required", []):
        if field not in value:
            found.append(f"{path}: missing required field {field!r}")
    for field, item in value.items():
        if properties is not None and field in properties:
            _check(definitions, properties[field], item, f"{path}.{field}", found)
        elif isinstance(extra, dict):
            _check(definitions, extra, item, f"{path}.{field}", found)
        elif properties is not None and not schema.get("x-kubernetes-preserve-unknown-fields"):
            found.append(f"{path}: unknown field {field!r}")
