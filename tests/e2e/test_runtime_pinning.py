"""Runtime revisions and pinning on the real control plane: pin, drift, roll forward with a sync token.

Revisions live in the config namespace; each test uses its own namespace as that, so tests never share one.
The second test runs the revision GC against the apiserver: marks, unmarks and deletes.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from ome.api import resources
from ome.controllers.inferenceservice.revision_gc import RevisionGC
from ome.framework.client import Client
from ome.framework.reconcile import Request
from ome.resolution import runtime_revisions as rr
from tests.e2e.isvc_support import catalog, condition, eventually, running_manager

Obj = dict[str, Any]
NAME = "pinned"


async def _isvc(client: Client, namespace: str) -> Obj:
    return await client.get(resources.INFERENCE_SERVICES, NAME, namespace)


async def _deployment(client: Client, namespace: str) -> Obj:
    return await client.get(resources.DEPLOYMENTS, f"{NAME}-engine", namespace)


def _args(deployment: Obj) -> list[str]:
    args: list[str] = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


async def test_pin_drift_and_roll_forward(client: Client, namespace: str, ome_crds: list[str]) -> None:
    async with (
        catalog(client, namespace) as cat,
        running_manager(client, config_namespace=namespace) as (ctrl, writer),
    ):
        spec = {
            "model": {"name": cat.model},
            "runtime": {"name": cat.runtime, "autoSync": False},
            "engine": {"minReplicas": 1, "maxReplicas": 1},
        }
        body = {
            "apiVersion": "ome.io/v1beta1",
            "kind": "InferenceService",
            "metadata": {"name": NAME},
            "spec": spec,
        }
        await client.create(resources.INFERENCE_SERVICES, body, namespace)

        async def pinned_name() -> str | None:
            return (await _isvc(client, namespace)).get("status", {}).get("pinnedRevisionName")

        first = await eventually(pinned_name, timeout=60)
        assert first.startswith(f"cr-{cat.runtime}-") and len(first) == len(f"cr-{cat.runtime}-") + 8
        revision = await client.get(resources.CONTROLLER_REVISIONS, first, namespace)
        assert revision["metadata"]["labels"][rr.RUNTIME_OF_LABEL] == cat.runtime
        assert revision["metadata"]["labels"][rr.RUNTIME_OF_KIND_LABEL] == "ClusterServingRuntime"
        live = await client.get(resources.CLUSTER_SERVING_RUNTIMES, cat.runtime)
        assert revision["data"] == live["spec"]
        assert first == f"cr-{cat.runtime}-{rr.spec_hash(live['spec'])}"
        deployment = await eventually(lambda: _deployment(client, namespace))
        assert _args(deployment) == ["--model", "$(MODEL_PATH)"]

        async def ready() -> bool:
            return (condition(await _isvc(client, namespace), "Ready") or {}).get("status") == "True"

        await eventually(ready, timeout=90)
        await _settled(writer)  # the reconciles that brought it to Ready are done
        writes_before = len(writer.writes)
        ctrl.queue.add(Request(namespace, NAME))  # a no-op reconcile: nothing changed
        await asyncio.sleep(2)
        assert writer.writes[writes_before:] == []

        # The runtime changes: the service drifts and its Deployment stays as it is.
        deployment = await _deployment(client, namespace)
        runner = dict(
            live["spec"]["engineConfig"]["runner"], args=["--model", "$(MODEL_PATH)", "--mem-frac=0.85"]
        )
        await client.patch(
            resources.CLUSTER_SERVING_RUNTIMES, cat.runtime, {"spec": {"engineConfig": {"runner": runner}}}
        )

        async def drifted() -> Obj | None:
            cond = condition(await _isvc(client, namespace), rr.RUNTIME_DRIFTED)
            return cond if cond is not None and cond["status"] == "True" else None

        cond = await eventually(drifted, timeout=60)
        assert cond["reason"] == "RevisionMismatch"
        assert (
            cond["message"]
            == f"pinned {first}, live spec differs; bump ome.io/runtime-sync annotation to advance"
        )
        await asyncio.sleep(1)
        after = await _deployment(client, namespace)
        assert after["metadata"]["generation"] == deployment["metadata"]["generation"]
        assert after["spec"]["template"] == deployment["spec"]["template"]
        assert (await pinned_name()) == first

        # Roll forward: a new sync token pins a revision of the live spec and updates the Deployment.
        await client.patch(
            resources.INFERENCE_SERVICES,
            NAME,
            {"metadata": {"annotations": {rr.SYNC_ANNOTATION: "mem-frac-0-85"}}},
            namespace,
        )

        async def advanced() -> Obj | None:
            obj = await _isvc(client, namespace)
            status = obj.get("status") or {}
            moved = status.get("pinnedRevisionName") not in (None, first)
            return obj if moved and condition(obj, rr.RUNTIME_DRIFTED) is None else None

        obj = await eventually(advanced, timeout=60)
        second = obj["status"]["pinnedRevisionName"]
        assert obj["status"]["lastRuntimeSyncToken"] == "mem-frac-0-85"
        new_revision = await client.get(resources.CONTROLLER_REVISIONS, second, namespace)
        assert new_revision["data"]["engineConfig"]["runner"]["args"][-1] == "--mem-frac=0.85"
        assert new_revision["revision"] == revision["revision"] + 1

        async def rolled_out() -> bool:
            return _args(await _deployment(client, namespace))[-1] == "--mem-frac=0.85"

        await eventually(rolled_out, timeout=60)
        items, _ = await client.list(
            resources.CONTROLLER_REVISIONS, namespace, label_selector={rr.RUNTIME_OF_LABEL: cat.runtime}
        )
        assert {item["metadata"]["name"] for item in items} == {first, second}


class _Snapshot:
    """A cache stand-in for the GC: the revisions as the apiserver has them now, and given services."""

    def __init__(self, client: Client, namespace: str, services: list[Obj]) -> None:
        self.client, self.namespace, self.services, self.revisions = client, namespace, services, []

    async def refresh(self) -> None:
        self.revisions, _ = await self.client.list(resources.CONTROLLER_REVISIONS, self.namespace)

    def list(self, res: resources.Resource, namespace: str | None = None, **_: Any) -> list[Obj]:
        return self.services if res == resources.INFERENCE_SERVICES else self.revisions


async def test_gc_marks_unmarks_and_deletes_with_server_side_apply(client: Client, namespace: str) -> None:
    names = []
    for number, args in enumerate((["--a"], ["--b"]), start=1):
        body = rr.revision_body(
            kind=rr.CLUSTER_SERVING_RUNTIME,
            namespace="",
            runtime="gc-rt",
            spec={"engineConfig": {"runner": {"args": args}}},
            config_namespace=namespace,
            number=number,
        )
        await client.create(resources.CONTROLLER_REVISIONS, body, namespace)
        names.append(body["metadata"]["name"])
    unused, used = names
    pinned = {"metadata": {"name": "svc", "namespace": namespace}, "status": {"pinnedRevisionName": used}}
    snapshot = _Snapshot(client, namespace, [pinned])

    async def gc_pass(grace: timedelta) -> None:
        await snapshot.refresh()
        gc = RevisionGC(reader=snapshot, writer=client, config_namespace=namespace, retention=0, grace=grace)
        await gc.reconcile(gc.request)

    def annotations(obj: Obj) -> dict[str, str]:
        found: dict[str, str] = obj["metadata"].get("annotations") or {}
        return found

    await gc_pass(timedelta(hours=24))
    marked = await client.get(resources.CONTROLLER_REVISIONS, unused, namespace)
    assert rr.GC_ELIGIBLE_SINCE_ANNOTATION in annotations(marked)
    assert annotations(marked)[rr.CREATED_BY_ANNOTATION] == rr.CREATED_BY
    kept = await client.get(resources.CONTROLLER_REVISIONS, used, namespace)
    assert rr.GC_ELIGIBLE_SINCE_ANNOTATION not in annotations(kept)

    snapshot.services.append({"metadata": {"name": "b"}, "spec": {"runtime": {"revision": unused}}})
    await gc_pass(timedelta(hours=24))
    unmarked = await client.get(resources.CONTROLLER_REVISIONS, unused, namespace)
    assert rr.GC_ELIGIBLE_SINCE_ANNOTATION not in annotations(unmarked)
    assert annotations(unmarked)[rr.CREATED_BY_ANNOTATION] == rr.CREATED_BY  # the creator's fields stay

    snapshot.services.pop()
    await gc_pass(timedelta(0))  # marks
    await gc_pass(timedelta(0))  # the grace has passed: deletes
    items, _ = await client.list(resources.CONTROLLER_REVISIONS, namespace)
    assert {item["metadata"]["name"] for item in items} == {used}


async def _settled(writer: Any, quiet: float = 2.0, timeout: float = 60.0) -> None:
    """Wait until the controller has made no write for `quiet` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    count = -1
    while loop.time() < deadline and count != len(writer.writes):
        count = len(writer.writes)
        await asyncio.sleep(quiet)
