"""Serving runtimes, BenchmarkJobs and the defaulters (InferenceReplicas: test_inferencereplica_validation)."""

from __future__ import annotations

import base64
from typing import Any

import jsonpatch
import orjson
import pytest

from ome.api import resources
from ome.webhooks import registry
from tests.unit.resolution.fake_reader import FakeReader, entry, runtime
from tests.unit.webhooks.reviews import call, review


def run(path: str, kind: str, obj: Any, reader: FakeReader | None = None, **kw: Any) -> dict:
    return call(registry.handlers(reader or FakeReader())[path], review(kind, obj, **kw))


# -- serving runtimes -------------------------------------------------------------------------------

CSR_PATH = "/validate-ome-io-v1beta1-clusterservingruntime"
SR_PATH = "/validate-ome-io-v1beta1-servingruntime"


def test_unknown_accelerator_classes() -> None:
    rt = runtime("rt", acceleratorRequirements={"acceleratorClasses": ["h100", "a100"]})
    known = {"apiVersion": "ome.io/v1beta1", "kind": "AcceleratorClass", "metadata": {"name": "h100"}}
    got = run(CSR_PATH, "ClusterServingRuntime", rt, FakeReader((resources.ACCELERATOR_CLASSES, known)))
    assert (
        got["status"]["message"]
        == "unknown accelerator classes referenced in AcceleratorRequirements: [a100]"
    )


def test_conflicting_priorities_within_one_runtime() -> None:
    rt = runtime("rt", entry(name="llama", priority=1), entry(name="llama", priority=2, arch="Other"))
    got = run(CSR_PATH, "ClusterServingRuntime", rt)
    assert (
        got["status"]["message"]
        == "different priorities assigned for the model format llama under the clusterservingruntime rt"
    )


def test_same_priorities_within_one_runtime_pass() -> None:
    rt = runtime(
        "rt",
        entry(name="llama"),
        entry(name="llama", arch="Other"),
        entry(name="llama", priority=5, auto=False),
    )
    assert run(CSR_PATH, "ClusterServingRuntime", rt)["allowed"]


def test_disabled_runtime_skips_checks() -> None:
    rt = runtime("rt", entry(priority=1), entry(priority=2), disabled=True)
    assert run(CSR_PATH, "ClusterServingRuntime", rt)["allowed"]


def test_same_priority_clash_with_another_runtime_in_the_namespace() -> None:
    other = runtime("old", namespace="demo", protocolVersions=["openAI"])
    new = runtime("new", namespace="demo", protocolVersions=["openAI"])
    got = run(SR_PATH, "ServingRuntime", new, FakeReader((resources.SERVING_RUNTIMES, other)))
    assert got["status"]["message"].startswith("same priority assigned for the model format")
    assert got["status"]["message"].endswith("in the servingruntimes new and old in namespace demo")


def test_no_clash_without_shared_protocol() -> None:
    other = runtime("old", protocolVersions=["openAI"])
    new = runtime("new", protocolVersions=["openInference-v2"])
    assert run(
        CSR_PATH, "ClusterServingRuntime", new, FakeReader((resources.CLUSTER_SERVING_RUNTIMES, other))
    )["allowed"]


def test_runtime_defaulter_fills_operator_and_weight() -> None:
    rt = runtime("rt", {"modelFormat": {"name": "safetensors"}, "modelFramework": {"name": "t", "weight": 3}})
    got = run("/mutate-ome-io-v1beta1-clusterservingruntime", "ClusterServingRuntime", rt)
    ops = orjson.loads(base64.b64decode(got["patch"]))
    defaulted = jsonpatch.apply_patch(rt, ops)  # what the apiserver stores
    assert defaulted["spec"]["supportedModelFormats"][0]["modelFormat"] == {
        "name": "safetensors", "operator": "Equal", "weight": 1
    }
    assert defaulted["spec"]["supportedModelFormats"][0]["modelFramework"] == {
        "name": "t", "weight": 3, "operator": "Equal"
    }
    assert all(op.get("value", "") is not None for op in ops), "no field is set to null"


