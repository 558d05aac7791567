"""Two managers on one Lease: one reconciles at a time, and a SIGKILLed leader is replaced in time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ome.devcluster.kubeapi import KubeApi

LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 4.0, 3.0, 1.0
ROOT = Path(__file__).resolve().parents[2]


def _start(kubeconfig: Path, namespace: str, identity: str, logdir: Path) -> subprocess.Popen[bytes]:
    log = (logdir / f"{identity}.log").open("wb")
    return subprocess.Popen(
        [sys.executable, "-m", "tests.e2e.le_worker", "--kubeconfig", str(kubeconfig), "--namespace", namespace,
         "--identity", identity, "--lease-duration", str(LEASE_DURATION),
         "--renew-deadline", str(RENEW_DEADLINE), "--retry-period", str(RETRY_PERIOD)],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
    )


def _counter(api: KubeApi, namespace: str) -> dict[str, Any]:
    data = api.get(f"/api/v1/namespaces/{namespace}/configmaps/counter").get("data") or {}
    return {"count": int(data.get("count", "0")), "intervals": json.loads(data.get("intervals", "[]"))}


def _holder(api: KubeApi, namespace: str) -> str | None:
    try:
        lease = api.get(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/le-e2e")
    except Exception:
        return None
    return lease["spec"].get("holderIdentity") or None


def _wait(check: Any, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s")


def test_one_leader_reconciles_and_sigkill_hands_over(
    admin_api: KubeApi, kubeconfig: Path, namespace: str, tmp_path: Path
) -> None:
    admin_api.create(f"/api/v1/namespaces/{namespace}/configmaps",
                     {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "counter"}, "data": {}})
    procs = {name: _start(kubeconfig, namespace, name, tmp_path) for name in ("mgr-a", "mgr-b")}
    try:
        first = _wait(lambda: _holder(admin_api, namespace), 30)
        _wait(lambda: _counter(admin_api, namespace)["count"] >= 10, 30)
        before = _counter(admin_api, namespace)
        assert {who for who, _, _ in before["intervals"]} == {first}, "only the lease holder reconciles"

        os.kill(procs[first].pid, signal.SIGKILL)
        killed_at = time.time()
        second = next(n for n in procs if n != first)

        def second_reconciled() -> float | None:
            spans = [s for who, s, _ in _counter(admin_api, namespace)["intervals"] if who == second]
            return min(spans) if spans else None

        took_over_at = _wait(second_reconciled, 30)
        handover = took_over_at - killed_at
        assert handover < LEASE_DURATION + RENEW_DEADLINE, f"handover took {handover:.1f}s"
        assert _holder(admin_api, namespace) == second

        intervals = _counter(admin_api, namespace)["intervals"]
        for who1, s1, e1 in intervals:
            for who2, s2, e2 in intervals:
                if who1 != who2:
                    assert e1 <= s2 or e2 <= s1, f"{who1} [{s1}, {e1}] overlaps {who2} [{s2}, {e2}]"
        lease = admin_api.get(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/le-e2e")
        assert lease["spec"]["leaseTransitions"] >= 1
        print(f"leader handover after SIGKILL: {handover:.2f}s")
    finally:
        for proc in procs.values():
            proc.kill()
            proc.wait()


async def test_the_lease_watch_sees_each_renewal_and_the_deletion_from_the_apiserver(
    client: Any, namespace: str
) -> None:
    """lease_watch against the real apiserver: its field selector picks the one Lease, and every write
    of it reaches the elector (what dates a renewal when it happens rather than at the next poll)."""
    import asyncio

    from ome.framework import resources
    from ome.framework.lease_watch import lease_watch

    def lease(name: str, holder: str) -> dict[str, Any]:
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15}}

    await client.create(resources.LEASES, lease("other", "x"), namespace)  # not the watched one
    seen: list[dict[str, Any] | None] = []
    changed = asyncio.Event()

    def observe(obj: dict[str, Any] | None) -> None:
        seen.append(obj)
        changed.set()

    async def next_seen(count: int) -> None:
        while len(seen) < count:
            changed.clear()
            await asyncio.wait_for(changed.wait(), 30)

    follow = asyncio.create_task(lease_watch(client, namespace, "ome")(observe))
    try:
        await next_seen(1)
        assert seen == [None]  # no such Lease yet
        created = await client.create(resources.LEASES, lease("ome", "a"), namespace)
        await next_seen(2)
        renewed = await client.update(
            resources.LEASES, {**created, "spec": {**created["spec"], "holderIdentity": "b"}})
        await next_seen(3)
        other = await client.get(resources.LEASES, "other", namespace)
        await client.update(resources.LEASES, {**lease("other", "y"), "metadata": other["metadata"]})
        await client.delete(resources.LEASES, "ome", namespace)
        await next_seen(4)
        versions = [created["metadata"]["resourceVersion"], renewed["metadata"]["resourceVersion"]]
        assert [s and (s["spec"]["holderIdentity"], s["metadata"]["resourceVersion"]) for s in seen] == [
            None, ("a", versions[0]), ("b", versions[1]), None]
    finally:
        follow.cancel()
        await asyncio.gather(follow, return_exceptions=True)
