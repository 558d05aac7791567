"""The pods of one InferenceService, read through an index on their `ome.io/inferenceservice` label.

A label-selector read of the pod cache walks every pod of the namespace (the namespace index) and tests
each one's labels, so each reconcile cost grew with the number of services sharing the namespace. The
index files each pod under `namespace/service` (the label value is a name, unique only per namespace),
so a read walks the service's own pods only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ome.resolution import naming

INDEX: Final = "inferenceservice"


def key(namespace: str, isvc: str) -> str:
    return f"{namespace}/{isvc}"


def index_by_service(obj: Mapping[str, Any]) -> list[str]:
    """`namespace/<ome.io/inferenceservice label>`; pods without the label are not indexed."""
    meta = obj.get("metadata") or {}
    owner = (meta.get("labels") or {}).get(naming.ISVC_LABEL)
    return [key(str(meta.get("namespace") or ""), str(owner))] if owner else []
