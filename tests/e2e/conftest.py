"""e2e fixtures: one real control plane per test run, a fresh namespace per test."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from ome.devcluster.cluster import Cluster
from ome.devcluster.kubeapi import KubeApi, KubeApiError

EXTERNAL_KUBECONFIG = os.environ.get("OME_E2E_KUBECONFIG")
# Tests that need our own control-plane processes (restarts, etcd compaction) or an apiserver that can
# dial 127.0.0.1 webhooks; they skip against an external cluster such as kind.
LOCAL_ONLY_FILES = ("test_informer_recovery.py", "test_smoke_webhook.py", "test_webhooks_admission.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.e2e)
        if EXTERNAL_KUBECONFIG and item.path.name in LOCAL_ONLY_FILES:
            item.add_marker(pytest.mark.skip(reason="needs the local control plane (OME_E2E_KUBECONFIG is set)"))


@pytest.fixture(scope="session")
def dev_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster | None]:
    """Starts the cluster once per run (OME_E2E_STATE_DIR reuses a running one and leaves it up;
    OME_E2E_KUBECONFIG uses an external cluster, e.g. kind with kwok's fake GPU nodes: None here)."""
    if EXTERNAL_KUBECONFIG:
        yield None
        return
    if reuse := os.environ.get("OME_E2E_STATE_DIR"):
        cluster = Cluster(Path(reuse))
        cluster.up()
        yield cluster
        return
    cluster = Cluster(tmp_path_factory.mktemp("devcluster"))
    started = time.monotonic()
    cluster.up(log=lambda m: print(m))
    print(f"dev cluster started in {time.monotonic() - started:.1f}s")
    try:
        yield cluster
    finally:
        cluster.down(quiet=True)


@pytest.fixture(scope="session")
def kubeconfig(dev_cluster: Cluster | None) -> Path:
    if dev_cluster is None:
        return Path(str(EXTERNAL_KUBECONFIG))
    return dev_cluster.kubeconfig


@pytest.fixture(scope="session")
def admin_api(kubeconfig: Path) -> KubeApi:
    """A small synchronous client for fixture plumbing (namespaces, waits)."""
    return KubeApi.from_kubeconfig(kubeconfig)


@pytest.fixture
def namespace(admin_api: KubeApi, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace whose default ServiceAccount exists (pods are admitted at once)."""
    base = request.node.name.lower().replace("_", "-")[:40].strip("-")
    name = f"{base}-{uuid.uuid4().hex[:6]}"
    admin_api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                            "metadata": {"name": name}})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            admin_api.get(f"/api/v1/namespaces/{name}/serviceaccounts/default")
            break
        except KubeApiError:
            time.sleep(0.1)
    yield name
    try:
        admin_api.request("DELETE", f"/api/v1/namespaces/{name}")
    except KubeApiError:
        pass


@pytest.fixture
async def client(kubeconfig: Path) -> AsyncIterator[object]:
    from ome.framework.client import Client

    c = await Client.from_kubeconfig(str(kubeconfig))
    try:
        yield c
    finally:
        await c.close()


@pytest.fixture(scope="session")
async def ome_crds(kubeconfig: Path) -> list[str]:
    """OME's CRDs installed once per run (config/crd, server-side applied, Established)."""
    from ome.devcluster.crds import install_crds
    from ome.framework.client import Client

    async with await Client.from_kubeconfig(str(kubeconfig)) as c:
        return await install_crds(c)
