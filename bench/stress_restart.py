"""The multi-pod restart scenario, repeated: how often does an Instance stall after a conflict?

Each run, in a fresh namespace on the local control plane (kwok nodes): an InferenceReplica of two
leader + 2 worker Instances reaches Ready; then, while another writer keeps changing the replica's
metadata (as the InferenceService controller's applies do, so the controller's status writes meet
409 conflicts), a worker of Instance 0 and the leader of Instance 1 are deleted. Both Instances must
restart whole (incarnation 2) and the replica be Ready again. The same restart follows under a
ResourceQuota that admits one pod fewer than the Instances need, raised after a few seconds (pod
creates fail mid-batch, as they do when a quota or an admission webhook rejects them): both Instances
must reach incarnation 3. Then the replica scales 2 -> 1 and is deleted (teardown). A stage that
makes no progress within --stall seconds fails the run, and the stuck Instance rows are printed.

Prints one line per run and `stress_restart: P/N runs passed`; exits 1 when a run stalled.

Usage: stress_restart.py [--runs 20] [--parallel 1] [--kubeconfig PATH] [--stall 90] [--log FILE]
--parallel N runs N scenarios at once in each run (a run passes when all of them do).
Without --kubeconfig it starts its own local cluster (ome-dev's) in a temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ome.api.resources import INFERENCE_REPLICAS, NAMESPACES, PODS, SERVICE_ACCOUNTS, Resource
from ome.controllers.inferencereplica import add_to_manager
from ome.devcluster.cluster import Cluster
from ome.devcluster.crds import install_crds
from ome.framework import errors
from ome.framework.client import Client
from ome.framework.log_setup import configure_logging
from ome.framework.manager import Manager, ManagerOptions
from ome.omenative import status as ir_status
from ome.omenative.settings import InferenceReplicaSettings

Obj = dict[str, Any]
NAME = "stress-engine"
TEMPLATE: Obj = {
    "spec": {
        "containers": [{"name": "ome-container", "image": "stress:1"}],
        "tolerations": [{"operator": "Exists"}],
    }
}


RESOURCE_QUOTAS = Resource("", "v1", "ResourceQuota", "resourcequotas", True, frozenset({"status"}))
QUOTA_HOLD = 4.0
"""Seconds the tight quota rejects pod creates before it is raised."""


class Stalled(Exception):
    pass


def replica() -> Obj:
    runners = [
        {"name": "leader", "size": 1, "template": TEMPLATE},
        {"name": "worker", "size": 2, "template": TEMPLATE},
    ]
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceReplica",
        "metadata": {"name": NAME},
        "spec": {"component": "engine", "parentRef": {"name": "stress"}, "replicas": 2, "runners": runners},
    }


def rows(obj: Obj) -> list[Obj]:
    return ir_status.rows_of(obj.get("status") or {})


def summary(obj: Obj | None) -> str:
    if obj is None:
        return "replica gone"
    out = []
    for row in rows(obj):
        op = row.get("operation") or {}
        out.append(
            f"#{row['index']} inc={row.get('incarnation')} {row.get('phase')} "
            f"{op.get('type', '-')}/{op.get('step', '-')} pods={row.get('podCount', 0)}"
        )
    return "; ".join(out) or "no rows"


async def until(
    what: str, check: Callable[[], Awaitable[bool]], stall: float, show: Callable[[], Awaitable[str]]
) -> float:
    started = time.monotonic()
    while time.monotonic() - started < stall:
        if await check():
            return time.monotonic() - started
        await asyncio.sleep(0.25)
    raise Stalled(f"{what}: no progress in {stall:.0f}s ({await show()})")


async def one_run(client: Client, run: int, stall: float) -> str:
    ns = f"stress-{run}-{uuid.uuid4().hex[:6]}"
    await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    try:
        return await _scenario(client, ns, stall)
    finally:
        with contextlib.suppress(errors.ApiError):
            await client.delete(NAMESPACES, ns)


async def _scenario(client: Client, ns: str, stall: float) -> str:
    async def get() -> Obj | None:
        try:
            return await client.get(INFERENCE_REPLICAS, NAME, ns)
        except errors.NotFound:
            return None

    async def show() -> str:
        return summary(await get())

    async def ready(count: int, incarnations: dict[int, int] | None = None) -> bool:
        """`count` Instances, all Ready, each at least at the given incarnation (a restart more is
        not a stall)."""
        obj = await get()
        if obj is None:
            return False
        conditions = {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}
        got = rows(obj)
        if (conditions.get("Ready") or {}).get("reason") != "AllInstancesReady" or len(got) != count:
            return False
        by_index = {int(r["index"]): r for r in got}
        wanted = (incarnations or {}).items()
        return all(int(by_index.get(i, {}).get("incarnation") or 0) >= inc for i, inc in wanted)

    async def account() -> bool:
        with contextlib.suppress(errors.NotFound):
            await client.get(SERVICE_ACCOUNTS, "default", ns)
            return True
        return False

    await until("default ServiceAccount", account, stall, show)
    await client.create(INFERENCE_REPLICAS, replica(), ns)
    t_ready = await until("first Ready", lambda: ready(2), stall, show)

    stop = asyncio.Event()

    async def meddle() -> None:
        """Another writer changing the replica: the controller's next status write meets a 409."""
        n = 0
        while not stop.is_set():
            n += 1
            with contextlib.suppress(errors.ApiError):
                await client.patch(
                    INFERENCE_REPLICAS, NAME, {"metadata": {"annotations": {"stress/touch": str(n)}}}, ns
                )
            await asyncio.sleep(0.5)

    async def incarnations() -> dict[int, int]:
        return {int(r["index"]): int(r.get("incarnation") or 0) for r in rows(await get() or {})}

    async def fail_pods() -> None:
        # With the pod's uid: a retried delete must never hit the next incarnation's pod (same name).
        for name in (f"{NAME}-0-worker-0", f"{NAME}-1-leader-0"):
            pod = await client.get(PODS, name, ns)
            await client.delete(PODS, name, ns, uid=pod["metadata"]["uid"], grace_period_seconds=0)

    async def quota_known() -> bool:
        quota = await client.get(RESOURCE_QUOTAS, "pods", ns)
        return bool((quota.get("status") or {}).get("hard"))

    meddler = asyncio.create_task(meddle())
    try:
        first = {i: n + 1 for i, n in (await incarnations()).items()}
        await fail_pods()
        t_restart = await until("restart", lambda: ready(2, first), stall, show)
        # One pod fewer than the two Instances need once their old pods are gone.
        quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "pods"},
                 "spec": {"hard": {"pods": "5"}}}
        await client.create(RESOURCE_QUOTAS, quota, ns)
        await until("quota status", quota_known, stall, show)
        started = time.monotonic()
        second = {i: n + 1 for i, n in (await incarnations()).items()}
        await fail_pods()
        await asyncio.sleep(QUOTA_HOLD)
        await client.patch(RESOURCE_QUOTAS, "pods", {"spec": {"hard": {"pods": "100"}}}, ns)
        await until("restart under quota", lambda: ready(2, second), stall, show)
        t_quota = time.monotonic() - started
        await client.update_scale(INFERENCE_REPLICAS, NAME, ns, 1)
        t_scale = await until("scale 2 -> 1", lambda: ready(1), stall, show)
    finally:
        stop.set()
        await meddler
    await client.delete(INFERENCE_REPLICAS, NAME, ns)

    async def gone() -> bool:
        return await get() is None

    t_gone = await until("teardown", gone, stall, show)
    return (
        f"ready {t_ready:.1f}s, restart {t_restart:.1f}s, restart under quota {t_quota:.1f}s, "
        f"scale {t_scale:.1f}s, teardown {t_gone:.1f}s"
    )


