"""The reconciler with AcceleratorClasses from the cache, and the class watch's mapping to services."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from ome.api import resources as r
from ome.controllers.inferenceservice import controller
from ome.controllers.inferenceservice import reconciler as rec
from ome.framework.reconcile import Request, RetryError
from tests.unit.controllers.inferenceservice.fakes import FakeRecorder, FakeWorld, make_reconciler
from tests.unit.resolution import builders

Obj = dict[str, Any]
REQ = Request("demo", "llama")
PRODUCT = "nvidia.com/gpu.product"


def _reconciler(world: FakeWorld, recorder: FakeRecorder) -> rec.InferenceServiceReconciler:
    return make_reconciler(world, recorder, now=datetime(2026, 1, 1, tzinfo=UTC))  # type: ignore[no-any-return]


def _class(name: str, product: str, per_hour: str) -> Obj:
    return {
        "apiVersion": "ome.io/v1beta1", "kind": "AcceleratorClass", "metadata": {"name": name, "generation": 1},
        "spec": {
            "vendor": "nvidia", "family": "hopper",
            "discovery": {"nodeSelector": {PRODUCT: product}},
            "capabilities": {"memoryGB": "80Gi"},
            "resources": [{"name": "nvidia.com/gpu", "quantity": "8"}],
            "cost": {"perHour": per_hour},
        },
    }


def _world(*classes: str, selector: Obj | None = None, put_classes: bool = True) -> FakeWorld:
    world = FakeWorld()
    model = builders.model()
    model["spec"]["modelFramework"] = {"name": "transformers"}
    world.put(r.CLUSTER_BASE_MODELS, model)
    runtime = builders.runtime()
    if classes:
        runtime["spec"]["acceleratorRequirements"] = {"acceleratorClasses": list(classes)}
    world.put(r.CLUSTER_SERVING_RUNTIMES, runtime)
    if put_classes:
        world.put(r.ACCELERATOR_CLASSES, _class("nvidia-h100", "NVIDIA-H100-80GB-HBM3", "10"))
        world.put(r.ACCELERATOR_CLASSES, _class("nvidia-h200", "NVIDIA-H200", "12"))
    extra = {"acceleratorSelector": selector} if selector is not None else {}
    world.put(r.INFERENCE_SERVICES, builders.isvc(runtime="vllm-llama", **extra))
    return world


def _engine_pod(world: FakeWorld) -> Obj:
    deployment = world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo")
    assert deployment is not None
    pod: Obj = deployment["spec"]["template"]["spec"]
    return pod


async def test_a_named_class_reaches_the_engine_pods_and_a_second_reconcile_writes_nothing() -> None:
    world, recorder = _world("nvidia-h100", "nvidia-h200", selector={"acceleratorClass": "nvidia-h200"}), FakeRecorder()
    await _reconciler(world, recorder).reconcile(REQ)
    pod = _engine_pod(world)
    assert pod["nodeSelector"][PRODUCT] == "NVIDIA-H200"
    runner = next(c for c in pod["containers"] if c["name"] == "ome-container")
    assert runner["resources"]["limits"]["nvidia.com/gpu"] == "8"
    assert recorder.events == []
    world.writes.clear()
    await _reconciler(world, recorder).reconcile(REQ)
    assert world.writes == []


async def test_a_policy_picks_from_the_runtimes_classes() -> None:
    world, recorder = _world("nvidia-h200", "nvidia-h100", selector={"policy": "Cheapest"}), FakeRecorder()
    await _reconciler(world, recorder).reconcile(REQ)
    assert _engine_pod(world)["nodeSelector"][PRODUCT] == "NVIDIA-H100-80GB-HBM3"


async def test_a_runtime_without_classes_renders_as_without_a_selector() -> None:
    plain, named = _world(), _world(selector={"acceleratorClass": "nvidia-h100"})
    for world in (plain, named):
        await _reconciler(world, FakeRecorder()).reconcile(REQ)
    assert _engine_pod(plain) == _engine_pod(named)
    assert PRODUCT not in (_engine_pod(named).get("nodeSelector") or {})


async def test_a_missing_named_class_records_an_event_retries_and_renders_nothing() -> None:
    world = _world("nvidia-h100", selector={"acceleratorClass": "nvidia-l40s"})
    recorder = FakeRecorder()
    message = "Failed to get accelerator class for engine: accelerator class nvidia-l40s not found at cluster scope"
    with pytest.raises(RetryError) as raised:
        await _reconciler(world, recorder).reconcile(REQ)
    assert str(raised.value) == message
    assert recorder.events == [("Warning", "AcceleratorClassError", message)]
    assert world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo") is None


async def test_a_deleted_named_class_leaves_the_running_workload_as_it_is() -> None:
    world, recorder = _world("nvidia-h100", selector={"acceleratorClass": "nvidia-h100"}), FakeRecorder()
    await _reconciler(world, recorder).reconcile(REQ)
    before = _engine_pod(world)
    del world.objects[(r.ACCELERATOR_CLASSES.name, "", "nvidia-h100")]
    world.writes.clear()
    with pytest.raises(RetryError, match="nvidia-h100 not found at cluster scope"):
        await _reconciler(world, recorder).reconcile(REQ)
    assert world.writes == []
    assert _engine_pod(world) == before


async def test_a_policy_with_no_class_left_runs_without_one() -> None:
    world = _world("nvidia-h100", selector={"policy": "FirstAvailable"}, put_classes=False)
    recorder = FakeRecorder()
    await _reconciler(world, recorder).reconcile(REQ)
    assert PRODUCT not in (_engine_pod(world).get("nodeSelector") or {})
    assert recorder.events == []


def test_class_changes_map_to_the_services_that_can_get_the_class() -> None:
    world = _world("nvidia-h100", selector={"policy": "Cheapest"})
    world.put(r.INFERENCE_SERVICES, builders.isvc("plain", runtime="vllm-llama"))
    world.put(r.INFERENCE_SERVICES, builders.isvc(
        "named", "other", runtime="missing-runtime", acceleratorSelector={"acceleratorClass": "nvidia-h200"}))
    mapper = controller.accelerator_class_users(world)
    assert list(mapper(_class("nvidia-h100", "x", "1"))) == [Request("demo", "llama")]
    assert list(mapper(_class("nvidia-h200", "x", "1"))) == [Request("other", "named")]
    assert list(mapper(_class("nvidia-l40s", "x", "1"))) == []
