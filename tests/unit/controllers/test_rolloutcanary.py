"""The rollout run / canary reconciler on an in-memory apiserver: opening, parking, repin, promote,
analysis rollback and closing, the held revision, the coordination limits, and no-op passes."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from ome.api.resources import INFERENCE_REPLICAS, INFERENCE_SERVICES, ROLLOUT_POLICIES
from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers.rolloutcanary import hold
from ome.controllers.rolloutcanary.reconciler import CanaryReconciler
from ome.controllers.rolloutpolicy.reconciler import RolloutPolicyStatusReconciler
from ome.framework import errors
from ome.framework.cache import NoInformerError
from ome.framework.reconcile import Request
from ome.framework.resources import Resource
from ome.omenative import canary_analysis as analysis
from ome.omenative import canary_metrics as metrics
from ome.omenative import coordination_plan as cplan
from ome.omenative.coordination_types import member_of
from tests.unit.controllers.inferencereplica.fakes import FakeApi, FakeClient, FakeRecorder

Obj = dict[str, Any]
NS = "prod"
OLD, NEW = "chat-engine-aaaaaaaa", "chat-engine-bbbbbbbb"
T0 = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
MANUAL = {"steps": [{"capacity": "50%", "traffic": 50, "pause": {}}, {"capacity": "100%", "traffic": 100}]}


class Api(FakeApi):
    """Status applies replace this controller's fields, as server-side apply drops what it omits."""

    def __init__(self) -> None:
        super().__init__()
        self.applied: list[Obj] = []
        self.conflicts = 0

    async def apply(self, res: Resource, obj: Obj, *, field_manager: str, force: bool = True,
                    subresource: str | None = None, timeout: float | None = None) -> Obj:
        if res is not INFERENCE_SERVICES:
            return await super().apply(res, obj, field_manager=field_manager, force=force)
        current = self.objects[self._key(res, obj["metadata"]["name"], obj["metadata"].get("namespace"))]
        wanted = obj["metadata"].get("resourceVersion")
        if wanted and wanted != current["metadata"]["resourceVersion"]:
            self.conflicts += 1
            raise errors.Conflict(409, "Conflict", "the object has been modified")
        self.applied.append(copy.deepcopy(obj))
        self.writes.append(("apply", res.kind, obj["metadata"]["name"]))
        status = current.setdefault("status", {})
        new = obj.get("status") or {}
        for key in ("rollout", "conditions"):
            if key in new:
                status[key] = copy.deepcopy(new[key])
            else:
                status.pop(key, None)
        for name, fields in (new.get("components") or {}).items():
            entry = status.setdefault("components", {}).setdefault(name, {})
            for key in ("canary", "rolloutPhase", "traffic"):
                if key in fields:
                    entry[key] = copy.deepcopy(fields[key])
                else:
                    entry.pop(key, None)
        current["metadata"]["resourceVersion"] = self._next_rv()
        return current


class FakePrometheus:
    def __init__(self, value: float | None) -> None:
        self.value = value
        self.calls: list[Mapping[str, str]] = []

    async def sample(self, source: Any, metrics_spec: Any, variables: Mapping[str, str], *, timeout: float,
                     now: datetime, source_error: Any = None) -> analysis.Sample:
        self.calls.append(dict(variables))
        answer = analysis.QueryAnswer(values=() if self.value is None else (self.value,))
        return analysis.Sample(now, tuple(analysis.judge_metric(m, answer) for m in metrics_spec))


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def isvc(canary: Obj | None = None, *, annotations: dict[str, str] | None = None, **group: Any) -> Obj:
    g = {"components": ["engine"], **group}
    if canary is not None:
        g["canary"] = canary
    return {
        "metadata": {"name": "chat", "namespace": NS, "generation": 2, "annotations": annotations or {}},
        "spec": {"deploymentMode": "OMENative", "engine": {"minReplicas": 2}, "rollout": {"groups": [g]}},
        "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "x"}]},
    }


