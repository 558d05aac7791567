"""An image change rolled out across N single-pod Instances with SurgeThenDrain and maxSurge 10%.

Prints the time until every Instance runs the new revision against the lower bound the budget sets
(waves x the time one new pod takes to serve), the API writes per Instance moved (both controllers), and
the fewest serving Instances a pod watch saw at any moment (target: never below desired, within 1.5x of
the bound), and a per-Instance step profile from the same watch (median gap between its surge pod's
ADDED, scheduling, containers ready, gate open and Ready, then its old pod's gate closed, deleting and
gone, and from a pod gone to the next surge pod).
Usage: bench_rollout.py KUBECONFIG [N] [--pod-start 3s]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import math
import statistics
import time
import uuid
from typing import Any, cast

from ome.api.resources import INFERENCE_REPLICAS, NAMESPACES, PODS
from ome.controllers import inferencereplica, instancerollout
from ome.controllers.inferencereplica.reconciler import InferenceReplicaReconciler
from ome.controllers.instancerollout.reconciler import InstanceRolloutReconciler
from ome.devcluster.crds import install_crds
from ome.devcluster.kwok_stages import POD_START_DELAY
from ome.framework.client import Client
from ome.framework.manager import Manager, ManagerOptions
from ome.omenative.rollout_settings import RolloutSettings
from ome.omenative.settings import InferenceReplicaSettings

Obj = dict[str, Any]
NAME = "bench-engine"
MAX_SURGE = "10%"


def runners(image: str, pod_start: str | None = None) -> list[Obj]:
    template: Obj = {
        "spec": {
            "containers": [{"name": "ome-container", "image": image}],
            "tolerations": [{"operator": "Exists"}],
        }
    }
    if pod_start:  # the local cluster's kwok holds such a pod in Pending that long (a model server's start)
        template["metadata"] = {"annotations": {POD_START_DELAY: pod_start}}
    return [{"name": "default", "size": 1, "template": template}]


def body(n: int, pod_start: str | None = None) -> Obj:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceReplica",
        "metadata": {"name": NAME},
        "spec": {
            "component": "engine",
            "parentRef": {"name": "bench"},
            "replicas": n,
            "runners": runners("bench:1", pod_start),
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
        self.n = 0
        self.serving: dict[str, str] = {}
        """Serving pod name -> its Instance index (kept per event: the sample is O(1))."""
        self.serving_count: collections.Counter[str] = collections.Counter()
        self.new_serving: collections.Counter[str] = collections.Counter()
        self.done_at: float | None = None
        """When a watch event first showed every Instance served by a new pod and no old pod left."""

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
        index = pod["metadata"]["labels"].get("ome.io/instance-index", "")
        was = self.serving.pop(name, None)
        if was is not None:
            self._count(name, was, -1)
        if event != "DELETED" and not pod["metadata"].get("deletionTimestamp") and _ready(pod):
            self.serving[name] = index
            self._count(name, index, 1)
        self.min_serving = min(self.min_serving, len(self.serving_count))
        if self.done_at is None and len(self.new_serving) == self.n and not self.old.intersection(self.pods):
            self.done_at = time.monotonic()

    def _count(self, name: str, index: str, delta: int) -> None:
        for counter in (self.serving_count, *(() if name in self.old else (self.new_serving,))):
            counter[index] += delta
            if counter[index] <= 0:
                del counter[index]

def _ready(pod: Obj) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


async def wait(client: Client, ns: str, n: int, interval: float = 0.5) -> None:
    while not await settled(client, ns, n):  # noqa: ASYNC110 - polling the apiserver
        await asyncio.sleep(interval)


async def main(kubeconfig: str, n: int, pod_start: str | None = None) -> None:
    client = await Client.from_kubeconfig(kubeconfig)
    await install_crds(client)  # server-side apply: a no-op on a cluster that has them
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
        await client.create(INFERENCE_REPLICAS, body(n, pod_start), ns)
        await wait(client, ns, n)
        watch = Watch()
        items, rv = await client.list(PODS, ns)
        watch.old = {p["metadata"]["name"] for p in items}
        watch.n = n
        for pod in items:
            watch.observe("SYNC", pod)
        watch.min_serving = len(watch.serving_count)  # the samples start once the listed pods are in

        async def follow() -> None:
            async for event, pod in client.watch(PODS, ns, resource_version=rv, timeout_seconds=1800):
                if event in ("ADDED", "MODIFIED", "DELETED"):
                    watch.observe(event, pod)

        watcher = asyncio.create_task(follow())
        writes_before = replicas.writes + rollout.writes
        started = time.monotonic()
        await client.patch(INFERENCE_REPLICAS, NAME, {"spec": {"runners": runners("bench:2", pod_start)}}, ns)
        await asyncio.sleep(1)
        await wait(client, ns, n, interval=0.1)
        settled_after = time.monotonic() - started
        elapsed = (watch.done_at or float("nan")) - started
        writes = replicas.writes + rollout.writes - writes_before
        surge = math.ceil(n * int(MAX_SURGE[:-1]) / 100)
        waves = math.ceil(n / surge)
        start = statistics.median(watch.start_times) if watch.start_times else float("nan")
        bound = waves * start
        print(f"instances={n} maxSurge={MAX_SURGE} ({surge}) waves={waves}")
        print(f"pod start (ADDED -> Ready, median of {len(watch.start_times)}): {start:.2f}s")
        print(
            f"time to all on the new revision: {elapsed:.1f}s; lower bound {bound:.1f}s; "
            f"ratio {elapsed / bound:.2f}x (from the pod watch; the replica's status showed it "
            f"{settled_after:.1f}s in)"
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
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kubeconfig")
    parser.add_argument("n", type=int, nargs="?", default=100, help="single-pod Instances")
    parser.add_argument("--pod-start", help="hold each pod in Pending this long before it runs, e.g. 3s "
                        "(a model server's start; the local cluster's kwok reads it from an annotation)")
    args = parser.parse_args()
    asyncio.run(main(args.kubeconfig, args.n, args.pod_start))
