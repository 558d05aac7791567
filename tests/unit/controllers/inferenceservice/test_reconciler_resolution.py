"""The reconciler with the real model and runtime resolution: every unresolvable reference is reported."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from ome.api import resources as r
from ome.controllers.inferenceservice import reconciler as rec
from ome.framework.reconcile import Request, RetryError
from tests.unit.controllers.inferenceservice.fakes import (
    FakeRecorder,
    FakeWorld,
    established,
    make_reconciler,
)
from tests.unit.resolution import builders

Obj = dict[str, Any]
REQ = Request("demo", "llama")


def _reconciler(world: FakeWorld, recorder: FakeRecorder) -> rec.InferenceServiceReconciler:
    return make_reconciler(world, recorder, now=datetime(2026, 1, 1, tzinfo=UTC))  # type: ignore[no-any-return]


def _model() -> Obj:
    obj = builders.model()
    obj["spec"]["modelFramework"] = {"name": "transformers"}
    return obj


def _runtime_ready(world: FakeWorld) -> Obj:
    obj = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert obj is not None
    return next(c for c in obj["status"]["conditions"] if c["type"] == "RuntimeReady")


async def test_auto_selected_runtime_renders_the_engine() -> None:
    world, recorder = FakeWorld(), FakeRecorder()
    world.put(r.CLUSTER_BASE_MODELS, _model())
    world.put(r.CLUSTER_SERVING_RUNTIMES, builders.runtime())
    world.put(r.INFERENCE_SERVICES, established(builders.isvc()))
    await _reconciler(world, recorder).reconcile(REQ)
    assert world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo") is not None
    obj = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert obj is not None and all(c["type"] != "RuntimeReady" for c in obj["status"]["conditions"])


async def test_no_supporting_runtime_sets_condition_with_the_selectors_reason() -> None:
    world, recorder = FakeWorld(), FakeRecorder()
    world.put(r.CLUSTER_BASE_MODELS, _model())
    other = builders.runtime()
    other["spec"]["supportedModelFormats"][0]["modelFormat"]["name"] = "gguf"
    world.put(r.CLUSTER_SERVING_RUNTIMES, other)
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    await _reconciler(world, recorder).reconcile(REQ)
    cond = _runtime_ready(world)
    assert (cond["status"], cond["reason"]) == ("False", "RuntimeNotFound")
    assert not cond["message"].startswith("no supporting runtime")  # the detail, not the whole sentence
    assert cond["message"]
    [(kind, reason, message)] = recorder.events
    assert (kind, reason) == ("Warning", "RuntimeNotFound")
    assert message.startswith("no supporting runtime found for model llama-3-2-1b-instruct")
    assert world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo") is None


async def test_disabled_named_runtime_is_reported_not_raised() -> None:
    world, recorder = FakeWorld(), FakeRecorder()
    world.put(r.CLUSTER_BASE_MODELS, _model())
    disabled = builders.runtime()
    disabled["spec"]["disabled"] = True
    world.put(r.CLUSTER_SERVING_RUNTIMES, disabled)
    world.put(r.INFERENCE_SERVICES, builders.isvc(runtime="vllm-llama"))
    await _reconciler(world, recorder).reconcile(REQ)
    cond = _runtime_ready(world)
    assert (cond["status"], cond["reason"]) == ("False", "RuntimeNotFound")
    assert "disabled" in cond["message"]


async def test_missing_model_retries_without_an_event() -> None:
    """troubleshoot-an-inferenceservice.md: a kind that differs from the model's "records no event or
    condition" (the controller's log says `Failed to get referenced ClusterBaseModel`)."""
    world, recorder = FakeWorld(), FakeRecorder()
    world.put(r.CLUSTER_SERVING_RUNTIMES, builders.runtime())
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    with pytest.raises(RetryError, match='referenced model "llama-3-2-1b-instruct" not found in namespace "demo"'):
        await _reconciler(world, recorder).reconcile(REQ)
    assert recorder.events == []


async def test_missing_fine_tuned_weight_records_an_event_and_renders_nothing() -> None:
    world, recorder = FakeWorld(), FakeRecorder()
    world.put(r.CLUSTER_BASE_MODELS, _model())
    world.put(r.CLUSTER_SERVING_RUNTIMES, builders.runtime())
    obj = builders.isvc()
    obj["spec"]["model"]["fineTunedWeights"] = ["finance"]
    world.put(r.INFERENCE_SERVICES, obj)
    with pytest.raises(RetryError, match="No FineTunedWeight with the name: finance"):
        await _reconciler(world, recorder).reconcile(REQ)
    assert recorder.events == [("Warning", "FineTunedWeightError", "No FineTunedWeight with the name: finance")]
    assert world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo") is None
