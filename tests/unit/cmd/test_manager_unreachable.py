"""ome-manager started while the apiserver refuses connections (as during its restart) exits 1 with a
clear line, not a traceback (the fault suite started replacements during an apiserver restart)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml

from ome.cmd import manager
from ome.framework import log_setup


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_an_unreachable_apiserver_at_start_exits_1_with_a_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{_closed_port()}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}], "current-context": "c",
    }))  # fmt: skip
    args = manager.parse_args(["--kubeconfig", str(kubeconfig), "--webhook-port", "0",
                               "--metrics-bind-address", "0", "--health-probe-bind-address", "0"])
    log_setup.configure_from_zap_flags(args)  # as main() does: logs go to this test's stderr
    assert await manager.run(args) == 1  # not raised
    err = capsys.readouterr().err
    assert "ome-manager: unable to read the operator configuration" in err
    assert "Traceback" not in err
