"""The kubectl-ome command line: flags, namespace defaulting, one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from ome.kubectl_ome.cli import build_parser, context_namespace, kubeconfig_path, main, resolve_namespace

KUBECONFIG = """
apiVersion: v1
kind: Config
current-context: dev
contexts:
- name: dev
  context: {cluster: c, user: u, namespace: team-a}
- name: other
  context: {cluster: c, user: u}
"""


def test_global_flags_before_or_after_the_command() -> None:
    parser = build_parser()
    before = parser.parse_args(["-n", "prod", "--context", "x", "instance", "list", "chat"])
    after = parser.parse_args(["instance", "list", "chat", "-n", "prod", "--context", "x", "-o", "json"])
    for args in (before, after):
        assert (args.namespace, args.context, args.name) == ("prod", "x", "chat")
    assert after.output == "json"
    args = parser.parse_args(["runtime", "effective", "chat"])
    assert (args.command, args.subcommand, args.output) == ("runtime", "effective", "table")
    assert not hasattr(args, "namespace")


def test_namespace_from_the_context(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "config"
    path.write_text(KUBECONFIG)
    assert resolve_namespace(None, str(path), None) == "team-a"
    assert resolve_namespace(None, str(path), "other") == "default"
    assert resolve_namespace("prod", str(path), None) == "prod"
    assert resolve_namespace(None, str(tmp_path / "missing"), None) == "default"
    assert context_namespace({}, None) == "default"
    monkeypatch.setenv("KUBECONFIG", f"/elsewhere:{path}")
    assert kubeconfig_path(None) == f"/elsewhere:{path}"  # every file, merged (a missing one is skipped)
    assert resolve_namespace(None, kubeconfig_path(None), None) == "team-a"
    assert kubeconfig_path("/flag") == "/flag"


def test_usage_errors_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["instance", "list"]) == 1
    assert main(["status", "chat", "-o", "bogus"]) == 1
    assert main(["--help"]) == 0
    capsys.readouterr()


def test_missing_kubeconfig_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--kubeconfig", str(tmp_path / "nope"), "status", "chat"]) == 1
    err = capsys.readouterr().err
    assert err == f"error: kubeconfig {tmp_path / 'nope'} does not exist\n"


def test_unreachable_server_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "config"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    assert main(["--kubeconfig", str(path), "instance", "list", "chat"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert "Traceback" not in err
