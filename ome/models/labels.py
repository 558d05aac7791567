"""Node label keys that say where a model's weights are: `models.ome.io/<part>` = Updating|Ready|Failed.

The part after the `/` must fit a label name (63 chars); OME keeps it within 49 so the key leaves room,
hashing long names as `<8 hex of sha256>-<tail>`. Pure functions only.
"""

from __future__ import annotations

import hashlib
from typing import Final, Literal

DOMAIN: Final = "models.ome.io"
MAX_NAME_PART: Final = 49
CLUSTER_NAME_BUDGET: Final = 32  # 49 - len("clusterbasemodel.")
NAMESPACED_BUDGET: Final = 38  # 49 - len(".basemodel.")
NAMESPACE_BUDGET: Final = 8

UPDATING: Final = "Updating"
READY: Final = "Ready"
FAILED: Final = "Failed"
STATES: Final = (UPDATING, READY, FAILED)

ModelKind = Literal["ClusterBaseModel", "BaseModel"]


def _hash8(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:8]


def truncate(value: str, budget: int) -> str:
    """`value` if it fits, else `hash8-tail` (or the bare hash when the budget leaves no room for a tail)."""
    if len(value) <= budget:
        return value
    if budget <= 9:
        return _hash8(value)
    return f"{_hash8(value)}-{value[-(budget - 9):]}"


def model_label_key(kind: ModelKind | str, name: str, namespace: str | None = None) -> str:
    """The node label key for a ClusterBaseModel, or a BaseModel in `namespace`."""
    if kind == "ClusterBaseModel":
        return f"{DOMAIN}/clusterbasemodel.{truncate(name, CLUSTER_NAME_BUDGET)}"
    if kind != "BaseModel":
        raise ValueError(f"model kind must be ClusterBaseModel or BaseModel, not {kind!r}")
    if not namespace:
        raise ValueError("a BaseModel label key needs the model's namespace")
    if len(namespace) + len(name) <= NAMESPACED_BUDGET:
        return f"{DOMAIN}/{namespace}.basemodel.{name}"
    ns_budget = min(len(namespace), NAMESPACE_BUDGET)
    ns_part = truncate(namespace, ns_budget)
    return f"{DOMAIN}/{ns_part}.basemodel.{truncate(name, NAMESPACED_BUDGET - ns_budget)}"


def ready_selector(kind: ModelKind | str, name: str, namespace: str | None = None) -> dict[str, str]:
    """The node selector that keeps serving pods on nodes holding the model."""
    return {model_label_key(kind, name, namespace): READY}


# Per-node status ConfigMaps (one per node, named after it, in the operator namespace): the agent's
# detailed report (config, progress, failure reason) next to the terse node label.
STATUS_CONFIGMAP_LABEL: Final = "models.ome/basemodel-status"
DELETED: Final = "Deleted"
"""Entry status an agent may leave behind after removing a model; it no longer holds it."""
MAX_CONFIGMAP_KEY: Final = 253


def configmap_key(kind: ModelKind | str, name: str, namespace: str | None = None) -> str:
    """The model's key in a node's status ConfigMap: `clusterbasemodel.<name>` or `<ns>.basemodel.<name>`."""
    if kind == "ClusterBaseModel":
        prefix = "clusterbasemodel."
    elif kind == "BaseModel":
        if not namespace:
            raise ValueError("a BaseModel ConfigMap key needs the model's namespace")
        prefix = f"{namespace}.basemodel."
    else:
        raise ValueError(f"model kind must be ClusterBaseModel or BaseModel, not {kind!r}")
    return prefix + truncate(name, MAX_CONFIGMAP_KEY - len(prefix))


def json_pointer(label_key: str) -> str:
    """`/metadata/labels/<key>` with the key escaped for a JSON patch (RFC 6901: ~ -> ~0, / -> ~1)."""
    return "/metadata/labels/" + label_key.replace("~", "~0").replace("/", "~1")


def kind_of_namespace(namespace: str) -> ModelKind:
    """Model requests are keyed (namespace, name); cluster-scoped ClusterBaseModels have namespace ""."""
    return "BaseModel" if namespace else "ClusterBaseModel"
