"""`ome-manager` as shipped: three processes authenticated as the ServiceAccount under config/rbac.

The kubeconfig carries a token the apiserver issued for `ome/ome-controller-manager` (TokenRequest), so
every read and write the manager makes goes through the generated ClusterRole: a permission the role
lacks fails this test. One process leads; /metrics on each shows controller-runtime's metric names and the
leader gauge; SIGKILL of the leader hands over and the new leader repairs the service.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ome.api import resources
from ome.devcluster.cluster import free_ports
from ome.devcluster.kubeapi import KubeApi, KubeApiError
from ome.framework import errors
from ome.framework.client import Client
from tests.e2e.isvc_support import catalog, eventually

Obj = dict[str, Any]
ROOT = Path(__file__).resolve().parents[2]
SA_NAMESPACE, SA_NAME = "ome", "ome-controller-manager"
LEASE = "ome-controller-manager-leader-lock"


def _apply_yaml(api: KubeApi, path: Path) -> None:
    for doc in yaml.safe_load_all(path.read_text()):
        if not doc:
            continue
        api_path = _collection(doc)
        name = doc["metadata"]["name"]
        try:
            api.request("PUT", f"{api_path}/{name}", _with_rv(api, f"{api_path}/{name}", doc))
        except KubeApiError as exc:
            if exc.status != 404:
                raise
            api.create(api_path, doc)


def _with_rv(api: KubeApi, path: str, doc: Obj) -> Obj:
    current = api.get(path)
    return {**doc, "metadata": {**doc["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}}


def _collection(doc: Obj) -> str:
    group_version, kind = doc["apiVersion"], doc["kind"]
    plural = {"ServiceAccount": "serviceaccounts", "ClusterRole": "clusterroles", "Role": "roles",
              "ClusterRoleBinding": "clusterrolebindings", "RoleBinding": "rolebindings",
              "ConfigMap": "configmaps", "Namespace": "namespaces"}[kind]
    base = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
    ns = doc["metadata"].get("namespace")
    return f"{base}/namespaces/{ns}/{plural}" if ns else f"{base}/{plural}"


def _service_account_kubeconfig(api: KubeApi, admin_kubeconfig: Path, out: Path) -> Path:
    review = api.create(
        f"/api/v1/namespaces/{SA_NAMESPACE}/serviceaccounts/{SA_NAME}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
         "spec": {"expirationSeconds": 3600}},
    )
    admin = yaml.safe_load(admin_kubeconfig.read_text())
    cluster = admin["clusters"][0]
    out.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "clusters": [cluster],
        "users": [{"name": SA_NAME, "user": {"token": review["status"]["token"]}}],
        "contexts": [{"name": "sa", "context": {"cluster": cluster["name"], "user": SA_NAME}}],
        "current-context": "sa",
    }))
    return out


@pytest.fixture
def manager_rbac(admin_api: KubeApi) -> Iterator[None]:
    """Namespace `ome`, the ServiceAccount, the generated roles and their bindings, the operator config."""
    with contextlib.suppress(KubeApiError):
        admin_api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": {"name": SA_NAMESPACE}})
    for name in ("service_account.yaml", "role.yaml", "role_binding.yaml"):
        _apply_yaml(admin_api, ROOT / "config" / "rbac" / name)
    _apply_yaml(admin_api, ROOT / "config" / "configmap" / "inferenceservice-config.yaml")
    yield
    with contextlib.suppress(KubeApiError):
        admin_api.request("DELETE", f"/apis/coordination.k8s.io/v1/namespaces/{SA_NAMESPACE}/leases/{LEASE}")


class ManagerProcess:
    def __init__(self, name: str, kubeconfig: Path, logdir: Path) -> None:
        self.name = name
        self.metrics_port, self.probe_port = free_ports(2)
        self.log = logdir / f"{name}.log"
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "ome.cmd.manager", "--kubeconfig", str(kubeconfig), "--leader-elect",
                 "--webhook-port", "0", "--metrics-bind-address", f"127.0.0.1:{self.metrics_port}",
                 "--health-probe-bind-address", f"127.0.0.1:{self.probe_port}", "--log-format", "json"],
                cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "POD_NAMESPACE": "ome"},
            )

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=2) as resp:
            return str(resp.read().decode())

    def is_leader(self) -> bool:
        match = re.search(r'^leader_election_master_status\{[^}]*\} (\S+)$', self.metrics(), re.M)
        return match is not None and float(match.group(1)) == 1.0

    def stop(self) -> None:
        stop_process(self.proc)


def stop_process(proc: subprocess.Popen[bytes], grace: float = 15) -> None:
    """SIGTERM, then SIGKILL when the process has not ended within `grace` seconds."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _isvc(name: str, model: str) -> Obj:
    return {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": name}, "spec": {"model": {"name": model}, "engine": {}}}


async def _ready(client: Client, namespace: str, name: str) -> bool:
    obj = await client.get(resources.INFERENCE_SERVICES, name, namespace)
    conds = (obj.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)


async def _leader(managers: list[ManagerProcess]) -> ManagerProcess | None:
    leaders = []
    for m in managers:
        with contextlib.suppress(OSError):
            if await asyncio.to_thread(m.is_leader):
                leaders.append(m)
    assert len(leaders) <= 1, [m.name for m in leaders]
    return leaders[0] if leaders else None


async def test_three_managers_under_their_rbac_serve_and_hand_over(
    admin_api: KubeApi, kubeconfig: Path, client: Client, namespace: str, ome_crds: list[str],
    manager_rbac: None, tmp_path: Path,
) -> None:
    sa_kubeconfig = _service_account_kubeconfig(admin_api, kubeconfig, tmp_path / "sa.kubeconfig")
    managers = [ManagerProcess(f"mgr-{i}", sa_kubeconfig, tmp_path) for i in range(3)]
    try:
        async with catalog(client, namespace) as cat:
            leader = await eventually(lambda: _leader(managers), timeout=60)
            await client.create(resources.INFERENCE_SERVICES, _isvc("llama", cat.model), namespace)
            await eventually(lambda: _ready(client, namespace, "llama"), timeout=90)

            for m in managers:
                text = await asyncio.to_thread(m.metrics)
                for metric in ("controller_runtime_reconcile_total", "controller_runtime_reconcile_errors_total",
                               "workqueue_depth", "workqueue_adds_total", "leader_election_master_status"):
                    assert re.search(rf"^{metric}[{{ ]", text, re.M), (m.name, metric)
            leader_text = await asyncio.to_thread(leader.metrics)
            assert re.search(r'controller_runtime_reconcile_total\{controller="inferenceservice",'
                             r'result="success"\} [1-9]', leader_text), "the leader reconciled"
            # RBAC denials name the user; "forbidden" alone also covers terminating namespaces.
            assert "system:serviceaccount:ome:ome-controller-manager\\\" cannot" not in leader.log.read_text()
            assert 'serviceaccount:ome:ome-controller-manager" cannot' not in leader.log.read_text()

            leader.proc.send_signal(signal.SIGKILL)
            leader.proc.wait()
            rest = [m for m in managers if m is not leader]
            await eventually(lambda: _leader(rest), timeout=45)
            # The new leader must repair: delete the engine Deployment and see it come back Ready.
            await client.delete(resources.DEPLOYMENTS, "llama-engine", namespace)

            async def recreated() -> bool:
                try:
                    dep = await client.get(resources.DEPLOYMENTS, "llama-engine", namespace)
                except errors.NotFound:
                    return False
                return dep["metadata"].get("deletionTimestamp") is None

            await eventually(recreated, timeout=60)
            await eventually(lambda: _ready(client, namespace, "llama"), timeout=90)

            # A clean stop (SIGTERM, as in a rolling update) hands the Lease back: the last standby
            # leads well before the 15 s lease duration would run out.
            second = await eventually(lambda: _leader(rest), timeout=10)
            last = next(m for m in rest if m is not second)
            loop = asyncio.get_running_loop()
            stopped = loop.time()
            await asyncio.to_thread(second.stop)
            await eventually(lambda: _leader([last]), timeout=10, interval=0.2)
            assert loop.time() - stopped < 10
            await client.delete(resources.INFERENCE_SERVICES, "llama", namespace)
    finally:
        for m in managers:
            m.stop()
    for m in managers:
        assert "Traceback" not in m.log.read_text(), m.log.read_text()[-3000:]


async def test_invalid_config_exits_non_zero_with_a_clear_message(
    admin_api: KubeApi, kubeconfig: Path, namespace: str
) -> None:
    admin_api.create(f"/api/v1/namespaces/{namespace}/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "inferenceservice-config"},
        "data": {"deploy": '{"defaultDeploymentMode": "Serverlessish"}'},
    })
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "ome.cmd.manager", "--kubeconfig", str(kubeconfig), "--config-namespace",
         namespace, "--webhook-port", "0", "--metrics-bind-address", "0", "--health-probe-bind-address", "0"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode != 0
    assert "Failed to initialize deployment configuration" in done.stderr
    assert "Traceback" not in done.stderr
