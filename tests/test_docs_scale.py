"""docs/scale.md: the KubeRay manifest against its schema (and its Serve config against Ray Serve's), and the
capacity table against the benchmark JSON files it is computed from."""

from __future__ import annotations

import copy
import importlib
import inspect
import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from talkhead.bench.capacity import BEGIN, END, capacity_table

DOCS = Path(__file__).resolve().parents[1] / "docs"
MANIFEST, SCHEMA = DOCS / "kuberay" / "rayservice.yaml", DOCS / "kuberay" / "rayservice.schema.json"


def _validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())


def _manifest() -> dict:
    return yaml.safe_load(MANIFEST.read_text())


def test_the_rayservice_manifest_matches_kuberays_schema():
    assert list(_validator().iter_errors(_manifest())) == []


def _break(m: dict, how: str) -> dict:
    m = copy.deepcopy(m)
    cluster = m["spec"]["rayClusterConfig"]
    if how == "misspelt":
        cluster["workerGroupSpecs"][0]["maxReplica"] = 8
    elif how == "no group name":
        del cluster["workerGroupSpecs"][0]["groupName"]
    elif how == "replicas as text":
        cluster["workerGroupSpecs"][0]["replicas"] = "two"
    elif how == "bad quantity":
        cluster["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "two"
    elif how == "wrong kind":
        m["kind"] = "RayCluster"
    return m


@pytest.mark.parametrize("how", ["misspelt", "no group name", "replicas as text", "bad quantity", "wrong kind"])
def test_a_broken_manifest_is_caught(how):
    assert list(_validator().iter_errors(_break(_manifest(), how)))


def test_the_serve_config_inside_is_one_ray_serve_and_talkhead_accept():
    pytest.importorskip("ray")
    from ray import serve
    from ray.serve.schema import ServeDeploySchema

    from talkhead.serve.ray_serve import configs_from_args

    m = _manifest()
    config = ServeDeploySchema.model_validate(yaml.safe_load(m["spec"]["serveConfigV2"]))
    (app,) = config.applications
    module, _, name = app.import_path.partition(":")
    builder = getattr(importlib.import_module(module), name)
    assert len(inspect.signature(builder).parameters) == 1  # what Serve requires of an application builder
    rc, cfg = configs_from_args(app.args)
    assert (rc.min_replicas, rc.max_replicas, cfg.avatar_store) == (1, 8, "/data/avatars")
    assert isinstance(builder(app.args), serve.Application)
    version = m["spec"]["rayClusterConfig"]["rayVersion"]
    assert f"FROM rayproject/ray:{version}-" in (DOCS / "scale.md").read_text()  # the image the docs build
    pods = [m["spec"]["rayClusterConfig"]["headGroupSpec"], *m["spec"]["rayClusterConfig"]["workerGroupSpecs"]]
    for pod in pods:
        spec = pod["template"]["spec"]
        assert {v["name"] for v in spec["volumes"]} == {"avatars"}
        assert spec["containers"][0]["image"].endswith(version)
        assert {"name": "avatars", "mountPath": "/data/avatars"} in spec["containers"][0]["volumeMounts"]


def test_the_capacity_table_in_the_docs_is_the_one_the_benchmarks_give():
    text = (DOCS / "scale.md").read_text()
    assert BEGIN in text and END in text
    shown = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert shown == capacity_table(DOCS / "bench"), "rerun `talkhead bench capacity` after a benchmark"
    assert "videos" in shown and "`serve --ray`" in shown and "not measured" in shown
