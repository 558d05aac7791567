"""Canary progressions on the real control plane with kwok, by the whole manager path (InferenceService,
autoscaler, InferenceReplica, Instance rollout, rollout coordination and rollout canary controllers).

- A canary with a manual step stops with one of two engine Instances on the new revision, and a promote
  annotation finishes it.
- A canary whose analysis fails (a Prometheus-compatible HTTP API served by the test on 127.0.0.1,
  answering the query with a breaching value) rolls back, and the rejected revision stays held: a scale-up
  meanwhile starts its new Instance on the stable revision.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from ome.api.resources import EVENTS, INFERENCE_REPLICAS, INFERENCE_SERVICES, PODS
from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers.rolloutcanary import setup as rolloutcanary
from ome.framework.client import Client
from ome.framework.manager import Manager
from tests.e2e.isvc_support import (
    Catalog,
    catalog,
    condition,
    eventually,
    grouped_rollout_manager,
    manager_running,
)

Obj = dict[str, Any]
pytestmark = pytest.mark.usefixtures("ome_crds")


@pytest.fixture
async def prometheus() -> AsyncIterator[tuple[str, list[str]]]:
    """A Prometheus HTTP API on 127.0.0.1 whose every instant query answers an error rate of 0.5."""
    queries: list[str] = []

    async def query(request: web.Request) -> web.Response:
        queries.append(request.query.get("query", ""))
        return web.json_response({"status": "success", "data": {"resultType": "vector", "result": [
            {"metric": {"pod": "p"}, "value": [1764763200, "0.5"]}]}})

    app = web.Application()
    app.router.add_get("/api/v1/query", query)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}", queries
    await runner.cleanup()


@pytest.fixture
async def manager(client: Client, prometheus: tuple[str, list[str]]) -> AsyncIterator[Manager]:
    config = InferenceServiceConfig.model_validate({
        "rollout": {"defaultReadyTimeout": "15m"},
        "canaryAnalysis": {"bundledPrometheusAddress": prometheus[0], "queryTimeout": "2s"},
    })
    mgr = await grouped_rollout_manager(client, config)
    rolloutcanary.add_to_manager(mgr, lambda: config, policy_enabled=False, max_concurrent_reconciles=2)
    async with manager_running(mgr):
        yield mgr


@pytest.fixture
async def models(client: Client, namespace: str) -> AsyncIterator[Catalog]:
    async with catalog(client, namespace) as found:
        yield found


def service(name: str, cat: Catalog, canary: Obj) -> Obj:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name},
        "spec": {
            "deploymentMode": "OMENative",
            "model": {"name": cat.model},
            "runtime": {"name": cat.runtime},
            "engine": {"minReplicas": 2, "maxReplicas": 2},
            "rollout": {"groups": [{"components": ["engine"], "canary": canary}]},
        },
    }


async def revisions(client: Client, ns: str, name: str) -> tuple[str, str, list[str]]:
    """The engine replica's (update hash, current hash, each Instance's running hash)."""
    st = (await client.get(INFERENCE_REPLICAS, f"{name}-engine", ns)).get("status") or {}

    def short(rev: str | None) -> str:
        return str(rev or "").rsplit("-", 1)[-1]

    rows = [r for r in st.get("instanceStatuses") or [] if r.get("phase") != "Deleting"]
    return short(st.get("updateRevision")), short(st.get("currentRevision")), sorted(
        short(r.get("runningRevision")) + ("" if r.get("phase") == "Ready" else "*") for r in rows
    )


async def settled(client: Client, ns: str, name: str) -> str:
    async def check() -> str | None:
        update, current, running = await revisions(client, ns, name)
        return update if update and update == current and running == [update, update] else None

    return await eventually(check, timeout=120)  # type: ignore[no-any-return]


def engine_status(isvc: Obj) -> Obj:
    return ((isvc.get("status") or {}).get("components") or {}).get("engine") or {}


async def set_image(client: Client, ns: str, name: str, image: str) -> None:
    await client.patch(INFERENCE_SERVICES, name, {"spec": {"engine": {"runner": {"image": image}}}}, ns)


async def test_a_manual_step_stops_and_a_promote_finishes_the_canary(
    client: Client, namespace: str, models: Catalog, manager: Manager
) -> None:
    canary = {"steps": [{"capacity": "50%", "traffic": 50, "pause": {}}, {"capacity": "100%", "traffic": 100}]}
    await client.create(INFERENCE_SERVICES, service("chat", models, canary), namespace)
    old = await settled(client, namespace, "chat")
    isvc = await client.get(INFERENCE_SERVICES, "chat", namespace)
    assert not engine_status(isvc).get("canary")  # the first revision rolls out without a canary

    await set_image(client, namespace, "chat", "vllm/vllm-openai:v0.9.1")

    async def paused() -> Obj | None:
        found = await client.get(INFERENCE_SERVICES, "chat", namespace)
        entry = engine_status(found)
        return found if entry.get("rolloutPhase") == "Paused" else None

    isvc = await eventually(paused, timeout=120)
    entry = engine_status(isvc)
    new = entry["canary"]["canaryRevisionHash"]
    assert new != old and entry["canary"]["stableRevisionHash"] == old
    assert entry["canary"]["currentStep"] == 0 and entry["canary"]["observedTrafficWeight"] == 50
    assert {t["revisionName"]: t["percent"] for t in entry["traffic"]} == {
        f"chat-engine-rev-{new}": 50, f"chat-engine-rev-{old}": 50}
    run = isvc["status"]["rollout"]["activeRun"]
    assert run["targetRevisions"] == [{"component": "engine", "revision": new, "stableRevision": old}]
    assert (condition(isvc, "RolloutPlanReady") or {}).get("reason") == "Pinned"
    assert (condition(isvc, "RolloutPlanDrift") or {}).get("reason") == "InSync"

    # The step holds: one Instance on the new revision, one on the old, for as long as nobody promotes.
    for _ in range(10):
        update, _current, running = await revisions(client, namespace, "chat")
        assert update == new and sorted(running) == sorted([new, old]), running
        await asyncio.sleep(0.5)

    await client.patch(INFERENCE_SERVICES, "chat", {"metadata": {"annotations": {"ome.io/rollout-promote": new}}},
                       namespace)

    async def stable() -> Obj | None:
        found = await client.get(INFERENCE_SERVICES, "chat", namespace)
        _, _, running = await revisions(client, namespace, "chat")
        done = engine_status(found).get("rolloutPhase") == "Stable" and running == [new, new]
        return found if done and not (found["status"].get("rollout") or {}).get("activeRun") else None

    isvc = await eventually(stable, timeout=120)
    assert "ome.io/rollout-promote" not in (isvc["metadata"].get("annotations") or {})
    assert engine_status(isvc)["canary"]["currentStep"] == 2
    assert isvc["status"]["rollout"]["lastRun"]["outcome"] == "Completed"
    assert (condition(isvc, "RolloutPlanReady") or {}).get("reason") == "NoActiveRun"


async def test_a_failing_analysis_rolls_back_and_holds_the_revision(
    client: Client, namespace: str, models: Catalog, manager: Manager, prometheus: tuple[str, list[str]]
) -> None:
    query = 'sum(rate(errors{namespace="{{.Namespace}}", revision_hash="{{.CanaryRevision}}"}[5m]))'
    canary = {"steps": [
        {"capacity": "50%", "traffic": 50, "analysis": {
            "interval": "1s", "failureLimit": 2,
            "metrics": [{"name": "error-rate", "query": query, "operator": "LT", "threshold": "0.01"}]}},
        {"capacity": "100%", "traffic": 100},
    ]}
    await client.create(INFERENCE_SERVICES, service("guarded", models, canary), namespace)
    old = await settled(client, namespace, "guarded")
    await set_image(client, namespace, "guarded", "vllm/vllm-openai:v0.9.1")

    async def rolled_back() -> Obj | None:
        found = await client.get(INFERENCE_SERVICES, "guarded", namespace)
        _, current, running = await revisions(client, namespace, "guarded")
        done = engine_status(found).get("rolloutPhase") == "RolledBack" and running == [old, old]
        return found if done else None

    isvc = await eventually(rolled_back, timeout=120)
    entry = engine_status(isvc)
    new = entry["canary"]["canaryRevisionHash"]
    assert entry["canary"]["rolledBackRevisionHash"] == new != old
    assert entry["canary"]["analysisFailedChecks"] == 2
    results = entry["canary"]["metricResults"]
    assert [(r["name"], r["value"], r["passed"]) for r in results] == [("error-rate", "0.5", False)]
    assert entry["traffic"] == [{"revisionName": f"guarded-engine-rev-{old}", "percent": 100, "tag": "stable"}]
    assert f'sum(rate(errors{{namespace="{namespace}", revision_hash="{new}"}}[5m]))' in prometheus[1]

    async def closed() -> Obj | None:
        events, _ = await client.list(EVENTS, namespace)
        return next((e for e in events if e.get("reason") == "RolloutRunClosed"
                     and (e.get("involvedObject") or {}).get("name") == "guarded"), None)

    event = await eventually(closed, timeout=30)
    run_id = isvc["status"]["rollout"]["lastRun"]
    assert run_id["outcome"] == "RolledBack"
    assert event["message"].endswith("closed: RolledBack") and event["message"].startswith("run guarded-")

    # Held: the spec still asks for the rejected revision, and every Instance stays on the stable one.
    for _ in range(10):
        update, _current, running = await revisions(client, namespace, "guarded")
        assert update == new and running == [old, old], running
        await asyncio.sleep(0.5)
    found = await client.get(INFERENCE_SERVICES, "guarded", namespace)
    assert engine_status(found).get("rolloutPhase") == "RolledBack"
    assert not (found["status"].get("rollout") or {}).get("activeRun")

    # A scale-up while the revision is held: the new Instance starts on the stable revision, and no pod of
    # the rejected revision appears on the way.
    await client.patch(INFERENCE_SERVICES, "guarded", {"spec": {"engine": {"minReplicas": 3, "maxReplicas": 3}}},
                       namespace)
    seen: set[str] = set()

    async def scaled() -> bool:
        pods, _ = await client.list(PODS, namespace)
        seen.update(str(p["metadata"].get("labels", {}).get("ome.io/revision-hash"))
                    for p in pods if p["metadata"]["name"].startswith("guarded-engine-"))
        update, _current, running = await revisions(client, namespace, "guarded")
        return update == new and running == [old, old, old]

    await eventually(scaled, timeout=120)
    assert seen == {old}, seen
    found = await client.get(INFERENCE_SERVICES, "guarded", namespace)
    assert engine_status(found).get("rolloutPhase") == "RolledBack"