def replica(update: str, current: str, running: list[str], ready: bool = True) -> Obj:
    rows = [{"index": i, "phase": "Ready" if ready else "Creating", "runningRevision": r}
            for i, r in enumerate(running)]
    return {
        "metadata": {"name": "chat-engine", "namespace": NS, "generation": 1,
                     "annotations": {"ome.io/parent-generation": "2"}},
        "spec": {"component": "engine", "parentRef": {"name": "chat"}, "replicas": len(running)},
        "status": {"observedGeneration": 1, "updateRevision": update, "currentRevision": current,
                   "instanceStatuses": rows},
    }


def setup(svc: Obj, rep: Obj, *, value: float | None = 0.0, policy_enabled: bool = False,
          config: InferenceServiceConfig | None = None) -> tuple[Api, CanaryReconciler, FakeRecorder, Clock,
                                                                FakePrometheus]:
    api, recorder, clock, prom = Api(), FakeRecorder(), Clock(), FakePrometheus(value)
    api.put(INFERENCE_SERVICES, svc)
    api.put(INFERENCE_REPLICAS, rep)
    cfg = config or InferenceServiceConfig()
    rec = CanaryReconciler(FakeClient(api), api, lambda: cfg, prometheus=prom, policy_enabled=policy_enabled,  # type: ignore[arg-type]
                           recorder=recorder, now=clock)  # type: ignore[arg-type]
    return api, rec, recorder, clock, prom


def get(api: Api) -> Obj:
    found = api.get(INFERENCE_SERVICES, "chat", NS)
    assert found is not None
    return found


def cond(obj: Obj, type_: str) -> Obj:
    return next(c for c in obj["status"]["conditions"] if c["type"] == type_)


def set_rows(api: Api, running: list[str], ready: bool = True) -> None:
    rep = api.get(INFERENCE_REPLICAS, "chat-engine", NS)
    assert rep is not None
    rep["status"]["instanceStatuses"] = [
        {"index": i, "phase": "Ready" if ready else "Creating", "runningRevision": r} for i, r in enumerate(running)]
    rep["status"]["currentRevision"] = NEW if running and all(r == NEW for r in running) else OLD


REQ = Request(NS, "chat")


async def test_no_rollout_in_flight_reports_no_active_run_then_writes_nothing() -> None:
    api, rec, recorder, _, _ = setup(isvc(MANUAL), replica(OLD, OLD, [OLD, OLD]))
    await rec.reconcile(REQ)
    svc = get(api)
    assert cond(svc, "RolloutPlanReady")["reason"] == "NoActiveRun"
    assert cond(svc, "RolloutPlanDrift")["reason"] == "InSync"
    assert svc["status"]["rollout"]["groups"][0]["source"] == "Inline"
    writes = len(api.writes)
    await rec.reconcile(REQ)
    assert len(api.writes) == writes  # a no-op pass writes nothing
    assert "canary" not in (svc["status"].get("components") or {}).get("engine", {})


