"""Resolve `spec.model.overlays`: other models mounted next to the primary one (since v1.3).

An overlay that is missing or disabled is left out, and the reason goes to the OverlaysReady condition.
Reads only a cache-like reader, never the apiserver.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ome.api import resources
from ome.api.resources import Resource
from ome.resolution.components import ModelSource


class Reader(Protocol):
    def get_or_none(
        self, res: Resource, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None: ...


@dataclass(frozen=True, slots=True)
class OverlayResult:
    mounted: tuple[ModelSource, ...]
    problems: tuple[str, ...]

    @property
    def requested(self) -> bool:
        return bool(self.mounted or self.problems)


def resolve(reader: Reader, isvc: Mapping[str, Any]) -> OverlayResult:
    namespace = isvc["metadata"]["namespace"]
    refs = ((isvc.get("spec") or {}).get("model") or {}).get("overlays") or []
    mounted: list[ModelSource] = []
    problems: list[str] = []
    for ref in refs:
        kind = ref.get("kind") or "ClusterBaseModel"
        name = ref["name"]
        if kind == "BaseModel":
            obj = reader.get_or_none(resources.BASE_MODELS, name, namespace)
        else:
            obj = reader.get_or_none(resources.CLUSTER_BASE_MODELS, name)
        if obj is None:
            problems.append(f'overlay {kind} "{name}" not found')
        elif (obj.get("spec") or {}).get("disabled"):
            problems.append(f'overlay {kind} "{name}" is disabled')
        else:
            mounted.append(ModelSource.from_object(kind, obj))
    return OverlayResult(tuple(mounted), tuple(problems))
