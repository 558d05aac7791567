"""`kubectl ome status` in the documented layout: golden files from the docs' examples, masking."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ome.kubectl_ome import status_report
from ome.kubectl_ome.effective import RuntimeRead
from ome.kubectl_ome.output import mask, redact
from ome.kubectl_ome.status_report import Observation, StatusInputs, check_condition

GOLDEN = Path(__file__).parent / "golden"
COLLECTED = datetime(2026, 9, 15, 12, 0, tzinfo=UTC)
JUST_CREATED: dict[str, Any] = {
    "metadata": {"name": "qwen2-5-7b", "namespace": "demo", "generation": 1, "uid": "u"},
    "spec": {"model": {"name": "qwen2-5-7b"}, "engine": {}},
}


def inputs(isvc: dict[str, Any], **kw: Any) -> StatusInputs:
    defaults: dict[str, Any] = dict(
        runtime=RuntimeRead(None, None, "AutoSelectionNotProbed", selection="Selected"), pods=[],
        pod_observation=Observation(), events=[], event_observation=Observation(), collected_at=COLLECTED,
    )
    defaults.update(kw)
    return StatusInputs(isvc=isvc, **defaults)


def test_the_docs_example_just_after_creation() -> None:
    rows = status_report.status_rows(inputs(JUST_CREATED))
    assert status_report.format_status(rows) == (GOLDEN / "status_table.txt").read_text()


def test_the_docs_wide_example() -> None:
    rows = status_report.status_rows(inputs(JUST_CREATED), wide=True)
    assert status_report.field_table(rows) == (GOLDEN / "status_wide.txt").read_text()


def test_json_ready_section_matches_the_docs() -> None:
    doc = status_report.status_document(inputs(JUST_CREATED))
    assert doc["apiVersion"] == "cli.ome.io/v1alpha1" and doc["kind"] == "StatusReport"
    assert json.loads(json.dumps(doc["content"]["ready"])) == {
        "status": "NotRecorded", "validity": "Unavailable",
        "inspection": {"state": "Complete", "total": 0, "inspected": 0, "warnings": []},
    }


def _pod(name: str, ready: bool, restarts: int, phase: str = "Running", component: str = "engine") -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"component": component}},
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": str(ready)}],
                       "containerStatuses": [{"restartCount": restarts}],
                       "initContainerStatuses": [{"restartCount": 1}]}}


def test_component_rows_count_pods_and_restarts() -> None:
    isvc = {**JUST_CREATED, "status": {"observedGeneration": 1, "conditions": [
        {"type": "Ready", "status": "False", "reason": "EngineNotReady"},
        {"type": "EngineReady", "status": "False", "reason": "Progressing"}]}}
    pods = [_pod("a", True, 2), _pod("b", False, 0, "Pending"), _pod("c", True, 0, component="sidecar")]
    rows = dict(status_report.status_rows(inputs(isvc, pods=pods, pod_observation=Observation(count=3))))
    assert rows["engine"] == "False / Valid; Ready pods=1/2 restarts=4"
    assert rows["Ready"] == "False / Valid" and rows["Ready reason"] == "EngineNotReady"
    assert rows["Issue"] == "UnsupportedComponent"
    wide = dict(status_report.status_rows(inputs(isvc, pods=pods), wide=True))
    assert wide["engine phases"] == "R=1 P=1 F=0 S=0 U=0 deleting=0"


def test_conflicting_ready_conditions_are_invalid() -> None:
    check = check_condition([{"type": "Ready", "status": "True"}, {"type": "Ready", "status": "False"}], "Ready")
    assert (check.value, check.warnings) == ("NotRecorded / Invalid", ["ConflictingReadyConditions"])
    dup = check_condition([{"type": "Ready", "status": "True"}] * 2, "Ready")
    assert (dup.value, dup.warnings) == ("True / Invalid", ["DuplicateReadyConditions"])


def test_reasons_messages_and_events_are_masked() -> None:
    assert mask("pull failed from https://registry.example/x") == "[OMITTED]"
    assert redact("login failed: password=hunter2 for admin") == "login failed: [REDACTED] for admin"
    assert redact("Authorization: Bearer eyJhbGciOi.eyJzdWIiOiIx.sig") == "Authorization: [REDACTED]"
    isvc = {**JUST_CREATED, "status": {"conditions": [
        {"type": "Ready", "status": "False", "reason": "Failed", "message": "token=abcd1234 rejected"}]}}
    events = [{"type": "Warning", "reason": "BackOff", "message": "see http://x/y",
               "involvedObject": {"kind": "InferenceService", "name": "qwen2-5-7b"}}]
    wide = status_report.status_rows(inputs(isvc, events=events), wide=True)
    assert ("Ready message", "[REDACTED] rejected") in wide
    assert ("Warning Inference...", "qwen2-5-7b BackOff") in wide
    assert ("Event message", "[OMITTED]") in wide
    doc = json.dumps(status_report.status_document(inputs(isvc, events=events)))
    assert "abcd1234" not in doc and "http://x/y" not in doc


def test_table_fits_80_columns() -> None:
    isvc = {**JUST_CREATED, "status": {"conditions": [
        {"type": "Ready", "status": "False", "reason": "R" * 200}]}}
    text = status_report.format_status(status_report.status_rows(inputs(isvc)))
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "R" * 53 + "..." in text


def test_traffic_row_is_the_traffic_status_state() -> None:
    accepted = {"type": "BackendPolicyReady", "status": "True", "reason": "AcceptedByGateway",
                "observedGeneration": 1, "lastTransitionTime": "2026-09-15T11:00:00Z"}
    isvc = {**JUST_CREATED, "status": {"traffic": {
        "algorithm": "RoundRobin", "conditions": [accepted],
        "backendPolicyResource": {"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "BackendTrafficPolicy",
                                  "name": "qwen2-5-7b"}}}}
    rows = dict(status_report.status_rows(inputs(isvc), wide=True))
    assert rows["Traffic"] == "Reported / Reported parent status"
    assert (rows["Traffic policy Ready"], rows["Traffic translator"], rows["Traffic algorithm"]) == (
        "True / Current", "envoy-gateway", "RoundRobin")
    stale = {**isvc, "metadata": {**JUST_CREATED["metadata"], "generation": 2}}
    assert dict(status_report.status_rows(inputs(stale)))["Traffic"] == "Partial / Reported parent status"