async def test_a_new_revision_opens_a_run_and_the_manual_canary_promotes_and_closes() -> None:
    api, rec, recorder, clock, _ = setup(isvc(MANUAL), replica(NEW, OLD, [OLD, OLD]))
    await rec.reconcile(REQ)
    svc = get(api)
    run = svc["status"]["rollout"]["activeRun"]
    assert run["targetRevisions"] == [{"component": "engine", "revision": "bbbbbbbb", "stableRevision": "aaaaaaaa"}]
    assert cond(svc, "RolloutPlanReady") | {"lastTransitionTime": "-"} == {
        "type": "RolloutPlanReady", "status": "True", "reason": "Pinned", "message": f"run {run['runID']} pinned",
        "lastTransitionTime": "-"}
    assert recorder.events[0][1] == "RolloutRunOpened"
    engine = svc["status"]["components"]["engine"]
    assert engine["rolloutPhase"] == "Pending" and engine["canary"]["canaryRevisionHash"] == "bbbbbbbb"

    # The coordination hook now allows one of two Instances on the new revision.
    members = {"engine": member_of("engine", api.get(INFERENCE_REPLICAS, "chat-engine", NS), 2, "SurgeThenDrain")}
    limits = cplan.plan(svc, members, T0).limits
    assert limits["engine"].total == 1 and limits["engine"].gate == "Budget"

    set_rows(api, [NEW, OLD])
    clock.now += timedelta(seconds=10)
    await rec.reconcile(REQ)
    engine = get(api)["status"]["components"]["engine"]
    assert engine["rolloutPhase"] == "Paused"
    assert engine["traffic"] == [
        {"revisionName": "chat-engine-rev-bbbbbbbb", "percent": 50, "tag": "canary", "latestRevision": True},
        {"revisionName": "chat-engine-rev-aaaaaaaa", "percent": 50, "tag": "stable"},
    ]
    before = metrics.STEP_TOTAL.labels(NS, "chat", "engine")._value.get()  # noqa: SLF001
    get(api)["metadata"]["annotations"]["ome.io/rollout-promote"] = "bbbbbbbb"
    await rec.reconcile(REQ)
    assert "ome.io/rollout-promote" not in get(api)["metadata"]["annotations"]
    assert get(api)["status"]["components"]["engine"]["canary"]["currentStep"] == 1
    assert metrics.STEP_TOTAL.labels(NS, "chat", "engine")._value.get() == before + 1  # noqa: SLF001

    set_rows(api, [NEW, NEW])
    await rec.reconcile(REQ)
    svc = get(api)
    assert svc["status"]["components"]["engine"]["rolloutPhase"] == "Stable"
    assert "activeRun" not in svc["status"]["rollout"]
    assert svc["status"]["rollout"]["lastRun"]["outcome"] == "Completed"
    assert ("Normal", "RolloutRunClosed", f"run {run['runID']} closed: Completed") in recorder.events
    assert cond(svc, "RolloutPlanReady")["reason"] == "NoActiveRun"


async def test_a_ready_written_after_the_pass_read_the_service_is_kept_and_the_run_still_closes() -> None:
    """The conditions list is atomic: this controller applies the InferenceService controller's entries
    too, as one snapshot shows them and guarded by its resourceVersion. A pass that read the service
    before that controller's last write gets a 409, and applies again on a fresh read."""
    api, rec, recorder, _, _ = setup(isvc(MANUAL), replica(NEW, OLD, [OLD, OLD]))
    await rec.reconcile(REQ)
    run = get(api)["status"]["rollout"]["activeRun"]
    set_rows(api, [NEW, OLD])
    await rec.reconcile(REQ)
    get(api)["metadata"]["annotations"]["ome.io/rollout-promote"] = "bbbbbbbb"
    await rec.reconcile(REQ)
    assert api.conflicts == 0
    set_rows(api, [NEW, NEW])
    stale = copy.deepcopy(get(api))
    api.put(INFERENCE_SERVICES, stale | {"status": {**stale["status"], "conditions": [
        c | {"status": "False", "reason": "EngineNotReady"} if c["type"] == "Ready" else c
        for c in stale["status"]["conditions"]]}})  # the InferenceService controller's write
    reads = iter([stale])
    cached = api.get_or_none
    api.get_or_none = lambda res, name, namespace=None: (  # type: ignore[method-assign]
        next(reads, None) or cached(res, name, namespace)) if res is INFERENCE_SERVICES else cached(
        res, name, namespace)
    await rec.reconcile(REQ)
    svc = get(api)
    assert api.conflicts == 1
    assert cond(svc, "Ready")["reason"] == "EngineNotReady"
    assert cond(svc, "RolloutPlanReady")["reason"] == "NoActiveRun"
    assert svc["status"]["rollout"]["lastRun"]["outcome"] == "Completed"
    closed = ("Normal", "RolloutRunClosed", f"run {run['runID']} closed: Completed")
    assert recorder.events.count(closed) == 1


ANALYSIS = {"steps": [
    {"capacity": "50%", "traffic": 50, "analysis": {"interval": "1m", "failureLimit": 1, "metrics": [
        {"name": "error-rate", "query": 'e{ns="{{.Namespace}}"}', "operator": "LT", "threshold": "0.01"}]}},
    {"capacity": "100%", "traffic": 100},
]}


