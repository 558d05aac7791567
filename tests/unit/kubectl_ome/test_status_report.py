"""status: one FIELD/VALUE report of why a service is or is not ready."""

from __future__ import annotations

from typing import Any

from ome.kubectl_ome.effective import RuntimeRead, component_modes
from ome.kubectl_ome.instances import ReplicaRead, component_report
from ome.kubectl_ome.status_report import (
    StatusInputs,
    format_status,
    ready_value,
    status_document,
    status_rows,
)

Obj = dict[str, Any]

ISVC: Obj = {
    "metadata": {"name": "chat", "namespace": "prod", "generation": 2},
    "spec": {"engine": {}, "deploymentMode": "OMENative"},
    "status": {
        "observedGeneration": 2,
        "conditions": [
            {"type": "EngineReady", "status": "False", "reason": "InsufficientAvailable", "message": "0/1"},
            {"type": "Ready", "status": "False", "reason": "InsufficientAvailable", "message": "0/1 serving"},
        ],
        "components": {"engine": {}},
    },
}
FAILED_ROW: Obj = {
    "index": 0,
    "incarnation": 2,
    "phase": "Failed",
    "targetRevision": "chat-engine-abc",
    "podCount": 1,
    "admitted": True,
    "lastFailure": {"podName": "chat-engine-0-default-0", "reason": "Error", "exitCode": 1},
}
REPLICA: Obj = {
    "metadata": {"name": "chat-engine", "generation": 1},
    "spec": {"component": "engine", "parentRef": {"name": "chat"}},
    "status": {
        "observedGeneration": 1,
        "replicas": 1,
        "readyReplicas": 0,
        "updateRevision": "chat-engine-abc",
        "instanceStatuses": [FAILED_ROW],
        "conditions": [
            {"type": "Ready", "status": "False", "reason": "InstanceFailed", "message": "At least one"},
            {"type": "DrainOverdue", "status": "False", "reason": "DrainsWithinDeadline"},
        ],
    },
}
EVENT: Obj = {
    "type": "Warning",
    "reason": "BackOff",
    "count": 21,
    "message": "Back-off restarting failed container",
    "involvedObject": {"kind": "Pod", "name": "chat-engine-0-default-0"},
}


def inputs() -> StatusInputs:
    read = ReplicaRead("engine", "chat-engine", REPLICA)
    return StatusInputs(
        isvc=ISVC,
        modes=component_modes(ISVC, None),
        runtime=RuntimeRead(None, None, "NotConfigured"),
        replicas=[component_report(read)],
        replica_objects={"chat-engine": REPLICA},
        events=[EVENT],
    )


def test_report_explains_a_failed_instance() -> None:
    rows = dict(status_rows(inputs()))
    assert rows["Ready"] == "False / Valid"
    assert rows["Ready reason"] == "InsufficientAvailable"
    assert rows["Generation"] == "2 observed=2"
    assert rows["engine"] == "False / Valid; OMENative (ServiceSpec) reason=InsufficientAvailable"
    assert rows["engine url"] == "-"
    assert rows["engine lifecycle"].startswith("ready=0/1 serving=0 available=0 updated=0 revision=None>")
    assert rows["engine instances"] == "chat-engine evidence=OK encoding=DenseV1 Failed=1"
    assert rows["engine Ready"] == "False InstanceFailed: At least one"
    assert "engine DrainOverdue" not in rows
    assert rows["engine[0]"] == (
        "Failed inc=2 pods=0/0/1 flags=A-F revision=->chat-engine-abc "
        "failure=chat-engine-0-default-0 Error exit=1"
    )
    assert rows["Warning Pod/chat-engine-0-default-0"] == "BackOff x21: Back-off restarting failed container"
    assert rows["Runtime"] == "Unavailable NotConfigured"


def test_table_and_document() -> None:
    out = format_status(status_rows(inputs()))
    assert out.splitlines()[0] == "FIELD                                 VALUE"
    assert "Name                                  chat" in out
    doc = status_document(inputs())
    assert doc["kind"] == "StatusReport"
    assert doc["content"]["components"][0]["replicas"][0]["evidence"] == "OK"


def test_ready_value_validity() -> None:
    assert ready_value([]) == ("NotRecorded / Unavailable", {})
    two = [{"type": "Ready", "status": "True"}, {"type": "Ready", "status": "False"}]
    assert ready_value(two)[0] == "NotRecorded / Invalid"


def test_replica_refs_component_shows_without_a_declared_spec() -> None:
    isvc = {**ISVC, "spec": {"replicaRefs": {"engine": ["pool"]}}}
    read = ReplicaRead("engine", "pool", {**REPLICA, "metadata": {"name": "pool", "generation": 1}})
    inp = StatusInputs(
        isvc, [], RuntimeRead(None, None, "NotConfigured"), [component_report(read)], {"pool": REPLICA}, []
    )
    rows = dict(status_rows(inp))
    assert "; InferenceReplica (ReplicaRefs)" in rows["engine"]
    assert rows["engine instances"].startswith("pool evidence=OK")
