"""KubeApi reads kubeconfigs with kubernetes-asyncio's loader: tokens as well as client certificates."""

from __future__ import annotations

import asyncio
from pathlib import Path

import yaml

from ome.devcluster.kubeapi import KubeApi
from ome.framework import resources
from tests.unit.framework.fake_apiserver import FakeApiServer


async def test_a_token_kubeconfig_works_from_inside_a_running_loop(tmp_path: Path) -> None:
    fake = FakeApiServer()
    await fake.start()
    try:
        fake.add(resources.NODES, {"metadata": {"name": "n1"}})
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "b",
            "clusters": [{"name": "a", "cluster": {"server": "http://127.0.0.1:9"}},
                         {"name": "b", "cluster": {"server": fake.url}}],
            "users": [{"name": "u", "user": {"token": "s3cret"}}],
            "contexts": [{"name": "a", "context": {"cluster": "a", "user": "u"}},
                         {"name": "b", "context": {"cluster": "b", "user": "u"}}],
        }))  # fmt: skip
        api = KubeApi.from_kubeconfig(path)  # called with this test's loop running
        nodes = await asyncio.to_thread(api.get, "/api/v1/nodes")
    finally:
        await fake.stop()
    assert [n["metadata"]["name"] for n in nodes["items"]] == ["n1"]
    assert fake.requests[-1].headers["Authorization"] == "Bearer s3cret"
