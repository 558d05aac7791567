"""An image change rolled out across N single-pod Instances with SurgeThenDrain and maxSurge 10%.

Prints the time until every Instance runs the new revision against the lower bound the budget sets
(waves x the time one new pod takes to serve), the API writes per Instance moved (both controllers), and
the fewest serving Instances a pod watch saw at any moment (target: never below desired, within 1.5x of
the bound), and a per-Instance step profile from the same watch (median gap between its surge pod's
ADDED, scheduling, containers ready, gate open and Ready, then its old pod's gate closed, deleting and
gone, and from a pod gone to the next surge pod). Usage: bench_rollout.py KUBECONFIG [N]
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import statistics
import sys
import time
import uuid
from typing import Any, cast

from ome.api.resources import INFERENCE_REPLICAS, NAMESPACES, PODS
from ome.controllers import inferencereplica, instancerollout
from ome.controllers.inferencereplica.reconciler import InferenceReplicaReconciler
from ome.controllers.instancerollout.reconciler import InstanceRolloutReconciler
from ome.framework.client import Client
from ome.framework.manager import Manager, ManagerOptions
from ome.omenative.rollout_settings import RolloutSettings
from ome.omenative.settings import InferenceReplicaSettings

Obj = dict[str, Any]
NAME = "bench-engine"
MAX_SURGE = "10%"


def runners(image: str) -> list[Obj]:
    template = {
        "spec": {
            "containers": [{"name": "ome-container", "image": image}],
            "tolerations": [{"operator": "Exists"}],
        }
    }
    return [{"name": "default", "size": 1, "template": template}]


def body(n: int) -> Obj:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceReplica",
        "metadata": {"name": NAME},
        "spec": {
            "component": "engine",
            "parentRef": {"name": "bench"},
            "replicas": n,
            "runners": runners("bench:1"),
            "lifecycle": {
                "updateStrategy": {"type": "SurgeThenDrain", "rollingUpdate": {"maxSurge": MAX_SURGE}}
            },
        },
    }


async def settled(client: Client, ns: str, n: int) -> Obj | None:
    obj = await client.get(INFERENCE_REPLICAS, NAME, ns)
    st = obj.get("status") or {}
    ready = any(
        c["type"] == "Ready" and c["reason"] == "AllInstancesReady" for c in st.get("conditions") or []
    )
    on_update = st.get("currentRevision") == st.get("updateRevision") and st.get("updatedReplicas") == n
    return obj if ready and on_update and st.get("readyReplicas") == n else None


STEPS = (
    ("new ADDED", "new scheduled"),
    ("new scheduled", "new containers ready"),
    ("new containers ready", "new gate open"),
    ("new gate open", "new Ready"),
    ("new Ready", "old gate closed"),
    ("old gate closed", "old deleting"),  # the delete follows the close in the same pass
    ("old deleting", "old DELETED"),
)
"""The per-Instance steps the profile times (median gap between consecutive observations)."""


class Watch:
    """Serving Instances after every pod event, each new pod's time from ADDED to Ready, and when each
    Instance's steps were first seen (the profile)."""

    def __init__(self) -> None:
        self.pods: dict[str, Obj] = {}
        self.min_serving = 1 << 30
        self.added: dict[str, float] = {}
        self.start_times: list[float] = []
        self.seen: dict[tuple[str, str], float] = {}
        self.old: set[str] = set()
        self.freed: list[float] = []
        self.starts: list[float] = []

    def _mark(self, index: str, step: str) -> None:
        self.seen.setdefault((index, step), time.monotonic())

    def _profile(self, event: str, pod: Obj) -> None:
        name = pod["metadata"]["name"]
        index = pod["metadata"]["labels"].get("ome.io/instance-index", "")
        conds = {c["type"]: c["status"] for c in (pod.get("status") or {}).get("conditions") or []}
        if name in self.old:
            if conds.get("ome.io/serving") == "False":
                self._mark(index, "old gate closed")
            if pod["metadata"].get("deletionTimestamp"):
                self._mark(index, "old deleting")
            if event == "DELETED":
                self._mark(index, "old DELETED")
                self.freed.append(time.monotonic())
            return
        if event == "ADDED":
            self.starts.append(time.monotonic())
            self._mark(index, "new ADDED")
        if (pod.get("spec") or {}).get("nodeName"):
            self._mark(index, "new scheduled")
        if conds.get("ContainersReady") == "True":
            self._mark(index, "new containers ready")
        if conds.get("ome.io/serving") == "True":
            self._mark(index, "new gate open")
        if conds.get("Ready") == "True":
            self._mark(index, "new Ready")

    def report(self) -> None:
        for first, then in STEPS:
            gaps = [
                self.seen[(i, then)] - at
                for (i, step), at in self.seen.items()
                if step == first and (i, then) in self.seen
            ]
            if gaps:
                print(f"  {first} -> {then}: median {statistics.median(gaps) * 1000:.0f} ms")
        # A slot frees when an old pod is gone; the next start should follow at once.
        waits = [min((s - f for s in self.starts if s >= f), default=0.0) for f in self.freed]
        waits = [w for w in waits if w > 0]
        if waits:
            print(f"  old DELETED -> next new ADDED: median {statistics.median(waits) * 1000:.0f} ms")

    def observe(self, event: str, pod: Obj) -> None:
        name = pod["metadata"]["name"]
        self._profile(event, pod)
        if event == "DELETED":
            self.pods.pop(name, None)
        else:
            self.pods[name] = pod
        if event == "ADDED":
            self.added[name] = time.monotonic()
        if name in self.added and _ready(pod):
            self.start_times.append(time.monotonic() - self.added.pop(name))
        serving = {
            p["metadata"]["labels"].get("ome.io/instance-index")
            for p in self.pods.values()
            if not p["metadata"].get("deletionTimestamp") and _ready(p)
        }
        self.min_serving = min(self.min_serving, len(serving))


