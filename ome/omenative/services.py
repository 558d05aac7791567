"""The Services the InferenceReplica controller owns (pure).

- `{isvc}-{component}-headless`: every pod of the component, not-ready addresses published, so a
  leader and its workers resolve one another before they are ready.
- per live revision, `-rev-{hash}` (routing: leaders or single pods of that revision, through the
  serving gate, so it empties as a pod drains) and `-rev-{hash}-headless` (all its pods).

The stable `{isvc}-{component}` Service and the PDB belong to the InferenceService controller; a
standalone replica has neither, as documented.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ome.omenative import instance_names as names
from ome.omenative.revisions import RevisionData, owner_reference, pairing_label

Obj = dict[str, Any]

DEFAULT_PORT: Final = 8080
REVISION_SERVICE_LABEL: Final = "ome.io/revision-service"


def headless_service(replica: Mapping[str, Any], data: RevisionData | None) -> Obj:
    base, component = names.base_name(replica), replica["spec"]["component"]
    selector = names.selector_labels(base, component)
    return _service(
        replica, names.headless_service_name(base, component), selector, data, headless=True, labels=selector
    )


def revision_services(replica: Mapping[str, Any], digest: str, data: RevisionData) -> list[Obj]:
    base, component = names.base_name(replica), replica["spec"]["component"]
    every_pod = {**names.selector_labels(base, component), names.REVISION_HASH_LABEL: digest}
    routed = dict(every_pod)
    if data.multi_pod:
        # Workers run distributed-init peers and never take requests.
        routed[names.RUNNER_LABEL] = "leader"
    labels = {**every_pod, REVISION_SERVICE_LABEL: "true", **pairing_label(data)}
    return [
        _service(
            replica,
            names.revision_service_name(base, component, digest),
            routed,
            data,
            headless=False,
            labels=labels,
        ),
        _service(
            replica,
            names.revision_headless_service_name(base, component, digest),
            every_pod,
            data,
            headless=True,
            labels=labels,
        ),
    ]


def ports(data: RevisionData | None) -> list[Obj]:
    """The serving container's ports (leader or default runner), else 8080."""
    runner = data.runners[0] if data and data.runners else None
    containers = ((runner.template.get("spec") or {}).get("containers") or []) if runner else []
    main = next(
        (c for c in containers if c.get("name") == "ome-container"), containers[0] if containers else {}
    )
    found = [p for p in main.get("ports") or [] if p.get("containerPort")]
    if not found:
        return [{"name": "http", "port": DEFAULT_PORT, "targetPort": DEFAULT_PORT, "protocol": "TCP"}]
    return [
        {
            "name": p.get("name") or f"port-{i}",
            "port": p["containerPort"],
            "targetPort": p["containerPort"],
            "protocol": p.get("protocol") or "TCP",
        }
        for i, p in enumerate(found)
    ]


def _service(
    replica: Mapping[str, Any],
    name: str,
    selector: Mapping[str, str],
    data: RevisionData | None,
    *,
    headless: bool,
    labels: Mapping[str, str],
) -> Obj:
    spec: Obj = {"selector": dict(selector), "ports": ports(data)}
    if headless:
        spec["clusterIP"] = "None"
        spec["publishNotReadyAddresses"] = True
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "namespace": replica["metadata"]["namespace"],
            "labels": dict(labels),
            "ownerReferences": [owner_reference(replica)],
        },
        "spec": spec,
    }
