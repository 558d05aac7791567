"""The fault suite (issue 12) on the real local control plane.

Three `ome-manager` processes share one Lease, each as its own user; six InferenceServices (RawDeployment,
OMENative single-pod, OMENative leader + 2 workers) serve. Each test changes the image of half of them,
injects one fault while that change is in flight, and then requires (ome/devcluster/chaos.py):
every service Ready again for its generation with exactly its pods on the new image; no two live pods of
one Instance index, runner, ordinal and incarnation, at any time during the recovery; no pod or child
without a live owner; and no write, in the apiserver's audit log, from a manager that did not hold the
Lease when it was received. The tests share one harness and run in order (each leaves all converged).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ome.api import resources
from ome.devcluster import chaos_faults as faults
from ome.devcluster.chaos import ChaosConfig, Harness
from ome.devcluster.cluster import Cluster
from ome.devcluster.kubeapi import KubeApi, KubeApiError
from ome.framework.client import Client

pytestmark = [
    pytest.mark.usefixtures("ome_crds"),
    pytest.mark.skipif(bool(os.environ.get("OME_E2E_KUBECONFIG")),
                       reason="needs the local control plane (process signals, restarts, audit log)"),
]


@pytest.fixture(scope="module")
async def chaos(
    dev_cluster: Cluster | None, admin_api: KubeApi, kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Harness]:
    assert dev_cluster is not None
    namespace = f"chaos-{uuid.uuid4().hex[:6]}"
    admin_api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with contextlib.suppress(KubeApiError):
            admin_api.get(f"/api/v1/namespaces/{namespace}/serviceaccounts/default")
            break
        await asyncio.sleep(0.1)
    workdir = tmp_path_factory.mktemp("chaos")
    client = await Client.from_kubeconfig(str(kubeconfig))
    started = time.monotonic()
    try:
        async with Harness(dev_cluster, client, namespace, workdir, ChaosConfig(services=6)) as h:
            print(f"managers up and 6 services served in {time.monotonic() - started:.1f}s")
            yield h
            assert h.fleet.tracebacks() == [], f"a manager logged a traceback; logs in {workdir}"
    finally:
        await client.close()
        with contextlib.suppress(KubeApiError):
            admin_api.request("DELETE", f"/api/v1/namespaces/{namespace}")


async def test_a_pod_the_node_controller_marked_not_ready_is_ready_again(client: Client, namespace: str) -> None:
    """After an apiserver restart kube-controller-manager may see a kwok node's lease go stale and set
    Ready=False (only) on its pods; the node comes back and, as a kubelet would, kwok makes a pod whose
    containers are ready Ready again (a RawDeployment pod has no readiness gate to do it)."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "marked"},
           "spec": {"nodeName": "gpu-node-3", "containers": [{"name": "c", "image": "busybox:1"}]}}
    await client.create(resources.PODS, pod, namespace)

    async def ready(want: str) -> bool:
        got = await client.get(resources.PODS, "marked", namespace)
        conds = {c["type"]: c["status"] for c in (got.get("status") or {}).get("conditions") or []}
        return conds.get("Ready") == want and conds.get("ContainersReady") == "True"

    await faults.until(lambda: ready("True"), 30)
    # What the node lifecycle controller's MarkPodsNotReady writes.
    not_ready = {"type": "Ready", "status": "False", "reason": "NodeNotReady",
                 "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    marked = await client.patch(resources.PODS, "marked", {"status": {"conditions": [not_ready]}}, namespace,
                                patch_type="strategic", subresource="status")
    assert {c["type"]: c["status"] for c in marked["status"]["conditions"]}["Ready"] == "False"
    await faults.until(lambda: ready("True"), 30)


async def _run(h: Harness, name: str) -> faults.Row:
    fault = next(f for f in faults.FAULTS if f.name == name)
    row = await faults.run(h, fault)
    print(f"{row.fault}: {row.injected} (held {row.held_s:.1f}s); recovered in {row.recovered_s:.1f}s, "
          f"duplicates {row.duplicates}, lost {row.lost}")
    if not row.recovered:
        detail = await h.diagnose(row.unconverged)
        raise AssertionError(f"not recovered after {row.recovered_s:.0f}s: {row.unconverged}; logs in "
                             f"{h.fleet.workdir}\n{detail}")
    assert row.duplicates == 0
    assert row.lost == 0
    assert row.orphans == []
    assert row.violations == [], "writes from a manager not holding the Lease"
    assert len([m for m in h.fleet.procs if m.alive()]) == h.config.managers
    return row


async def test_sigkill_of_the_leader(chaos: Harness) -> None:
    row = await _run(chaos, "sigkill-leader")
    assert chaos.fleet.retired[-1].proc.returncode == -9, row.injected


async def test_sigstop_of_the_leader_past_its_lease_then_sigcont(chaos: Harness) -> None:
    row = await _run(chaos, "sigstop-leader")
    # The deposed leader exits 1 as controller-runtime's manager does, and wrote nothing after the
    # takeover (no violation above).
    assert chaos.fleet.retired[-1].proc.returncode == 1, row.injected


async def test_out_of_band_edits_and_deletes(chaos: Harness) -> None:
    row = await _run(chaos, "out-of-band")
    for what in ("deploy image edit", "svc selector edit", "deploy delete", "IR delete", "pod delete"):
        assert re.search(rf"(^|, )(\d+x )?{what}(,|$)", row.injected), row.injected


async def test_a_resource_quota_rejecting_pod_creates_then_raised(chaos: Harness) -> None:
    row = await _run(chaos, "resource-quota")
    rejected = re.search(r": (\d+) pod creates rejected", row.injected)
    assert rejected is not None and int(rejected.group(1)) >= 1, row.injected


async def test_kube_apiserver_restart(chaos: Harness) -> None:
    await _run(chaos, "apiserver-restart")


async def test_etcd_compaction_forces_a_relist(chaos: Harness) -> None:
    row = await _run(chaos, "etcd-compaction")
    relists = re.search(r"(\d+) watches answered 410", row.injected)
    assert relists is not None and int(relists.group(1)) >= 1, row.injected


async def test_the_webhook_server_down(chaos: Harness) -> None:
    row = await _run(chaos, "webhook-down")
    assert "a create answered 500" in row.injected or "a create answered 403" in row.injected, row.injected


async def test_a_node_deleted_under_running_instances(chaos: Harness) -> None:
    row = await _run(chaos, "node-deleted")
    under = re.search(r"deleted under (\d+) pods", row.injected)
    assert under is not None and int(under.group(1)) >= 1, row.injected
