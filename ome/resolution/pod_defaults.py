"""Defaults OME fills into serving pods where neither the runtime nor the InferenceService sets them (pure).

- A TCP readiness probe on `ome-container`, on its first container port (8080 when it declares none):
  timeout 1 s, period 10 s, success 1, failure 3. Without it a pod counts as Ready, and gets traffic,
  before the server listens. Every mode gets it (RawDeployment, MultiNode, OMENative).
- `imagePullPolicy: IfNotPresent` on every container of a RawDeployment pod that sets none, whatever the
  image tag: the v1.3 Deployment reconciler does so, so `:latest` is not re-pulled on each pod start
  (Kubernetes alone would default `:latest` to Always).
"""

from __future__ import annotations

from typing import Any, Final

from ome.resolution.merge import MAIN_CONTAINER

Obj = dict[str, Any]

DEFAULT_PROBE_PORT: Final = 8080
DEFAULT_PULL_POLICY: Final = "IfNotPresent"


def readiness_probe(port: int) -> Obj:
    return {
        "tcpSocket": {"port": port},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }


def add_readiness_probe(pod_spec: Obj) -> None:
    """The default probe on `ome-container` when it has no readiness probe (other containers: none)."""
    for container in pod_spec.get("containers") or []:
        if container.get("name") != MAIN_CONTAINER or container.get("readinessProbe") is not None:
            continue
        ports = [p for p in container.get("ports") or [] if p.get("containerPort")]
        port = ports[0]["containerPort"] if ports else DEFAULT_PROBE_PORT
        container["readinessProbe"] = readiness_probe(port)


def add_pull_policy(pod_spec: Obj) -> None:
    """IfNotPresent on the containers that set no imagePullPolicy."""
    for container in pod_spec.get("containers") or []:
        if not container.get("imagePullPolicy"):
            container["imagePullPolicy"] = DEFAULT_PULL_POLICY
