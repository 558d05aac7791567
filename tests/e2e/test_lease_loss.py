"""A leader paused past its Lease (SIGSTOP), then resumed after the standby took over, writes nothing.

Each manager process talks to the apiserver as its own user (a client certificate from the cluster CA),
so the apiserver's audit log (every write, at Metadata level) says who wrote what and when. The leader
reconciles a ConfigMap every 0.2 s and patches another every 0.1 s from a leader runnable, so it always
has a write about to be sent when it is paused.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from ome.devcluster.cluster import Cluster
from ome.devcluster.kubeapi import KubeApi

LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 4.0, 3.0, 1.0
ROOT = Path(__file__).resolve().parents[2]
WRITES = {"create", "update", "patch", "delete", "deletecollection"}


def _start(kubeconfig: Path, namespace: str, identity: str, logdir: Path) -> subprocess.Popen[bytes]:
    log = (logdir / f"{identity}.log").open("wb")
    return subprocess.Popen(
        [sys.executable, "-m", "tests.e2e.le_worker", "--kubeconfig", str(kubeconfig), "--namespace", namespace,
         "--identity", identity, "--lease-duration", str(LEASE_DURATION),
         "--renew-deadline", str(RENEW_DEADLINE), "--retry-period", str(RETRY_PERIOD)],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip


def _holder(api: KubeApi, namespace: str) -> str | None:
    try:
        lease = api.get(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/le-e2e")
    except Exception:
        return None
    return lease["spec"].get("holderIdentity") or None


def _wait(check: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def _time(event: dict[str, Any], field: str = "stageTimestamp") -> datetime:
    return datetime.fromisoformat(str(event[field]).replace("Z", "+00:00"))


def _successful_writes(cluster: Cluster, user: str, namespace: str) -> list[dict[str, Any]]:
    return [
        e for e in cluster.audit_events()
        if (e.get("user") or {}).get("username") == user and e.get("verb") in WRITES
        and (e.get("objectRef") or {}).get("namespace") == namespace
        and int((e.get("responseStatus") or {}).get("code") or 0) < 400
    ]  # fmt: skip


def test_a_leader_resumed_after_losing_its_lease_writes_nothing_and_exits(
    dev_cluster: Cluster | None, admin_api: KubeApi, namespace: str, tmp_path: Path
) -> None:
    if dev_cluster is None:
        pytest.skip("needs the local control plane's audit log")
    for name in ("counter", "heartbeat"):
        admin_api.create(f"/api/v1/namespaces/{namespace}/configmaps",
                         {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {}})
    users = {name: dev_cluster.user_kubeconfig(f"lease-e2e-{name}", tmp_path / f"{name}.kubeconfig")
             for name in ("a", "b")}  # fmt: skip
    leader = _start(users["a"], namespace, "a", tmp_path)
    standby: subprocess.Popen[bytes] | None = None
    try:
        _wait(lambda: _holder(admin_api, namespace) == "a", 30, "a to lead")
        _wait(lambda: len([e for e in _successful_writes(dev_cluster, "lease-e2e-a", namespace)
                           if e["objectRef"].get("resource") == "configmaps"]) >= 5, 30, "a to reconcile")
        standby = _start(users["b"], namespace, "b", tmp_path)
        time.sleep(2 * RETRY_PERIOD)  # b is up and watching the Lease (its first acquire attempts fail)

        os.kill(leader.pid, signal.SIGSTOP)
        _wait(lambda: _holder(admin_api, namespace) == "b", 30, "b to take over")
        taken = [e for e in _successful_writes(dev_cluster, "lease-e2e-b", namespace)
                 if e["objectRef"].get("resource") == "leases"]
        took_over_at = _time(taken[0])
        time.sleep(RETRY_PERIOD)  # the new leader is at work when the old one wakes

        os.kill(leader.pid, signal.SIGCONT)
        resumed = time.monotonic()
        code = leader.wait(timeout=RENEW_DEADLINE + 10)
        exited_after = time.monotonic() - resumed
        log = (tmp_path / "a.log").read_text()
        assert code == 1, f"a lost leader exits 1 as controller-runtime's manager does; log:\n{log[-3000:]}"
        assert "leader election lost" in log
        assert exited_after < RENEW_DEADLINE + 5, f"a stopped {exited_after:.1f}s after resuming"

        late = [e for e in _successful_writes(dev_cluster, "lease-e2e-a", namespace)
                if _time(e, "requestReceivedTimestamp") >= took_over_at]
        assert late == [], f"the deposed leader wrote after {took_over_at}: {late}"
        assert _holder(admin_api, namespace) == "b"
        b_writes = [e for e in _successful_writes(dev_cluster, "lease-e2e-b", namespace)
                    if e["objectRef"].get("resource") == "configmaps"]
        assert b_writes, "the new leader reconciles"
        print(f"deposed leader exited {exited_after:.2f}s after SIGCONT, no write after the takeover")
    finally:
        for proc in (leader, standby):
            if proc is not None and proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
                proc.kill()
                proc.wait()