async def test_a_failing_sample_rolls_back_holds_the_revision_and_closes_the_run() -> None:
    api, rec, recorder, clock, prom = setup(isvc(ANALYSIS), replica(NEW, OLD, [OLD, OLD]), value=0.5)
    await rec.reconcile(REQ)
    set_rows(api, [NEW, OLD])
    await rec.reconcile(REQ)  # ready: the analysis gate; the first sample is due at once
    assert get(api)["status"]["components"]["engine"]["rolloutPhase"] == "Paused"
    await rec.reconcile(REQ)
    engine = get(api)["status"]["components"]["engine"]
    assert engine["rolloutPhase"] == "RollingBack"
    assert engine["canary"]["rolledBackRevisionHash"] == "bbbbbbbb"
    assert prom.calls[0]["CanaryRevision"] == "bbbbbbbb" and prom.calls[0]["Namespace"] == NS

    # The Instance rollout moves the group back to the replica's currentRevision.
    rep = api.get(INFERENCE_REPLICAS, "chat-engine", NS)
    assert rep is not None
    assert hold.revert_revision(api, rep, {"aaaaaaaa", "bbbbbbbb"}) == OLD  # type: ignore[arg-type]
    assert hold.replica_requests(get(api)) == [Request(NS, "chat-engine")]

    set_rows(api, [OLD, OLD])
    clock.now += timedelta(seconds=5)
    await rec.reconcile(REQ)
    svc = get(api)
    assert svc["status"]["components"]["engine"]["rolloutPhase"] == "RolledBack"
    assert svc["status"]["rollout"]["lastRun"]["outcome"] == "RolledBack"
    closed = [e for e in recorder.events if e[1] == "RolloutRunClosed"]
    assert closed and closed[0][2].endswith("closed: RolledBack")
    # Held: no new run opens for the rejected revision, and a pass changes nothing.
    writes = len(api.writes)
    clock.now += timedelta(minutes=5)
    await rec.reconcile(REQ)
    assert len(api.writes) == writes
    # Still held: the Instance rollout keeps planning toward the stable revision, and Instances that start
    # (a scale-up, a rebuild) start on it.
    assert hold.revert_revision(api, rep, {"aaaaaaaa", "bbbbbbbb"}) == OLD  # type: ignore[arg-type]
    assert hold.start_hash(api, rep, "bbbbbbbb", {"aaaaaaaa", "bbbbbbbb"}) == "aaaaaaaa"  # type: ignore[arg-type]


async def test_a_missing_policy_parks_once_with_the_documented_reason() -> None:
    ref = {"name": "canary-strict", "progression": "canary"}
    api, rec, recorder, _, _ = setup(isvc(None, policyRef=ref), replica(NEW, OLD, [OLD, OLD]), policy_enabled=True)
    result = await rec.reconcile(REQ)
    svc = get(api)
    ready = cond(svc, "RolloutPlanReady")
    assert (ready["status"], ready["reason"]) == ("False", "PolicyNotFound")
    assert [e[1] for e in recorder.events] == ["RolloutPlanParked"]
    assert result.requeue_after == 60.0
    await rec.reconcile(REQ)
    assert [e[1] for e in recorder.events] == ["RolloutPlanParked"]
    # The coordination hook keeps every Instance where it is while no canary started.
    members = {"engine": member_of("engine", api.get(INFERENCE_REPLICAS, "chat-engine", NS), 2, "SurgeThenDrain")}
    assert cplan.plan(svc, members, T0).limits["engine"].total == 0

    api.put(ROLLOUT_POLICIES, {"metadata": {"name": "canary-strict", "namespace": NS, "generation": 4},
                               "spec": {"canary": MANUAL}})
    await rec.reconcile(REQ)
    svc = get(api)
    assert cond(svc, "RolloutPlanReady")["reason"] == "Pinned"
    pinned = svc["status"]["rollout"]["activeRun"]["plan"]["groups"][0]
    assert pinned["source"] == "Policy" and pinned["policyGeneration"] == 4
    assert svc["status"]["components"]["engine"]["canary"]["canaryRevisionHash"] == "bbbbbbbb"