def test_isvc_defaulter_writes_no_replica_or_grace_defaults() -> None:
    svc = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "s", "namespace": "d"},
        "spec": {"model": {"name": "m", "kind": "ClusterBaseModel", "apiGroup": "ome.io"}, "engine": {}},
    }
    got = run("/mutate-ome-io-v1beta1-inferenceservice", "InferenceService", svc)
    assert got == {"uid": "uid-1", "allowed": True}  # nothing to add: v1.3 writes no replica bounds


def test_isvc_defaulter_fills_reference_kinds() -> None:
    svc = {"metadata": {"name": "s", "namespace": "d"}, "spec": {"runtime": {"name": "r"}}}
    got = run("/mutate-ome-io-v1beta1-inferenceservice", "InferenceService", svc)
    ops = orjson.loads(base64.b64decode(got["patch"]))
    assert {"op": "add", "path": "/spec/runtime/kind", "value": "ClusterServingRuntime"} in ops


# -- BenchmarkJobs ----------------------------------------------------------------------------------

BJ_PATH = "/validate-ome-io-v1beta1-benchmarkjob"


def job(**spec: Any) -> dict:
    base: dict[str, Any] = {
        "endpoint": {"inferenceService": {"name": "s"}},
        "task": "text-to-text",
        "outputLocation": {"storageUri": "oci://n/b/o"},
    }
    base.update(spec)
    return {"metadata": {"name": "b", "namespace": "demo"}, "spec": base}


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ({"endpoint": {}}, "invalid endpoint"),
        ({"endpoint": {"inferenceService": {}, "endpoint": {"url": "http://x"}}}, "cannot both be set"),
        ({"trafficScenarios": ["X(1,2)"]}, "invalid traffic scenarios"),
        ({"additionalRequestParams": {"temperature": "hot"}}, "temperature"),
        ({"additionalRequestParams": {"ignore_eos": "yes"}}, "ignore_eos"),
        ({"outputLocation": {}}, "storageUri cannot be empty"),
        ({"outputLocation": {"storageUri": "nowhere"}}, "not a storage URI"),
    ],
)
def test_benchmark_rejections(spec: dict, needle: str) -> None:
    got = run(BJ_PATH, "BenchmarkJob", job(**spec))
    assert got["allowed"] is False and needle in got["status"]["message"]


@pytest.mark.parametrize(
    ("task", "scenario"),
    [
        ("text-to-text", "N(480,240)/(300,150)"),
        ("text-to-text", "D(100,100)"),
        ("text-to-text", "U(1,2)"),
        ("text-to-embeddings", "E(64,64)"),
        ("image-to-text", "I(512,512)"),
    ],
)
def test_benchmark_scenarios_accepted(task: str, scenario: str) -> None:
    assert run(BJ_PATH, "BenchmarkJob", job(task=task, trafficScenarios=[scenario]))["allowed"]


# -- registry -----------------------------------------------------------------------------------------


def test_configurations_cover_every_served_path() -> None:
    served = set(registry.handlers(FakeReader()))
    mutating, validating = registry.webhook_configurations(registry.service_client_config(b"ca"))
    configured = {h["clientConfig"]["service"]["path"] for h in mutating["webhooks"] + validating["webhooks"]}
    assert configured == served
    assert all(h["failurePolicy"] == "Fail" and h["sideEffects"] == "None" for h in validating["webhooks"])
    assert "/validate-ome-io-v1beta1-inferenceservice" in served


def test_url_configurations_carry_the_namespace_selector() -> None:
    selector = {"matchLabels": {"kubernetes.io/metadata.name": "ns"}}
    _, validating = registry.webhook_configurations(
        registry.url_client_config("https://127.0.0.1:9443", b"ca"), name="x", namespace_selector=selector
    )
    hook = validating["webhooks"][0]
    assert hook["clientConfig"]["url"].startswith("https://127.0.0.1:9443/validate-")
    assert hook["namespaceSelector"] == selector and validating["metadata"]["name"] == "x"
