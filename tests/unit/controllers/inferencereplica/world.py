"""A world for InferenceReplica reconciler tests: the fake apiserver/cache, a kubelet stand-in, and the
reconciler with the REAL expectations, lowered by the pod informer's handler as setup.py wires it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ome.api.resources import INFERENCE_REPLICAS, PODS
from ome.controllers.inferencereplica.reconciler import InferenceReplicaReconciler
from ome.controllers.inferencereplica.setup import expectation_observer
from ome.framework.expectations import ControllerExpectations
from ome.framework.reconcile import Request, Result
from ome.framework.write_behind import WriteBehind
from ome.omenative import instance_names as names
from ome.omenative.pods_view import format_time
from ome.omenative.settings import InferenceReplicaSettings
from tests.unit.controllers.inferencereplica.fakes import FakeApi, FakeClient, FakeRecorder
from tests.unit.omenative.builders import replica as replica_body

Obj = dict[str, Any]
START = datetime(2026, 1, 1, 0, 0, tzinfo=UTC)
REQ = Request("ns", "chat-engine")


class StepClock:
    """Monotonic seconds that move only when a test moves them."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


class World:
    def __init__(self, *, write_behind: WriteBehind | None = None, **settings: Any) -> None:
        self.api = FakeApi()
        self.client = FakeClient(self.api)
        self.recorder = FakeRecorder()
        self.now = START
        self.clock = StepClock()
        self._settings, self._behind = settings, write_behind
        self._observer: Any = None
        self.restart()

    def restart(self) -> None:
        """A new reconciler over the same cluster, as after a manager's restart (nothing in memory)."""
        self.expectations = ControllerExpectations(clock=self.clock)
        self.reconciler = InferenceReplicaReconciler(
            self.client,  # type: ignore[arg-type]
            self.api,  # type: ignore[arg-type]
            InferenceReplicaSettings(**self._settings),
            expectations=self.expectations,
            recorder=self.recorder,  # type: ignore[arg-type]
            now=lambda: self.now,
            write_behind=self._behind,
        )
        # The pod informer's handler, as setup.py wires it: our writes' events lower the expectations.
        # A restart replaces the previous reconciler's handler and keeps any a test added.
        if self._observer is not None:
            self.api.listeners.remove(self._observer)
        self._observer = expectation_observer(self.reconciler)
        self.api.listeners.append(self._observer)

    async def reconcile(self) -> Result:
        return await self.reconciler.reconcile(REQ)

    def replica(self) -> Obj | None:
        return self.api.get(INFERENCE_REPLICAS, "chat-engine")

    def pods(self) -> dict[str, Obj]:
        return {p["metadata"]["name"]: p for p in self.api.of(PODS)}

    def kubelet(self) -> None:
        """What kwok does: pods run at once, and Ready follows the serving gate."""
        for pod in self.api.of(PODS):
            status = pod.setdefault("status", {})
            status.update(phase="Running", podIP="10.0.0.1")
            conds = {c["type"]: c for c in status.get("conditions") or []}
            gate = (conds.get(names.SERVING_GATE) or {}).get("status")
            ready = "True" if gate == "True" and not pod["metadata"].get("deletionTimestamp") else "False"
            stamp = format_time(self.now)
            conds["ContainersReady"] = {
                "type": "ContainersReady",
                "status": "True",
                "lastTransitionTime": stamp,
            }
            if (conds.get("Ready") or {}).get("status") != ready:
                conds["Ready"] = {"type": "Ready", "status": ready, "lastTransitionTime": stamp}
            status["conditions"] = list(conds.values())

    async def settle(self, rounds: int = 6) -> None:
        for _ in range(rounds):
            await self.reconcile()
            self.kubelet()

    async def serving(self, replicas: int = 1) -> None:
        self.api.put(INFERENCE_REPLICAS, replica_body(replicas=replicas))
        await self.settle()
        rows = (self.replica() or {})["status"]["instanceStatuses"]
        assert [r["phase"] for r in rows] == ["Ready"] * replicas

    async def delete_replica(self) -> None:
        await self.api.delete(INFERENCE_REPLICAS, "chat-engine", "ns")
        self.api.writes.clear()
