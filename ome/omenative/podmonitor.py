"""The PodMonitor of an InferenceReplica (pure), made only when the Prometheus operator's PodMonitor CRD
was served when the manager started.

One per component, `{isvc}-{component}`, selecting every pod of the component, workers included. It
scrapes `/metrics` on the first container's port named `metrics`; without one, on that container's first
port when it has a name, else on a port named `http`. The operator's `ome.podMonitor` settings add
labels to it and relabelings to its endpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ome.framework import resources
from ome.omenative import instance_names as names
from ome.omenative.revisions import RevisionData, owner_reference
from ome.omenative.settings import InferenceReplicaSettings

Obj = dict[str, Any]

POD_MONITORS: Final = resources.register(
    resources.Resource("monitoring.coreos.com", "v1", "PodMonitor", "podmonitors", True)
)
METRICS_PATH: Final = "/metrics"


def name(replica: Mapping[str, Any]) -> str:
    return names.truncate(names.component_name(names.base_name(replica), replica["spec"]["component"]))


def port_name(data: RevisionData | None) -> str:
    runner = data.runners[0] if data and data.runners else None
    containers = ((runner.template.get("spec") or {}).get("containers") or []) if runner else []
    found = [p for p in (containers[0].get("ports") or []) if p.get("name")] if containers else []
    named = next((p["name"] for p in found if p["name"] == "metrics"), None)
    return named or (found[0]["name"] if found else "http")


def pod_monitor(
    replica: Mapping[str, Any], data: RevisionData | None, settings: InferenceReplicaSettings
) -> Obj:
    base, component = names.base_name(replica), replica["spec"]["component"]
    selector = names.selector_labels(base, component)
    endpoint: Obj = {"port": port_name(data), "path": METRICS_PATH}
    if settings.pod_monitor_relabelings:
        endpoint["relabelings"] = [dict(r) for r in settings.pod_monitor_relabelings]
    if settings.pod_monitor_metric_relabelings:
        endpoint["metricRelabelings"] = [dict(r) for r in settings.pod_monitor_metric_relabelings]
    return {
        "apiVersion": POD_MONITORS.api_version,
        "kind": POD_MONITORS.kind,
        "metadata": {
            "name": name(replica),
            "namespace": replica["metadata"]["namespace"],
            "labels": {**settings.pod_monitor_labels, **selector},
            "ownerReferences": [owner_reference(replica)],
        },
        "spec": {"selector": {"matchLabels": selector}, "podMetricsEndpoints": [endpoint]},
    }
