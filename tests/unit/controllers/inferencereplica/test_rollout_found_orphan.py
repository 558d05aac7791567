"""FoundOrphan (docs: Instance restart policy, Observe a restart): a pod without the
`ome.io/instance-incarnation` label holds up a restart until it is gone, with one warning event on the
InferenceService."""

from __future__ import annotations

import copy
from typing import Any

from ome.api.resources import INFERENCE_REPLICAS, PODS
from ome.omenative import instance_names as names
from tests.unit.controllers.inferencereplica.world import World
from tests.unit.omenative.builders import replica as replica_body


async def test_a_pod_without_an_incarnation_holds_the_restart_with_one_found_orphan_warning() -> None:
    world = World()
    targets: list[tuple[str, str]] = []

    class Recorder:
        def event(self, obj: dict[str, Any], type_: str, reason: str, message: str) -> None:
            targets.append((obj["kind"], reason))
            world.recorder.event(obj, type_, reason, message)

    world.reconciler._recorder = Recorder()  # type: ignore[assignment]  # noqa: SLF001 - sees the target
    body = replica_body(replicas=1, lifecycle={"restartPolicy": "RecreateInstanceOnPodRestart"})
    body["metadata"]["ownerReferences"] = [
        {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "name": "chat", "uid": "isvc-uid"}
    ]
    world.api.put(INFERENCE_REPLICAS, body)
    await world.settle()
    [pod] = world.pods().values()
    orphan = copy.deepcopy(pod)
    del orphan["metadata"]["labels"][names.INCARNATION_LABEL]
    orphan["metadata"]["finalizers"] = ["example.com/keep"]  # it lingers: the restart must wait
    await world.api.delete(PODS, pod["metadata"]["name"], "ns")
    world.api.put(PODS, orphan)
    for _ in range(3):
        await world.reconcile()
        world.kubelet()
    [row] = (world.replica() or {})["status"]["instanceStatuses"]
    assert row["phase"] == "Restarting" and row["incarnation"] == 2
    assert list(world.pods()) == [orphan["metadata"]["name"]]  # nothing created while it stays
    found = [e for e in world.recorder.events if e[1] == "FoundOrphan"]
    assert len(found) == 1, found
    assert ("InferenceService", "FoundOrphan") in targets
    assert "chat-engine-0-default-0" in found[0][2] and names.INCARNATION_LABEL in found[0][2]
