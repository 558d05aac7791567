"""Names and label keys of what OMENative creates for an InferenceReplica (pure).

The name base is the parent InferenceService (`spec.parentRef.name`), or the replica's own name for
a standalone replica, so pods are `{base}-{component}-{index}-{runner}-{ordinal}` either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

# Shared with every InferenceService child: one definition, in resolution/naming.py.
from ome.resolution.naming import COMPONENT_LABEL as COMPONENT_LABEL
from ome.resolution.naming import ISVC_LABEL as ISVC_LABEL
from ome.resolution.naming import MANAGED_BY_LABEL as MANAGED_BY_LABEL
from ome.resolution.naming import MAX_DNS_LABEL as MAX_DNS_LABEL
from ome.resolution.naming import truncate as truncate

INSTANCE_INDEX_LABEL: Final = "ome.io/instance-index"
INCARNATION_LABEL: Final = "ome.io/instance-incarnation"
RUNNER_LABEL: Final = "ome.io/runner"
POD_ORDINAL_LABEL: Final = "ome.io/pod-ordinal"
REVISION_HASH_LABEL: Final = "ome.io/revision-hash"
PAIRING_PROTOCOL_LABEL: Final = "ome.io/pairing-protocol"
POD_GROUP_LABEL: Final = "scheduling.x-k8s.io/pod-group"
MANAGED_BY: Final = "OMENative"
SERVING_GATE: Final = "ome.io/serving"


def base_name(replica: Mapping[str, Any]) -> str:
    """The InferenceService name the replica's objects are named after."""
    parent = (replica.get("spec") or {}).get("parentRef") or {}
    return str(parent.get("name") or replica["metadata"]["name"])


def component_name(base: str, component: str) -> str:
    return f"{base}-{component}"


def pod_name(base: str, component: str, index: int, runner: str, ordinal: int) -> str:
    return f"{base}-{component}-{index}-{runner}-{ordinal}"


def headless_service_name(base: str, component: str) -> str:
    return truncate(f"{base}-{component}-headless")


def revision_service_name(base: str, component: str, revision_hash: str) -> str:
    return truncate(f"{base}-{component}-rev-{revision_hash}")


def revision_headless_service_name(base: str, component: str, revision_hash: str) -> str:
    return truncate(f"{base}-{component}-rev-{revision_hash}-headless")


def revision_name(base: str, component: str, revision_hash: str) -> str:
    """ControllerRevision `{isvc}-{component}-{hash}`."""
    return f"{base}-{component}-{revision_hash}"


def hash_of_revision(name: str) -> str:
    """The hash part of a ControllerRevision name."""
    return name.rsplit("-", 1)[-1]


def instance_subdomain(base: str, component: str, index: int) -> str:
    return f"{base}-{component}-{index}"


def pod_group_name(base: str, component: str, index: int) -> str:
    return truncate(instance_subdomain(base, component, index))


def leader_address(base: str, component: str, index: int) -> str:
    """Short peer DNS of the leader; the pod's search path completes it, so no cluster domain is needed."""
    return f"{pod_name(base, component, index, 'leader', 0)}.{headless_service_name(base, component)}"


def selector_labels(base: str, component: str) -> dict[str, str]:
    """Every OMENative pod of one component, any revision or Instance."""
    return {ISVC_LABEL: base, COMPONENT_LABEL: component, MANAGED_BY_LABEL: MANAGED_BY}


def label_selector_string(base: str, component: str) -> str:
    """status.labelSelector, for HPAs reading the scale subresource."""
    return ",".join(f"{k}={v}" for k, v in selector_labels(base, component).items())
