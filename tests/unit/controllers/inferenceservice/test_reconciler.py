"""The reconciler against an in-memory world: what it writes, and that a no-op reconcile writes nothing."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from ome.api import resources as r
from ome.controllers.inferenceservice import component_writes
from ome.controllers.inferenceservice import reconciler as rec
from ome.framework.reconcile import Request
from ome.resolution import models, modes, runtimes
from tests.unit.controllers.inferenceservice.fakes import FakeRecorder, FakeWorld, make_reconciler
from tests.unit.resolution import builders

Obj = dict[str, Any]
NOW = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)
REQ = Request("demo", "llama")


@pytest.fixture
def world() -> FakeWorld:
    return FakeWorld()


@pytest.fixture
def recorder() -> FakeRecorder:
    return FakeRecorder()


@pytest.fixture(autouse=True)
def resolvers(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Resolution of models and runtimes is the webhook helper's, tested there; here it is fixed."""
    state: dict[str, Any] = {"runtime": builders.runtime(), "runtime_error": None}

    def resolve_model(reader: Any, isvc: Obj) -> Any:
        if not (isvc.get("spec") or {}).get("model"):
            return None
        obj = builders.model()
        return models.ResolvedModel(
            kind="ClusterBaseModel", name=obj["metadata"]["name"], namespace=None, obj=obj, ready=True
        )

    def resolve_runtime(reader: Any, isvc: Obj, model: Any) -> Any:
        if state["runtime_error"]:
            raise runtimes.RuntimeNotFound(state["runtime_error"])
        obj = state["runtime"]
        return runtimes.ResolvedRuntime(
            kind=obj["kind"], name=obj["metadata"]["name"], obj=obj, auto_selected=True, warnings=[]
        )

    monkeypatch.setattr(rec.models, "resolve_model", resolve_model)
    monkeypatch.setattr(rec.runtimes, "resolve_runtime", resolve_runtime)
    return state


def _reconciler(
    world: FakeWorld, recorder: FakeRecorder, *, writer: Any = None
) -> rec.InferenceServiceReconciler:
    return make_reconciler(world, recorder, writer=writer, now=NOW)  # type: ignore[no-any-return]


def _names(world: FakeWorld, kind: str) -> set[str]:
    return {name for (k, _, name) in world.objects if k == kind}


def _status(world: FakeWorld) -> Obj:
    obj = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert obj is not None
    status: Obj = obj.get("status") or {}
    return status


def _cond(world: FakeWorld, type_: str) -> Obj:
    return next(c for c in _status(world)["conditions"] if c["type"] == type_)


def _make_available(world: FakeWorld, name: str = "llama-engine") -> None:
    dep = world.get_or_none(r.DEPLOYMENTS, name, "demo")
    assert dep is not None
    dep["status"] = {
        "conditions": [
            {
                "type": "Available",
                "status": "True",
                "reason": "MinimumReplicasAvailable",
                "message": "Deployment has minimum availability.",
            }
        ]
    }


async def test_minimal_isvc_creates_documented_objects_then_noop_writes_nothing(
    world: FakeWorld, recorder: FakeRecorder
) -> None:
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    reconciler = _reconciler(world, recorder)
    await reconciler.reconcile(REQ)
    assert _names(world, "deployments.apps") == {"llama-engine"}
    assert _names(world, "services") == {"llama-engine", "llama"}
    # The HPA and PDB are the autoscaler controller's (tests/unit/autoscaler).
    assert _names(world, "horizontalpodautoscalers.autoscaling") == set()
    assert _names(world, "poddisruptionbudgets.policy") == set()
    assert len(world.writes) == 4  # the Deployment and its Service, the external Service, status
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert world.writes == []


async def test_status_url_and_ready_once_the_deployment_is_available(
    world: FakeWorld, recorder: FakeRecorder
) -> None:
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    reconciler = _reconciler(world, recorder)
    await reconciler.reconcile(REQ)
    assert _cond(world, "Ready")["status"] == "False"
    assert _status(world)["modelStatus"]["transitionStatus"] == "InProgress"
    _make_available(world)
    await reconciler.reconcile(REQ)
    status = _status(world)
    assert status["url"] == "http://llama.demo.svc.cluster.local:8080"
    assert status["components"]["engine"]["url"] == "http://llama-engine.demo.svc.cluster.local"
    assert _cond(world, "Ready")["status"] == "True"
    assert _cond(world, "IngressReady")["reason"] == "IngressDisabled"
    # RuntimeReady is written only after a runtime problem (inference-services.md §Status).
    assert all(c["type"] != "RuntimeReady" for c in status["conditions"])
    assert status["modelStatus"]["transitionStatus"] == "UpToDate"
    assert status["observedGeneration"] == 1
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert world.writes == []