async def stress(kubeconfig: Path, runs: int, stall: float, parallel: int = 1) -> int:
    client = await Client.from_kubeconfig(str(kubeconfig))
    await install_crds(client)
    manager = Manager(
        client,
        ManagerOptions(
            metrics_bind_address="0", health_probe_bind_address="0", install_signal_handlers=False
        ),
    )
    add_to_manager(manager, InferenceReplicaSettings(status_encoding="ColumnarV2"))
    task = asyncio.create_task(manager.run())
    passed = 0
    try:
        for run in range(1, runs + 1):
            started = time.monotonic()
            try:
                details = await asyncio.gather(
                    *(one_run(client, run * 100 + i, stall) for i in range(parallel))
                )
                detail = details[0] if parallel == 1 else f"{parallel} at once; first: {details[0]}"
            except Stalled as exc:
                print(f"run {run:2d}: STALLED after {time.monotonic() - started:.1f}s: {exc}", flush=True)
                continue
            passed += 1
            print(f"run {run:2d}: ok in {time.monotonic() - started:.1f}s ({detail})", flush=True)
    finally:
        manager.stop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 30)
        await client.close()
    print(f"stress_restart: {passed}/{runs} runs passed")
    return passed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="scenario repetitions (default 20)")
    parser.add_argument("--kubeconfig", type=Path, help="an existing local cluster (default: start one)")
    parser.add_argument("--stall", type=float, default=90.0, help="seconds without progress that fail a run")
    parser.add_argument("--parallel", type=int, default=1, help="scenarios at once per run (default 1)")
    parser.add_argument("--log", type=Path, help="write the controller's info log here (default: discard)")
    args = parser.parse_args()
    configure_logging("json", "info")
    if args.log is not None:  # the same JSON lines, into a file instead of stderr
        handler = logging.getLogger().handlers[0]
        assert isinstance(handler, logging.StreamHandler)
        handler.setStream(args.log.open("a"))
    else:
        logging.disable(logging.CRITICAL)
    if args.kubeconfig is not None:
        passed = asyncio.run(stress(args.kubeconfig, args.runs, args.stall, args.parallel))
        return 0 if passed == args.runs else 1
    with tempfile.TemporaryDirectory(prefix="ome-stress-") as state:
        cluster = Cluster(Path(state))
        cluster.up(log=lambda message: print(message, flush=True))
        try:
            passed = asyncio.run(stress(cluster.kubeconfig, args.runs, args.stall, args.parallel))
        finally:
            cluster.down(quiet=True)
    return 0 if passed == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
