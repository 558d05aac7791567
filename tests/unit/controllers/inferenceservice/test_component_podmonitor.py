"""A PodMonitor for RawDeployment and MultiNode components (coverage row E12).

labels-and-annotations.md: "`prometheus.ome.io/extra-endpoints` | `<port-name>:<path>` entries, separated by
commas | Read by the controller | Adds endpoints, scraped every 10 seconds, to the PodMonitor of a
`RawDeployment` or `MultiNode` ... component. OME skips malformed entries."
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ome.api import resources as r
from ome.framework.reconcile import Request
from ome.omenative.podmonitor import POD_MONITORS
from ome.resolution import component_podmonitor
from tests.unit.controllers.inferenceservice.fakes import FakeRecorder, FakeWorld, make_reconciler
from tests.unit.resolution import builders

REQ = Request("demo", "llama")


def _model() -> dict[str, Any]:
    obj = builders.model()
    obj["spec"]["modelFramework"] = {"name": "transformers"}
    return obj


async def _reconcile(world: FakeWorld, *, served: bool) -> None:
    reconciler = make_reconciler(world, FakeRecorder(), now=datetime(2026, 1, 1, tzinfo=UTC),
                                 pod_monitor_served=served)
    await reconciler.reconcile(REQ)


async def test_raw_deployment_component_gets_a_pod_monitor_with_the_extra_endpoints() -> None:
    world = FakeWorld()
    world.put(r.CLUSTER_BASE_MODELS, _model())
    world.put(r.CLUSTER_SERVING_RUNTIMES, builders.runtime())
    world.put(r.INFERENCE_SERVICES, builders.isvc(annotations={
        "prometheus.ome.io/extra-endpoints": "http:/engine_metrics, bad-entry, :/x, grpc:nopath"}))
    await _reconcile(world, served=True)
    monitor = world.get_or_none(POD_MONITORS, "llama-engine", "demo")
    assert monitor is not None
    assert monitor["spec"]["selector"]["matchLabels"] == {
        "ome.io/inferenceservice": "llama", "component": "engine"}
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["demo"]}
    endpoints = monitor["spec"]["podMetricsEndpoints"]
    assert endpoints[0]["path"] == "/metrics" and endpoints[0]["interval"] == "10s"
    assert endpoints[1:] == [{"port": "http", "path": "/engine_metrics", "interval": "10s"}]
    assert monitor["metadata"]["ownerReferences"][0]["kind"] == "InferenceService"
    world.writes.clear()
    await _reconcile(world, served=True)  # settled: no PodMonitor write
    assert [w for w in world.writes if "PodMonitor" in str(w)] == []


async def test_no_pod_monitor_without_the_crd() -> None:
    world = FakeWorld()
    world.put(r.CLUSTER_BASE_MODELS, _model())
    world.put(r.CLUSTER_SERVING_RUNTIMES, builders.runtime())
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    await _reconcile(world, served=False)
    assert world.get_or_none(POD_MONITORS, "llama-engine", "demo") is None
    assert world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo") is not None


def test_port_prefers_metrics_then_the_first_named_port() -> None:
    assert component_podmonitor._port_name(
        {"containers": [{"ports": [{"name": "http"}, {"name": "metrics"}]}]}) == "metrics"
    assert component_podmonitor._port_name({"containers": [{"ports": [{"name": "grpc"}]}]}) == "grpc"
    assert component_podmonitor._port_name({"containers": [{"ports": [{"containerPort": 80}]}]}) == "http"