async def test_runtime_gone_sets_runtime_ready_false_and_keeps_the_deployment(
    world: FakeWorld, recorder: FakeRecorder, resolvers: dict[str, Any]
) -> None:
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    reconciler = _reconciler(world, recorder)
    await reconciler.reconcile(REQ)
    _make_available(world)
    await reconciler.reconcile(REQ)
    resolvers["runtime_error"] = 'runtime "vllm-llama" not found'
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert [w for w in world.writes if w[0] == "delete"] == []
    assert "llama-engine" in _names(world, "deployments.apps")
    runtime_ready = _cond(world, "RuntimeReady")
    assert (runtime_ready["status"], runtime_ready["reason"]) == ("False", "RuntimeNotFound")
    assert _cond(world, "EngineReady")["status"] == "True"  # the workload is left as it is
    assert ("Warning", "RuntimeNotFound", 'runtime "vllm-llama" not found') in recorder.events


async def test_ttl_expired_deletes_with_uid_precondition_and_records_event(
    world: FakeWorld, recorder: FakeRecorder
) -> None:
    world.put(r.INFERENCE_SERVICES, builders.isvc(ttlSecondsAfterCreation=60))
    result = await _reconciler(world, recorder).reconcile(REQ)
    assert result.requeue_after is None
    assert world.writes == [("delete", "InferenceService", "llama")]
    assert recorder.events == [
        ("Normal", "TTLExpired", "Deleted because ttlSecondsAfterCreation=60 has passed")
    ]


async def test_ttl_ahead_requeues_by_the_deadline(world: FakeWorld, recorder: FakeRecorder) -> None:
    world.put(r.INFERENCE_SERVICES, builders.isvc(ttlSecondsAfterCreation=3600))
    result = await _reconciler(world, recorder).reconcile(REQ)
    assert result.requeue_after == pytest.approx(3000)
    assert ("delete", "InferenceService", "llama") not in world.writes


async def test_ttl_never_deletes_a_recreated_service_with_the_same_name(recorder: FakeRecorder) -> None:
    cache, server = FakeWorld(), FakeWorld()
    cache.put(r.INFERENCE_SERVICES, builders.isvc(ttlSecondsAfterCreation=60))
    recreated = builders.isvc()
    recreated["metadata"]["uid"] = "uid-new"
    server.put(r.INFERENCE_SERVICES, recreated)
    await _reconciler(cache, recorder, writer=server).reconcile(REQ)
    assert server.get_or_none(r.INFERENCE_SERVICES, "llama", "demo") is not None
    assert recorder.events == []


async def test_virtual_deployment_creates_nothing_and_is_ready(
    world: FakeWorld, recorder: FakeRecorder
) -> None:
    world.put(r.INFERENCE_SERVICES, builders.isvc(annotations={modes.ANNOTATION: "VirtualDeployment"}))
    await _reconciler(world, recorder).reconcile(REQ)
    assert world.writes == [("apply/status", "InferenceService", "llama")]
    ready = _cond(world, "Ready")
    assert (ready["status"], ready["reason"]) == ("True", "VirtualDeployment")
    assert _status(world)["url"] == "http://llama.demo.svc.cluster.local"


async def test_removed_component_objects_are_deleted(world: FakeWorld, recorder: FakeRecorder) -> None:
    world.put(r.INFERENCE_SERVICES, builders.isvc(router={"runner": {"image": "router"}}))
    reconciler = _reconciler(world, recorder)
    await reconciler.reconcile(REQ)
    assert "llama-router" in _names(world, "deployments.apps")
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    await reconciler.reconcile(REQ)
    assert _names(world, "deployments.apps") == {"llama-engine"}
    assert _names(world, "services") == {"llama-engine", "llama"}
    assert world.get_or_none(r.SERVICES, "llama", "demo")["spec"]["selector"]["component"] == "engine"  # type: ignore[index]


async def test_mode_change_leaves_the_old_deployment_running(
    world: FakeWorld, recorder: FakeRecorder
) -> None:
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    reconciler = _reconciler(world, recorder)
    await reconciler.reconcile(REQ)
    world.put(r.INFERENCE_SERVICES, builders.isvc(deploymentMode="OMENative"))
    await reconciler.reconcile(REQ)
    assert "llama-engine" in _names(world, "deployments.apps")
    assert "llama-engine" in _names(world, "inferencereplicas.ome.io")


