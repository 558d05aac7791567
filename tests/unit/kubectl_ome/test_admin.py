"""`admin doctor` and `admin recommendations` against the docs' examples (golden files)."""

from __future__ import annotations

import argparse
import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ome.api.resources import DEPLOYMENTS, INFERENCE_SERVICES
from ome.framework import errors
from ome.framework.resources import CONFIGMAPS
from ome.kubectl_ome import cmd_admin, doctor_report
from ome.kubectl_ome.failures import CliError, Unmet
from tests.unit.kubectl_ome.fakes import FakeClient, make_ctx

GOLDEN = Path(__file__).parent / "golden"
Obj = dict[str, Any]


class DiscoveryClient(FakeClient):
    """Serves API discovery for the group versions in `served`; 404 for the others."""

    def __init__(self, served: dict[str, list[tuple[str, str, bool]]]) -> None:
        super().__init__()
        self.served = served

    async def _call(self, method: str, path: str, **kwargs: Any) -> Obj:
        if method != "GET":
            return await super()._call(method, path, **kwargs)
        gv = "v1" if path == "/api/v1" else path.removeprefix("/apis/")
        if gv not in self.served:
            raise errors.NotFound(404, "NotFound", "the server could not find the requested resource")
        return {"resources": [{"name": n, "kind": k, "namespaced": ns} for n, k, ns in self.served[gv]]}


def ome_installed() -> DiscoveryClient:
    served: dict[str, list[tuple[str, str, bool]]] = {}
    for api in doctor_report.APIS:
        if api.group_version.startswith(("keda", "gateway", "kueue")) or api.resource == "autoscalerpolicies":
            continue
        served.setdefault(api.group_version, []).append((api.resource, api.kind, api.namespaced))
    client = DiscoveryClient(served)
    client.put(DEPLOYMENTS, {"metadata": {"name": "ome-controller-manager", "namespace": "ome"},
                             "spec": {"template": {"spec": {"containers": [
                                 {"name": "manager", "image": "registry.example.com/ome/manager:v1.3.0"}]}}}})
    return client


def doctor(client: FakeClient, output: str = "table", isvc: str | None = None, namespace: str = "team-a",
           context: str = "prod-east") -> str:
    ctx, _, _ = make_ctx(client, namespace=namespace, context=context)
    return str(asyncio.run(cmd_admin.doctor(ctx, argparse.Namespace(isvc=isvc, ome_namespace="ome", output=output))))


@pytest.fixture(autouse=True)
def release_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cmd_admin, "plugin_version", lambda: "v1.3.0")


def test_doctor_matches_the_docs_example() -> None:
    assert doctor(ome_installed()) == (GOLDEN / "admin_doctor.txt").read_text()
    summary = json.loads(doctor(ome_installed(), "json"))["content"]["summary"]
    assert summary == {"state": "Incomplete", "requiredAPIViolations": 0, "unavailableEvidence": 21}


def test_doctor_without_ome_exits_2_after_the_report() -> None:
    client = DiscoveryClient({"v1": [("pods", "Pod", True), ("events", "Event", True),
                                     ("configmaps", "ConfigMap", True)],
                              "apps/v1": [("deployments", "Deployment", True),
                                          ("controllerrevisions", "ControllerRevision", True)],
                              "autoscaling/v2": [("horizontalpodautoscalers", "HorizontalPodAutoscaler", True)]})
    with pytest.raises(Unmet) as caught:
        doctor(client, namespace="default", context="my-context")
    out = caught.value.output
    assert caught.value.message == "doctor found required API violations"
    assert "Doctor                     Violations" in out
    assert "basemodels                 NotDiscoverableA...   Required NotFound" in out
    assert "ManagerDeployment          Unavailable           ome/ome-controller-manager..." in out
    assert "Manager image candidate                          Unavailable" in out
    assert "Image-tag comparison       Unknown" in out


def test_doctor_isvc_features_and_failed_read() -> None:
    client = ome_installed()
    client.put(INFERENCE_SERVICES, {"metadata": {"name": "chat", "namespace": "team-a"},
                                    "status": {"components": {"engine": {"lifecycle": {"phase": "Ready"}}},
                                               "traffic": {"algorithm": "Default"}}})
    out = doctor(client, isvc="chat")
    assert "SelectedInferenceService   Available             team-a/chat" in out
    assert "Lifecycle                  Present" in out and "Canary                     AbsentOnSelected..." in out
    with pytest.raises(CliError, match="^doctor collection failed$"):
        doctor(client, isvc="missing")


