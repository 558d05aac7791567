"""--disable-compression sends Accept-Encoding: identity; --cache-dir says in --help that it is unused."""

from __future__ import annotations

import asyncio
import contextlib
import io
from typing import Any

from kubernetes_asyncio.client import Configuration

from ome.framework.client import Client
from ome.framework.transport import ClientSettings, Transport
from ome.kubectl_ome import cli


def test_disable_compression_asks_for_identity() -> None:
    config = Configuration()
    config.host = "https://127.0.0.1:6443"
    client = Client(Transport(config, ClientSettings()))
    before = asyncio.run(client._transport._headers("application/json", None))
    assert "Accept-Encoding" not in before  # aiohttp would add gzip itself
    cli.disable_compression(client)
    after = asyncio.run(client._transport._headers("application/json", None))
    assert after["Accept-Encoding"] == "identity" and after["Accept"] == "application/json"


def test_the_flags_parse_and_document_themselves() -> None:
    args = cli.build_parser().parse_args(["--disable-compression", "--cache-dir", "/tmp/x", "get", "isvc"])
    assert (args.disable_compression, args.cache_dir) == (True, "/tmp/x")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        cli.build_parser().parse_args(["get", "--help"])
    text = " ".join(out.getvalue().split())
    assert "unused: kubectl-ome keeps no discovery or HTTP cache" in text
    assert "Ask the API server for uncompressed responses" in text


def test_traffic_action_flag_errors_have_the_documented_text(capsys: Any) -> None:
    assert cli.main(["traffic", "undrain", "chat", "--id", "a", "--reason", "x"]) == 1
    assert capsys.readouterr().err == "error: invalid traffic action flags; use --help\n"
    assert cli.main(["traffic", "status", "chat", "--bogus"]) == 1
    assert "invalid traffic action flags" not in capsys.readouterr().err
