from __future__ import annotations

from ome.controllers import drift
from ome.omenative import podmonitor, revisions
from ome.omenative.settings import InferenceReplicaSettings
from tests.unit.omenative.builders import replica, template


def data_with_ports(*ports: dict) -> revisions.RevisionData:
    tpl = template()
    tpl["spec"]["containers"][0]["ports"] = list(ports)
    tpl["spec"]["containers"].append({"name": "sidecar", "ports": [{"name": "metrics", "containerPort": 1}]})
    return revisions.from_json({"runners": [{"name": "default", "size": 1, "template": tpl}]})


def test_port_is_metrics_then_the_first_named_port_then_http() -> None:
    assert podmonitor.port_name(
        data_with_ports({"containerPort": 1}, {"name": "metrics", "containerPort": 2})
    ) == ("metrics")
    assert podmonitor.port_name(data_with_ports({"name": "api", "containerPort": 8000})) == "api"
    assert (
        podmonitor.port_name(data_with_ports({"containerPort": 8000})) == "http"
    )  # the sidecar's is not read


def test_one_pod_monitor_per_component_scrapes_every_pod() -> None:
    body = replica(workers=2)
    data = revisions.from_spec(body["spec"])
    settings = InferenceReplicaSettings(
        pod_monitor_labels={"release": "prometheus"},
        pod_monitor_relabelings=(
            {"sourceLabels": ["__meta_kubernetes_pod_label_component"], "targetLabel": "component"},
        ),
    )
    pm = podmonitor.pod_monitor(body, data, settings)
    selector = {"ome.io/inferenceservice": "chat", "component": "engine", "ome.io/managed-by": "OMENative"}
    assert pm["metadata"]["name"] == "chat-engine"
    assert pm["metadata"]["labels"] == {"release": "prometheus", **selector}
    assert pm["metadata"]["ownerReferences"][0]["kind"] == "InferenceReplica"
    assert pm["spec"]["selector"] == {"matchLabels": selector}  # no runner label: workers too
    (endpoint,) = pm["spec"]["podMetricsEndpoints"]
    assert endpoint["path"] == "/metrics" and endpoint["relabelings"][0]["targetLabel"] == "component"
    assert "metricRelabelings" not in endpoint


def test_drift_only_in_what_we_own() -> None:
    body = replica()
    pm = podmonitor.pod_monitor(body, revisions.from_spec(body["spec"]), InferenceReplicaSettings())
    seen = {**pm, "metadata": {**pm["metadata"], "labels": {**pm["metadata"]["labels"], "extra": "x"}}}
    seen["spec"] = {
        **pm["spec"],
        "podMetricsEndpoints": [{**pm["spec"]["podMetricsEndpoints"][0], "interval": "30s"}],
    }
    assert not drift.drifted(pm, seen)  # the controller's one drift check (ome/controllers/drift.py)
    seen["spec"]["podMetricsEndpoints"] = [{"port": "other", "path": "/metrics"}]
    assert drift.drifted(pm, seen)
