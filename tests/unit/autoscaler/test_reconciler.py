"""The autoscaler reconciler against an in-memory world: what it writes, deletes and reports."""

from __future__ import annotations

import asyncio
import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from ome.api import resources as r
from ome.api.resources import Resource
from ome.config import inferenceservice_config as cfg
from ome.controllers.autoscaler import reconciler as rec
from ome.controllers.autoscaler.entries import AutoscalerEntries
from ome.devcluster.operator_config import CHART_PDB
from ome.framework import errors
from ome.framework.reconcile import Request
from ome.framework.store import OWNER_INDEX
from ome.resolution import autoscaler_objects as scalers
from ome.resolution import models, runtimes
from tests.unit.controllers.inferenceservice.fakes import FakeRecorder, FakeWorld
from tests.unit.resolution import builders

Obj = dict[str, Any]
REQ = Request("demo", "llama")
NOW = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)
TRIGGER: Obj = {"type": "cron", "metadata": {"timezone": "UTC", "start": "0 9 * * *", "end": "0 17 * * *",
                                             "desiredReplicas": "1"}}
PROVIDERS = '{"metricProviders": {"cluster-prometheus": {"serverAddress": "http://ome-prometheus.ome.svc:9090"}}}'
CHART_CONFIG = cfg.InferenceServiceConfig(podDisruptionBudget=CHART_PDB)
"""A chart install's budgets (each mode maxUnavailable: 1), the default of these tests' reconcilers."""


class World(FakeWorld):
    """FakeWorld with the scale subresource; the entries the autoscaler publishes for the InferenceService
    controller to write (`entries`), and the keys it queued there (`queued`)."""

    def __init__(self) -> None:
        super().__init__()
        self.scaled: list[tuple[str, str, int]] = []
        self.entries = AutoscalerEntries()
        self.queued: list[Request] = []
        self.entries.subscribe(self.queued.append)

    async def patch(self, res: Resource, name: str, patch: Obj, namespace: str | None = None, *,
                    subresource: str | None = None) -> Obj:
        assert subresource == "scale"
        obj = self.get_or_none(res, name, namespace)
        if obj is None:
            raise errors.NotFound(404, "NotFound", name)
        if patch["metadata"]["resourceVersion"] != obj["metadata"].get("resourceVersion"):
            raise errors.Conflict(409, "Conflict", "the object has been modified")
        self.writes.append(("scale", res.kind, name))
        self.scaled.append((res.kind, name, patch["spec"]["replicas"]))
        obj["spec"]["replicas"] = patch["spec"]["replicas"]
        obj["metadata"]["resourceVersion"] = str(int(obj["metadata"].get("resourceVersion") or 0) + 1)
        return obj

    async def apply(self, res: Resource, obj: Obj, *, field_manager: str, force: bool = True,
                    subresource: str | None = None) -> Obj:
        assert subresource is None, "the InferenceService status is the InferenceService controller's to write"
        return await super().apply(res, obj, field_manager=field_manager, force=force)


