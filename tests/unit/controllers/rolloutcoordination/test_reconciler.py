"""The rollout coordination reconciler on an in-memory apiserver: status.rolloutCoordination, the
transition metric, CoordinationGroupFailed, no-op passes, the limit the Instance rollout asks for, the
peer variables and RolloutCoordinationReady for the InferenceService controller."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from prometheus_client import REGISTRY

from ome.api.resources import INFERENCE_REPLICAS, INFERENCE_SERVICES
from ome.controllers.rolloutcoordination import condition, observe
from ome.controllers.rolloutcoordination.reconciler import RolloutCoordinationReconciler
from ome.framework.reconcile import Request
from ome.framework.resources import Resource
from tests.unit.controllers.inferencereplica.fakes import FakeApi, FakeRecorder

Obj = dict[str, Any]
NS = "prod"
NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
RUNNER = [{"name": "default", "size": 1, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}]


class Api(FakeApi):
    async def apply(self, res: Resource, obj: Obj, *, field_manager: str, force: bool = True,
                    subresource: str | None = None, timeout: float | None = None) -> Obj:
        if subresource != "status":
            return await super().apply(res, obj, field_manager=field_manager, force=force)
        self.writes.append(("apply", res.kind, obj["metadata"]["name"]))
        current = self.objects[self._key(res, obj["metadata"]["name"], obj["metadata"].get("namespace"))]
        status = current.setdefault("status", {})
        if "rolloutCoordination" in obj["status"]:
            status["rolloutCoordination"] = copy.deepcopy(obj["status"]["rolloutCoordination"])
        else:
            status.pop("rolloutCoordination", None)
        return current


def isvc(groups: list[Obj]) -> Obj:
    return {"metadata": {"name": "chat", "namespace": NS, "generation": 4},
            "spec": {"deploymentMode": "OMENative", "engine": {}, "decoder": {}, "rollout": {"groups": groups}}}


def replica(component: str, running: list[str], target: str, current: str, *, failed: bool = False) -> Obj:
    rows = [{"index": i, "phase": "Failed" if failed and i == 0 else "Ready", "runningRevision": f"chat-{component}-{r}",
             "servingPodCount": 1} for i, r in enumerate(running)]
    return {
        "metadata": {"name": f"chat-{component}", "namespace": NS, "generation": 2,
                     "annotations": {"ome.io/parent-generation": "4"}},
        "spec": {"component": component, "parentRef": {"name": "chat"}, "replicas": len(running), "runners": RUNNER},
        "status": {"observedGeneration": 2, "updateRevision": f"chat-{component}-{target}",
                   "currentRevision": f"chat-{component}-{current}", "instanceStatuses": rows},
    }


def transitions(group: str, before: str, after: str) -> float:
    labels = {"namespace": NS, "isvc": "chat", "group": group, "from": before, "to": after}
    return REGISTRY.get_sample_value("ome_omenative_rollout_group_transition_total", labels) or 0.0


async def test_phases_metric_event_and_no_op() -> None:
    api, recorder = Api(), FakeRecorder()
    api.put(INFERENCE_SERVICES, isvc([{"components": ["engine", "decoder"]}]))
    api.put(INFERENCE_REPLICAS, replica("engine", ["old", "old"], "new", "old"))
    api.put(INFERENCE_REPLICAS, replica("decoder", ["old", "old"], "new", "old"))
    rec = RolloutCoordinationReconciler(api, api, recorder=recorder, now=lambda: NOW)  # type: ignore[arg-type]
    start = transitions("0", "", "Surging")
    await rec.reconcile(Request(NS, "chat"))
    status = api.get(INFERENCE_SERVICES, "chat", NS)["status"]["rolloutCoordination"]  # type: ignore[index]
    assert status["groups"][0] == {
        "name": "0", "components": ["engine", "decoder"], "policy": "BlueGreen", "phase": "Surging",
        "message": "creating new-revision pods", "lastTransitionTime": "2026-12-03T12:00:00Z"}
    assert transitions("0", "", "Surging") == start + 1 and rec.writes == 1
    # Nothing changed: no write.
    await rec.reconcile(Request(NS, "chat"))
    assert rec.writes == 1
    # An Instance fails: Failed, the event, and the counter.
    api.put(INFERENCE_REPLICAS, replica("engine", ["new", "old"], "new", "old", failed=True))
    await rec.reconcile(Request(NS, "chat"))
    assert api.get(INFERENCE_SERVICES, "chat", NS)["status"]["rolloutCoordination"]["groups"][0]["phase"] == (  # type: ignore[index]
        "Failed")
    assert recorder.events == [("Warning", "CoordinationGroupFailed",
                                "rollout group 0 (engine, decoder) failed: one or more Components in the BlueGreen "
                                "group failed")]
    assert transitions("0", "Surging", "Failed") >= 1


async def test_condition_limit_and_peer_env() -> None:
    api = Api()
    svc = api.put(INFERENCE_SERVICES, isvc([{"components": ["decoder"], "soak": "1m"}, {"components": ["engine"]}]))
    engine = api.put(INFERENCE_REPLICAS, replica("engine", ["old"], "new", "old"))
    api.put(INFERENCE_REPLICAS, replica("decoder", ["old"], "new", "old"))
    limit, _ = observe.limit_for_replica(api, engine, {}, NOW, 5)  # type: ignore[arg-type]
    assert limit is not None and (limit.gate, limit.reason) == ("Sequential", "Sequential waiting on decoder")
    fields = condition.with_condition({"extra_conditions": ()}, api, svc, NOW)
    (cond,) = fields["extra_conditions"]
    assert (cond.type, cond.status, cond.reason) == ("RolloutCoordinationReady", "False", "InProgress")
    env = dict(observe.peer_env_for(api, engine, "anything"))  # type: ignore[arg-type]
    assert env["OME_DECODER_ENDPOINT"] == "chat-decoder.prod.svc.cluster.local"
    assert env["OME_DECODER_REVISION_ENDPOINT"] == "chat-decoder-rev-old.prod.svc.cluster.local"
    # Without rollout groups: no variables, no limit, no condition.
    plain = api.put(INFERENCE_SERVICES, {"metadata": {"name": "chat", "namespace": NS, "generation": 4},
                                         "spec": {"engine": {}, "decoder": {}}})
    assert observe.peer_env_for(api, engine, "x") == []  # type: ignore[arg-type]
    assert observe.limit_for_replica(api, engine, {}, NOW, 5) == (None, None)  # type: ignore[arg-type]
    assert condition.with_condition({"extra_conditions": ()}, api, plain, NOW) == {"extra_conditions": ()}


async def test_the_limit_reads_the_replica_being_planned_not_an_older_cached_copy() -> None:
    """Found by the e2e sequence test under load: the Instance rollout planned the engine from its own
    newer write (the new update revision, written from the service's next generation) while the cache
    still held the service and both replicas at the old one. The coordinator, reading only the cache,
    saw a settled group and set no limit, so the engine rolled beside the decoder it should wait for."""
    api = Api()
    api.put(INFERENCE_SERVICES, isvc([{"components": ["decoder"], "soak": "1m"}, {"components": ["engine"]}]))
    api.put(INFERENCE_REPLICAS, replica("engine", ["old"], "old", "old"))
    api.put(INFERENCE_REPLICAS, replica("decoder", ["old"], "old", "old"))
    planned = replica("engine", ["old"], "new", "old")  # what the rollout plans from: newer than the cache
    planned["metadata"].update(generation=3, annotations={"ome.io/parent-generation": "5"})
    planned["status"]["observedGeneration"] = 3
    limit, _ = observe.limit_for_replica(api, planned, {}, NOW, 5)  # type: ignore[arg-type]
    # Its peers have not shown the plan it was written from: it waits under the Plan gate.
    assert limit is not None and (limit.total, limit.gate) == (0, "Plan"), limit