def test_image_candidates_and_comparison() -> None:
    def dep(*images: str) -> Obj:
        return {"spec": {"template": {"spec": {"containers": [{"name": "manager", "image": i} for i in images]}}}}

    assert doctor_report.image_candidate(dep("ome:1.3.2")) == ("v1.3.2", "SelectedStableTag")
    assert doctor_report.image_candidate(dep("ome:latest"))[1] == "NonCanonicalTag"
    assert doctor_report.image_candidate(dep("ome:v1.3.0-rc.1"))[1] == "NonCanonicalTag"
    assert doctor_report.image_candidate(dep("ome:v1.3.0@sha256:ab"))[1] == "DigestOnly"
    assert doctor_report.image_candidate(dep("ome"))[1] == "UnversionedImage"
    assert doctor_report.image_candidate(dep("ome-manager:"))[1] == "Malformed"
    assert doctor_report.image_candidate(dep("a:v1", "b:v1"))[1] == "AmbiguousManagerContainer"
    assert doctor_report.compare("v1.3.0", "v1.1.0") == "OutsideOneMinor"
    assert doctor_report.compare("v1.3.0", "v2.3.0") == "MajorMismatch"


# --- recommendations ------------------------------------------------------------------------------


CYCLE = {
    "timestamp": "2026-10-01T09:27:41Z",
    "mode": "recommend-only",
    "recommendations": [
        {"workload": w, "component": "engine", "instance": i, "policy": p, "reason": r, "outcome": "advisory",
         "advisoryReason": "OMENativeUnavailable"}
        for w, i, p, r in (("team-a/chat", 0, "defragmentation", "Fragmentation"),
                           ("team-a/chat", 1, "defragmentation", "Fragmentation"),
                           ("team-b/summarize", 0, "nodehealth", "NodeMaintenance"))
    ],
}


def alfred(namespace: str = "ome", cycle: Obj | None = None) -> FakeClient:
    client = FakeClient()
    client.put(CONFIGMAPS, {"metadata": {"name": "alfred-config", "namespace": namespace},
                            "data": {"config.yaml": "schemaVersion: 1\nmode: recommend-only\n"}})
    client.put(CONFIGMAPS, {"metadata": {"name": "alfred-recommendations", "namespace": namespace},
                            "data": {"last-cycle.json": json.dumps(cycle or CYCLE)}})
    return client


def recommendations(client: FakeClient, output: str = "table", namespace: str | None = None) -> str:
    ctx, _, _ = make_ctx(client)
    ctx.terminal.clock = lambda: datetime(2026, 10, 1, 9, 30, tzinfo=UTC)
    args = argparse.Namespace(alfred_config_key="config.yaml", alfred_config_name="alfred-config",
                              alfred_namespace=namespace, ome_namespace="ome", output=output)
    return str(asyncio.run(cmd_admin.recommendations(ctx, args)))


def test_recommendations_match_the_docs_examples() -> None:
    assert recommendations(alfred()) == (GOLDEN / "admin_recommendations.txt").read_text()
    assert recommendations(alfred("caretaker"), "wide", "caretaker") == (
        GOLDEN / "admin_recommendations_wide.txt").read_text()
    assert recommendations(FakeClient()) == (GOLDEN / "admin_recommendations_none.txt").read_text()
    first = json.loads(recommendations(alfred(), "json"))["content"]["recommendations"][0]
    assert first == {"workload": "team-a/chat", "component": "engine", "instance": 0, "policy": "defragmentation",
                     "reason": "Fragmentation", "outcome": "advisory", "classification": "Advisory",
                     "executability": "Unverifiable", "advisoryReason": "OMENativeUnavailable"}


def test_recommendations_partial_and_stale() -> None:
    cycle = dict(CYCLE, timestamp="2026-10-01T09:00:00Z",
                 recommendations=[*CYCLE["recommendations"], {"workload": "x/y", "component": "engine",
                                                              "instance": -1, "policy": "p", "reason": "r",
                                                              "outcome": "advisory"}])
    doc = json.loads(recommendations(alfred(cycle=cycle), "json"))
    assert (doc["content"]["state"], doc["content"]["freshness"]) == ("Partial", "Stale")
    assert doc["content"]["issues"] == ["InvalidRows"]
    assert {"code": "StaleEvidence"} in doc["warnings"] and {"code": "PartialData"} in doc["warnings"]
    with pytest.raises(CliError, match="^invalid Alfred namespace or config selection$"):
        recommendations(alfred(), namespace="")
