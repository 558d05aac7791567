from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ome.omenative import columnar, revisions, status
from tests.unit.omenative.builders import pod, replica

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def row(index: int, phase: str = "Ready", rev: str = "chat-engine-abc") -> dict:
    return {"index": index, "incarnation": 1, "phase": phase, "runningRevision": rev, "targetRevision": rev}


def compute(
    rows: list[dict],
    pods: list,
    *,
    desired: int = 2,
    update: str = "chat-engine-abc",
    current: str | None = "chat-engine-abc",
    **spec: object,
) -> dict:
    rep = replica(replicas=desired, **spec)
    rep["status"] = {"currentRevision": current} if current else {}
    data = revisions.from_spec(rep["spec"])
    assert data is not None
    return status.compute(
        status.Inputs(
            replica=rep,
            rows=rows,
            pods=pods,
            revisions={"abc": data, "new": data},
            desired=desired,
            update_revision=update,
            now=NOW,
        )
    )


def serving(index: int) -> object:
    return pod(f"chat-engine-{index}-default-0", index=index)


def ready(st: dict) -> tuple[str, str, str]:
    c = next(c for c in st["conditions"] if c["type"] == "Ready")
    return c["status"], c["reason"], c["message"]


@pytest.mark.parametrize(
    ("rows", "pods", "kwargs", "want"),
    [
        (
            [row(0, "Failed"), row(1)],
            [serving(1)],
            {},
            ("False", "InstanceFailed", "At least one Instance has Phase=Failed"),
        ),
        (
            [row(0, rev="chat-engine-abc"), row(1, rev="chat-engine-new")],
            [serving(0), serving(1)],
            {"update": "chat-engine-new", "pacing": {"partition": 1}},
            (
                "True",
                "Staged",
                "Staged at partition 1: 1/2 Instances on chat-engine-new, 1 held on the prior revision",
            ),
        ),
        (
            [row(0), row(1)],
            [serving(0), serving(1)],
            {"update": "chat-engine-new"},
            ("Unknown", "RolloutInProgress", "Rolling out chat-engine-new (0/2 Instances on target)"),
        ),
        ([], [], {"desired": 0}, ("False", "NoReplicas", "InferenceReplica has no desired Instances")),
        (
            [row(0), row(1)],
            [serving(0), serving(1)],
            {},
            ("True", "AllInstancesReady", "2/2 Instances Ready"),
        ),
        (
            [row(0), row(1, "Restarting")],
            [serving(0)],
            {"lifecycle": {"updateStrategy": {"rollingUpdate": {"maxUnavailable": 1}}}},
            ("True", "MinimumAvailable", "1/2 Instances serving (min 1)"),
        ),
        (
            [row(0), row(1, "Restarting")],
            [serving(0)],
            {},
            ("False", "ReplicaCountMismatch", "1/2 Instances serving, need 2 (no rollout in flight)"),
        ),
    ],
    ids=["failed", "staged", "rollout", "no-replicas", "all-ready", "minimum", "mismatch"],
)
def test_ready_reason_is_the_first_row_that_applies(
    rows: list, pods: list, kwargs: dict, want: tuple
) -> None:
    assert ready(compute(rows, pods, **kwargs)) == want


def test_counts_and_revisions() -> None:
    st = compute(
        [row(0), row(1, "Creating")],
        [serving(0), pod("chat-engine-1-default-0", index=1, gate=None, ready=False)],
    )
    assert (st["replicas"], st["readyReplicas"], st["servingReplicas"], st["availableReplicas"]) == (
        2,
        2,
        1,
        2,
    )
    assert (st["updatedReplicas"], st["updatedReadyReplicas"]) == (2, 2)
    assert st["labelSelector"] == "ome.io/inferenceservice=chat,component=engine,ome.io/managed-by=OMENative"


def test_condition_timestamps_survive_an_unchanged_status() -> None:
    first = compute([row(0), row(1)], [serving(0), serving(1)])
    again = status.merge_conditions(
        first["conditions"],
        [("Ready", "True", "AllInstancesReady", "2/2 Instances Ready")],
        datetime(2027, 1, 1, tzinfo=UTC),
    )
    assert again[0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"


def test_other_conditions_default_false_and_flag_unconfigured_timeout() -> None:
    rep = replica()
    data = revisions.from_spec(rep["spec"])
    assert data
    st = status.compute(
        status.Inputs(
            replica=rep,
            rows=[],
            pods=[],
            revisions={"abc": data},
            desired=1,
            update_revision="chat-engine-abc",
            now=NOW,
            ready_timeout_configured=False,
        )
    )
    got = {c["type"]: (c["status"], c["reason"]) for c in st["conditions"]}
    assert got["InstanceReadyTimeoutUnconfigured"] == ("True", "InstanceReadyTimeoutUnconfigured")
    assert got["RolloutStalled"] == ("False", "Progressing")
    assert got["DrainOverdue"] == ("False", "DrainsWithinDeadline")
    assert got["GangSchedulingUnavailable"] == ("False", "GangSchedulingAvailable")


def test_columnar_v2_round_trips_rows_and_is_used_when_smaller() -> None:
    rows = [{**row(i), "podCount": 3, "servingPodCount": 3} for i in range(40)]
    rows[7] = {
        **rows[7],
        "phase": "Restarting",
        "incarnation": 2,
        "operation": {"id": "x", "type": "Restart"},
    }
    encoded = status.instance_rows(rows, use_columnar=True)
    assert encoded["instanceStatusEncoding"] == "ColumnarV2"
    cols = encoded["instanceStatusColumns"]
    assert cols["members"] == "0-39"
    assert cols["phases"] == [
        {"value": "Ready", "indexes": "0-6,8-39"},
        {"value": "Restarting", "indexes": "7"},
    ]
    assert columnar.decode(cols) == [columnar.canonical_row(r) for r in rows]
    assert status.rows_of(encoded) == [columnar.canonical_row(r) for r in rows]


def test_dense_rows_when_columnar_is_not_smaller() -> None:
    assert "instanceStatuses" in status.instance_rows([row(0)], use_columnar=True)


@pytest.mark.parametrize(("indices", "text"), [([0], "0"), ([0, 1, 2, 4], "0-2,4"), ([9, 3, 4], "3-4,9")])
def test_index_sets_are_canonical(indices: list[int], text: str) -> None:
    assert columnar.format_index_set(indices) == text
    assert columnar.parse_index_set(text) == sorted(indices)


def test_ready_timeout_condition_names_the_deadline() -> None:
    rep = replica()
    data = revisions.from_spec(rep["spec"])
    assert data
    base = dict(
        replica=rep, rows=[], pods=[], revisions={"abc": data}, desired=1, update_revision="chat-engine-abc"
    )
    st = status.compute(status.Inputs(**base, now=NOW, ready_timeout=2700.0))  # type: ignore[arg-type]
    messages = {c["type"]: c["message"] for c in st["conditions"]}
    assert messages["InstanceReadyTimeoutUnconfigured"] == "Instance readiness deadline is 45m0s"
    st = status.compute(status.Inputs(**base, now=NOW, ready_timeout_configured=False))  # type: ignore[arg-type]
    messages = {c["type"]: c["message"] for c in st["conditions"]}
    assert messages["InstanceReadyTimeoutUnconfigured"].startswith("no instanceReadyTimeout is set")
