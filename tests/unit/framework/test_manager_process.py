"""The ome-manager process against the fake apiserver: a SIGTERM while its caches are still syncing ends it
cleanly (exit 0, no controller started), well within a pod's termination grace period."""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from ome.framework import resources
from tests.unit.framework.fake_apiserver import FakeApiServer

ROOT = Path(__file__).resolve().parents[3]
CONFIG = ROOT / "config" / "configmap" / "inferenceservice-config.yaml"


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


async def test_sigterm_during_the_first_cache_sync_exits_0_without_starting_controllers(
    fake: FakeApiServer, tmp_path: Path
) -> None:
    config = yaml.safe_load(CONFIG.read_text())
    config["metadata"]["namespace"] = "ome"
    fake.add(resources.CONFIGMAPS, config)
    fake.fail("GET", "/inferenceservices", 500, times=1_000_000)  # this informer never syncs
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "ome.cmd.manager", "--kubeconfig", str(kubeconfig(tmp_path / "kc", fake.url)),
        "--webhook-port", "0", "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
        "--log-format", "console", cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    try:
        async with asyncio.timeout(120):
            while not any("/inferenceservices" in r.path for r in fake.requests):  # noqa: ASYNC110
                await asyncio.sleep(0.02)  # the manager is up and trying its first list
        proc.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        out, _ = await asyncio.wait_for(proc.communicate(), 20)
        took = time.monotonic() - signalled
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    log = out.decode()
    assert proc.returncode == 0, log[-3000:]
    assert "Traceback" not in log and "starting controllers" not in log
    assert took < 10, f"stopped {took:.1f}s after SIGTERM"


async def test_a_metrics_address_in_use_exits_1_with_the_start_error_and_no_traceback(
    fake: FakeApiServer, tmp_path: Path
) -> None:
    config = yaml.safe_load(CONFIG.read_text())
    config["metadata"]["namespace"] = "ome"
    fake.add(resources.CONFIGMAPS, config)
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "ome.cmd.manager", "--kubeconfig", str(kubeconfig(tmp_path / "kc", fake.url)),
            "--webhook-port", "0", "--metrics-bind-address", f"127.0.0.1:{port}",
            "--health-probe-bind-address", "0", "--log-format", "console", cwd=ROOT,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), 120)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    finally:
        taken.close()
    log = out.decode()
    assert proc.returncode == 1, log[-3000:]
    assert "Failed to start manager" in log and "address already in use" in log, log[-3000:]
    assert "Traceback" not in log
