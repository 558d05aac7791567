"""bench/churn_floor.py: the churn floor writes, per change, the objects the change alters and then the
service's status at the change's generation, and reports each change's latency to that status write."""

from __future__ import annotations

import asyncio
from types import ModuleType
from typing import Any


def _obj(kind: str, name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": kind, "metadata": {"name": name}, "spec": spec}


def test_only_the_altered_and_new_objects_are_written(floor: ModuleType) -> None:
    before = [_obj("Service", "a", port=1), _obj("Deployment", "a", replicas=1)]
    after = [_obj("Service", "a", port=1), _obj("Deployment", "a", replicas=2), _obj("Service", "b")]
    assert [(o["kind"], o["metadata"]["name"]) for o in floor.changed_objects(before, after)] == [
        ("Deployment", "a"), ("Service", "b")]


def test_an_engine_annotation_alters_the_four_objects_the_manager_rewrites(scale: ModuleType,
                                                                          floor: ModuleType) -> None:
    # The manager applies the Deployment, its Service, the HPA and the budget again on such a change, and
    # not the external Service: the floor must write the same objects.
    model, runtime = scale.model_body(), scale.runtime_body()
    base = scale.floor_objects(3, "RawDeployment", "ns", model, runtime)
    changed = scale.floor_objects(3, "RawDeployment", "ns", model, runtime, {floor.CHURN_KEY: "t-1"})
    altered = floor.changed_objects(base, changed)
    assert sorted(o["kind"] for o in altered) == [
        "Deployment", "HorizontalPodAutoscaler", "PodDisruptionBudget", "Service"]
    assert all(o["metadata"]["name"] == "svc-3-engine" for o in altered)


class FakeClient:
    """Records writes in order; a service's generation goes up by one per spec patch."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self.generation: dict[str, int] = {}

    async def patch(self, res: Any, name: str, patch: Any, namespace: str | None = None, *,
                    subresource: str | None = None, **_: Any) -> dict[str, Any]:
        await asyncio.sleep(0)
        if subresource == "status":
            self.calls.append(("status", name, patch["status"]["observedGeneration"]))
            return {}
        self.generation[name] = self.generation.get(name, 1) + 1
        self.calls.append(("spec", name, patch))
        return {"metadata": {"name": name, "generation": self.generation[name]}}

    async def apply(self, res: Any, obj: dict[str, Any], *, field_manager: str, **_: Any) -> dict[str, Any]:
        await asyncio.sleep(0)
        self.calls.append(("apply", obj["metadata"]["name"], obj["metadata"].get("annotations")))
        return obj


async def test_each_change_writes_its_altered_objects_then_its_status(floor: ModuleType) -> None:
    def render(i: int, notes: dict[str, str]) -> list[dict[str, Any]]:
        workload = {**_obj("Deployment", f"svc-{i}-engine"), "apiVersion": "apps/v1"}
        workload["metadata"]["annotations"] = dict(notes)
        return [workload, _obj("Service", f"svc-{i}")]

    client = FakeClient()
    # A rate so high that no change waits for its turn (the pacing never sleeps); one change a service.
    out = await floor.floor_churn(client, "ns", 4, 1e9, 4e-9, render)
    assert out["changes"] == 4 and out["missing_gen"] == 0 and len(out["gen"]) == 4
    assert out["writes_per_change"] == 2.0  # the Deployment and the status; the unaltered Service not
    for i in range(4):
        mine = [c for c in client.calls if c[1] in (f"svc-{i}", f"svc-{i}-engine")]
        assert [c[0] for c in mine] == ["spec", "apply", "status"]
        spec, applied, status = mine
        assert status[2] == 2  # the generation the spec patch made
        assert applied[2] == spec[2]["spec"]["engine"]["annotations"]  # this change's annotation


def test_the_omenative_floor_creates_the_replica_with_its_count_before_its_objects(scale: ModuleType) -> None:
    objs = scale.floor_objects(2, "OMENative", "ns", scale.model_body(), scale.runtime_body())
    kinds = [o["kind"] for o in objs]
    assert kinds.count("InferenceReplica") == 1
    replica = objs[kinds.index("InferenceReplica")]
    assert replica["spec"]["replicas"] == 1  # as the manager creates it: no /scale write by the HPA after
    assert "finalizers" not in replica["metadata"]  # nothing in the floor would take one off
    assert kinds.index("InferenceReplica") < kinds.index("Pod") < kinds.index("HorizontalPodAutoscaler")
    assert all(o["metadata"]["namespace"] == "ns" and "ownerReferences" not in o["metadata"] for o in objs)
