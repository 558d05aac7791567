"""The PodMonitor of a RawDeployment or MultiNode component (pure), as v1.3's Deployment and LWS reconcilers
make it when the Prometheus operator's PodMonitor CRD was served at manager start.

`{isvc}-{component}` in the service's namespace selects the component's pods by OME's labels and scrapes
`/metrics` every 10 seconds on the first container's port named `metrics` (else its first named port, else
`http`). `prometheus.ome.io/extra-endpoints` (on the service or the component: `<port-name>:<path>`
entries, comma-separated) adds endpoints after that one; a malformed entry is skipped with a log line, so a
bad annotation never fails the reconcile (labels-and-annotations.md §Pods).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import structlog

from ome.omenative.podmonitor import POD_MONITORS
from ome.resolution import modes, naming, objects
from ome.resolution.components import ComponentPlan

Obj = dict[str, Any]

__all__ = ["EXTRA_ENDPOINTS", "MODES", "POD_MONITORS", "extra_endpoints", "render"]

EXTRA_ENDPOINTS: Final = "prometheus.ome.io/extra-endpoints"
INTERVAL: Final = "10s"
MODES: Final = (modes.RAW_DEPLOYMENT, modes.MULTINODE)

log = structlog.get_logger(__name__)


def extra_endpoints(annotations: Mapping[str, str]) -> list[Obj]:
    """The endpoints `prometheus.ome.io/extra-endpoints` declares; malformed entries are left out."""
    found: list[Obj] = []
    for entry in (annotations.get(EXTRA_ENDPOINTS) or "").split(","):
        entry = entry.strip()
        if not entry:
            continue
        port, sep, path = entry.partition(":")
        port, path = port.strip(), path.strip()
        if not sep or not port or not path.startswith("/"):
            log.info('ignoring malformed prometheus.ome.io/extra-endpoints entry (want "portName:/path")',
                     entry=entry)
            continue
        found.append({"port": port, "path": path, "interval": INTERVAL})
    return found


def _port_name(pod_spec: Mapping[str, Any] | None) -> str:
    containers = (pod_spec or {}).get("containers") or []
    ports = (containers[0].get("ports") or []) if containers else []
    if any(p.get("name") == "metrics" for p in ports):
        return "metrics"
    return str(ports[0]["name"]) if ports and ports[0].get("name") else "http"


def render(isvc: Mapping[str, Any], plan: ComponentPlan) -> Obj:
    selector = naming.selector_labels(isvc["metadata"]["name"], plan.component)
    multinode = plan.mode == modes.MULTINODE and plan.leader_pod_spec
    pod_spec = plan.leader_pod_spec if multinode else plan.pod_spec
    endpoints = [{"port": _port_name(pod_spec), "path": "/metrics", "interval": INTERVAL}]
    endpoints += extra_endpoints(plan.annotations)
    return {
        "apiVersion": POD_MONITORS.api_version,
        "kind": POD_MONITORS.kind,
        "metadata": objects.metadata(isvc, plan.name, selector),
        "spec": {
            "namespaceSelector": {"matchNames": [isvc["metadata"]["namespace"]]},
            "selector": {"matchLabels": selector},
            "podMetricsEndpoints": endpoints,
        },
    }
