"""InferenceService conditions and events as v1.3 documents them (coverage rows C8, C11, C18, D11).

Sources: concepts/serving/inference-services.md (§Status, §Components) and
guides/troubleshoot/troubleshoot-an-inferenceservice.md (§The InferenceService gets no pods).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import structlog

from ome.api import resources as r
from ome.config import inferenceservice_config as cfg
from ome.controllers.inferenceservice import reconciler as rec
from ome.controllers.inferenceservice import status
from ome.framework.reconcile import Request, RetryError
from ome.resolution.components import build_plans
from ome.webhooks import inferenceservice_validation as validation
from tests.unit.controllers.inferenceservice.fakes import FakeRecorder, FakeWorld, make_reconciler
from tests.unit.resolution import builders

Obj = dict[str, Any]
REQ = Request("demo", "llama")
CONFIG = cfg.InferenceServiceConfig()
NOW = "2026-01-01T00:10:00Z"


def _reconciler(world: FakeWorld, recorder: FakeRecorder) -> rec.InferenceServiceReconciler:
    return make_reconciler(world, recorder, now=datetime(2026, 1, 1, tzinfo=UTC))  # type: ignore[no-any-return]


def _model(**spec: Any) -> Obj:
    obj = builders.model()
    obj["spec"]["modelFramework"] = {"name": "transformers"}
    obj["spec"].update(spec)
    return obj


def _conditions(obj: Obj) -> dict[str, Obj]:
    return {c["type"]: c for c in obj["status"]["conditions"]}


def _compute(isvc: Obj, **observed: Any) -> dict[str, Obj]:
    plans = build_plans(isvc, builders.runtime(), None, CONFIG)
    computed = status.compute(isvc, status.Observed(plans=plans, runtime_name="rt", **observed), CONFIG, NOW)
    return {c["type"]: c for c in computed["conditions"]}


# -- C8: OverlaysReady --------------------------------------------------------------------------------

def test_overlays_ready_true_is_all_overlays_mounted() -> None:
    """"`OverlaysReady` | ... `True` with reason `AllOverlaysMounted`" """
    cond = _compute(builders.isvc(), has_overlays=True)["OverlaysReady"]
    assert (cond["status"], cond["reason"]) == ("True", "AllOverlaysMounted")


def test_overlays_ready_false_is_overlays_skipped_naming_them() -> None:
    """"or `False` with reason `OverlaysSkipped` and the overlays it left out." """
    problem = 'overlay ClusterBaseModel "qwen-lora" is disabled'
    cond = _compute(builders.isvc(), has_overlays=True, overlays_problem=problem)["OverlaysReady"]
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "OverlaysSkipped", problem)


def test_no_overlays_no_condition() -> None:
    """"Only when you declare overlays" """
    assert "OverlaysReady" not in _compute(builders.isvc())


# -- C11: RuntimeReady --------------------------------------------------------------------------------

def test_runtime_ready_is_not_written_without_a_runtime_problem() -> None:
    """"`RuntimeReady` | Since v1.3. Only after a runtime problem" """
    assert "RuntimeReady" not in _compute(builders.isvc())


def test_runtime_ready_false_then_runtime_resolved() -> None:
    """"`False` with reason `RuntimeNotFound`, then `True` with reason `RuntimeResolved` once a runtime
    resolves." """
    isvc = builders.isvc()
    broken = status.compute(isvc, status.Observed(plans=None, runtime_error='runtime "rt" not found'), CONFIG, NOW)
    cond = {c["type"]: c for c in broken["conditions"]}["RuntimeReady"]
    assert (cond["status"], cond["reason"]) == ("False", "RuntimeNotFound")
    isvc["status"] = broken
    healed = _compute(isvc)["RuntimeReady"]
    assert (healed["status"], healed["reason"]) == ("True", "RuntimeResolved")


# -- C18: model problems ------------------------------------------------------------------------------

async def test_kind_mismatch_logs_and_records_no_event() -> None:
    """"The webhook admits it, but OME leaves the serving workload as it is and records no event or condition
    ... the controller's logs show `Failed to get referenced ClusterBaseModel`." """
    world, recorder = FakeWorld(), FakeRecorder()
    base = _model()
    base["kind"] = "BaseModel"
    base["metadata"]["namespace"] = "demo"
    world.put(r.BASE_MODELS, base)  # a BaseModel of that name; the service leaves kind at ClusterBaseModel
    world.put(r.CLUSTER_SERVING_RUNTIMES, builders.runtime())
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    with structlog.testing.capture_logs() as logs, pytest.raises(RetryError):
        await _reconciler(world, recorder).reconcile(REQ)
    assert recorder.events == []
    assert any(entry["event"] == "Failed to get referenced ClusterBaseModel" for entry in logs)
    assert world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo") is None
    isvc = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert isvc is not None and not (isvc.get("status") or {}).get("conditions")


async def test_disabled_model_is_a_model_reconcile_error() -> None:
    """"A `ModelReconcileError` Warning event, such as `specified base model qwen2-5-7b is disabled`." """
    world, recorder = FakeWorld(), FakeRecorder()
    world.put(r.CLUSTER_BASE_MODELS, _model(disabled=True))
    world.put(r.CLUSTER_SERVING_RUNTIMES, builders.runtime())
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    with pytest.raises(RetryError):
        await _reconciler(world, recorder).reconcile(REQ)
    assert recorder.events == [
        ("Warning", "ModelReconcileError", "specified base model llama-3-2-1b-instruct is disabled")]
    assert world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo") is None


async def test_sharded_model_is_a_normal_model_not_ready_event() -> None:
    """"A Normal `ModelNotReady` event ... the model is Sharded" / "`no model cache provider is configured for
    sharded model loading`" """
    world, recorder = FakeWorld(), FakeRecorder()
    world.put(r.CLUSTER_BASE_MODELS, _model(distribution="Sharded"))
    world.put(r.CLUSTER_SERVING_RUNTIMES, builders.runtime())
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    with pytest.raises(RetryError):
        await _reconciler(world, recorder).reconcile(REQ)
    assert recorder.events == [
        ("Normal", "ModelNotReady", "no model cache provider is configured for sharded model loading")]
    assert world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo") is None


# -- D11: no engine -----------------------------------------------------------------------------------

async def test_decoder_without_engine_gets_no_workload_and_a_deployment_mode_error() -> None:
    """"`engine` | ... Every InferenceService needs one: without it, OME creates no workload and records a
    `DeploymentModeError` event." """
    isvc = builders.isvc(decoder={})
    del isvc["spec"]["engine"]
    assert validation.spec_error("llama", isvc["spec"]) is None  # admitted: no webhook rejection
    world, recorder = FakeWorld(), FakeRecorder()
    world.put(r.CLUSTER_BASE_MODELS, _model())
    world.put(r.CLUSTER_SERVING_RUNTIMES, builders.runtime())
    world.put(r.INFERENCE_SERVICES, isvc)
    with pytest.raises(RetryError, match="engine component is required"):
        await _reconciler(world, recorder).reconcile(REQ)
    assert recorder.events == [("Warning", "DeploymentModeError", "engine component is required")]
    assert [w for w in world.writes if w[0] != "status"] == []
    assert world.get_or_none(r.DEPLOYMENTS, "llama-decoder", "demo") is None
