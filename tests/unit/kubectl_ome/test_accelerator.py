"""`accelerator explain` against the docs' examples (golden files)."""

from __future__ import annotations

import argparse
import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ome.api.resources import CLUSTER_SERVING_RUNTIMES, INFERENCE_SERVICES
from ome.kubectl_ome import cmd_accelerator
from ome.kubectl_ome.failures import CliError
from tests.unit.kubectl_ome.fakes import FakeClient, make_ctx

GOLDEN = Path(__file__).parent / "golden"
NOW = datetime(2026, 9, 14, 20, 30, tzinfo=UTC)
Obj = dict[str, Any]
RUNTIME = "srt-llama-3-3-70b-instruct"


def service(selector: Obj | None, observed: int = 1, generation: int = 1) -> Obj:
    spec: Obj = {"runtime": {"name": RUNTIME}, "engine": {}}
    if selector is not None:
        spec["acceleratorSelector"] = selector
    return {"metadata": {"name": "llama-3-3-70b-instruct", "namespace": "llama-demo", "generation": generation},
            "spec": spec, "status": {"observedGeneration": observed}}


def run(isvc: Obj, output: str = "table", runtime: bool = True) -> str:
    client = FakeClient()
    client.put(INFERENCE_SERVICES, isvc)
    if runtime:
        client.put(CLUSTER_SERVING_RUNTIMES, {
            "metadata": {"name": RUNTIME, "generation": 2},
            "spec": {"containers": [{"name": "ome-container", "image": "sglang"}],
                     "engineConfig": {"runner": {"name": "ome-container", "resources": {"requests": {
                         "cpu": "10", "memory": "160Gi", "nvidia.com/gpu": "4"}}}}}})
    ctx, _, _ = make_ctx(client, namespace="llama-demo")
    ctx.terminal.clock = lambda: NOW
    args = argparse.Namespace(name="llama-3-3-70b-instruct", output=output, ome_namespace="ome")
    return str(asyncio.run(cmd_accelerator.accelerator_explain(ctx, args)))


def test_the_docs_examples() -> None:
    pinned = {"acceleratorClass": "nvidia-h100"}
    assert run(service(pinned)) == (GOLDEN / "accelerator_explain.txt").read_text()
    assert run(service(pinned), "wide") == (GOLDEN / "accelerator_explain_wide.txt").read_text()
    assert run(service({"policy": "BestFit", "constraints": {"minMemory": 80}})) == (
        GOLDEN / "accelerator_explain_policy.txt").read_text()
    assert run(service(pinned, observed=1, generation=2)) == (GOLDEN / "accelerator_explain_stale.txt").read_text()
    assert run(service(None)) == (GOLDEN / "accelerator_explain_none.txt").read_text()


def test_json_issues_and_states() -> None:
    doc = json.loads(run(service({"acceleratorClass": "nvidia-h100"}), "json"))
    assert doc["kind"] == "AcceleratorExplainReport"
    assert [f"{i['component']} {i['code']}" for i in doc["content"]["issues"]] == ["engine SelectionNotReported"]
    none = json.loads(run(service(None), "json"))
    assert (none["content"]["state"], none["content"]["issues"], none["warnings"]) == ("NotConfigured", [], [])
    stale = json.loads(run(service({"acceleratorClass": "nvidia-h100"}, 1, 2), "json"))
    assert stale["warnings"] == ["PartialData", "StaleEvidence"]
    ahead = json.loads(run(service({"acceleratorClass": "nvidia-h100"}, 3, 2), "json"))
    assert ahead["content"]["state"] == "Invalid"
    missing = run(service({"acceleratorClass": "nvidia-h100"}), runtime=False)
    assert "Unavail   base:Unknown" in missing
    override = service({"policy": "Cheapest"})
    override["spec"]["engine"] = {"acceleratorOverride": {"acceleratorClass": "Bad_Name"}}
    assert "INTENT      engine                  MODE                   Invalid" in run(override, "wide")


def test_missing_service_message() -> None:
    client = FakeClient()
    ctx, _, _ = make_ctx(client, namespace="llama-demo")
    with pytest.raises(CliError, match='^read InferenceService "llama-demo/llama-3-3-70b-instruct": not found$'):
        asyncio.run(cmd_accelerator.accelerator_explain(ctx, argparse.Namespace(
            name="llama-3-3-70b-instruct", output="table", ome_namespace="ome")))