async def test_router_annotated_multinode_stops_after_engine_and_fails(
    world: FakeWorld, recorder: FakeRecorder
) -> None:
    world.put(r.INFERENCE_SERVICES, builders.isvc(router={"annotations": {modes.ANNOTATION: "MultiNode"}}))
    with pytest.raises(component_writes.ComponentError):
        await _reconciler(world, recorder).reconcile(REQ)
    assert _names(world, "deployments.apps") == {"llama-engine"}
    assert recorder.events == []


async def test_engine_annotated_virtual_reconciles_no_component(
    world: FakeWorld, recorder: FakeRecorder
) -> None:
    world.put(
        r.INFERENCE_SERVICES,
        builders.isvc(engine={"annotations": {modes.ANNOTATION: "VirtualDeployment"}}, router={}),
    )
    with pytest.raises(component_writes.ComponentError):
        await _reconciler(world, recorder).reconcile(REQ)
    assert _names(world, "deployments.apps") == set()


async def test_engine_main_container_failure_blocks_model_status(
    world: FakeWorld, recorder: FakeRecorder
) -> None:
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    world.put(
        r.PODS,
        {
            "metadata": {
                "name": "llama-engine-abc",
                "namespace": "demo",
                "creationTimestamp": "2026-01-01T00:01:00Z",
                "labels": {"ome.io/inferenceservice": "llama", "component": "engine"},
            },
            "status": {
                "containerStatuses": [
                    {
                        "name": "ome-container",
                        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                        "lastState": {"terminated": {"exitCode": 137, "reason": "Error", "message": "OOM"}},
                    }
                ]
            },
        },
    )
    await _reconciler(world, recorder).reconcile(REQ)
    model_status = _status(world)["modelStatus"]
    assert model_status["transitionStatus"] == "BlockedByFailedLoad"
    assert model_status["lastFailureInfo"] == {"reason": "ModelLoadFailed", "message": "OOM", "exitCode": 137}


async def test_runtime_only_isvc_has_no_model_status(world: FakeWorld, recorder: FakeRecorder) -> None:
    world.put(r.INFERENCE_SERVICES, builders.isvc(model=None, runtime="vllm-llama"))
    await _reconciler(world, recorder).reconcile(REQ)
    assert "modelStatus" not in _status(world)
    dep = world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo")
    assert dep is not None and "nodeSelector" not in dep["spec"]["template"]["spec"]


async def test_cluster_local_isvc_gets_no_external_service(world: FakeWorld, recorder: FakeRecorder) -> None:
    world.put(
        r.INFERENCE_SERVICES, builders.isvc(labels={"networking.knative.dev/visibility": "cluster-local"})
    )
    await _reconciler(world, recorder).reconcile(REQ)
    assert _names(world, "services") == {"llama-engine"}
    assert "url" not in _status(world)


async def test_spec_change_rewrites_only_changed_children(world: FakeWorld, recorder: FakeRecorder) -> None:
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    reconciler = _reconciler(world, recorder)
    await reconciler.reconcile(REQ)
    changed = copy.deepcopy(world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo"))
    assert changed is not None
    changed["spec"]["engine"] = {"deploymentStrategy": {"type": "Recreate"}}
    world.put(r.INFERENCE_SERVICES, changed)
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert world.writes == [("apply", "Deployment", "llama-engine")]


async def test_deleted_isvc_is_a_noop(world: FakeWorld, recorder: FakeRecorder) -> None:
    result = await _reconciler(world, recorder).reconcile(REQ)
    assert result.requeue_after is None and world.writes == []


async def test_ingress_on_creates_the_ingress_once_the_engine_is_ready(
    world: FakeWorld, recorder: FakeRecorder
) -> None:
    from ome.config.inferenceservice_config import parse

    cfg = parse({"ingress": '{"disableIngressCreation": false, "ingressDomain": "example.com"}'})
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    reconciler = make_reconciler(world, recorder, config=cfg, now=NOW)
    await reconciler.reconcile(REQ)
    assert "llama" not in _names(world, "services")  # no external Service with ingress on
    assert _names(world, "ingresses.networking.k8s.io") == set()
    cond = _cond(world, "IngressReady")
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "False", "ComponentNotReady", "Target service not ready for ingress creation")
    _make_available(world)
    await reconciler.reconcile(REQ)
    assert _names(world, "ingresses.networking.k8s.io") == {"llama"}
    assert _cond(world, "IngressReady")["status"] == "True"
    assert _cond(world, "Ready")["status"] == "True"
    assert _status(world)["url"] == "http://llama.demo.example.com:8080"
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert world.writes == []
