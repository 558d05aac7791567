"""`kubectl ome rollout`: the reports against the docs' examples, and the actions' annotations and
refusals."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from ome.api.resources import INFERENCE_SERVICES
from ome.kubectl_ome import rollout_checks, rollout_report
from ome.kubectl_ome.failures import CliError, Unmet
from tests.unit.kubectl_ome.fakes import TtyInput, make_ctx
from tests.unit.kubectl_ome.fixtures import PINNED_STEPS, canary_isvc, cluster, isvc, parse, replica

GOLDEN = Path(__file__).parent / "golden"


async def run(argv: list[str], client: Any, stdin: Any = None) -> tuple[str, str]:
    ctx, err, _ = make_ctx(client, stdin=stdin)
    args = parse(*argv)
    return await args.handler(ctx, args), err.getvalue()


def test_status_of_a_canary_at_a_manual_gate_matches_the_docs() -> None:
    summary = rollout_report.summarize(canary_isvc())
    assert rollout_report.format_status(summary) == (GOLDEN / "rollout_status_canary.txt").read_text()


def test_status_json_of_an_independent_stable_engine() -> None:
    summary = rollout_report.summarize(isvc())
    content = rollout_report.status_document(summary)
    assert content["summary"] == {"state": "Unknown", "reportedState": "Succeeded", "evidence": "Reported",
                                  "epoch": "Unverifiable", "coordinationReady": "NotApplicable"}
    assert content["components"] == [{"type": "engine", "strategy": "Independent", "phase": "Stable", "traffic": []}]
    assert content["issues"] == [{"code": "EpochUnverifiable"}] and summary.warnings == ["PartialData"]


def explain_isvc() -> dict[str, Any]:
    obj = canary_isvc(phase="Canarying")
    run = obj["status"]["rollout"]["activeRun"]
    run["plan"]["groups"] = [{"source": "Policy", "policyRef": {"name": "guarded", "progression": "canary"},
                              "policyGeneration": 4, "portableDigest": "rp1:aaaaaaaaaaaa",
                              "group": {"components": ["engine"], "canary": {"steps": copy.deepcopy(PINNED_STEPS)}}}]
    obj["status"]["components"]["engine"]["traffic"] = [{"revisionName": "aaaaaaaa", "percent": 80},
                                                        {"revisionName": "bbbbbbbb", "percent": 20}]
    obj["status"]["conditions"] = [
        {"type": "RolloutPlanReady", "status": "True", "reason": "Pinned"},
        {"type": "RolloutPlanDrift", "status": "True", "reason": "SpecNewerThanRun"}]
    return obj


def test_explain_matches_the_docs_example() -> None:
    text = rollout_report.format_explain(rollout_report.explain_rows(explain_isvc()))
    assert text == (GOLDEN / "explain_canary.txt").read_text()


async def test_validate_valid_service_exits_0_and_invalid_exits_2() -> None:
    service = isvc()
    assert rollout_checks.format_validate(rollout_checks.validate_checks(service)) == \
        (GOLDEN / "validate_valid.txt").read_text()
    bad = isvc(rollout={"groups": [{"components": ["engine"], "policyRef": {"name": "Bad_Name",
                                                                              "progression": "canary"}}]})
    with pytest.raises(Unmet) as caught:
        await run(["rollout", "validate", "chat", "-n", "prod"], cluster(bad))
    assert caught.value.message == "rollout validation found invalid configuration"
    assert "ROLLOUT-REFS      -        Invalid" in caught.value.output


def test_history_rows_keep_the_records() -> None:
    obj = canary_isvc()
    obj["status"]["rollout"]["lastRun"] = {"outcome": "Completed", "closedAt": "2026-08-31T17:00:00Z",
                                           "groups": [{"source": "Inline"}]}
    types = [r[0] for r in rollout_checks.history_rows(obj)]
    assert types[:5] == ["WINDOW", "CURR", "ACTIVE", "TARGET", "LAST"] and "PROV-A" in types
    active = rollout_checks.history_rows(obj)[2]
    assert active[:6] == ["ACTIVE", "Active", "-", "0123456789ab", "08-31T18:00", "G:1 T:1"]


async def test_pause_refuses_without_work_and_when_already_paused() -> None:
    with pytest.raises(CliError, match="action refused: no applicable active rollout or lifecycle work was observed"):
        await run(["rollout", "pause", "chat", "-n", "prod", "--yes"], cluster(isvc(), replica()))
    paused = canary_isvc()
    paused["metadata"]["annotations"]["ome.io/rollout-paused"] = "freeze"
    with pytest.raises(CliError, match="action refused: service is already paused; freeze is preserved"):
        await run(["rollout", "pause", "chat", "-n", "prod", "--yes"], cluster(paused, replica()))


async def test_resume_refuses_an_unpaused_service_and_discards_mailboxes_only_with_yes() -> None:
    with pytest.raises(CliError, match="action refused: service has no recognized pause"):
        await run(["rollout", "resume", "chat", "-n", "prod", "--yes"], cluster(canary_isvc(), replica()))
    obj = canary_isvc()
    obj["metadata"]["annotations"].update({"ome.io/rollout-paused": "true", "ome.io/rollout-rollback": "true"})
    client = cluster(obj, replica())
    with pytest.raises(CliError, match="a rollout promote or rollback mailbox is present"):
        await run(["rollout", "resume", "chat", "-n", "prod", "--yes"], client)
    with pytest.raises(CliError, match="--discard-pending-actions requires --yes"):
        await run(["rollout", "resume", "chat", "-n", "prod", "--discard-pending-actions"], client, TtyInput("y\n"))
    await run(["rollout", "resume", "chat", "-n", "prod", "--discard-pending-actions", "--yes"], client)
    stored = await client.get(INFERENCE_SERVICES, "chat", "prod")
    assert stored["metadata"]["annotations"] == {}


async def test_promote_sets_the_canary_hash_at_a_manual_gate_only() -> None:
    client = cluster(canary_isvc(), replica())
    out, err = await run(["rollout", "promote", "chat", "-n", "prod", "--yes", "-o", "json"], client)
    assert json.loads(out)["revisionHash"] == "bbbbbbbb"
    assert "Step              0 of 2 (zero-based)" in err
    stored = await client.get(INFERENCE_SERVICES, "chat", "prod")
    assert stored["metadata"]["annotations"]["ome.io/rollout-promote"] == "bbbbbbbb"
    with pytest.raises(CliError, match="a rollout promote or rollback mailbox is present"):
        await run(["rollout", "promote", "chat", "-n", "prod", "--yes"], client)
    timed = canary_isvc(phase="Canarying", observed=0)
    with pytest.raises(CliError, match="promote requires an active indefinite manual gate"):
        await run(["rollout", "promote", "chat", "-n", "prod", "--yes"], cluster(timed, replica()))


async def test_rollback_sets_true_and_refuses_a_paused_service() -> None:
    client = cluster(canary_isvc(phase="Canarying"), replica())
    await run(["rollout", "rollback", "chat", "-n", "prod", "--yes"], client)
    stored = await client.get(INFERENCE_SERVICES, "chat", "prod")
    assert stored["metadata"]["annotations"]["ome.io/rollout-rollback"] == "true"
    paused = canary_isvc()
    paused["metadata"]["annotations"]["ome.io/rollout-paused"] = "true"
    with pytest.raises(CliError, match="action refused: globally paused canary cannot consume a request"):
        await run(["rollout", "rollback", "chat", "-n", "prod", "--yes"], cluster(paused, replica()))


def drifted() -> dict[str, Any]:
    obj = canary_isvc()
    obj["status"]["conditions"] = [{"type": "RolloutPlanReady", "status": "True", "reason": "Pinned"},
                                   {"type": "RolloutPlanDrift", "status": "True", "reason": "SpecNewerThanRun"}]
    obj["status"]["rollout"]["groups"] = [{"index": 0, "source": "Inline", "observedDigest": "rp1:bbbbbbbbbbbb"}]
    return obj


async def test_repin_server_dry_run_matches_the_docs_example() -> None:
    client = cluster(drifted(), replica())
    out, err = await run(["rollout", "repin", "chat", "-n", "prod", "--dry-run", "server", "--yes"], client)
    assert out == (GOLDEN / "action_result_repin_server.txt").read_text()
    assert "OME NS" not in err  # repin reads only the InferenceService
    stored = await client.get(INFERENCE_SERVICES, "chat", "prod")
    assert "ome.io/rollout-repin" not in stored["metadata"]["annotations"]
    await run(["rollout", "repin", "chat", "-n", "prod", "--yes"], client)
    stored = await client.get(INFERENCE_SERVICES, "chat", "prod")
    assert stored["metadata"]["annotations"]["ome.io/rollout-repin"] == "rp1:1d153db2a5df"


async def test_repin_refusals() -> None:
    with pytest.raises(CliError, match="rollout repin refused: no active pinned run"):
        await run(["rollout", "repin", "chat", "-n", "prod", "--yes"], cluster(isvc()))
    in_sync = drifted()
    in_sync["status"]["conditions"][1] = {"type": "RolloutPlanDrift", "status": "False", "reason": "InSync"}
    with pytest.raises(CliError, match="rollout repin refused: the current plan is already pinned"):
        await run(["rollout", "repin", "chat", "-n", "prod", "--yes"], cluster(in_sync))
    reshaped = drifted()
    reshaped["spec"]["rollout"]["groups"][0]["components"] = ["engine", "decoder"]
    with pytest.raises(CliError, match="rollout repin refused: live and pinned rollout topology differ"):
        await run(["rollout", "repin", "chat", "-n", "prod", "--yes"], cluster(reshaped))


def test_history_matches_the_docs_example() -> None:
    obj = isvc()
    digest = "rp1:cca45ec1fb0f"
    obj["status"]["components"]["engine"] = {"latestRolledoutRevision": "aaaaaaaa",
                                             "latestReadyRevision": "bbbbbbbb",
                                             "previousRolledoutRevision": "dddddddd"}
    obj["status"]["rollout"] = {
        "activeRun": {"runID": "chat-0123456789ab", "openedAt": "2026-08-31T18:00:00Z",
                      "pinnedAt": "2026-08-31T18:30:00Z",
                      "targetRevisions": [{"component": "engine", "revision": "cccccccc"}],
                      "plan": {"groups": [{"source": "Inline", "portableDigest": digest,
                                           "group": {"components": ["engine"]}}]}},
        "lastRun": {"outcome": "Completed", "closedAt": "2026-08-31T17:00:00Z",
                    "groups": [{"source": "Inline", "portableDigest": digest}]},
        "groups": [{"index": 0, "source": "Inline", "observedDigest": digest}],
    }
    assert rollout_checks.format_history(obj) == (GOLDEN / "rollout_history.txt").read_text()
