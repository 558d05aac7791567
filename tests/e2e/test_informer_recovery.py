"""Informers survive a restarted kube-apiserver and an expired resourceVersion without missing a change."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import REGISTRY

from ome.devcluster.cluster import Cluster
from ome.framework.cache import SharedCache
from ome.framework.client import Client
from ome.framework.resources import CONFIGMAPS
from tests.e2e.tcp_proxy import TcpProxy


def _cm(name: str, value: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": value}}


async def _converged(cache: SharedCache, client: Client, namespace: str, timeout: float = 60) -> None:
    """The cache holds exactly what the apiserver holds (names and resourceVersions)."""
    deadline = time.monotonic() + timeout
    while True:
        items, _ = await client.list(CONFIGMAPS, namespace)
        want = {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in items}
        have = {o["metadata"]["name"]: o["metadata"]["resourceVersion"]
                for o in cache.list(CONFIGMAPS, namespace)}
        if want == have:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"cache never converged: want {want}, have {have}")
        await asyncio.sleep(0.2)


def _expired_count() -> float:
    return REGISTRY.get_sample_value("ome_informer_watch_expired_total", {"resource": "configmaps"}) or 0.0


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def __call__(self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        self.events.append((event_type, obj["metadata"]["name"], (obj.get("data") or {}).get("v", "")))


@pytest.fixture
async def proxied_client(kubeconfig: Path, tmp_path: Path) -> AsyncIterator[tuple[Client, TcpProxy]]:
    config = yaml.safe_load(kubeconfig.read_text())
    server = config["clusters"][0]["cluster"]["server"]
    port = int(server.rsplit(":", 1)[1])
    proxy = TcpProxy("127.0.0.1", port)
    await proxy.start()
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
    path = tmp_path / "kubeconfig-proxied"
    path.write_text(yaml.safe_dump(config))
    client = await Client.from_kubeconfig(str(path))
    try:
        yield client, proxy
    finally:
        await client.close()
        await proxy.stop()


async def test_informer_recovers_from_apiserver_restart(
    client: Client, dev_cluster: Cluster, namespace: str
) -> None:
    await client.create(CONFIGMAPS, _cm("before", "1"), namespace)
    cache = SharedCache(client)
    rec = Recorder()
    cache.informer_for(CONFIGMAPS, namespace=namespace).add_handler(rec)
    await cache.start()
    try:
        await cache.wait_for_sync(30)
        await asyncio.to_thread(dev_cluster.restart_component, "kube-apiserver")
        await client.create(CONFIGMAPS, _cm("after", "1"), namespace)
        before = await client.get(CONFIGMAPS, "before", namespace)
        before["data"]["v"] = "2"
        await client.update(CONFIGMAPS, before)
        await _converged(cache, client, namespace)
        assert ("ADDED", "after", "1") in rec.events
        assert ("MODIFIED", "before", "2") in rec.events
    finally:
        await cache.stop()


async def test_informer_relists_after_expired_resource_version_with_tombstones(
    client: Client, proxied_client: tuple[Client, TcpProxy], dev_cluster: Cluster, namespace: str
) -> None:
    watcher, proxy = proxied_client
    for name in ("keep", "change", "remove"):
        await client.create(CONFIGMAPS, _cm(name, "1"), namespace)
    cache = SharedCache(watcher)
    rec = Recorder()
    cache.informer_for(CONFIGMAPS, namespace=namespace).add_handler(rec)
    await cache.start()
    try:
        await cache.wait_for_sync(30)
        rec.events.clear()
        expired_before = _expired_count()
        proxy.pause()  # the informer's watch goes silent from here on: every change below is unseen
        await client.create(CONFIGMAPS, _cm("added", "1"), namespace)
        change = await client.get(CONFIGMAPS, "change", namespace)
        change["data"]["v"] = "2"
        await client.update(CONFIGMAPS, change)
        await client.delete(CONFIGMAPS, "remove", namespace)
        # Compact etcd past the informer's resourceVersion and restart the apiserver (its new watch cache
        # starts at the current revision): when the held connection closes, the re-watch from the old
        # resourceVersion gets 410 Gone and the informer must relist.
        await asyncio.to_thread(dev_cluster.compact_etcd)
        await asyncio.to_thread(dev_cluster.restart_component, "kube-apiserver")
        proxy.cut()  # the held watch dies without delivering the events it held
        proxy.resume()
        await _converged(cache, client, namespace)
        assert _expired_count() > expired_before, "the informer saw 410 Gone"
        assert ("ADDED", "added", "1") in rec.events
        assert ("MODIFIED", "change", "2") in rec.events
        deleted = [e for e in rec.events if e[0] == "DELETED"]
        assert deleted == [("DELETED", "remove", "1")], "the tombstone carries the last known object"
        assert not any(e[1] == "keep" for e in rec.events), "an unchanged object is not re-delivered"
    finally:
        await cache.stop()
