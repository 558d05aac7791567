"""The guarded-action contract: preview on stderr, the confirm prompt (a real pseudo-terminal), the
three dry-run modes, the guarded JSON Patch, conflicts exiting 3 and the ActionResult."""

from __future__ import annotations

import asyncio
import io
import json
import os
import pty
import re
from pathlib import Path

import pytest

from ome.api.resources import INFERENCE_SERVICES
from ome.framework import errors
from ome.kubectl_ome import guarded
from ome.kubectl_ome.failures import CONFLICT, NOT_CONFIRMED, CliError, Conflict
from ome.kubectl_ome.guarded import Terminal
from tests.unit.kubectl_ome.fakes import NOW, TtyInput, make_ctx
from tests.unit.kubectl_ome.fixtures import canary_isvc, cluster, parse, replica

GOLDEN = Path(__file__).parent / "golden"


def paused_isvc() -> dict:  # type: ignore[type-arg]
    obj = canary_isvc()
    obj["metadata"]["annotations"]["ome.io/rollout-paused"] = "true"
    return obj


async def run(argv: list[str], client: object, stdin: io.StringIO | None = None) -> tuple[str, str]:
    ctx, err, _ = make_ctx(client, stdin=stdin)  # type: ignore[arg-type]
    args = parse(*argv)
    out = await args.handler(ctx, args)
    return out, err.getvalue()


async def test_pause_after_a_typed_yes_sets_the_annotation_and_prints_the_result() -> None:
    client = cluster(canary_isvc(), replica())
    out, err = await run(["rollout", "pause", "chat", "-n", "prod"], client, TtyInput("y\n"))
    assert out == (GOLDEN / "action_result_pause.txt").read_text()
    assert err.startswith("ALPHA guarded action preview (not controller convergence)\nFIELD ")
    assert re.search(r"\nSet annotation +ome.io/rollout-paused\nValue +\"true\"\n", err)
    assert err.rstrip().endswith(
        "Parent UID/resourceVersion CAS is not a multi-object transaction.\nConfirm this exact action? [y/N]")
    stored = await client.get(INFERENCE_SERVICES, "chat", "prod")
    assert stored["metadata"]["annotations"]["ome.io/rollout-paused"] == "true"
    path, ops, query = client.patches[0]
    assert ops[:2] == [{"op": "test", "path": "/metadata/uid", "value": "5d9f3c2a-8b41-4f7e-a0c6-1e2b3c4d5e6f"},
                       {"op": "test", "path": "/metadata/resourceVersion", "value": "102"}]
    assert path == "/apis/ome.io/v1beta1/namespaces/prod/inferenceservices/chat" and query == []


async def test_without_a_terminal_or_with_no_nothing_is_sent() -> None:
    client = cluster(canary_isvc(), replica())
    with pytest.raises(CliError, match=NOT_CONFIRMED):
        await run(["rollout", "pause", "chat", "-n", "prod"], client, io.StringIO("y\n"))  # a pipe, not a tty
    with pytest.raises(CliError, match=NOT_CONFIRMED):
        await run(["rollout", "pause", "chat", "-n", "prod"], client, TtyInput("n\n"))
    assert client.patches == []


async def test_client_dry_run_sends_nothing_and_server_dry_run_stores_nothing() -> None:
    client = cluster(paused_isvc(), replica())
    before = await client.get(INFERENCE_SERVICES, "chat", "prod")
    out, _ = await run(["rollout", "resume", "chat", "-n", "prod", "--dry-run", "client", "--yes"], client)
    assert "accepted        No" in out and "Validated locally; no patch sent." in out and client.patches == []
    text, _ = await run(["rollout", "resume", "chat", "-n", "prod", "--dry-run=server", "--yes", "-o", "json"],
                        client)
    result = json.loads(text)
    assert client.patches[0][2] == [("dryRun", "All")]
    assert await client.get(INFERENCE_SERVICES, "chat", "prod") == before
    assert result == {
        "apiVersion": "cli.ome.io/v1alpha1", "kind": "ActionResult", "collectedAt": "2026-09-28T14:05:00Z",
        "action": "rollout resume",
        "target": {"kind": "InferenceService", "namespace": "prod", "name": "chat",
                   "uid": "5d9f3c2a-8b41-4f7e-a0c6-1e2b3c4d5e6f", "resourceVersion": before["metadata"]["resourceVersion"]},
        "dryRun": "server", "accepted": True, "applied": False,
        "message": "API dry-run accepted; no changes persisted.",
        "followUp": "kubectl ome rollout status chat -n prod --context=prod-cluster",
    }


