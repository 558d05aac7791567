"""The ome-model-agent process: a SIGTERM while its caches are still syncing ends it cleanly with exit 0."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from ome.framework import resources
from tests.unit.framework.fake_apiserver import FakeApiServer

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
async def fake() -> AsyncIterator[FakeApiServer]:
    server = FakeApiServer()
    await server.start()
    yield server
    await server.stop()


def kubeconfig(path: Path, server: str) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": {"server": server}}],
        "users": [{"name": "fake", "user": {"token": "t"}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
    }))  # fmt: skip
    return path


async def test_sigterm_during_the_first_cache_sync_exits_0(fake: FakeApiServer, tmp_path: Path) -> None:
    fake.add(resources.NODES, {"metadata": {"name": "n1", "labels": {"zone": "a"}}})
    fake.fail("GET", "/clusterbasemodels", 500, times=1_000_000)  # this informer never syncs
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "ome.modelagent", "--kubeconfig", str(kubeconfig(tmp_path / "kc", fake.url)),
        "--node-name", "n1", "--health-probe-bind-address", "0", "--models-root-dir", str(tmp_path),
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    try:
        async with asyncio.timeout(30):
            while not any("/clusterbasemodels" in r.path for r in fake.requests):  # noqa: ASYNC110
                await asyncio.sleep(0.02)  # the agent is up and trying its first list
        proc.send_signal(signal.SIGTERM)
        out, _ = await asyncio.wait_for(proc.communicate(), 15)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, out.decode()[-3000:]
    assert "Traceback" not in out.decode()
