"""kwok's stages stand in for the kubelet: what a real kubelet restores, a stage must restore too."""

from __future__ import annotations

import re
from typing import Any

import yaml

from ome.devcluster import kwok_stages

Obj = dict[str, Any]


def _stages() -> list[Obj]:
    return [d for d in yaml.safe_load_all(kwok_stages.kwok_config_yaml()) if d]


def _requires(stage: Obj) -> dict[str, tuple[str, tuple[str, ...]]]:
    """selector key -> (operator, values)."""
    exprs = stage["spec"].get("selector", {}).get("matchExpressions") or []
    return {e["key"]: (e["operator"], tuple(e.get("values") or ())) for e in exprs}


def _condition(kind: str) -> str:
    return f'.status.conditions.[] | select( .type == "{kind}" ) | .status'


def _sets_ready_true(stage: Obj) -> bool:
    template = stage["spec"]["next"].get("statusTemplate") or ""
    return re.search(r'if eq \.type "Ready" \}\}\s*status: "True"', template) is not None


def test_a_running_pod_marked_not_ready_by_the_node_controller_is_made_ready_again() -> None:
    """The node lifecycle controller sets only Ready=False on the pods of a node it saw go stale (an
    apiserver restart is enough); a pod without readiness gates whose containers are ready must get
    Ready=True back, or every RawDeployment pod on that node stays unready for good."""
    pod_without_gates = [
        s for s in _stages()
        if s["spec"]["resourceRef"]["kind"] == "Pod"
        and _requires(s).get(".metadata.deletionTimestamp") == ("DoesNotExist", ())
        and _requires(s).get(".spec.readinessGates") == ("DoesNotExist", ())
        and _requires(s).get(".status.phase") == ("In", ("Running",))
        and _requires(s).get(_condition("ContainersReady")) == ("In", ("True",))
        and _requires(s).get(_condition("Ready")) == ("In", ("False",))
    ]  # fmt: skip
    assert len(pod_without_gates) == 1, "no stage restores Ready on a running pod without readiness gates"
    assert _sets_ready_true(pod_without_gates[0])


def test_a_gated_pod_follows_its_serving_gate_not_its_containers() -> None:
    """Gated pods are left to the gate stages: Ready is True only while ome.io/serving is True."""
    by_name = {s["metadata"]["name"]: s for s in _stages()}
    gate = _condition(kwok_stages.SERVING_GATE)
    opened, closed = by_name["pod-serving-gate-open"], by_name["pod-serving-gate-closed"]
    assert _requires(opened)[gate] == ("In", ("True",))
    assert _requires(opened)[_condition("Ready")] == ("In", ("False",))
    assert _sets_ready_true(opened)
    assert _requires(closed)[gate] == ("In", ("False",)) and not _sets_ready_true(closed)
    for stage in _stages():
        if _sets_ready_true(stage) and stage["metadata"]["name"] != "pod-serving-gate-open":
            assert _requires(stage).get(".spec.readinessGates") == ("DoesNotExist", ()), stage["metadata"]["name"]


def test_the_pod_start_stage_waits_as_long_as_the_pods_annotation_says_and_not_at_all_without_it() -> None:
    """bench/bench_rollout.py --pod-start: a pod annotated with a duration is held in Pending that long
    (a model server's start); an unannotated pod starts at once, as every e2e test expects."""
    [start] = [s for s in _stages() if s["metadata"]["name"] == "pod-ready"]
    delay = start["spec"]["delay"]
    assert delay["durationMilliseconds"] == 0
    assert delay["durationFrom"] == {
        "expressionFrom": f'.metadata.annotations["{kwok_stages.POD_START_DELAY}"]'}
