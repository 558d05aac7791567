"""A service over referenced replicas, and an OMENative component's status, against an in-memory world."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from ome.api import resources as r
from ome.controllers.inferenceservice import controller
from ome.controllers.inferenceservice import reconciler as rec
from ome.framework.reconcile import Request
from tests.unit.controllers.inferenceservice.fakes import FakeRecorder, FakeWorld, make_reconciler
from tests.unit.resolution import builders

Obj = dict[str, Any]
NOW = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)
REQ = Request("demo", "fronted")
SELECTOR = {"ome.io/inferenceservice": "pool", "component": "engine", "ome.io/managed-by": "OMENative"}


@pytest.fixture
def world() -> FakeWorld:
    return FakeWorld()


@pytest.fixture
def recorder() -> FakeRecorder:
    return FakeRecorder()


def _reconciler(world: FakeWorld, recorder: FakeRecorder) -> rec.InferenceServiceReconciler:
    return make_reconciler(world, recorder, now=NOW)  # type: ignore[no-any-return]


def fronting(name: str = "fronted", **refs: list[str]) -> Obj:
    body = builders.isvc(name, model=None, replicaRefs=refs or {"engine": ["pool"]})
    del body["spec"]["engine"]
    return body


def standalone(name: str = "pool", component: str = "engine", *, port: int = 8000, **spec: Any) -> Obj:
    template = {"spec": {"containers": [{"name": "ome-container", "ports": [{"containerPort": port}]}]}}
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceReplica",
        "metadata": {"name": name, "namespace": "demo", "uid": f"uid-{name}", "generation": 1},
        "spec": {
            "component": component,
            "replicas": 1,
            "runners": [{"name": "default", "size": 1, "template": template}],
            **spec,
        },
        "status": {
            "observedGeneration": 1,
            "replicas": 1,
            "readyReplicas": 1,
            "servingReplicas": 1,
            "availableReplicas": 1,
            "updatedReplicas": 1,
            "updatedReadyReplicas": 1,
            "currentRevision": f"{name}-{component}-abc",
            "updateRevision": f"{name}-{component}-abc",
        },
    }


def _status(world: FakeWorld, name: str = "fronted") -> Obj:
    obj = world.get_or_none(r.INFERENCE_SERVICES, name, "demo")
    assert obj is not None
    status: Obj = obj.get("status") or {}
    return status


def _conds(world: FakeWorld, name: str = "fronted") -> dict[str, Obj]:
    return {c["type"]: c for c in _status(world, name).get("conditions") or []}


def _replica_writes(world: FakeWorld) -> list[tuple[str, str, str]]:
    return [w for w in world.writes if w[1] == "InferenceReplica"]


async def test_fronts_a_standalone_replica_and_mirrors_it(world: FakeWorld, recorder: FakeRecorder) -> None:
    world.put(r.INFERENCE_SERVICES, fronting())
    pool = world.put(r.INFERENCE_REPLICAS, standalone())
    before = repr(pool)
    reconciler = _reconciler(world, recorder)
    await reconciler.reconcile(REQ)

    svc = world.get_or_none(r.SERVICES, "fronted-engine", "demo")
    assert svc is not None and svc["spec"]["selector"] == SELECTOR
    assert svc["spec"]["ports"][0]["port"] == 8000
    external = world.get_or_none(r.SERVICES, "fronted", "demo")
    assert external is not None
    assert external["spec"]["selector"] == {"ome.io/inferenceservice": "pool", "component": "engine"}
    status = _status(world)
    assert status["url"] == "http://fronted.demo.svc.cluster.local:8000"
    engine = status["components"]["engine"]
    assert engine["url"] == "http://fronted-engine.demo.svc.cluster.local"
    assert engine["scaleTargetRef"] == {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceReplica",
        "name": "pool",
    }
    assert (
        engine["lifecycle"]["currentRevision"] == "pool-engine-abc" and engine["lifecycle"]["replicas"] == 1
    )
    conds = _conds(world)
    assert (conds["EngineReady"]["status"], conds["EngineReady"]["reason"]) == ("True", "Ready")
    assert conds["Ready"]["status"] == "True"
    assert "RuntimeReady" not in conds and "modelStatus" not in status
    assert _replica_writes(world) == [] and repr(pool) == before  # the replica is only read
    assert recorder.events == []

    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert world.writes == []


async def test_missing_replica_reports_and_recovers(world: FakeWorld, recorder: FakeRecorder) -> None:
    world.put(r.INFERENCE_SERVICES, fronting())
    reconciler = _reconciler(world, recorder)
    await reconciler.reconcile(REQ)

    message = "spec.replicaRefs.engine references InferenceReplica demo/pool, which does not exist"
    conds = _conds(world)
    assert (conds["EngineReady"]["status"], conds["EngineReady"]["reason"]) == ("False", "ReplicaRefMissing")
    assert conds["EngineReady"]["message"] == message
    assert (conds["Ready"]["reason"], conds["Ready"]["message"]) == ("ReplicaRefMissing", message)
    assert recorder.events == [("Warning", "ReplicaRefMissing", message)]
    assert world.get_or_none(r.SERVICES, "fronted-engine", "demo") is None  # nothing to front yet
    assert world.get_or_none(r.SERVICES, "fronted", "demo") is None
    assert "components" not in _status(world)  # an empty entry is left out (apply would null it)

    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert world.writes == []

    world.put(r.INFERENCE_REPLICAS, standalone())  # the replica (re)appears
    await reconciler.reconcile(REQ)
    conds = _conds(world)
    assert conds["EngineReady"]["reason"] == "Ready" and conds["Ready"]["status"] == "True"
    assert world.get_or_none(r.SERVICES, "fronted-engine", "demo") is not None
    assert _replica_writes(world) == []


async def test_deleted_replica_keeps_the_service_and_stops_backing_the_route(
    world: FakeWorld, recorder: FakeRecorder
) -> None:
    world.put(r.INFERENCE_SERVICES, fronting())
    world.put(r.INFERENCE_REPLICAS, standalone())
    reconciler = _reconciler(world, recorder)
    await reconciler.reconcile(REQ)
    world.objects.pop(("inferencereplicas.ome.io", "demo", "pool"))

    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert world.writes == [("apply/status", "InferenceService", "fronted")]  # no delete: only a report
    assert world.get_or_none(r.SERVICES, "fronted-engine", "demo") is not None
    status = _status(world)
    assert "components" not in status  # no scale target, no lifecycle, no URL
    assert _conds(world)["EngineReady"]["reason"] == "ReplicaRefMissing"


@pytest.mark.parametrize(
    ("replica", "needle"),
    [
        (standalone(parentRef={"name": "other"}), "which InferenceService other projects"),
        (standalone(component="router"), "whose spec.component is router, not engine"),
    ],
    ids=["projected", "other-component"],
)
async def test_unusable_replica_is_invalid_and_never_adopted(
    world: FakeWorld, recorder: FakeRecorder, replica: Obj, needle: str
) -> None:
    world.put(r.INFERENCE_SERVICES, fronting())
    world.put(r.INFERENCE_REPLICAS, replica)
    await _reconciler(world, recorder).reconcile(REQ)
    cond = _conds(world)["EngineReady"]
    assert (cond["status"], cond["reason"]) == ("False", "ReplicaRefInvalid") and needle in cond["message"]
    assert recorder.events[0][:2] == ("Warning", "ReplicaRefInvalid")
    assert _replica_writes(world) == []
    assert world.get_or_none(r.SERVICES, "fronted-engine", "demo") is None


async def test_router_is_the_external_target_and_each_role_has_its_service(
    world: FakeWorld, recorder: FakeRecorder
) -> None:
    world.put(r.INFERENCE_SERVICES, fronting(engine=["e-pool"], decoder=["d-pool"], router=["r-pool"]))
    world.put(r.INFERENCE_REPLICAS, standalone("e-pool"))
    world.put(r.INFERENCE_REPLICAS, standalone("d-pool", "decoder"))
    reconciler = _reconciler(world, recorder)
    await reconciler.reconcile(REQ)
    services = {name for (kind, _, name) in world.objects if kind == "services"}
    assert services == {"fronted-engine", "fronted-decoder"}  # no router replica: no router Service
    conds = _conds(world)
    assert conds["RouterReady"]["reason"] == "ReplicaRefMissing"
    assert conds["DecoderReady"]["reason"] == "Ready" and conds["Ready"]["status"] == "True"

    world.put(r.INFERENCE_REPLICAS, standalone("r-pool", "router", port=9000))
    await reconciler.reconcile(REQ)
    external = world.get_or_none(r.SERVICES, "fronted", "demo")
    assert external is not None
    assert external["spec"]["selector"] == {"ome.io/inferenceservice": "r-pool", "component": "router"}
    assert _status(world)["url"] == "http://fronted.demo.svc.cluster.local:9000"
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert world.writes == []


async def test_replica_without_runners_takes_ports_from_its_revision(
    world: FakeWorld, recorder: FakeRecorder
) -> None:
    world.put(r.INFERENCE_SERVICES, fronting())
    pool = standalone(modelRef={"name": "llama"})
    del pool["spec"]["runners"]
    world.put(r.INFERENCE_REPLICAS, pool)
    reconciler = _reconciler(world, recorder)
    await reconciler.reconcile(REQ)
    assert world.get_or_none(r.SERVICES, "fronted-engine", "demo") is None  # revision not cached yet

    template = {"spec": {"containers": [{"name": "ome-container", "ports": [{"containerPort": 30000}]}]}}
    revision = {
        "metadata": {"name": "pool-engine-abc", "namespace": "demo"},
        "data": {"runners": [{"name": "default", "size": 1, "template": template}]},
    }
    world.put(r.CONTROLLER_REVISIONS, revision)
    await reconciler.reconcile(REQ)
    svc = world.get_or_none(r.SERVICES, "fronted-engine", "demo")
    assert svc is not None and svc["spec"]["ports"][0]["port"] == 30000


async def test_omenative_component_mirrors_its_replica(world: FakeWorld, recorder: FakeRecorder) -> None:
    model = builders.model()
    model["spec"]["modelFramework"] = {"name": "transformers"}
    world.put(r.CLUSTER_BASE_MODELS, model)
    world.put(r.CLUSTER_SERVING_RUNTIMES, builders.runtime())
    world.put(r.INFERENCE_SERVICES, builders.isvc("llama", deploymentMode="OMENative"))
    reconciler = _reconciler(world, recorder)
    req = Request("demo", "llama")
    await reconciler.reconcile(req)
    engine = _status(world, "llama")["components"]["engine"]
    assert engine["scaleTargetRef"]["name"] == "llama-engine" and "lifecycle" not in engine
    assert _conds(world, "llama")["EngineReady"]["reason"] == "NoReplicas"  # nothing reported yet

    irep = world.get_or_none(r.INFERENCE_REPLICAS, "llama-engine", "demo")
    assert irep is not None
    irep["spec"]["replicas"] = 4  # the autoscaler's (OME does not set replicas under an HPA)
    # A field OME does not set: left alone (a field OME sets would be put back as drift).
    irep["spec"]["lifecycle"]["updateStrategy"].setdefault("rollingUpdate", {})["maxUnavailable"] = 1
    irep["status"] = {
        "replicas": 4,
        "readyReplicas": 3,
        "servingReplicas": 3,
        "currentRevision": "llama-engine-aaa",
        "updateRevision": "llama-engine-bbb",
        "rolloutHold": {"gate": "Budget", "reason": "maxUnavailable", "since": "2026-01-01T00:00:00Z"},
    }
    await reconciler.reconcile(req)
    lifecycle = _status(world, "llama")["components"]["engine"]["lifecycle"]
    assert lifecycle["readyReplicas"] == 3 and lifecycle["updateRevision"] == "llama-engine-bbb"
    assert lifecycle["rolloutHold"]["gate"] == "Budget"
    cond = _conds(world, "llama")["EngineReady"]
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "True",
        "MinimumAvailable",
        "3/4 Instances serving (min 3)",
    )
    world.writes.clear()
    await reconciler.reconcile(req)
    assert world.writes == []


def test_replica_events_map_to_the_services_that_reference_it(world: FakeWorld) -> None:
    world.put(r.INFERENCE_SERVICES, fronting("a", engine=["pool"]))
    world.put(r.INFERENCE_SERVICES, fronting("b", engine=["other"], router=["pool"]))
    world.put(r.INFERENCE_SERVICES, builders.isvc("declared"))
    mapped = controller.referencing_services(world)(standalone())
    assert sorted(req.name for req in mapped) == ["a", "b"]
    revision = {
        "metadata": {
            "name": "pool-engine-abc",
            "namespace": "demo",
            "ownerReferences": [{"kind": "InferenceReplica", "name": "pool", "controller": True}],
        }
    }
    assert sorted(req.name for req in controller.referencing_revision_owner(world)(revision)) == ["a", "b"]
    assert list(controller.referencing_services(world)(standalone("unknown"))) == []
