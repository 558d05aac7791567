"""instance list: lines, EVIDENCE values and the table, as the kubectl-ome reference shows them."""

from __future__ import annotations

from typing import Any

from ome.kubectl_ome.instances import (
    InstanceLine,
    ReplicaRead,
    component_report,
    format_instances,
    instance_lines,
    report_document,
    revs,
)
from ome.omenative import columnar

Obj = dict[str, Any]

SEED = (
    "COMP     IDX/INC   PHASE   PODS    REVS          AOF   EVIDENCE\n"
    "engine   0/1       Ready   1/1/1   chat...ne-a   A--   OK\n"
)


def replica(
    component: str, rows: list[Obj], generation: int = 1, observed: int | None = 1, **status: Any
) -> Obj:
    st: Obj = {"replicas": len(rows), **status}
    if observed is not None:
        st["observedGeneration"] = observed
    if rows:
        st["instanceStatuses"] = rows
    return {
        "metadata": {"name": f"chat-{component}", "generation": generation},
        "spec": {"component": component, "parentRef": {"name": "chat"}},
        "status": st,
    }


def ready_row(index: int = 0, revision: str = "chat-engine-a") -> Obj:
    return {
        "index": index,
        "incarnation": 1,
        "phase": "Ready",
        "runningRevision": revision,
        "targetRevision": revision,
        "podCount": 1,
        "servingPodCount": 1,
        "availablePodCount": 1,
        "admitted": True,
    }


def table(*reads: ReplicaRead, summary: tuple[str, ...] = ()) -> str:
    return format_instances(instance_lines([component_report(r) for r in reads], summary))


def test_seed_example_exactly() -> None:
    assert table(ReplicaRead("engine", "chat-engine", replica("engine", [ready_row()]))) == SEED


def test_columnar_encoding_reads_the_same() -> None:
    obj = replica("engine", [])
    obj["status"] = {
        "observedGeneration": 1,
        "replicas": 1,
        "instanceStatusEncoding": "ColumnarV2",
        "instanceStatusColumns": columnar.encode([columnar.canonical_row(ready_row())]),
    }
    report = component_report(ReplicaRead("engine", "chat-engine", obj))
    assert report.encoding == "ColumnarV2"
    assert format_instances(instance_lines([report])) == SEED


def test_updating_stale_decoder_example() -> None:
    decoder = {
        "index": 3,
        "incarnation": 8,
        "phase": "Updating",
        "runningRevision": "chat-decoder-old",
        "targetRevision": "chat-decoder-new",
        "podCount": 4,
        "servingPodCount": 1,
        "availablePodCount": 1,
        "admitted": True,
        "operation": {"id": "op-1", "type": "Update", "step": "Surge"},
    }
    out = table(
        ReplicaRead("engine", "chat-engine", replica("engine", [ready_row()])),
        ReplicaRead("decoder", "chat-decoder", replica("decoder", [decoder], generation=4, observed=3)),
    )
    assert out == (
        "COMP      IDX/INC   PHASE      PODS    REVS          AOF   EVIDENCE\n"
        "engine    0/1       Ready      1/1/1   chat...ne-a   A--   OK\n"
        "decoder   3/8       Updating   1/1/4   chat...-new   AO-   STALE:3/4\n"
    )


def test_revs_forms() -> None:
    assert revs({"runningRevision": "a-1", "targetRevision": "a-2"}) == "a-1>a-2"
    assert revs({"targetRevision": "a-2"}) == ">a-2"
    assert revs({"runningRevision": "a-1"}) == "a-1"
    assert revs({}) == "-"
    assert revs({"runningRevision": "chat-engine-7f9c4d2b"}) == "chat...4d2b"


def test_failure_flag_and_rows_in_index_order() -> None:
    failed = {**ready_row(1), "phase": "Failed", "admitted": False, "lastFailure": {"podName": "p"}}
    report = component_report(ReplicaRead("engine", "chat-engine", replica("engine", [failed, ready_row(0)])))
    lines = instance_lines([report])
    assert [line.idx_inc for line in lines] == ["0/1", "1/1"]
    assert lines[1].aof == "--F"


def evidence(obj: Obj) -> str:
    return component_report(ReplicaRead("engine", "chat-engine", obj)).evidence


def test_evidence_values() -> None:
    assert evidence(replica("engine", [ready_row()], observed=None)) == "NOT-OBSERVED"
    assert evidence({"metadata": {"name": "x", "generation": 1}, "spec": {}}) == "NOT-OBSERVED"
    assert evidence(replica("engine", [])) == "EMPTY"
    assert evidence(replica("engine", [], replicas=2)) == "NOT-REPORTED"
    assert evidence(replica("engine", [ready_row(0), ready_row(2)])) == "SPARSE"
    assert evidence(replica("engine", [ready_row(0), ready_row(0)])) == "BAD:DUP-IDX"
    assert evidence(replica("engine", [ready_row()], generation=1, observed=2)) == "BAD:GEN"
    assert evidence(replica("engine", [{**ready_row(), "phase": "Dancing"}])) == "BAD:PHASE"
    assert evidence(replica("engine", [{**ready_row(), "servingPodCount": 3}])) == "BAD:COUNTS"
    assert evidence(replica("engine", [{**ready_row(), "index": -1}])) == "BAD:INSTANCE"
    assert evidence(replica("engine", [{**ready_row(), "runningRevision": "Bad_Rev"}])) == "BAD:REVISION"


def test_undecodable_columns_are_bad() -> None:
    obj = replica("engine", [])
    obj["status"] = {
        "observedGeneration": 1,
        "instanceStatusEncoding": "ColumnarV2",
        "instanceStatusColumns": {"members": "0", "phases": [{"value": "Ready", "indexes": "7"}]},
    }
    assert evidence(obj) == "BAD"


def test_missing_and_duplicate_components_get_a_dash_row() -> None:
    out = table(
        ReplicaRead("engine", "chat-engine", replica("engine", [ready_row()])),
        ReplicaRead("engine", "chat-engine-2", replica("engine", [ready_row()]), duplicate=True),
        ReplicaRead("router", "chat-router", None),
    )
    assert out.splitlines()[2:] == [
        "engine   -         -       -       -             -     BAD:DUP-COMP",
        "router   -         -       -       -             -     UNAVAILABLE",
    ]


def test_rows_limit_and_summary() -> None:
    rows = [ready_row(i) for i in range(3)]
    reports = [component_report(ReplicaRead("engine", "chat-engine", replica("engine", rows)))]
    lines = instance_lines(reports, max_rows=2)
    assert [(line.component, line.evidence) for line in lines] == [
        ("engine", "ROWS-LIMIT"),
        ("summary", "TRUNCATED"),
    ]


def test_no_rows_at_all_shows_the_overall_state() -> None:
    assert instance_lines([]) == [InstanceLine("-", "-", "-", "-", "-", "-", "OK")]
    assert instance_lines([], ["SOURCE-UNAVL"])[0].evidence == "SOURCE-UNAVL"


def test_report_document_keeps_values_in_full() -> None:
    report = component_report(ReplicaRead("engine", "chat-engine", replica("engine", [ready_row()])))
    doc = report_document("chat", "prod", [report], [])
    assert doc["kind"] == "InstanceListReport"
    component = doc["content"]["components"][0]
    assert component["instances"][0]["runningRevision"] == "chat-engine-a"
    assert (component["evidence"], doc["content"]["state"]) == ("OK", "OK")
