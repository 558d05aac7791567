"""OMENative at scale on the local kwok cluster: N replicas x 2 multi-pod Instances (leader + 2 workers).

Prints time until every replica is Ready, the controller's API writes, and its writes during a forced
resync of every replica after settling (target 0). Usage: bench_omenative.py KUBECONFIG [N]
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from typing import cast

from ome.api.resources import INFERENCE_REPLICAS, NAMESPACES
from ome.controllers.inferencereplica import add_to_manager
from ome.controllers.inferencereplica.reconciler import InferenceReplicaReconciler
from ome.framework.client import Client
from ome.framework.manager import Manager, ManagerOptions
from ome.framework.reconcile import Request
from ome.omenative.settings import InferenceReplicaSettings

TEMPLATE = {
    "spec": {
        "containers": [{"name": "ome-container", "image": "bench:1"}],
        "tolerations": [{"operator": "Exists"}],
    }
}


def body(i: int) -> dict[str, object]:
    runners = [
        {"name": "leader", "size": 1, "template": TEMPLATE},
        {"name": "worker", "size": 2, "template": TEMPLATE},
    ]
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceReplica",
        "metadata": {"name": f"b{i}-engine"},
        "spec": {"component": "engine", "parentRef": {"name": f"b{i}"}, "replicas": 2, "runners": runners},
    }


async def all_ready(client: Client, ns: str, n: int) -> bool:
    items, _ = await client.list(INFERENCE_REPLICAS, ns)
    ok = [
        i
        for i in items
        for c in (i.get("status") or {}).get("conditions") or []
        if c["type"] == "Ready" and c["reason"] == "AllInstancesReady"
    ]
    return len(ok) == n


async def main(kubeconfig: str, n: int) -> None:
    client = await Client.from_kubeconfig(kubeconfig)
    ns = f"bench-omenative-{uuid.uuid4().hex[:6]}"
    await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    await asyncio.sleep(2)  # default ServiceAccount
    mgr = Manager(
        client,
        ManagerOptions(
            metrics_bind_address="0", health_probe_bind_address="0", install_signal_handlers=False
        ),
    )
    settings = InferenceReplicaSettings(status_encoding="ColumnarV2", max_concurrent_reconciles=8)
    controller = add_to_manager(mgr, settings)
    task = asyncio.create_task(mgr.run())
    reconciler = cast(InferenceReplicaReconciler, controller._reconciler)  # noqa: SLF001
    try:
        started = time.monotonic()
        await asyncio.gather(*(client.create(INFERENCE_REPLICAS, body(i), ns) for i in range(n)))
        while not await all_ready(client, ns, n):  # noqa: ASYNC110 - polling the apiserver
            await asyncio.sleep(0.5)
        elapsed = time.monotonic() - started
        await asyncio.sleep(2)
        writes = reconciler.writes
        resync_started = time.monotonic()
        for i in range(n):
            await reconciler.reconcile(Request(ns, f"b{i}-engine"))
        resync = time.monotonic() - resync_started
        print(f"replicas={n} instances={2 * n} pods={6 * n}")
        print(f"time to all Ready: {elapsed:.1f}s")
        print(f"API writes to Ready: {writes} ({writes / n:.1f} per replica)")
        print(
            f"writes during no-op resync of {n} replicas: {reconciler.writes - writes} "
            f"({1e3 * resync / n:.2f} ms per reconcile)"
        )
    finally:
        mgr.stop()
        await asyncio.wait_for(task, 30)
        await client.delete(NAMESPACES, ns)
        await client.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 100))
