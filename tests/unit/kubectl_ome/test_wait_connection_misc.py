"""`wait` (it returns on the watch event that makes the condition hold; no timers), the connection
flags, `version`, `get` and `logs` argument handling."""

from __future__ import annotations

import argparse
import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio.client import Configuration

from ome.api.resources import INFERENCE_REPLICAS, INFERENCE_SERVICES
from ome.kubectl_ome import cmd_misc, cmd_wait, connection
from ome.kubectl_ome.cli import main
from ome.kubectl_ome.failures import CliError, Unmet
from tests.unit.kubectl_ome.fakes import make_ctx
from tests.unit.kubectl_ome.fixtures import cluster, isvc, parse, replica


def fields(table: str) -> dict[str, str]:
    """A FIELD/VALUE table as a dict (columns are three or more spaces apart)."""
    import re

    return dict((re.split(r"\s{3,}", line, maxsplit=1) + [""])[:2] for line in table.splitlines()[1:])


async def test_wait_returns_on_the_event_that_makes_ready_true() -> None:
    client = cluster(isvc())
    ctx, _, _ = make_ctx(client)
    args = parse("wait", "chat", "-n", "prod", "--for=condition=Ready", "--timeout=1h")
    task = asyncio.create_task(args.handler(ctx, args))
    for _ in range(20):  # let the wait read and open its watch: it must not match yet
        await asyncio.sleep(0)
    assert not task.done()
    updated = copy.deepcopy(await client.get(INFERENCE_SERVICES, "chat", "prod"))
    updated["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    client.put(INFERENCE_SERVICES, updated)
    rows = fields(await asyncio.wait_for(task, 5))
    assert (rows["Outcome"], rows["Reason"], rows["Observed Ready"]) == ("Matched", "ConditionMatched", "True")
    assert (rows["Source method"], rows["Events / observations"], rows["GET / WATCH / polls"]) == \
        ("Watch", "1 / 2", "1 / 1 / 0")


async def test_wait_that_already_holds_matches_on_the_first_read() -> None:
    service = isvc()
    service["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    ctx, _, _ = make_ctx(cluster(service))
    args = parse("wait", "chat", "-n", "prod", "--for", "condition=Ready=False")
    rows = fields(await args.handler(ctx, args))
    assert (rows["Source method"], rows["GET / WATCH / polls"]) == ("InitialGET", "1 / 0 / 0")


async def test_wait_timeouts_and_missing_services_exit_2() -> None:
    ctx, _, _ = make_ctx(cluster(isvc()))
    args = parse("wait", "nope", "-n", "prod", "--for=condition=Ready")
    with pytest.raises(Unmet) as caught:
        await args.handler(ctx, args)
    assert fields(caught.value.output)["Outcome"] == "NotFound"
    args = parse("wait", "chat", "-n", "prod", "--for=condition=Ready", "--timeout=50ms")
    with pytest.raises(Unmet) as caught:
        await args.handler(ctx, args)
    assert fields(caught.value.output)["Outcome"] == "TimedOut"


def test_held_revision_predicate_reads_the_replica() -> None:
    pred = cmd_wait.parse_predicate("held-revision=unheld")
    args = argparse.Namespace(component="engine", revision="chat-engine-7f9c4d2b", ir_name="chat-engine",
                              ir_uid="uid-ir", replicas=None, request_id=None, predicate="held-revision=unheld",
                              timeout="1m")
    held = replica(retryBlocks=[{"targetRevision": "chat-engine-7f9c4d2b", "state": "Held", "attemptsStarted": 3}])
    assert not cmd_wait.check_replica(pred, held, args).matched
    assert cmd_wait.check_replica(pred, replica(retryBlocks=[]), args).matched
    mailbox = replica()
    mailbox["metadata"]["annotations"]["ome.io/release-held-revision"] = "chat-engine-7f9c4d2b"
    assert not cmd_wait.check_replica(pred, mailbox, args).matched
    assert cmd_wait.check_flags(pred, args) == 60.0


def test_wait_flags_are_checked_per_predicate() -> None:
    base = dict(component=None, revision=None, ir_name=None, ir_uid=None, replicas=None, request_id=None,
                timeout="1m0s")
    pred = cmd_wait.parse_predicate("condition=Ready")
    with pytest.raises(CliError, match="--component is not valid with --for=condition=Ready"):
        cmd_wait.check_flags(pred, argparse.Namespace(**{**base, "component": "engine"},
                                                      predicate="condition=Ready"))
    held = cmd_wait.parse_predicate("held-revision=unheld")
    with pytest.raises(CliError, match="--component is required"):
        cmd_wait.check_flags(held, argparse.Namespace(**base, predicate="held-revision=unheld"))
    with pytest.raises(CliError, match="at most 24h"):
        cmd_wait.check_flags(pred, argparse.Namespace(**{**base, "timeout": "25h"}, predicate="condition=Ready"))
    with pytest.raises(CliError, match="unsupported --for"):
        cmd_wait.parse_predicate("condition=Healthy")
    assert cmd_wait.parse_predicate("rollout=rolled-back").value == "RolledBack"


async def test_wait_replicas_current_polls_the_replica() -> None:
    client = cluster(isvc(), replica())
    ctx, _, _ = make_ctx(client)
    args = parse("wait", "chat", "-n", "prod", "--for=replicas=current", "--component", "engine", "--replicas", "1")
    rows = fields(await args.handler(ctx, args))
    assert rows["Outcome"] == "Matched" and "Polling fallback" not in rows
    assert (await client.get(INFERENCE_REPLICAS, "chat-engine", "prod"))["spec"]["replicas"] == 1


KUBECONFIG = """
apiVersion: v1
kind: Config
current-context: dev
clusters:
- {name: c1, cluster: {server: 'https://127.0.0.1:6443'}}
- {name: c2, cluster: {server: 'https://127.0.0.2:6443'}}
users:
- {name: u1, user: {token: t1}}
- {name: u2, user: {token: t2}}
contexts:
- {name: dev, context: {cluster: c1, user: u1, namespace: team-a}}
"""


def test_connection_flags_parse_anywhere(tmp_path: Path) -> None:
    args = parse("--context", "dev", "status", "chat", "--as", "alice", "--as-group", "g1", "--as-group", "g2",
                 "--request-timeout", "10s", "-s", "127.0.0.1:6443", "--token", "abc", "--insecure-skip-tls-verify",
                 "--ome-namespace", "ome-system")
    opts = connection.Options.from_args(args)
    assert (opts.context, opts.as_user, opts.as_groups, opts.request_timeout) == ("dev", "alice", ("g1", "g2"), 10.0)
    assert opts.impersonation_headers() == [("Impersonate-User", "alice"), ("Impersonate-Group", "g1"),
                                            ("Impersonate-Group", "g2")]
    assert args.ome_namespace == "ome-system"
    cfg = Configuration()
    connection.apply_overrides(cfg, opts)
    assert cfg.host == "https://127.0.0.1:6443" and cfg.api_key == {"BearerToken": "Bearer abc"}
    assert cfg.verify_ssl is False
    with pytest.raises(CliError, match="requires --as"):
        connection.Options(as_groups=("g",)).impersonation_headers()


def test_cluster_and_user_flags_swap_into_the_context() -> None:
    import yaml

    config = yaml.safe_load(KUBECONFIG)
    out = connection.overridden(config, connection.Options(cluster="c2", user="u2"))
    assert out["contexts"][0]["context"] == {"cluster": "c2", "user": "u2", "namespace": "team-a"}
    assert config["contexts"][0]["context"]["cluster"] == "c1"  # the input is not touched


async def test_connect_resolves_namespace_context_and_server(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(KUBECONFIG)
    conn = await connection.connect(connection.Options(kubeconfig=str(path), cluster="c2"))
    try:
        assert (conn.namespace, conn.context, conn.client.host) == ("team-a", "dev", "https://127.0.0.2:6443")
    finally:
        await conn.client.close()


async def test_kubeconfig_list_is_merged_and_relative_files_resolve_next_to_their_kubeconfig(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$KUBECONFIG names several files, merged as kubectl does (kubernetes-asyncio's merger): the context
    is in one, its cluster and user in another whose certificate-authority is relative to that file."""
    from ome.framework import certs

    (tmp_path / "a").mkdir()
    (tmp_path / "b" / "pki").mkdir(parents=True)
    ca_pem, _ = certs.generate_ca("test-ca")
    (tmp_path / "b" / "pki" / "ca.crt").write_bytes(ca_pem)
    first, second = tmp_path / "a" / "config", tmp_path / "b" / "config"
    first.write_text("apiVersion: v1\nkind: Config\ncurrent-context: far\n"
                     "contexts: [{name: far, context: {cluster: remote, user: me, namespace: team-b}}]\n")
    second.write_text("apiVersion: v1\nkind: Config\n"
                      "clusters: [{name: remote, cluster: {server: 'https://127.0.0.9:6443', "
                      "certificate-authority: pki/ca.crt}}]\nusers: [{name: me, user: {token: t}}]\n")
    monkeypatch.chdir(tmp_path)  # not where the CA is: it must resolve next to b/config
    monkeypatch.setenv("KUBECONFIG", f"{first}:{tmp_path / 'missing'}:{second}")
    conn = await connection.connect(connection.Options())
    try:
        assert (conn.namespace, conn.context, conn.client.host) == ("team-b", "far", "https://127.0.0.9:6443")
    finally:
        await conn.client.close()
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    with pytest.raises(CliError, match="does not exist"):
        await connection.connect(connection.Options())


def test_durations() -> None:
    assert [connection.parse_duration(v) for v in ("10s", "1m", "500ms", "2h", "3")] == [10, 60, 0.5, 7200, 3]
    with pytest.raises(CliError, match="invalid duration"):
        connection.parse_duration("ten")


def test_usage_errors_print_error_prefix_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rollout", "pause"]) == 1
    assert capsys.readouterr().err == "error: the following arguments are required: INFERENCESERVICE\n"
    assert main(["rollout", "pause", "chat", "--dry-run", "maybe"]) == 1
    assert capsys.readouterr().err.startswith("error: argument --dry-run: invalid choice: 'maybe'")
    for argv in (["status", "--help"], ["rollout", "repin", "--help"], ["wait", "--help"], ["scale", "--help"]):
        assert main(argv) == 0
        assert "\nExample:\n  kubectl ome " in capsys.readouterr().out


def test_every_command_has_help_with_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    from ome.kubectl_ome.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    seen = 0
    for name, sub in commands.choices.items():
        groups = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
        leaves = list(groups[0].choices.items()) if groups else [(name, sub)]
        for leaf, parser_ in leaves:
            assert parser_.epilog and parser_.epilog.startswith("Example:\n  kubectl ome "), leaf
            seen += 1
    assert seen >= 28


def test_operator_version_from_the_manager_image() -> None:
    def deploy(*containers: dict[str, str]) -> dict[str, Any]:
        return {"spec": {"template": {"spec": {"containers": list(containers)}}}}

    assert cmd_misc.operator_version(deploy({"name": "manager", "image": "ghcr.io/moirai-internal/ome-manager:v1.3.0"})) == "v1.3.0"
    assert cmd_misc.operator_version(deploy({"name": "manager", "image": "r/ome@sha256:abc"})) == "sha256:abc"
    assert cmd_misc.operator_version(deploy({"name": "manager", "image": "r:5000/ome:v1@sha256:abc"})) == "v1@sha256:abc"
    assert cmd_misc.operator_version(deploy({"name": "a", "image": "x:1"}, {"name": "b", "image": "y:1"})) == \
        "unknown (manager container unavailable)"
    assert cmd_misc.operator_version(deploy({"name": "manager", "image": "ome"})) == \
        "unknown (image has no tag or digest)"


def test_log_selectors() -> None:
    def ns(**kw: Any) -> argparse.Namespace:
        base: dict[str, Any] = dict(name="chat", component=None, instance=-1, revision=None, runner=None)
        return argparse.Namespace(**{**base, **kw})

    assert cmd_misc.log_selector(ns(component="engine", instance=0, runner="leader")) == {
        "ome.io/inferenceservice": "chat", "ome.io/managed-by": "OMENative", "ome.io/instance-index": "0",
        "ome.io/runner": "leader", "component": "engine"}
    assert cmd_misc.log_selector(ns(revision="chat-engine-1a2b3c4d"))["ome.io/revision-hash"] == "1a2b3c4d"
    with pytest.raises(CliError, match="--instance requires --component"):
        cmd_misc.log_selector(ns(instance=0))
    with pytest.raises(CliError, match="hash-only --revision requires --component"):
        cmd_misc.log_selector(ns(revision="1a2b3c4d"))
    with pytest.raises(CliError, match='invalid component "ome-container"'):
        cmd_misc.log_selector(ns(component="ome-container"))


def test_get_resolves_aliases_and_prints_isvc_columns() -> None:
    from datetime import UTC, datetime

    from ome.kubectl_ome import cmd_get

    assert cmd_get.resolve_kind("ISVC") == "inferenceservices" and cmd_get.resolve_kind("ir") == "inferencereplicas"
    with pytest.raises(CliError, match=r'unknown resource "irep" \(valid resources: inferenceservices, '):
        cmd_get.resolve_kind("irep")
    obj = isvc(model={"name": "llama"})
    obj["metadata"]["creationTimestamp"] = "2026-09-01T09:00:00Z"
    from ome.api.resources import INFERENCE_SERVICES as RES

    text = cmd_get.get_table("inferenceservices", [(RES, obj)], datetime(2026, 9, 1, 12, tzinfo=UTC), False, False)
    assert text.splitlines() == ["NAME   MODEL   RUNTIME   READY     URL   AGE", "chat   llama   vllm      Unknown   -     3h"]


def test_colour_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from ome.kubectl_ome.output import colourize, use_colour

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert use_colour(Tty()) and not use_colour(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_colour(Tty())
    text = "FIELD   VALUE\nReady   False / Valid\n"
    coloured = colourize(text)
    assert coloured.startswith("FIELD   VALUE\nReady   \033[31mFalse\033[0m / \033[32mValid\033[0m")
    assert colourize("FIELD   VALUE\nTrue   x\n") == "FIELD   VALUE\nTrue   x\n"  # the field column stays plain


async def test_logs_of_an_instance_by_runner_and_ordinal() -> None:
    from ome.api.resources import PODS

    client = cluster(isvc())
    for runner, ordinal in (("leader", 0), ("worker", 0), ("worker", 1)):
        name = f"chat-engine-0-{runner}-{ordinal}"
        client.put(PODS, {"metadata": {"name": name, "namespace": "prod", "labels": {
            "ome.io/inferenceservice": "chat", "component": "engine", "ome.io/instance-index": "0",
            "ome.io/runner": runner, "ome.io/managed-by": "OMENative"}},
            "spec": {"nodeName": "n", "containers": [{"name": "ome-container"}]}})
        client.logs[name] = f"{name} one\n{name} two\n".encode()
    ctx, _, out = make_ctx(client)
    args = parse("logs", "chat", "-n", "prod", "-c", "engine", "--instance", "0", "--runner", "worker", "--tail", "1")
    assert await args.handler(ctx, args) == ""
    assert out.getvalue() == ("[engine/chat-engine-0-worker-0] chat-engine-0-worker-0 two\n"
                              "[engine/chat-engine-0-worker-1] chat-engine-0-worker-1 two\n")
    ctx, _, out = make_ctx(client)
    args = parse("logs", "chat", "-n", "prod", "-c", "engine", "--instance", "0", "--runner", "worker",
                 "--ordinal", "1")
    await args.handler(ctx, args)
    assert out.getvalue() == "chat-engine-0-worker-1 one\nchat-engine-0-worker-1 two\n"  # one pod: no prefix
    args = parse("logs", "chat", "-n", "prod", "-c", "router")
    with pytest.raises(CliError, match='no pods found for InferenceService "chat" in namespace "prod" '
                                       r"\(selector component=router,ome.io/inferenceservice=chat\)"):
        await args.handler(ctx, args)


def test_framework_info_logs_stay_off_the_cli_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import logging

    import structlog

    from ome.framework import log_setup

    root = logging.getLogger()
    saved = list(root.handlers), root.level
    log_setup.configure_logging(format="json", level="debug")  # as a process that logs at debug would
    try:
        path = tmp_path / "config"
        path.write_text(KUBECONFIG.replace("https://127.0.0.1:6443", "http://127.0.0.1:1"))
        assert main(["--kubeconfig", str(path), "instance", "list", "chat"]) == 1
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.startswith("error: ") and captured.err.count("\n") == 1
    finally:
        root.handlers[:], _ = saved
        root.setLevel(saved[1])
        structlog.reset_defaults()