def _ready(pod: Obj) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


async def wait(client: Client, ns: str, n: int) -> None:
    while not await settled(client, ns, n):  # noqa: ASYNC110 - polling the apiserver
        await asyncio.sleep(0.5)


async def main(kubeconfig: str, n: int) -> None:
    client = await Client.from_kubeconfig(kubeconfig)
    ns = f"bench-rollout-{uuid.uuid4().hex[:6]}"
    await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    await asyncio.sleep(2)  # default ServiceAccount
    mgr = Manager(
        client,
        ManagerOptions(
            metrics_bind_address="0", health_probe_bind_address="0", install_signal_handlers=False
        ),
    )
    replica_controller = inferencereplica.add_to_manager(
        mgr, InferenceReplicaSettings(status_encoding="ColumnarV2", max_concurrent_reconciles=4)
    )
    rollout_controller = instancerollout.add_to_manager(mgr, RolloutSettings(columnar=True))
    task = asyncio.create_task(mgr.run())
    replicas = cast(InferenceReplicaReconciler, replica_controller._reconciler)  # noqa: SLF001
    rollout = cast(InstanceRolloutReconciler, rollout_controller._reconciler)  # noqa: SLF001
    watcher: asyncio.Task[None] | None = None
    try:
        await client.create(INFERENCE_REPLICAS, body(n), ns)
        await wait(client, ns, n)
        watch = Watch()
        items, rv = await client.list(PODS, ns)
        watch.pods = {p["metadata"]["name"]: p for p in items}
        watch.old = set(watch.pods)

        async def follow() -> None:
            async for event, pod in client.watch(PODS, ns, resource_version=rv, timeout_seconds=1800):
                if event in ("ADDED", "MODIFIED", "DELETED"):
                    watch.observe(event, pod)

        watcher = asyncio.create_task(follow())
        writes_before = replicas.writes + rollout.writes
        started = time.monotonic()
        await client.patch(INFERENCE_REPLICAS, NAME, {"spec": {"runners": runners("bench:2")}}, ns)
        await asyncio.sleep(1)
        await wait(client, ns, n)
        elapsed = time.monotonic() - started
        writes = replicas.writes + rollout.writes - writes_before
        surge = math.ceil(n * int(MAX_SURGE[:-1]) / 100)
        waves = math.ceil(n / surge)
        start = statistics.median(watch.start_times) if watch.start_times else float("nan")
        bound = waves * start
        print(f"instances={n} maxSurge={MAX_SURGE} ({surge}) waves={waves}")
        print(f"pod start (ADDED -> Ready, median of {len(watch.start_times)}): {start:.2f}s")
        print(
            f"time to all on the new revision: {elapsed:.1f}s; lower bound {bound:.1f}s; "
            f"ratio {elapsed / bound:.2f}x"
        )
        print(
            f"API writes: {writes} ({writes / n:.1f} per Instance moved; rollout controller {rollout.writes})"
        )
        print(f"min serving Instances observed: {watch.min_serving} (desired {n})")
        print("per-Instance steps (pod watch):")
        watch.report()
    finally:
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await watcher
        mgr.stop()
        await asyncio.wait_for(task, 30)
        await client.delete(NAMESPACES, ns)
        await client.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 100))
