"""Names and labels of the objects OME creates for an InferenceService (pure)."""

from __future__ import annotations

import hashlib
from typing import Final

MAX_DNS_LABEL: Final = 63
"""Service names and label values are DNS labels; longer names get hash-tweak truncation."""

ISVC_LABEL: Final = "ome.io/inferenceservice"
COMPONENT_LABEL: Final = "component"
RUNTIME_LABEL: Final = "serving-runtime"
APP_LABEL: Final = "app"
MANAGED_BY_LABEL: Final = "ome.io/managed-by"
EXTERNAL_SERVICE_COMPONENT: Final = "external-service"
CLUSTER_LOCAL_LABEL: Final = "networking.knative.dev/visibility"
CLUSTER_LOCAL: Final = "cluster-local"
# On every InferenceReplica the InferenceService controller writes: the first marks the write as the
# controller's for the replica webhook, the second records the service generation last applied.
CONTROLLER_WRITE_ANNOTATION: Final = "ome.io/controller-write"
CONTROLLER_WRITE_VALUE: Final = "true"
PARENT_GENERATION_ANNOTATION: Final = "ome.io/parent-generation"


def truncate(name: str, limit: int = MAX_DNS_LABEL) -> str:
    """`name` if it fits, else 8 hex of its sha256 (a leading digit becomes `a`), `-`, and its tail."""
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    if digest[0].isdigit():
        digest = "a" + digest[1:]
    return f"{digest}-{name[-(limit - 9) :]}".replace("--", "-a")


def component_name(isvc: str, component: str) -> str:
    """`{isvc}-{component}`: the Deployment, HPA, PDB and InferenceReplica of a component."""
    return f"{isvc}-{component}"


def service_name(isvc: str, component: str) -> str:
    return truncate(component_name(isvc, component))


def lws_name(isvc: str, component: str) -> str:
    """`lws-{isvc}-{component}`, keeping the tail of long names as upstream does."""
    return f"lws-{component_name(isvc, component)[-50:]}"


def selector_labels(isvc: str, component: str) -> dict[str, str]:
    """What the children of one component are found by in the cache and the API."""
    return {ISVC_LABEL: isvc, COMPONENT_LABEL: component}