@pytest.fixture(autouse=True)
def resolvers(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Model and runtime resolution are tested elsewhere; here the runtime is fixed per test."""
    state: dict[str, Any] = {"runtime": builders.runtime()}

    def resolve_model(reader: Any, isvc: Obj) -> Any:
        obj = builders.model()
        return models.ResolvedModel(kind="ClusterBaseModel", name=obj["metadata"]["name"], namespace=None,
                                    obj=obj, ready=True)

    def resolve_runtime(reader: Any, isvc: Obj, model: Any) -> Any:
        obj = state["runtime"]
        return runtimes.ResolvedRuntime(kind=obj["kind"], name=obj["metadata"]["name"], obj=obj,
                                        auto_selected=True, warnings=[])

    monkeypatch.setattr(models, "resolve_model", resolve_model)
    monkeypatch.setattr(runtimes, "resolve_runtime", resolve_runtime)
    return state


def _reconciler(world: World, recorder: FakeRecorder | None = None, *, keda: bool = True, policy: bool = False,
                config: cfg.InferenceServiceConfig | None = None) -> rec.AutoscalerReconciler:
    return rec.AutoscalerReconciler(
        reader=world, writer=world, recorder=recorder or FakeRecorder(),  # type: ignore[arg-type]
        config=config or CHART_CONFIG,
        features=rec.Features(keda_served=keda, policy_enabled=policy), entries=world.entries, clock=lambda: NOW,
    )


def _put_isvc(world: World, *, workloads: bool = True, **kwargs: Any) -> Obj:
    """The service, and (`workloads`) each declared component's Deployment or InferenceReplica as the
    InferenceService controller would have made it: the autoscaler's objects follow their workload."""
    isvc = world.put(r.INFERENCE_SERVICES, builders.isvc(**kwargs))
    if workloads:
        kind = r.INFERENCE_REPLICAS if kwargs.get("deploymentMode") == "OMENative" else r.DEPLOYMENTS
        for component in ("engine", "decoder", "router"):
            if isvc["spec"].get(component) is not None:
                _workload(world, kind, None, component)
    return isvc


def _set_engine(world: World, engine: Obj) -> None:
    isvc = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert isvc is not None
    isvc["spec"]["engine"] = engine


def _names(world: World, res: Resource) -> set[str]:
    return {o["metadata"]["name"] for o in world.list(res, "demo")}


def _entry(world: World, component: str = "engine") -> Obj:
    """The component's status entry as the autoscaler last published it."""
    return dict((world.entries.published("demo", "llama") or {}).get(component) or {})


def _workload(world: World, kind: Resource, replicas: int | None, component: str = "engine") -> Obj:
    spec: Obj = {} if replicas is None else {"replicas": replicas}
    isvc = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert isvc is not None
    owner = [{"uid": isvc["metadata"]["uid"], "controller": True, "kind": "InferenceService", "name": "llama"}]
    return world.put(kind, {"metadata": {"name": f"llama-{component}", "namespace": "demo",
                                         "ownerReferences": owner, "resourceVersion": "7"}, "spec": spec})


async def test_default_hpa_and_pdb_then_a_noop_reconcile_writes_nothing() -> None:
    world = World()
    _put_isvc(world)
    reconciler = _reconciler(world)
    await reconciler.reconcile(REQ)
    hpa = world.get_or_none(r.HPAS, "llama-engine", "demo")
    assert hpa is not None and (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 3)
    pdb = world.get_or_none(r.PDBS, "llama-engine", "demo")
    assert pdb is not None and pdb["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "llama-engine"}}}
    # scaleTargetRef beside it is the InferenceService controller's (tests/unit/controllers/inferenceservice).
    assert _entry(world) == {"autoscaler": {"class": "HPA", "managedBy": "ome", "specSource": "default"}}
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert world.writes == []


@pytest.mark.parametrize(("mode", "kind"), [("RawDeployment", r.DEPLOYMENTS), ("OMENative", r.INFERENCE_REPLICAS)])
async def test_the_hpa_and_the_budget_are_created_once_their_workload_is_there(mode: str, kind: Resource) -> None:
    # Made before it, the HPA controller would find no scale target: a FailedGetScale warning on every new
    # service and one more HPA status write. The workload's event brings the service back.
    world = World()
    _put_isvc(world, workloads=False, deploymentMode=mode)
    reconciler = _reconciler(world)
    await reconciler.reconcile(REQ)
    assert world.writes == []
    assert _names(world, r.HPAS) == _names(world, r.PDBS) == set()
    _workload(world, kind, 1)
    await reconciler.reconcile(REQ)
    assert _names(world, r.HPAS) == _names(world, r.PDBS) == {"llama-engine"}


async def test_an_hpa_already_there_is_kept_and_updated_while_its_workload_is_gone() -> None:
    world = World()
    _put_isvc(world)
    reconciler = _reconciler(world)
    await reconciler.reconcile(REQ)
    await world.delete(r.DEPLOYMENTS, "llama-engine", "demo")  # being replaced, say
    _set_engine(world, {"minReplicas": 2, "maxReplicas": 5})
    await reconciler.reconcile(REQ)
    hpa = world.get_or_none(r.HPAS, "llama-engine", "demo")
    assert hpa is not None and (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 5)
    assert _names(world, r.PDBS) == {"llama-engine"}


async def test_hpa_status_reaches_the_component_status() -> None:
    world = World()
    _put_isvc(world)
    reconciler = _reconciler(world)
    await reconciler.reconcile(REQ)
    hpa = world.get_or_none(r.HPAS, "llama-engine", "demo")
    assert hpa is not None
    hpa["status"] = {"currentReplicas": 2, "desiredReplicas": 3, "lastScaleTime": "2026-01-01T00:05:00Z",
                     "conditions": [{"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale",
                                     "message": "ok", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    await reconciler.reconcile(REQ)
    auto = _entry(world)["autoscaler"]
    assert (auto["currentReplicas"], auto["desiredReplicas"], auto["lastScaleTime"]) == (2, 3, "2026-01-01T00:05:00Z")
    assert [c["type"] for c in auto["conditions"]] == ["AbleToScale"]


async def test_switch_hpa_to_keda_creates_the_scaled_object_before_deleting_the_hpa() -> None:
    world = World()
    _put_isvc(world)
    reconciler = _reconciler(world)
    await reconciler.reconcile(REQ)
    _set_engine(world, {"autoscaler": {"class": "KEDA", "keda": {"triggers": [TRIGGER]}}})
    world.writes.clear()
    await reconciler.reconcile(REQ)
    kinds = [(verb, kind) for verb, kind, _ in world.writes if kind in ("ScaledObject", "HorizontalPodAutoscaler")]
    assert kinds == [("apply", "ScaledObject"), ("delete", "HorizontalPodAutoscaler")]
    assert _names(world, scalers.SCALED_OBJECTS) == {"scaledobject-llama-engine"}
    assert _names(world, r.HPAS) == set()
    assert _entry(world)["autoscaler"] == {"class": "KEDA", "managedBy": "ome", "specSource": "isvc"}


async def test_switch_to_none_deletes_the_scaler_and_holds_the_count_at_min() -> None:
    world = World()
    _put_isvc(world, engine={"autoscaler": {"class": "KEDA", "keda": {"triggers": [TRIGGER]}}})
    reconciler = _reconciler(world)
    await reconciler.reconcile(REQ)
    _workload(world, r.DEPLOYMENTS, 4)
    _set_engine(world, {"minReplicas": 2, "autoscaler": {"class": "None"}})
    await reconciler.reconcile(REQ)
    assert _names(world, scalers.SCALED_OBJECTS) == set() and _names(world, r.HPAS) == set()
    assert world.scaled == [("Deployment", "llama-engine", 2)]
    world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo")["spec"]["replicas"] = 5  # type: ignore[index]
    await reconciler.reconcile(REQ)  # a kubectl scale does not last
    assert world.scaled[-1] == ("Deployment", "llama-engine", 2)
    assert _entry(world)["autoscaler"] == {"class": "None", "managedBy": "none", "specSource": "isvc"}


async def test_external_keeps_the_count_but_omenative_never_stays_at_zero() -> None:
    world = World()
    _put_isvc(world, engine={"minReplicas": 2, "autoscaler": {"class": "External"}})
    reconciler = _reconciler(world)
    _workload(world, r.DEPLOYMENTS, 5)
    await reconciler.reconcile(REQ)
    assert world.scaled == [] and _names(world, r.HPAS) == set()
    native = World()
    _put_isvc(native, deploymentMode="OMENative", engine={"minReplicas": 2, "autoscaler": {"class": "External"}})
    _workload(native, r.INFERENCE_REPLICAS, 0)
    await _reconciler(native).reconcile(REQ)
    assert native.scaled == [("InferenceReplica", "llama-engine", 2)]
    assert _entry(native)["autoscaler"] == {"class": "External", "managedBy": "external", "specSource": "isvc"}


async def test_omenative_hpa_targets_the_replica_and_its_pdb_counts_pods() -> None:
    world = World()
    _put_isvc(world, engine={"leader": {}, "worker": {"size": 2}, "maxReplicas": 4})
    _workload(world, r.INFERENCE_REPLICAS, 4)
    reconciler = _reconciler(world)
    await reconciler.reconcile(REQ)
    hpa = world.get_or_none(r.HPAS, "llama-engine", "demo")
    assert hpa is not None and hpa["spec"]["scaleTargetRef"]["kind"] == "InferenceReplica"
    pdb = world.get_or_none(r.PDBS, "llama-engine", "demo")
    assert pdb is not None and pdb["spec"]["minAvailable"] == 11  # 4 x (1 + 2) pods, maxUnavailable 1
    assert pdb["spec"]["selector"]["matchLabels"]["ome.io/managed-by"] == "OMENative"
    world.get_or_none(r.INFERENCE_REPLICAS, "llama-engine", "demo")["spec"]["replicas"] = 2  # type: ignore[index]
    await reconciler.reconcile(REQ)
    pdb = world.get_or_none(r.PDBS, "llama-engine", "demo")
    assert pdb is not None and pdb["spec"]["minAvailable"] == 5  # follows the count


async def test_a_stranger_under_our_name_fails_the_component() -> None:
    world = World()
    _put_isvc(world)
    world.put(r.HPAS, {"metadata": {"name": "llama-engine", "namespace": "demo"}, "spec": {}})
    with pytest.raises(rec.ComponentFailed, match="is not controlled by expected owner"):
        await _reconciler(world).reconcile(REQ)
    assert _entry(world) == {}  # status stops updating
    assert not _names(world, r.PDBS)  # and the budget, written beside the scaler otherwise, is not made


class _BudgetFirst(World):
    """The scaler's write answers only once the budget's has been sent."""

    def __init__(self) -> None:
        super().__init__()
        self.budget_sent = asyncio.Event()

    async def apply(self, res: Resource, obj: Obj, *, field_manager: str, force: bool = True,
                    subresource: str | None = None) -> Obj:
        if res == r.PDBS:
            self.budget_sent.set()
        elif res == r.HPAS:
            await asyncio.wait_for(self.budget_sent.wait(), 10)  # one write after the other never gets past
        return await super().apply(res, obj, field_manager=field_manager, force=force, subresource=subresource)


async def test_the_scaler_and_the_budget_are_written_together() -> None:
    """Independent objects, one round trip: the budget's write does not wait for the scaler's answer."""
    world = _BudgetFirst()
    _put_isvc(world)
    await _reconciler(world).reconcile(REQ)
    assert _names(world, r.HPAS) == _names(world, r.PDBS) == {"llama-engine"}


async def test_a_pdb_ome_did_not_create_fails_preflight() -> None:
    world = World()
    _put_isvc(world)
    world.put(r.PDBS, {"metadata": {"name": "llama-engine", "namespace": "demo"}, "spec": {}})
    with pytest.raises(rec.ComponentFailed, match="^failed to preflight engine PodDisruptionBudget"):
        await _reconciler(world).reconcile(REQ)


async def test_keda_without_keda_crds_fails_and_keeps_the_hpa() -> None:
    world = World()
    _put_isvc(world)
    reconciler = _reconciler(world, keda=False)
    await reconciler.reconcile(REQ)
    _set_engine(world, {"autoscaler": {"class": "KEDA", "keda": {"triggers": [TRIGGER]}}})
    with pytest.raises(rec.ComponentFailed, match="won't watch keda.sh/v1alpha1/ScaledObject resources"):
        await reconciler.reconcile(REQ)
    assert _names(world, r.HPAS) == {"llama-engine"}


async def test_rawdeployment_min_above_runtime_max_stops_updating(resolvers: dict[str, Any]) -> None:
    resolvers["runtime"] = builders.runtime(engine_config={"maxReplicas": 2})
    world = World()
    _put_isvc(world, engine={"minReplicas": 3})
    with pytest.raises(rec.ComponentFailed, match="minReplicas must not exceed maxReplicas: 3 > 2"):
        await _reconciler(world).reconcile(REQ)
    assert _names(world, r.HPAS) == set() and world.writes == []


async def test_runtime_block_and_bounds_apply_when_the_service_sets_none(resolvers: dict[str, Any]) -> None:
    resolvers["runtime"] = builders.runtime(engine_config={"minReplicas": 2, "maxReplicas": 6, "autoscaler": {
        "class": "HPA", "hpa": {"metrics": [{"type": "Resource", "resource": {"name": "memory", "target": {
            "type": "Utilization", "averageUtilization": 60}}}]}}})
    world = World()
    _put_isvc(world)
    await _reconciler(world).reconcile(REQ)
    hpa = world.get_or_none(r.HPAS, "llama-engine", "demo")
    assert hpa is not None and (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 6)
    assert hpa["spec"]["metrics"][0]["resource"]["name"] == "memory"
    assert _entry(world)["autoscaler"]["specSource"] == "runtime"


async def test_legacy_target_annotation_on_rawdeployment() -> None:
    world = World()
    _put_isvc(world, annotations={"ome.io/targetUtilizationPercentage": "45"})
    await _reconciler(world).reconcile(REQ)
    hpa = world.get_or_none(r.HPAS, "llama-engine", "demo")
    assert hpa is not None and hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 45
    assert _entry(world)["autoscaler"]["specSource"] == "legacy"


async def test_removed_component_loses_its_autoscaler_and_budget() -> None:
    world = World()
    _put_isvc(world, router={})
    reconciler = _reconciler(world)
    await reconciler.reconcile(REQ)
    assert _names(world, r.HPAS) == {"llama-engine", "llama-router"}
    isvc = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert isvc is not None
    del isvc["spec"]["router"]
    await reconciler.reconcile(REQ)
    assert _names(world, r.HPAS) == {"llama-engine"} and _names(world, r.PDBS) == {"llama-engine"}


async def test_without_the_key_a_component_that_sets_no_budget_gets_none() -> None:
    """A manifest install: inferenceservice-config has no podDisruptionBudget, so no mode has a default;
    a component that sets a field still gets its budget."""
    world = World()
    _put_isvc(world, router={"maxUnavailable": 2})
    manifests = cfg.parse({})
    await _reconciler(world, config=manifests).reconcile(REQ)
    assert _names(world, r.HPAS) == {"llama-engine", "llama-router"}
    assert _names(world, r.PDBS) == {"llama-router"}
    router = world.get_or_none(r.PDBS, "llama-router", "demo")
    assert router is not None and router["spec"]["maxUnavailable"] == 2


async def test_a_key_with_only_raw_deployment_gives_omenative_no_budget() -> None:
    world = World()
    _put_isvc(world, deploymentMode="OMENative")
    raw_only = cfg.parse({"podDisruptionBudget": '{"rawDeployment": {"maxUnavailable": 1}}'})
    await _reconciler(world, config=raw_only).reconcile(REQ)
    assert _names(world, r.HPAS) == {"llama-engine"} and _names(world, r.PDBS) == set()


async def test_a_mode_without_default_budget_deletes_our_pdb() -> None:
    world = World()
    _put_isvc(world)
    await _reconciler(world).reconcile(REQ)
    no_default = cfg.parse({"podDisruptionBudget": '{"omeNative": {"maxUnavailable": 1}}'})
    await _reconciler(world, config=no_default).reconcile(REQ)
    assert _names(world, r.PDBS) == set()


def _policy(world: World, name: str = "queue-depth") -> Obj:
    return world.put(r.AUTOSCALER_POLICIES, {
        "metadata": {"name": name, "namespace": "demo", "generation": 2},
        "spec": {"class": "KEDA", "keda": {"triggers": [{
            "type": "prometheus", "providerRef": {"name": "cluster-prometheus"}, "metricType": "AverageValue",
            "metadata": {"query": 'sum(q{isvc="{{ .ISVCName }}"})', "threshold": "5", "ignoreNullValues": "false"},
        }], "fallback": {"failureThreshold": 3, "replicas": {"fromComponent": "MaxReplicas"}}}},
    })


async def test_policy_by_name_renders_then_holds_when_it_goes_away() -> None:
    world = World()
    recorder = FakeRecorder()
    config = cfg.parse({"autoscalerPolicy": PROVIDERS})
    _put_isvc(world, engine={"maxReplicas": 4, "autoscalerPolicyRef": {"name": "queue-depth"}})
    _policy(world)
    reconciler = _reconciler(world, recorder, policy=True, config=config)
    await reconciler.reconcile(REQ)
    so = world.get_or_none(scalers.SCALED_OBJECTS, "scaledobject-llama-engine", "demo")
    assert so is not None
    assert so["spec"]["triggers"][0]["metadata"]["serverAddress"] == "http://ome-prometheus.ome.svc:9090"
    assert so["spec"]["triggers"][0]["metadata"]["query"] == 'sum(q{isvc="llama"})'
    assert so["spec"]["fallback"]["replicas"] == 4
    auto = _entry(world)["autoscaler"]
    assert (auto["specSource"], auto["policy"]["name"], auto["conditions"][0]["reason"]) == (
        "policy", "queue-depth", "RenderedFromPolicy")
    del world.objects[(r.AUTOSCALER_POLICIES.name, "demo", "queue-depth")]
    await reconciler.reconcile(REQ)
    await reconciler.reconcile(REQ)
    assert _names(world, scalers.SCALED_OBJECTS) == {"scaledobject-llama-engine"}  # last-known-good kept
    held = _entry(world)["autoscaler"]
    resolved = held["conditions"][0]
    assert (held["class"], resolved["status"], resolved["reason"]) == ("KEDA", "False", "PolicyNotFound")
    assert resolved["message"].startswith("holding last-known-good scaler: ")
    assert [e[1] for e in recorder.events] == ["AutoscalerPolicyHold"]  # once, when the hold starts


async def test_policy_reference_is_ignored_with_a_condition_when_the_feature_is_off() -> None:
    world = World()
    recorder = FakeRecorder()
    _put_isvc(world, engine={"autoscalerPolicyRef": {"name": "queue-depth"}})
    _policy(world)
    await _reconciler(world, recorder, policy=False).reconcile(REQ)
    assert _names(world, scalers.SCALED_OBJECTS) == set() and _names(world, r.HPAS) == set()
    resolved = _entry(world)["autoscaler"]["conditions"][0]
    assert (resolved["type"], resolved["status"], resolved["reason"]) == (
        "AutoscalerResolved", "False", "PolicyNotFound")


async def test_inline_block_shadows_the_policy() -> None:
    world = World()
    _put_isvc(world, engine={"autoscalerPolicyRef": {"name": "queue-depth"}, "autoscaler": {"class": "HPA"}})
    _policy(world)
    await _reconciler(world, policy=True, config=cfg.parse({"autoscalerPolicy": PROVIDERS})).reconcile(REQ)
    auto = _entry(world)["autoscaler"]
    assert (auto["specSource"], auto["shadowedPolicyRef"], auto["conditions"][0]["reason"]) == (
        "isvc", {"name": "queue-depth"}, "InlinePrecedence")
    assert _names(world, r.HPAS) == {"llama-engine"}


async def test_keda_status_takes_counts_from_the_hpa_keda_made_and_the_scaled_object_conditions() -> None:
    world = World()
    _put_isvc(world, engine={"autoscaler": {"class": "KEDA", "keda": {"triggers": [TRIGGER]}}})
    reconciler = _reconciler(world)
    await reconciler.reconcile(REQ)
    so = world.get_or_none(scalers.SCALED_OBJECTS, "scaledobject-llama-engine", "demo")
    assert so is not None
    so["status"] = {"hpaName": "keda-hpa-scaledobject-llama-engine", "lastActiveTime": "2026-01-01T00:04:00Z",
                    "conditions": [{"type": "Active", "status": "False", "reason": "ScalerNotActive",
                                    "message": "no trigger is active"}]}
    world.put(r.HPAS, {"metadata": {"name": "keda-hpa-scaledobject-llama-engine", "namespace": "demo"},
                       "status": {"currentReplicas": 2, "desiredReplicas": 1}})
    await reconciler.reconcile(REQ)
    auto = _entry(world)["autoscaler"]
    assert (auto["currentReplicas"], auto["desiredReplicas"], auto["lastScaleTime"]) == (
        2, 1, "2026-01-01T00:04:00Z")
    assert [(c["type"], c["reason"]) for c in auto["conditions"]] == [("Active", "ScalerNotActive")]
    assert scalers.keda_hpa_name({"metadata": {"name": "so"}}) == "keda-hpa-so"
    assert scalers.keda_hpa_name({"metadata": {"name": "so"}, "spec": {"advanced": {
        "horizontalPodAutoscalerConfig": {"name": "mine"}}}}) == "mine"


async def test_a_count_written_since_the_cache_was_read_is_never_overwritten() -> None:
    world = World()
    _put_isvc(world, deploymentMode="OMENative", engine={"minReplicas": 2})
    replica = _workload(world, r.INFERENCE_REPLICAS, None)
    stale = copy.deepcopy(replica)
    replica["spec"]["replicas"] = 3  # kubectl scale, not yet in the cache the reconciler decides from
    replica["metadata"]["resourceVersion"] = "8"

    class StaleCache(World):
        def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None:
            return stale if res == r.INFERENCE_REPLICAS else world.get_or_none(res, name, namespace)

    reader = StaleCache()
    reconciler = rec.AutoscalerReconciler(
        reader=reader, writer=world, recorder=FakeRecorder(),  # type: ignore[arg-type]
        config=CHART_CONFIG, features=rec.Features(keda_served=True, policy_enabled=False),
        entries=world.entries, clock=lambda: NOW)
    reader.objects = world.objects
    with pytest.raises(errors.Conflict):
        await reconciler.reconcile(REQ)  # requeued; decided again from the fresh cache
    assert replica["spec"]["replicas"] == 3


async def test_budgets_and_scalers_are_read_through_the_owner_index() -> None:
    """A label scan of the namespace on every reconcile was the manager's top cost at 200 services."""
    world = World()
    isvc = _put_isvc(world)
    reads: list[Any] = []
    real_list = world.list

    def list_(res: Resource, namespace: str | None = None, **kwargs: Any) -> list[Obj]:
        if res in (r.HPAS, r.PDBS):
            reads.append(kwargs.get("index"))
        return real_list(res, namespace, **kwargs)

    world.list = list_  # type: ignore[method-assign]
    await _reconciler(world).reconcile(REQ)
    assert reads and all(index == (OWNER_INDEX, isvc["metadata"]["uid"]) for index in reads)
