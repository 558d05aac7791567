"""`ome-manager --metrics-secure` against the real apiserver: /metrics over HTTPS, open only to tokens the
apiserver authenticates (TokenReview) and allows `get` on /metrics (SubjectAccessReview).

The manager runs as its ServiceAccount under config/rbac, so its reviews are authorized by the generated
ClusterRole ome-metrics-auth-role and nothing else. Two ServiceAccounts get tokens by TokenRequest: one
bound to the ClusterRole ome-metrics-reader (200), one not bound (403); no token or a made-up one: 401.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import os
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from ome.devcluster.cluster import Cluster, free_ports
from ome.devcluster.kubeapi import KubeApi, KubeApiError
from tests.e2e.isvc_support import eventually
from tests.e2e.test_manager_process import _service_account_kubeconfig, manager_rbac, stop_process

ROOT = Path(__file__).resolve().parents[2]
SA_NAMESPACE = "ome"
READER_ROLE = "ome-metrics-reader"
MANAGER_USER = "system:serviceaccount:ome:ome-controller-manager"
__all__ = ["manager_rbac"]  # the fixture, shared with test_manager_process


def _token(api: KubeApi, namespace: str, service_account: str) -> str:
    api.create(f"/api/v1/namespaces/{namespace}/serviceaccounts",
               {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": service_account}})
    review = api.create(f"/api/v1/namespaces/{namespace}/serviceaccounts/{service_account}/token",
                        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                         "spec": {"expirationSeconds": 3600}})
    return str(review["status"]["token"])


@pytest.fixture
def secure_manager(manager_rbac: None, admin_api: KubeApi, kubeconfig: Path, ome_crds: list[str],
                   tmp_path: Path) -> Iterator[tuple[int, Path]]:
    sa_kubeconfig = _service_account_kubeconfig(admin_api, kubeconfig, tmp_path / "sa.kubeconfig")
    metrics_port, probe_port = free_ports(2)
    log = tmp_path / "manager.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ome.cmd.manager", "--kubeconfig", str(sa_kubeconfig), "--metrics-secure",
             "--metrics-bind-address", f"127.0.0.1:{metrics_port}",
             "--health-probe-bind-address", f"127.0.0.1:{probe_port}", "--zap-log-level", "debug"],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "POD_NAMESPACE": SA_NAMESPACE},
        )
    try:
        yield metrics_port, log
    finally:
        stop_process(proc)


def _review_counts(cluster: Cluster | None) -> tuple[int, int]:
    """The manager's TokenReviews and SubjectAccessReviews in the audit log so far."""
    if cluster is None:
        return 0, 0
    made = [e["objectRef"]["resource"] for e in cluster.audit_events()
            if e.get("verb") == "create" and e.get("user", {}).get("username") == MANAGER_USER
            and e.get("objectRef", {}).get("resource") in ("tokenreviews", "subjectaccessreviews")]
    return made.count("tokenreviews"), made.count("subjectaccessreviews")


def _scrape(port: int, token: str | None, scheme: str = "https") -> tuple[int, str]:
    # The certificate is self-signed at start and not published: the test checks access, not its chain.
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    request = urllib.request.Request(f"{scheme}://127.0.0.1:{port}/metrics")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


async def test_metrics_secure_serves_bound_users_only(
    admin_api: KubeApi, namespace: str, secure_manager: tuple[int, Path], dev_cluster: Cluster | None
) -> None:
    port, log = secure_manager
    reader = _token(admin_api, namespace, "scraper")
    stranger = _token(admin_api, namespace, "stranger")
    admin_api.create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": f"{namespace}-scraper"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": READER_ROLE},
        "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": namespace}]})
    try:
        async def listening() -> bool:
            try:
                await asyncio.to_thread(_scrape, port, None)
            except OSError:
                return False
            return True

        await eventually(listening, timeout=60)
        base = _review_counts(dev_cluster)  # a reused cluster's log holds earlier runs

        async def _made(before: tuple[int, int], tokens: int, access: int) -> bool:
            now = _review_counts(dev_cluster)
            assert (now[0] - before[0], now[1] - before[1]) == (tokens, access)
            return True

        status, body = await asyncio.to_thread(_scrape, port, reader)
        assert status == 200, body
        assert "# TYPE controller_runtime_reconcile_total counter" in body
        if dev_cluster is not None:  # one TokenReview and one SubjectAccessReview, seen in the audit log
            await eventually(lambda: _made(base, 1, 1), timeout=10)
        # Prometheus scraping again: answered from the cache, no API call.
        for _ in range(10):
            assert (await asyncio.to_thread(_scrape, port, reader))[0] == 200
        assert await asyncio.to_thread(_scrape, port, stranger) == (
            403, f"Authorization denied for user system:serviceaccount:{namespace}:stranger\n")
        if dev_cluster is not None:  # the log is in order: the stranger's reviews are the only new ones
            await eventually(lambda: _made(base, 2, 2), timeout=10)
        assert await asyncio.to_thread(_scrape, port, None) == (401, "Unauthorized\n")
        assert await asyncio.to_thread(_scrape, port, "not-a-token") == (401, "Unauthorized\n")
        # A real token whose ServiceAccount is gone no longer authenticates (a token not seen before:
        # the cache would keep a reviewed one's result for a minute).
        gone = _token(admin_api, namespace, "gone")
        admin_api.request("DELETE", f"/api/v1/namespaces/{namespace}/serviceaccounts/gone")
        await asyncio.sleep(1)
        assert await asyncio.to_thread(_scrape, port, gone) == (401, "Unauthorized\n")
        # HTTPS only: a plain-HTTP request gets no metrics.
        with pytest.raises((OSError, http.client.HTTPException)):
            await asyncio.to_thread(_scrape, port, reader, "http")
    finally:
        with contextlib.suppress(KubeApiError):
            admin_api.request("DELETE", f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{namespace}-scraper")
    text = log.read_text()
    assert "Traceback" not in text, text[-3000:]
    assert "authentication failed" not in text and "authorization failed" not in text, text[-3000:]