async def test_a_target_changed_after_the_read_is_a_conflict_exiting_3() -> None:
    client = cluster(paused_isvc(), replica())
    ctx, _, _ = make_ctx(client)
    args = parse("rollout", "resume", "chat", "-n", "prod", "--yes")
    real_get = client.get

    async def racing_get(res, name, namespace=None, **kw):  # type: ignore[no-untyped-def]
        obj = await real_get(res, name, namespace, **kw)
        if res is INFERENCE_SERVICES:  # someone edits the service right after the CLI read it
            client.put(INFERENCE_SERVICES, await real_get(res, name, namespace))
        return obj

    client.get = racing_get  # type: ignore[method-assign]
    with pytest.raises(Conflict) as caught:
        await args.handler(ctx, args)
    assert caught.value.code == CONFLICT
    stored = await real_get(INFERENCE_SERVICES, "chat", "prod")
    assert stored["metadata"]["annotations"]["ome.io/rollout-paused"] == "true"


async def test_an_outcome_unknown_error_after_confirmation() -> None:
    client = cluster(canary_isvc(), replica())
    client.fail_patch = errors.ServerTimeout(0, "Timeout", "no answer")
    with pytest.raises(CliError, match="outcome unknown"):
        await run(["rollout", "pause", "chat", "-n", "prod", "--yes"], client)
    client.fail_patch = errors.Forbidden(403, "Forbidden", "nope")
    with pytest.raises(CliError, match="required Kubernetes API request failed; check access and connectivity"):
        await run(["rollout", "pause", "chat", "-n", "prod", "--yes"], client)


async def test_the_prompt_reads_a_real_pseudo_terminal() -> None:
    for answer, accepted in ((b"YES\n", True), (b"y\n", True), (b"nope\n", False)):
        master, slave = pty.openpty()
        stdin = os.fdopen(slave, "r")
        err = io.StringIO()
        try:
            assert stdin.isatty()
            os.write(master, answer)
            terminal = Terminal(stdin, err, lambda: NOW)
            if accepted:
                await asyncio.wait_for(guarded.confirm(terminal, yes=False), 5)
            else:
                with pytest.raises(CliError, match=NOT_CONFIRMED):
                    await asyncio.wait_for(guarded.confirm(terminal, yes=False), 5)
            assert err.getvalue() == "Confirm this exact action? [y/N] "
        finally:
            stdin.close()
            os.close(master)


def test_refusal_messages_keep_their_documented_prefix() -> None:
    assert str(guarded.Refused("target is being deleted")) == "action refused: target is being deleted"
    assert str(guarded.Refused("rollout repin refused: no active pinned run")) == \
        "rollout repin refused: no active pinned run"
    deleting = canary_isvc()
    deleting["metadata"]["deletionTimestamp"] = "2026-09-28T14:00:00Z"
    deleting["metadata"]["resourceVersion"] = "1"
    with pytest.raises(CliError, match="action refused: target is being deleted"):
        guarded.check_service(deleting)
    placed = canary_isvc()
    placed["metadata"]["resourceVersion"] = "1"
    placed["spec"]["placement"] = {"mode": "All"}
    with pytest.raises(CliError, match="placement sources and derived services cannot be mutated"):
        guarded.check_service(placed)


def test_annotation_paths_escape_slashes() -> None:
    assert guarded.annotation_path("ome.io/rollout-paused") == "/metadata/annotations/ome.io~1rollout-paused"
    assert guarded.set_annotation({"metadata": {}}, "a/b", "v") == [
        {"op": "add", "path": "/metadata/annotations", "value": {"a/b": "v"}}]



