"""A broken runtime chain (runtime-inheritance.md, "When a chain breaks"): the workload is left alone, a
warning event names the chain's error (RuntimeValidationError / RuntimePinError / RuntimeFetchError), and
the service retries until the parent exists; then the merged runtime renders the pods."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from ome.api import resources as r
from ome.controllers.inferenceservice import reconciler as rec
from ome.framework.reconcile import Request, RetryError
from tests.unit.controllers.inferenceservice.fakes import FakeRecorder, FakeWorld, make_reconciler
from tests.unit.resolution import builders

Obj = dict[str, Any]
REQ = Request("demo", "llama")
PROFILE = "sglang-profile"


def _reconciler(world: FakeWorld, recorder: FakeRecorder) -> rec.InferenceServiceReconciler:
    return make_reconciler(world, recorder, now=datetime(2026, 1, 1, tzinfo=UTC))  # type: ignore[no-any-return]


def _child() -> Obj:
    child = builders.runtime(
        "sglang-llama", engine_config={"runner": {"name": "ome-container", "args": ["--tp-size=1"]}}
    )
    child["metadata"]["annotations"] = {"ome.io/inherit-from": PROFILE}
    child["spec"]["disabled"] = False  # else it inherits the profile's disabled: true (documented)
    return child


def _profile() -> Obj:
    profile = builders.runtime(
        PROFILE, engine_config={"runner": {"name": "ome-container", "image": "sglang:v1"}}
    )
    profile["spec"]["disabled"] = True
    return profile


def _model() -> Obj:
    model = builders.model()
    model["spec"]["modelFramework"] = {"name": "transformers"}
    return model


@pytest.mark.parametrize(
    ("runtime_ref", "with_model", "reason"),
    [
        ({"name": "sglang-llama"}, True, "RuntimeValidationError"),
        ({"name": "sglang-llama", "autoSync": False}, True, "RuntimePinError"),
        ({"name": "sglang-llama"}, False, "RuntimeFetchError"),
    ],
)
async def test_broken_chain_event_and_retry(runtime_ref: Obj, with_model: bool, reason: str) -> None:
    world, recorder = FakeWorld(), FakeRecorder()
    world.put(r.CLUSTER_BASE_MODELS, _model())
    world.put(r.CLUSTER_SERVING_RUNTIMES, _child())
    isvc = builders.isvc(model="llama-3-2-1b-instruct" if with_model else None)
    isvc["spec"]["runtime"] = runtime_ref
    world.put(r.INFERENCE_SERVICES, isvc)
    with pytest.raises(RetryError):
        await _reconciler(world, recorder).reconcile(REQ)
    chain_error = 'inherit-from parent "sglang-profile" not found (chain so far: [sglang-llama])'
    [(type_, got_reason, message)] = recorder.events
    assert (type_, got_reason) == ("Warning", reason)
    if with_model:
        assert message == f"Runtime sglang-llama does not support model llama-3-2-1b-instruct: {chain_error}"
    else:
        assert message == chain_error
    assert world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo") is None


async def test_once_the_profile_exists_the_merged_runtime_renders_the_pods() -> None:
    world, recorder = FakeWorld(), FakeRecorder()
    world.put(r.CLUSTER_BASE_MODELS, _model())
    world.put(r.CLUSTER_SERVING_RUNTIMES, _child())
    world.put(r.CLUSTER_SERVING_RUNTIMES, _profile())
    isvc = builders.isvc(runtime="sglang-llama")
    world.put(r.INFERENCE_SERVICES, isvc)
    await _reconciler(world, recorder).reconcile(REQ)
    deployment = world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo")
    assert deployment is not None
    [container] = [
        c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "ome-container"
    ]
    assert container["image"] == "sglang:v1" and container["args"][-1] == "--tp-size=1"