async def test_an_unbound_provider_parks_with_its_message() -> None:
    canary = {**MANUAL, "prometheus": {"providerRef": {"name": "cluster-prometheus"}}}
    api, rec, recorder, _, _ = setup(isvc(canary), replica(NEW, OLD, [OLD, OLD]))
    await rec.reconcile(REQ)
    ready = cond(get(api), "RolloutPlanReady")
    assert ready["reason"] == "ProviderUnbound"
    assert ready["message"] == ('groups[0]: metric provider "cluster-prometheus" is not bound in this cluster\'s '
                                "metricProviders configuration")


async def test_drift_then_repin_now_keeps_progress_and_holds_before_a_higher_step() -> None:
    api, rec, recorder, clock, _ = setup(isvc(MANUAL), replica(NEW, OLD, [OLD, OLD]))
    await rec.reconcile(REQ)
    set_rows(api, [NEW, OLD])
    await rec.reconcile(REQ)
    svc = get(api)
    svc["spec"]["rollout"]["groups"][0]["canary"] = {"steps": [{"capacity": "50%", "traffic": 80, "pause": {}},
                                                               {"capacity": "100%", "traffic": 100}]}
    await rec.reconcile(REQ)
    assert cond(get(api), "RolloutPlanDrift")["reason"] == "SpecNewerThanRun"
    get(api)["metadata"]["annotations"]["ome.io/rollout-repin"] = "now"
    await rec.reconcile(REQ)
    svc = get(api)
    assert "ome.io/rollout-repin" not in svc["metadata"]["annotations"]
    assert cond(svc, "RolloutPlanDrift")["reason"] == "InSync"
    assert any(e[1] == "RolloutPlanRepinned" for e in recorder.events)
    canary = svc["status"]["components"]["engine"]["canary"]
    assert canary["preStepHold"] is True and canary["observedTrafficWeight"] == 50
    assert svc["status"]["components"]["engine"]["rolloutPhase"] == "Paused"
    get(api)["metadata"]["annotations"]["ome.io/rollout-promote"] = "bbbbbbbb"
    await rec.reconcile(REQ)
    canary = get(api)["status"]["components"]["engine"]["canary"]
    assert "preStepHold" not in canary and canary["observedTrafficWeight"] == 80 and canary["currentStep"] == 0


async def test_rollback_with_nothing_in_flight_is_removed_with_a_warning() -> None:
    api, rec, recorder, _, _ = setup(isvc(MANUAL, annotations={"ome.io/rollout-rollback": "true"}),
                                     replica(OLD, OLD, [OLD, OLD]))
    # A completed canary for the serving revision.
    get(api)["status"]["components"] = {"engine": {"rolloutPhase": "Stable", "canary": {
        "canaryRevisionHash": "aaaaaaaa", "stableRevisionHash": "99999999", "currentStep": 2,
        "observedTrafficWeight": 100}}}
    await rec.reconcile(REQ)
    assert "ome.io/rollout-rollback" not in get(api)["metadata"]["annotations"]
    assert ("Warning", "CanaryRollbackIgnored",
            "rollback requested for engine with no canary in flight; the request is removed") in recorder.events


