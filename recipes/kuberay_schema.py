"""Make docs/kuberay/rayservice.schema.json: the part of KubeRay's RayService CRD that our manifest uses.

    python recipes/kuberay_schema.py KUBERAY_CHECKOUT/ray-operator/config/crd/bases/ray.io_rayservices.yaml

The CRD's OpenAPI schema (18,000 lines, no PyPI package ships it) is cut down to the fields that
docs/kuberay/rayservice.yaml sets, each one's type, format, bounds and required list as the CRD has
them; the objects kept are closed (no other keys), as ``kubectl apply --validate=strict`` would refuse
a misspelt field. tests/test_docs_scale.py validates the manifest against the result with jsonschema.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

from talkhead.util import atomic_write

INT32 = {"minimum": -(2 ** 31), "maximum": 2 ** 31 - 1}
OUT = Path(__file__).resolve().parents[1] / "docs" / "kuberay" / "rayservice.schema.json"


def _keep(node: dict, keys: dict) -> dict:
    """``node`` (an object schema) with only ``keys``' properties, each cut down by its own rule, and closed."""
    props = {}
    for name, rule in keys.items():
        sub = node["properties"][name]
        props[name] = rule(sub) if callable(rule) else _leaf(sub)
    out = {"type": "object", "properties": props, "additionalProperties": False}
    required = [r for r in node.get("required", []) if r in keys]
    return {**out, "required": required} if required else out


def _leaf(sub: dict) -> dict:
    out = {k: v for k, v in sub.items() if not k.startswith("x-kubernetes") and k != "default"}
    if sub.get("format") == "int32":
        out.update(INT32)
    if "additionalProperties" in out:
        out["additionalProperties"] = _leaf(out["additionalProperties"])
    return out


def _items(rule):
    return lambda sub: {"type": "array", "items": rule(sub["items"])}


def _container(c: dict) -> dict:
    resources = lambda r: _keep(r, {"requests": None, "limits": None})  # noqa: E731
    return _keep(c, {"name": None, "image": None, "resources": resources,
                     "ports": _items(lambda p: _keep(p, {"containerPort": None, "name": None, "protocol": None})),
                     "volumeMounts": _items(lambda m: _keep(m, {"name": None, "mountPath": None, "readOnly": None}))})


def _pod_template(t: dict) -> dict:
    volume = lambda v: _keep(v, {"name": None, "persistentVolumeClaim": lambda p: _keep(p, {"claimName": None})})  # noqa: E731
    spec = lambda s: _keep(s, {"containers": _items(_container), "volumes": _items(volume)})  # noqa: E731
    return _keep(t, {"metadata": None, "spec": spec})


def schema(crd: dict) -> dict:
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    root = version["schema"]["openAPIV3Schema"]
    head = lambda h: _keep(h, {"rayStartParams": None, "template": _pod_template})  # noqa: E731
    worker = lambda w: _keep(w, {"groupName": None, "replicas": None, "minReplicas": None, "maxReplicas": None,  # noqa: E731
                                 "rayStartParams": None, "template": _pod_template})
    cluster = lambda c: _keep(c, {"rayVersion": None, "enableInTreeAutoscaling": None, "headGroupSpec": head,  # noqa: E731
                                  "workerGroupSpecs": _items(worker)})
    spec = lambda s: _keep(s, {"serviceUnhealthySecondThreshold": None, "deploymentUnhealthySecondThreshold": None,  # noqa: E731
                               "serveConfigV2": None, "rayClusterConfig": cluster})
    out = _keep(root, {"apiVersion": None, "kind": None, "metadata": None, "spec": spec})
    out["properties"]["apiVersion"] = {"const": f"{crd['spec']['group']}/v1"}
    out["properties"]["kind"] = {"const": crd["spec"]["names"]["kind"]}
    out["properties"]["metadata"] = {"type": "object", "required": ["name"],
                                     "properties": {"name": {"type": "string", "pattern": "^[a-z]([-a-z0-9]*[a-z0-9])?$"}}}
    out["required"] = ["apiVersion", "kind", "metadata", "spec"]
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$comment": "made by recipes/kuberay_schema.py from KubeRay's "
                        "ray-operator/config/crd/bases/ray.io_rayservices.yaml (RayService v1)", **out}


def main(argv: list[str]) -> None:
    if len(argv) != 1:
        sys.exit(__doc__)
    crd = yaml.safe_load(Path(argv[0]).read_text())
    atomic_write(OUT, (json.dumps(schema(crd), indent=1) + "\n").encode())
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main(sys.argv[1:])
