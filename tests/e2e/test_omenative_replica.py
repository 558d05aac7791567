"""OMENative on the real control plane with kwok: Instances reach Ready, restart whole, scale down."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from ome.api.resources import CONTROLLER_REVISIONS, ENDPOINT_SLICES, INFERENCE_REPLICAS, PODS, SERVICES
from ome.controllers.inferencereplica import add_to_manager
from ome.devcluster import paths
from ome.framework import errors
from ome.framework.client import Client
from ome.framework.manager import Manager, ManagerOptions
from ome.framework.reconcile import Request
from ome.omenative.settings import InferenceReplicaSettings

Obj = dict[str, Any]
pytestmark = pytest.mark.usefixtures("ome_crds")


def template(image: str = "vllm:1") -> Obj:
    return {
        "metadata": {"labels": {"team": "llm", "ome.io/runner": "bogus"}},
        "spec": {
            "containers": [
                {
                    "name": "ome-container",
                    "image": image,
                    "ports": [{"containerPort": 8080, "name": "http"}],
                    "env": [{"name": "OME_RUNNER", "value": "overridden"}],
                    "resources": {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}},
                }
            ],
            "tolerations": [{"operator": "Exists"}],
        },
    }


def replica(name: str, runners: list[Obj], replicas: int = 1) -> Obj:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceReplica",
        "metadata": {"name": name},
        "spec": {
            "component": "engine",
            "parentRef": {"name": name.removesuffix("-engine")},
            "replicas": replicas,
            "runners": runners,
        },
    }


@pytest.fixture
async def manager(kubeconfig: Path) -> AsyncIterator[Manager]:
    client = await Client.from_kubeconfig(str(kubeconfig))
    mgr = Manager(
        client,
        ManagerOptions(
            metrics_bind_address="0", health_probe_bind_address="0", install_signal_handlers=False
        ),
    )
    add_to_manager(mgr, InferenceReplicaSettings(status_encoding="Rows"))
    task = asyncio.create_task(mgr.run())
    yield mgr
    mgr.stop()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(task, 30)
    await client.close()


async def until(check: Callable[[], Awaitable[Any]], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = await check()
        if last:
            return last
        await asyncio.sleep(0.3)
    raise AssertionError(f"condition not met in {timeout}s; last={last!r}")


def ready_condition(obj: Obj) -> Obj:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == "Ready"), {})


async def wait_ready(client: Client, ns: str, name: str, replicas: int) -> Obj:
    async def check() -> Obj | None:
        obj = await client.get(INFERENCE_REPLICAS, name, ns)
        st = obj.get("status") or {}
        ok = ready_condition(obj).get("reason") == "AllInstancesReady" and st.get("replicas") == replicas
        return obj if ok else None

    return await until(check)  # type: ignore[no-any-return]


async def pods_of(client: Client, ns: str) -> dict[str, Obj]:
    items, _ = await client.list(PODS, ns)
    return {p["metadata"]["name"]: p for p in items if not p["metadata"].get("deletionTimestamp")}


def env(pod: Obj) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in pod["spec"]["containers"][0]["env"]}


async def test_single_pod_instance_reaches_ready(
    client: Client, namespace: str, manager: Manager, kubeconfig: Path
) -> None:
    await client.create(
        INFERENCE_REPLICAS,
        replica("solo-engine", [{"name": "default", "size": 1, "template": template()}]),
        namespace,
    )
    # What users run: kubectl waits on the replica's Ready condition.
    built = paths.bin_dir() / "kubectl"
    kubectl = built if built.is_file() else Path(shutil.which("kubectl") or "kubectl")
    waited = await asyncio.create_subprocess_exec(
        str(kubectl), "--kubeconfig", str(kubeconfig), "-n", namespace, "wait", "--for=condition=Ready",
        "inferencereplica/solo-engine", "--timeout=90s",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await waited.communicate()
    assert waited.returncode == 0, out.decode()
    assert "condition met" in out.decode()
    obj = await wait_ready(client, namespace, "solo-engine", 1)
    pods = await pods_of(client, namespace)
    pod = pods["solo-engine-0-default-0"]
    labels = pod["metadata"]["labels"]
    assert labels["ome.io/runner"] == "default" and labels["team"] == "llm"
    assert labels["ome.io/instance-incarnation"] == "1" and labels["ome.io/managed-by"] == "OMENative"
    assert env(pod)["OME_RUNNER"] == "default" and "OME_LEADER_ADDRESS" not in env(pod)
    assert {"conditionType": "ome.io/serving"} in pod["spec"]["readinessGates"]
    st = obj["status"]
    assert st["instanceStatuses"][0]["phase"] == "Ready" and st["currentRevision"] == st["updateRevision"]
    rev = await client.get(CONTROLLER_REVISIONS, st["updateRevision"], namespace)
    assert rev["metadata"]["labels"]["ome.io/revision-hash"] == labels["ome.io/revision-hash"]
    headless = await client.get(SERVICES, "solo-engine-headless", namespace)
    assert headless["spec"]["publishNotReadyAddresses"] is True

    # A settled replica: a resync reconcile makes zero API writes.
    reconciler = manager.controllers[0]._reconciler  # noqa: SLF001
    await asyncio.sleep(1.0)  # let our last writes reach the cache
    before = reconciler.writes
    for _ in range(3):
        await reconciler.reconcile(Request(namespace, "solo-engine"))
    assert reconciler.writes == before


async def test_leader_and_workers_restart_whole_and_scale_down(
    client: Client, namespace: str, manager: Manager
) -> None:
    runners = [
        {"name": "leader", "size": 1, "template": template()},
        {"name": "worker", "size": 2, "template": template()},
    ]
    await client.create(INFERENCE_REPLICAS, replica("gang-engine", runners, replicas=3), namespace)
    obj = await wait_ready(client, namespace, "gang-engine", 3)
    pods = await pods_of(client, namespace)
    assert len(pods) == 9
    worker = env(pods["gang-engine-1-worker-1"])
    assert worker["OME_LEADER_ADDRESS"] == "gang-engine-1-leader-0.gang-engine-headless"
    assert (worker["OME_INSTANCE_POD_RANK"], worker["OME_INSTANCE_POD_COUNT"]) == ("2", "3")
    assert (
        pods["gang-engine-1-worker-1"]["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"]
        == "gang-engine-1"
    )
    digest = pods["gang-engine-0-leader-0"]["metadata"]["labels"]["ome.io/revision-hash"]

    async def routed() -> set[str] | None:
        slices, _ = await client.list(
            ENDPOINT_SLICES,
            namespace,
            label_selector={"kubernetes.io/service-name": f"gang-engine-rev-{digest}"},
        )
        names = {
            e["targetRef"]["name"]
            for s in slices
            for e in s.get("endpoints") or []
            if (e.get("conditions") or {}).get("ready")
        }
        return names if len(names) == 3 else None

    assert await until(routed) == {f"gang-engine-{i}-leader-0" for i in range(3)}
    gates = {c["type"]: c["status"] for c in pods["gang-engine-0-leader-0"]["status"]["conditions"]}
    assert gates["ome.io/serving"] == "True" and gates["Ready"] == "True"
    assert ready_condition(obj)["status"] == "True"

    # One worker of a ready Instance goes: the whole Instance comes back at incarnation 2.
    await client.delete(PODS, "gang-engine-0-worker-0", namespace, grace_period_seconds=0)

    async def recreated() -> bool:
        now = await pods_of(client, namespace)
        mine = [p for n, p in now.items() if n.startswith("gang-engine-0-")]
        return len(mine) == 3 and all(
            p["metadata"]["labels"]["ome.io/instance-incarnation"] == "2" for p in mine
        )

    await until(recreated)
    await wait_ready(client, namespace, "gang-engine", 3)

    # Scale 3 -> 1 through the scale subresource: indices 2 and 1 drain and go.
    await client.update_scale(INFERENCE_REPLICAS, "gang-engine", namespace, 1)

    async def scaled() -> bool:
        now = await pods_of(client, namespace)
        return sorted({n.split("-")[2] for n in now}) == ["0"]

    await until(scaled)
    obj = await wait_ready(client, namespace, "gang-engine", 1)
    assert [r["index"] for r in obj["status"]["instanceStatuses"]] == [0]


async def test_deleting_a_replica_drains_its_pods_before_they_go(
    client: Client, namespace: str, manager: Manager
) -> None:
    await client.create(
        INFERENCE_REPLICAS,
        replica("bye-engine", [{"name": "default", "size": 1, "template": template()}]),
        namespace,
    )
    await wait_ready(client, namespace, "bye-engine", 1)
    obj = await client.get(INFERENCE_REPLICAS, "bye-engine", namespace)
    assert "ome.io/ir-teardown" in obj["metadata"]["finalizers"]

    _, rv = await client.list(PODS, namespace)
    seen: list[tuple[str, Obj]] = []

    async def record() -> None:
        async for event_type, pod in client.watch(PODS, namespace, resource_version=rv, timeout_seconds=60):
            if pod.get("metadata", {}).get("name") == "bye-engine-0-default-0":
                seen.append((event_type, pod))
                if event_type == "DELETED":
                    return

    watcher = asyncio.create_task(record())
    await asyncio.sleep(0.5)  # the watch is open before the delete
    await client.delete(INFERENCE_REPLICAS, "bye-engine", namespace)

    async def gone() -> bool:
        try:
            await client.get(INFERENCE_REPLICAS, "bye-engine", namespace)
        except errors.NotFound:  # the finalizer came off once the pod was gone
            return True
        return False

    await until(gone)
    await asyncio.wait_for(watcher, 30)

    def gate(pod: Obj) -> dict[str, str]:
        return {c["type"]: c["status"] for c in (pod.get("status") or {}).get("conditions") or []}

    terminating = [p for _, p in seen if p["metadata"].get("deletionTimestamp")]
    assert terminating, [t for t, _ in seen]
    # Out of rotation (the gate False, and Ready with it) before the pod was deleted.
    assert gate(terminating[0])["ome.io/serving"] == "False" and gate(terminating[0])["Ready"] == "False"
    assert seen[-1][0] == "DELETED"
