"""`operation.waiting: NodeUnknown` on the real control plane (docs: concepts/omenative/instances.md,
Operations): an update whose pod to replace sits on a node that stopped reporting waits with its clock
stopped, past instanceReadyTimeout, and gets a full window again once the node is back.

kwok stands for the kubelets: taking the node out of kwok's label selector stops its heartbeats (as a
dead kubelet would), and the test then reports the node and its pod as kube-controller-manager's node
lifecycle controller does after its grace period (node `Ready=Unknown`, the pod's `Ready=False`), rather
than waiting for that grace. Putting the label back is the node coming back: kwok reports it Ready again
and finishes the pod's deletion."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from ome.api.resources import INFERENCE_REPLICAS, PODS
from ome.devcluster.components import KWOK_NODE_LABEL
from ome.framework.client import Client
from ome.framework.manager import Manager
from ome.framework.resources import NODES
from ome.framework.timefmt import format_time, parse_time
from tests.e2e.test_instance_rollout import manager as manager  # noqa: F401 - the fixture
from tests.e2e.test_instance_rollout import replica, runners, set_runners, settled, until
from tests.e2e.watching import watching

Obj = dict[str, Any]
pytestmark = pytest.mark.usefixtures("ome_crds")

TIMEOUT = 20
"""The replica's instanceReadyTimeout, seconds: the hold outlasts it."""


def _now() -> str:
    return format_time(datetime.now(UTC))


async def _set_condition(client: Client, res: Any, name: str, ns: str | None, condition: Obj) -> None:
    await client.patch(res, name, {"status": {"conditions": [condition]}}, ns,
                       patch_type="strategic", subresource="status")


def _ready(obj: Obj) -> str | None:
    return next((c["status"] for c in (obj.get("status") or {}).get("conditions") or []
                 if c["type"] == "Ready"), None)


@contextlib.asynccontextmanager
async def node_silent(client: Client, node: str) -> AsyncIterator[None]:
    """The node's kubelet gone quiet until the block ends."""
    key, value = KWOK_NODE_LABEL
    await client.patch(NODES, node, {"metadata": {"labels": {key: None}}})  # kwok lets it go
    try:
        stamp = _now()
        await _set_condition(client, NODES, node, None, {
            "type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
            "message": "Kubelet stopped posting node status.", "lastHeartbeatTime": stamp,
            "lastTransitionTime": stamp,
        })
        yield
    finally:
        await client.patch(NODES, node, {"metadata": {"labels": {key: value}}})


@contextlib.asynccontextmanager
async def rows_seen(client: Client, ns: str, name: str) -> AsyncIterator[list[tuple[float, Obj]]]:
    """Instance 0's status row at every change of the replica (wall-clock time, row), from a watch."""
    seen: list[tuple[float, Obj]] = []

    def record(event: str, obj: Obj) -> None:
        if event != "MODIFIED" or obj["metadata"]["name"] != name:
            return
        row = next((r for r in (obj.get("status") or {}).get("instanceStatuses") or [] if r["index"] == 0), None)
        if row is not None and (not seen or seen[-1][1] != row):
            seen.append((time.time(), row))

    async with watching(client, INFERENCE_REPLICAS, ns, record):
        yield seen


def _waiting(row: Obj) -> str | None:
    return (row.get("operation") or {}).get("waiting")


async def test_an_update_whose_pod_is_on_a_silent_node_waits_as_node_unknown_with_its_clock_stopped(
    client: Client, namespace: str, manager: Manager
) -> None:
    name = "silent-engine"
    body = replica(name, {"type": "RecreatePod", "rollingUpdate": {"maxUnavailable": 1}}, replicas=1)
    body["spec"]["lifecycle"]["instanceReadyTimeout"] = f"{TIMEOUT}s"
    await client.create(INFERENCE_REPLICAS, body, namespace)
    await settled(client, namespace, name, 1)
    old = f"{name}-0-default-0"
    node = (await client.get(PODS, old, namespace))["spec"]["nodeName"]

    async with rows_seen(client, namespace, name) as seen:
        async with node_silent(client, node):
            await asyncio.sleep(2)  # kwok has let the node and its pods go
            # The node lifecycle controller marks the pods of a node it lost not ready.
            await _set_condition(client, PODS, old, namespace, {
                "type": "Ready", "status": "False", "reason": "NodeNotReady", "lastTransitionTime": _now()})
            target = await set_runners(client, namespace, name, runners("vllm:2"))

            async def held() -> Obj | None:
                obj = await client.get(INFERENCE_REPLICAS, name, namespace)
                [row] = obj["status"]["instanceStatuses"]
                return row if _waiting(row) == "NodeUnknown" else None

            row = await until(held, 60)
            op = row["operation"]
            assert row["phase"] == "Updating" and row["targetRevision"] == target
            assert (op["type"], op["step"], op["strategy"]) == ("Update", "Drain", "RecreatePod")
            pod = await client.get(PODS, old, namespace)
            assert pod["metadata"].get("deletionTimestamp"), "drained and deleted; it cannot finish"
            # The clock is stopped: past the attempt's deadline the Instance still waits, not Failed.
            first_deadline = parse_time(op["deadline"])
            assert first_deadline is not None
            await asyncio.sleep(max((first_deadline - datetime.now(UTC)).total_seconds(), 0) + 4)
            obj = await client.get(INFERENCE_REPLICAS, name, namespace)
            [row] = obj["status"]["instanceStatuses"]
            assert row["phase"] == "Updating" and _waiting(row) == "NodeUnknown"
            assert "lastFailure" not in row
            assert _ready(await client.get(NODES, node)) == "Unknown"
            back = time.time()
        # The node is back: kwok finishes the old pod's deletion, the new pod is made and serves.
        await until(lambda: _node_ready(client, node), 60)
        done = await settled(client, namespace, name, 1)

    [row] = done["status"]["instanceStatuses"]
    assert row["runningRevision"] == target and row["incarnation"] == 2
    assert all(r["phase"] != "Failed" for _, r in seen), "the hold never failed the attempt"
    waits = [(at, r) for at, r in seen if _waiting(r) == "NodeUnknown"]
    assert waits, "the watch saw the wait"
    # After the hold the operation got a full window again, counted from when the hold ended.
    resumed = [r for at, r in seen if at >= waits[-1][0] and r.get("operation") and not _waiting(r)]
    assert resumed, [r for _, r in seen]
    deadline = parse_time(resumed[0]["operation"]["deadline"])
    assert deadline is not None and deadline > first_deadline
    assert deadline.timestamp() >= back + TIMEOUT - 2


async def _node_ready(client: Client, node: str) -> bool:
    return _ready(await client.get(NODES, node)) == "True"