async def test_rollout_policy_status() -> None:
    api = Api()
    api.put(ROLLOUT_POLICIES, {"metadata": {"name": "canary-strict", "namespace": NS, "generation": 1},
                                        "spec": {"canary": {**MANUAL, "prometheus": {
                                            "providerRef": {"name": "cluster-prometheus"}}}}})
    api.put(INFERENCE_SERVICES, isvc(None, policyRef={"name": "canary-strict", "progression": "canary"}))
    bound: set[str] = set()
    rec = RolloutPolicyStatusReconciler(reader=api, writer=api, bound_providers=lambda: bound,
                                        clock=lambda: T0)
    await rec.reconcile(Request(NS, "canary-strict"))
    status = api.get(ROLLOUT_POLICIES, "canary-strict", NS)["status"]  # type: ignore[index]
    by_type = {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}
    assert by_type == {"Ready": ("True", "ProviderUnbound"), "InUse": ("True", "Attached")}
    assert status["attachedGroups"] == 1 and status["portableDigest"].startswith("rp1:")
    bound.add("cluster-prometheus")
    await rec.reconcile(Request(NS, "canary-strict"))
    status = api.get(ROLLOUT_POLICIES, "canary-strict", NS)["status"]  # type: ignore[index]
    assert {c["type"]: c["reason"] for c in status["conditions"]}["Ready"] == "BodyValid"
    writes = len(api.writes)
    await rec.reconcile(Request(NS, "canary-strict"))
    assert len(api.writes) == writes
    api.get(ROLLOUT_POLICIES, "canary-strict", NS)["spec"] = {  # type: ignore[index]
        "canary": {"steps": [{"capacity": "50%", "traffic": 50}]}}
    await rec.reconcile(Request(NS, "canary-strict"))
    status = api.get(ROLLOUT_POLICIES, "canary-strict", NS)["status"]  # type: ignore[index]
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "BodyInvalid")
    assert ready["message"] == "spec.canary final step traffic must be 100, got 50 (CanaryInvalid)"


def test_canary_analysis_config_falls_back_to_defaults() -> None:
    from ome.config import inferenceservice_config as isvc_config

    config = isvc_config.parse({
        "rollout": '{"defaultReadyTimeout": "15m"}',
        "canaryAnalysis": '{"queryTimeout": "0s", "maxConcurrency": 0, "cacheTTL": "x", "defaultProvider": "p"}',
    })
    assert config.rollout.ready_timeout_seconds == 900.0
    ca = config.canary_analysis
    assert (ca.query_timeout, ca.max_concurrency, ca.cache_ttl, ca.default_provider) == ("5s", 8, "2m", "p")
    assert isvc_config.parse({}).rollout.ready_timeout_seconds is None


async def test_a_parked_rolling_update_group_never_falls_back_to_a_default_progression() -> None:
    ref = {"name": "gentle-roll", "progression": "rollingUpdate"}
    api, rec, recorder, _, _ = setup(isvc(None, policyRef=ref), replica(NEW, OLD, [OLD, OLD]), policy_enabled=True)
    await rec.reconcile(REQ)
    svc = get(api)
    assert cond(svc, "RolloutPlanReady")["reason"] == "PolicyNotFound"
    members = {"engine": member_of("engine", api.get(INFERENCE_REPLICAS, "chat-engine", NS), 2, "SurgeThenDrain")}
    limit = cplan.plan(svc, members, T0).limits["engine"]
    assert (limit.total, limit.gate) == (0, "Plan")
    assert limit.reason.startswith("rollout parked (PolicyNotFound)")
    assert hold.replica_requests(svc) == [Request(NS, "chat-engine")]


class _ReplicaOnlyCache:
    """A cache as a manager running the replica controllers alone has it: no InferenceService informer."""

    def __init__(self, api: FakeApi) -> None:
        self._api = api

    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None:
        if res is INFERENCE_SERVICES:
            raise NoInformerError(f"no informer for {res.plural}")
        return self._api.get(res, name, namespace)


def test_a_replica_without_an_inferenceservice_informer_has_no_canary_hold() -> None:
    # A standalone replica (test_omenative_replica's manager) must start Instances, not fail each pass.
    api = Api()
    rep = replica(NEW, OLD, [OLD, OLD])
    assert hold.revert_revision(_ReplicaOnlyCache(api), rep, {"aaaaaaaa", "bbbbbbbb"}) is None  # type: ignore[arg-type]
    assert hold.start_hash(_ReplicaOnlyCache(api), rep, "bbbbbbbb", {"aaaaaaaa", "bbbbbbbb"}) == "bbbbbbbb"  # type: ignore[arg-type]
