"""`placement status|explain|endpoint` against the docs' examples (golden files)."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from ome.api.resources import INFERENCE_SERVICES, TRAFFIC_MAPS, WORKLOAD_CLUSTERS
from ome.framework import errors, label_selector
from ome.kubectl_ome import cmd_placement
from ome.kubectl_ome.failures import CliError
from tests.unit.kubectl_ome.fakes import FakeClient, make_ctx

GOLDEN = Path(__file__).parent / "golden"
Obj = dict[str, Any]


def home(cluster: str) -> Obj:
    return {"cluster": cluster, "phase": "Admitted", "endpoint": f"https://chat.{cluster}.example.com/v1",
            "admittedReplicas": 2, "readyReplicas": 2}


def placed() -> Obj:
    return {"metadata": {"name": "chat", "namespace": "prod", "generation": 4, "uid": "u1"},
            "spec": {"placement": {"mode": "All", "clusterSelector": "pool=gpu"}},
            "status": {"placement": {"phase": "Placed", "candidates": [home("worker-b"), home("worker-a")]}}}


def wlc(name: str, pool: str) -> Obj:
    return {"metadata": {"name": name, "generation": 1, "labels": {"pool": pool}},
            "spec": {"clusterSource": {"kubeConfig": {"secretRef": {"name": "kc", "namespace": "ome"}}}},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Reachable",
                                       "observedGeneration": 1}]}}


def traffic_map() -> Obj:
    def cond(type_: str, status: str, reason: str) -> Obj:
        return {"type": type_, "status": status, "reason": reason, "observedGeneration": 3}

    return {"metadata": {"name": "chat", "namespace": "prod", "generation": 3},
            "spec": {"service": "chat", "observedISVCGeneration": 4, "entries": [
                {"cluster": "worker-b", "endpoint": "https://chat.worker-b.example.com", "weight": 1,
                 "healthy": True},
                {"cluster": "worker-a", "endpoint": "https://chat.worker-a.example.com", "weight": 0,
                 "healthy": True, "drainRefs": ["maintenance-a"],
                 "capacity": {"allocated": 2, "ready": 2, "source": "ControlPlane"}}]},
            "status": {"sourceUID": "u1", "observedTrafficMapGeneration": 3, "conditions": [
                cond("OverrideActive", "True", "OverridesApplied"),
                cond("CapacityFallback", "False", "CapacityPollingDisabled"),
                cond("Routable", "True", "Routable"), cond("Published", "True", "Published")]}}


def run(isvc: Obj, sub: str, output: str = "table", *, extra: list[tuple[Any, Obj]] | None = None,
        client: FakeClient | None = None) -> str:
    client = client or FakeClient()
    client.put(INFERENCE_SERVICES, isvc)
    for res, obj in extra or []:
        client.put(res, obj)
    ctx, _, _ = make_ctx(client)
    args = argparse.Namespace(name="chat", subcommand=sub, output=output)
    return str(asyncio.run(cmd_placement.placement(ctx, args)))


def test_status_matches_the_docs_examples() -> None:
    assert run(placed(), "status") == (GOLDEN / "placement_status.txt").read_text()
    single = {"metadata": {"name": "chat", "namespace": "prod", "generation": 1},
              "spec": {}, "status": {"url": "http://chat.prod.svc.cluster.local:8080"}}
    assert run(single, "status") == (GOLDEN / "placement_status_single.txt").read_text()
    wide = run(placed(), "status", "wide")
    assert ("Home origin          https://chat.worker-a.example.com\n"
            "Admitted replicas    2 (Reported)\n"
            "Ready replicas       2 (Reported)\n"
            "Provenance           NotRecorded; freshness unverifiable\n"
            "Policy inspection    NotRecorded 0/0; truncated=false\n"
            "Group inspection     NotRecorded 0/0; truncated=false\n") in wide


def test_status_flags_unknown_phase_and_bad_selectors() -> None:
    isvc = placed()
    isvc["status"]["placement"]["phase"] = "Racing"
    isvc["spec"]["placement"]["clusterSelector"] = "pool in (gpu"
    out = run(isvc, "status")
    assert "Placement            Unknown (reported)" in out
    assert "Issue                PlacementPhase: UnknownValue (1)" in out
    assert "Selectors            InvalidSelector" in out


def test_explain_matches_the_docs_example() -> None:
    clusters = [(WORKLOAD_CLUSTERS, wlc("worker-a", "gpu")), (WORKLOAD_CLUSTERS, wlc("worker-b", "gpu")),
                (WORKLOAD_CLUSTERS, wlc("worker-c", "cpu"))]
    assert run(placed(), "explain", extra=clusters) == (GOLDEN / "placement_explain.txt").read_text()
    wide = run(placed(), "explain", "wide", extra=clusters)
    assert ("Condition inspect    Validated 1/1; truncated=false\n"
            "Reported home        True\n"
            "Connection source    KubeConfigReferenceNotResolved\n"
            "Ready reason         OtherReportedReason\n") in wide
    assert wide.count("Reported home        False") == 1


def test_explain_without_the_workloadcluster_api() -> None:
    client = FakeClient()
    client.fail_list[WORKLOAD_CLUSTERS.plural] = errors.NotFound(404, "NotFound", "no")
    out = run(placed(), "explain", client=client)
    assert "Fleet state          Unavailable\nFleet reason         UnsupportedAPI\n" in out


def test_endpoint_matches_the_docs_example() -> None:
    assert run(placed(), "endpoint", extra=[(TRAFFIC_MAPS, traffic_map())]) == (
        GOLDEN / "placement_endpoint.txt").read_text()
    wide = run(placed(), "endpoint", "wide", extra=[(TRAFFIC_MAPS, traffic_map())])
    assert ("Probe policy         NotRecorded\n"
            "Capacity proven...   ControlPlane\n"
            "Allocated count      2 (Reported)\n"
            "Ready count          2 (Reported)\n"
            "Probe freshness      Unverifiable\n"
            "Drain refs           maintenance-a\n"
            "Probe gate           NotRecorded\n"
            "Home cap fallback    NotRecorded\n") in wide
    missing = run(placed(), "endpoint")
    assert "TrafficMap state     Unavailable\nTrafficMap reason    NotFound\n" in missing
    foreign = traffic_map()
    foreign["status"]["sourceUID"] = "other"
    assert "TrafficMap reason    OwnershipUnbound" in run(placed(), "endpoint", extra=[(TRAFFIC_MAPS, foreign)])


def test_json_report_and_read_failure() -> None:
    doc = json.loads(run(placed(), "status", "json"))
    assert doc["kind"] == "PlacementStatusReport" and doc["warnings"] == []
    assert {"field": "Home origin", "value": "https://chat.worker-a.example.com"} in doc["content"]["rows"]
    client = FakeClient()
    ctx, _, _ = make_ctx(client)
    with pytest.raises(CliError, match="^InferenceService read unavailable: NotFound$"):
        asyncio.run(cmd_placement.placement(ctx, argparse.Namespace(name="chat", subcommand="status",
                                                                    output="table")))


def test_label_selector() -> None:
    reqs = label_selector.parse("pool=gpu,tier in (a, b),!spot,zone")
    assert label_selector.matches(reqs, {"pool": "gpu", "tier": "b", "zone": "x"})
    assert not label_selector.matches(reqs, {"pool": "gpu", "tier": "b", "zone": "x", "spot": ""})
    assert label_selector.matches(label_selector.parse("pool!=cpu,x notin (1)"), {"pool": "gpu"})
    with pytest.raises(label_selector.SelectorError):
        label_selector.parse("pool=gpu,,x")
