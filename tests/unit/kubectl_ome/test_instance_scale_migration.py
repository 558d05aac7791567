"""`instance status|retry-blocks|release-held`, `autoscale status`, `scale` and `migration`: layouts
against the docs' examples, and what each action writes or refuses."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ome.api.resources import INFERENCE_REPLICAS, INFERENCE_SERVICES
from ome.kubectl_ome import cmd_instance, cmd_migration, cmd_scale
from ome.kubectl_ome.failures import CONFLICT, CliError, Conflict
from ome.kubectl_ome.table import format_table
from tests.unit.kubectl_ome.fakes import make_ctx
from tests.unit.kubectl_ome.fixtures import cluster, isvc, parse, pod, replica

GOLDEN = Path(__file__).parent / "golden"
HELD = {"targetRevision": "chat-engine-7f9c4d2b", "state": "Held", "attemptsStarted": 3,
        "reason": "ImagePullBackOff", "lastFailureAt": "2026-09-14T20:52:31Z"}


async def run(argv: list[str], client: Any) -> tuple[str, str]:
    ctx, err, _ = make_ctx(client)
    args = parse(*argv)
    return await args.handler(ctx, args), err.getvalue()


def test_retry_blocks_match_the_docs_example() -> None:
    ir = replica(retryBlocks=[HELD])
    text = format_table(cmd_instance.RETRY_HEADERS, cmd_instance.retry_rows("engine", ir, []))
    assert text == (GOLDEN / "retry_blocks.txt").read_text()
    stale = replica(retryBlocks=[HELD], observedGeneration=1)
    rows = cmd_instance.retry_rows("engine", stale, [])
    assert rows[0][5] == "NO" and rows[-1][6] == "STATUS_STALE"
    assert cmd_instance.retry_rows("engine", replica(), []) == [["engine", "EMPTY", "-", "-", "-", "-", "-"]]


async def test_release_held_client_dry_run_matches_the_docs_and_sends_nothing() -> None:
    client = cluster(isvc(), replica(retryBlocks=[HELD]))
    out, err = await run(["instance", "release-held", "chat", "--component", "engine", "--revision",
                          "chat-engine-7f9c4d2b", "-n", "prod", "--dry-run", "client", "--yes"], client)
    assert out == (GOLDEN / "action_result_release_client.txt").read_text()
    assert err.startswith("HELD RELEASE PREVIEW\n") and client.patches == []


async def test_release_held_by_hash_sets_the_full_name_on_the_replica() -> None:
    client = cluster(isvc(), replica(retryBlocks=[HELD]))
    out, _ = await run(["instance", "release-held", "chat", "--component", "engine", "--revision", "7f9c4d2b",
                        "-n", "prod", "--yes", "-o", "json"], client)
    result = json.loads(out)
    assert result["target"]["kind"] == "InferenceReplica" and result["target"]["uid"] == "uid-ir"
    stored = await client.get(INFERENCE_REPLICAS, "chat-engine", "prod")
    assert stored["metadata"]["annotations"]["ome.io/release-held-revision"] == "chat-engine-7f9c4d2b"
    with pytest.raises(CliError, match="a release-held mailbox is already present"):
        await run(["instance", "release-held", "chat", "--component", "engine", "--revision", "7f9c4d2b",
                   "-n", "prod", "--yes"], client)


async def test_release_held_refuses_a_block_that_is_not_held() -> None:
    backoff = {**HELD, "state": "Backoff"}
    with pytest.raises(CliError, match="action refused: no exact current valid Held retry block is releasable"):
        await run(["instance", "release-held", "chat", "--component", "engine", "--revision", "7f9c4d2b",
                   "-n", "prod", "--yes"], cluster(isvc(), replica(retryBlocks=[backoff])))


def test_instance_status_rows_of_a_failed_instance() -> None:
    row = {"index": 0, "incarnation": 1, "phase": "Failed", "targetRevision": "chat-engine-6c4f8b1d",
           "podCount": 1, "admitted": True,
           "lastFailure": {"podName": "chat-engine-0-default-0", "containerName": "ome-container",
                           "reason": "Error", "exitCode": 1, "time": "2026-09-14T20:52:31Z"}}
    from ome.kubectl_ome import instances
    from ome.kubectl_ome.effective import ComponentMode

    ir = replica(rows=[row])
    report = instances.component_report(instances.ReplicaRead("engine", "chat-engine", ir))
    event = {"reason": "BackOff", "count": 21, "involvedObject": {"name": "chat-engine-0-default-0"}}
    rows = dict(cmd_instance.instance_rows("engine", 0, ComponentMode("engine", "OMENative", "ServiceSpec"),
                                           report, ir, [pod()], [event]))
    assert rows["state"] == "Reported engine[0] evidence=Reported"
    assert rows["instance"] == "chat-engine inc=1 phase=Failed admitted=true"
    assert rows["revisions"] == "running=- target=chat-engine-6c4f8b1d"
    assert rows["persisted"] == "pods=1 serving=0 available=0"
    assert rows["fail time"] == "2026-09-14T20:52:31Z"
    assert rows["event"] == "Pod/chat-engine-0-default-0 reason=BackOff count=21"
    assert rows["pod"].startswith("chat-engine-0-default-0 default/Running ready=True serving=False")


def scaled_isvc() -> dict[str, Any]:
    obj = isvc()
    obj["status"]["components"]["engine"].update({
        "autoscaler": {"class": "HPA", "managedBy": "ome", "specSource": "default", "currentReplicas": 2,
                       "desiredReplicas": 3, "lastScaleTime": "2026-08-31T18:20:00Z",
                       "conditions": [{"type": "AbleToScale", "status": "True"},
                                      {"type": "ScalingActive", "status": "True"}]},
        "scaleTargetRef": {"apiVersion": "ome.io/v1beta1", "kind": "InferenceReplica", "name": "chat-engine"}})
    return obj


def test_autoscale_status_matches_the_docs_example() -> None:
    state, rows, _ = cmd_scale.autoscale_table(scaled_isvc())
    assert state == "Reported"
    assert format_table(("FIELD", "SERVICE", "ENGINE", "DECODER", "ROUTER"), rows) == \
        (GOLDEN / "autoscale_status.txt").read_text()
    zero = scaled_isvc()
    zero["status"]["components"]["engine"]["autoscaler"]["currentReplicas"] = 0
    state, rows, _ = cmd_scale.autoscale_table(zero)
    assert state == "Partial" and ["ISSUES", "-", "ReplicaAmbig", "-", "-"] in rows


async def test_scale_requires_override_and_yes_and_writes_the_scale_subresource() -> None:
    client = cluster(isvc(), replica())
    with pytest.raises(CliError, match="requires --override-autoscaler --yes"):
        await run(["scale", "chat", "-n", "prod", "--component", "engine", "--replicas", "3", "--yes"], client)
    with pytest.raises(CliError, match="invalid scale arguments"):
        await run(["scale", "chat", "-n", "prod", "--component", "engine", "--replicas", "03",
                   "--override-autoscaler", "--yes"], client)
    with pytest.raises(CliError, match="within verified bounds"):
        await run(["scale", "chat", "-n", "prod", "--component", "engine", "--replicas", "9",
                   "--override-autoscaler", "--yes"], client)
    out, err = await run(["scale", "chat", "-n", "prod", "--component", "engine", "--replicas", "3",
                          "--override-autoscaler", "--yes"], client)
    assert "/scale spec.replicas    1 -> 3" in err and "applied            Yes" in out
    path, ops, _ = client.patches[-1]
    assert path.endswith("/inferencereplicas/chat-engine/scale")
    assert ops[-1] == {"op": "replace", "path": "/spec/replicas", "value": 3}
    assert (await client.get(INFERENCE_REPLICAS, "chat-engine", "prod"))["spec"]["replicas"] == 3


def test_migration_status_layouts_match_the_docs() -> None:
    rec = {"requestUUID": "7c9e6679-7425-40de-944b-e07fc1f90ae7", "phase": "SurgePending",
           "message": "surge allocated; waiting for surge pods", "sourceInstance": 3}
    text = format_table(("SUBJECT/COMP", "STATUS", "DETAIL"),
                        cmd_migration.status_rows(cmd_migration.records([("engine", replica(migrations=[rec]))], None)))
    assert text == (GOLDEN / "migration_status.txt").read_text()
    empty = format_table(("SUBJECT/COMP", "STATUS", "DETAIL"), cmd_migration.status_rows([]))
    assert empty == (GOLDEN / "migration_empty.txt").read_text()


async def test_migration_start_writes_the_documented_annotation() -> None:
    client = cluster(isvc(), replica(), [pod(0, "node-a")])
    out, err = await run(["migration", "start", "chat", "-n", "prod", "--component", "engine", "--instance", "0",
                          "--hint-node", "node-c,node-d", "--reason", "node-a maintenance", "--yes", "-o", "json"],
                         client)
    request_id = json.loads(out)["requestID"]
    stored = await client.get(INFERENCE_SERVICES, "chat", "prod")
    payload = json.loads(stored["metadata"]["annotations"][f"ome.io/migration-request-v1-{request_id}"])
    assert payload == {"schemaVersion": "v1", "component": "engine", "instance": 0, "from_node": "node-a",
                       "hint_target_nodes": ["node-c", "node-d"], "reason": "node-a maintenance",
                       "requested_at": "2026-09-28T14:05:00Z", "requested_by": "kubectl-ome"}
    assert "Hint nodes         node-c, node-d" in err


async def test_migration_start_refusals_and_state_conflicts_exit_3() -> None:
    client = cluster(isvc(), replica(), [pod(0, "node-a")])
    with pytest.raises(CliError, match="instance must be a canonical integer"):
        await run(["migration", "start", "chat", "-n", "prod", "--component", "engine", "--instance", "01"], client)
    with pytest.raises(CliError, match="invalid migration node hints"):
        await run(["migration", "start", "chat", "-n", "prod", "--component", "engine", "--instance", "0",
                   "--hint-node", "a,a"], client)
    with pytest.raises(Conflict) as caught:  # Instance 5 doesn't exist: a state refusal
        await run(["migration", "start", "chat", "-n", "prod", "--component", "engine", "--instance", "5",
                   "--yes"], client)
    assert caught.value.code == CONFLICT
    assert str(caught.value) == "migration precondition conflicts or is stale; inspect migration status and retry explicitly"


def test_parent_generation_evidence() -> None:
    from ome.kubectl_ome import instances

    def evidence(stamp: str | None, projected: bool = True) -> str:
        ir = replica()
        if stamp is None:
            del ir["metadata"]["annotations"]["ome.io/parent-generation"]
        else:
            ir["metadata"]["annotations"]["ome.io/parent-generation"] = stamp
        read = instances.ReplicaRead("engine", "chat-engine", ir, projected=projected)
        return instances.component_report(read, parent_generation=7).evidence

    assert evidence("7") == "OK"
    assert evidence("6") == "STALE:PARENT"
    assert evidence(None) == "PARENT-UNAVL"
    assert evidence("8") == "BAD:PARENT" and evidence("x") == "BAD:PARENT"
    assert evidence(None, projected=False) == "OK"  # a replica spec.replicaRefs names carries no stamp


def test_live_scaler_rows_from_an_hpa() -> None:
    hpa = {"metadata": {"generation": 3}, "status": {
        "observedGeneration": 3, "currentReplicas": 2, "desiredReplicas": 3,
        "conditions": [{"type": "AbleToScale", "status": "True"}, {"type": "ScalingLimited", "status": "False"}]}}
    assert cmd_scale.scaler_rows("HPA", hpa) == {
        "SCALER-KIND": "HPA", "SCALER-EVIDENCE": "Reported", "SCALER-GEN": "Matched", "SCALER-CURRENT": "2",
        "SCALER-DESIRED": "3", "SCALER-ABLE": "True", "SCALER-LIMITED": "False"}
    hpa["status"]["observedGeneration"] = 2
    assert cmd_scale.scaler_rows("HPA", hpa)["SCALER-EVIDENCE"] == "Stale"
    keda = {"metadata": {}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert cmd_scale.scaler_rows("KEDA", keda) == {"SCALER-KIND": "KEDA", "SCALER-EVIDENCE": "Reported",
                                                   "SCALER-GEN": "Unproven", "SCALER-READY": "True"}


def test_autoscale_explain_matches_the_docs_example() -> None:
    from ome.kubectl_ome import autoscale_explain
    from ome.kubectl_ome.effective import ComponentMode

    raw = isvc()
    raw["spec"]["runtime"] = {"name": "vllm"}
    raw["status"]["components"]["engine"] = {
        "autoscaler": {"class": "HPA", "specSource": "default", "managedBy": "ome", "currentReplicas": 2,
                       "desiredReplicas": 2, "conditions": [{"type": "AbleToScale", "status": "True"}]},
        "scaleTargetRef": {"kind": "Deployment", "name": "chat-engine"}}
    modes = [ComponentMode("engine", "RawDeployment", "Default")]
    state, columns, service = autoscale_explain.explain(raw, None, modes)
    assert autoscale_explain.format_explain(columns, service, state) == \
        (GOLDEN / "autoscale_explain.txt").read_text()
    # On OMENative the expected target is the InferenceReplica; a Deployment report is a mismatch.
    state, columns, _ = autoscale_explain.explain(raw, None, [ComponentMode("engine", "OMENative", "ServiceSpec")])
    assert state == "Mismatch" and columns[0].values["WHY"] == "target-mismatch"
    assert columns[0].values["EXPECTED-TARGET"] == "InferenceReplica/chat-engine"
    raw["status"].pop("observedGeneration")
    state, columns, _ = autoscale_explain.explain(raw, None, modes)
    assert (state, columns[0].values["WHY"]) == ("Partial", "status-unobserved")


def test_instance_status_matches_the_docs_example() -> None:
    from ome.kubectl_ome import instances
    from ome.kubectl_ome.effective import ComponentMode
    from ome.kubectl_ome.output import field_table

    row = {"index": 0, "incarnation": 1, "phase": "Failed", "targetRevision": "chat-engine-6c4f8b1d",
           "podCount": 1, "admitted": True,
           "lastFailure": {"podName": "chat-engine-0-default-0", "containerName": "ome-container",
                           "reason": "Error", "exitCode": 1, "time": "2026-09-14T20:52:31Z"}}
    ir = replica(rows=[row])
    report = instances.component_report(instances.ReplicaRead("engine", "chat-engine", ir))
    failing = pod()
    failing["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}],
                         "containerStatuses": [{"restartCount": 21}]}
    event = {"reason": "BackOff", "count": 21, "involvedObject": {"name": "chat-engine-0-default-0"}}
    rows = cmd_instance.instance_rows("engine", 0, ComponentMode("engine", "OMENative", "ServiceSpec"),
                                      report, ir, [failing], [event])
    assert field_table(rows, cmd_instance.STATUS_WIDTH) == (GOLDEN / "instance_status.txt").read_text()


async def test_migration_start_lookup_sends_nothing() -> None:
    client = cluster(isvc(), replica(), [pod(0, "node-a")])
    argv = ["migration", "start", "chat", "-n", "prod", "--component", "engine", "--instance", "0", "--reason", "r"]
    out, _ = await run([*argv, "--yes", "-o", "json"], client)
    request_id = json.loads(out)["requestID"]
    sent = len(client.patches)
    out, err = await run([*argv, "--request-id", request_id], client)  # no --yes needed: nothing is sent
    assert len(client.patches) == sent and re.search(r"\nLookup only +true\n", err)
    assert "Identical retained mailbox observed; no replay sent" in out and "applied         No" in out
    other = "3f2a9c1e-7b4d-4c8e-9a6f-2d1b5e8c4a70"
    with pytest.raises(Conflict):
        await run([*argv, "--request-id", other], client)


async def test_scale_refuses_a_replica_without_a_count() -> None:
    unset = replica()
    unset["spec"].pop("replicas", None)
    client = cluster(isvc(), unset)
    with pytest.raises(CliError, match="manual scale requires complete current selected replica and Scale evidence"):
        await run(["scale", "chat", "-n", "prod", "--component", "engine", "--replicas", "3",
                   "--override-autoscaler", "--yes"], client)
    assert not client.patches
