"""Which base model an InferenceService serves: `spec.model` resolved against the cache.

`spec.model.kind` decides where to look, and it defaults to ClusterBaseModel (the CRD default, and
what a spec read before defaulting means). There is deliberately no fallback from a missing
ClusterBaseModel to a same-named BaseModel in the namespace: a BaseModel is served only when the
InferenceService asks for one with `kind: BaseModel` (inference-services page, "The model").

The webhook and the InferenceService controller share this module, so a model the webhook admitted is
the model the controller serves. Reads are synchronous lookups on a cache; nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from ome.api import resources
from ome.api.resources import Resource

Obj = dict[str, Any]

CLUSTER_BASE_MODEL: Final = "ClusterBaseModel"
BASE_MODEL: Final = "BaseModel"
DEFAULT_KIND: Final = CLUSTER_BASE_MODEL
READY_STATE: Final = "Ready"


class Reader(Protocol):
    """The one read resolution needs; the SharedCache and the unit-test fakes both have it."""

    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None: ...


class ResolutionError(Exception):
    """A model or runtime reference that cannot be resolved; `message` is what users see."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ModelNotFound(ResolutionError):
    """spec.model names no model of its kind."""


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    kind: str
    """ClusterBaseModel or BaseModel."""
    name: str
    namespace: str | None
    """The BaseModel's namespace; None for a ClusterBaseModel."""
    obj: Obj
    """The cached object; shared with other readers, so never mutate it."""
    ready: bool
    """status.state is Ready: the agent has the weights and has read the model's metadata."""

    @property
    def spec(self) -> Mapping[str, Any]:
        spec = self.obj.get("spec")
        return spec if isinstance(spec, dict) else {}

    @property
    def disabled(self) -> bool:
        return self.spec.get("disabled") is True


def model_ref(isvc: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """spec.model when it names a model, else None (a runtime-only InferenceService)."""
    spec = isvc.get("spec")
    ref = spec.get("model") if isinstance(spec, dict) else None
    if not isinstance(ref, dict) or not isinstance(ref.get("name"), str) or not ref["name"]:
        return None
    return ref


def resolve_model(reader: Reader, isvc: Mapping[str, Any]) -> ResolvedModel | None:
    """The model spec.model names, or None when the InferenceService has no spec.model.

    Raises ModelNotFound, whose message starts with the documented
    `referenced model "<m>" not found in namespace "<ns>"`.
    """
    ref = model_ref(isvc)
    if ref is None:
        return None
    name: str = ref["name"]
    namespace = _namespace_of(isvc)
    kind = ref.get("kind") or DEFAULT_KIND
    if kind == CLUSTER_BASE_MODEL:
        obj = reader.get_or_none(resources.CLUSTER_BASE_MODELS, name)
        hint = "no ClusterBaseModel has that name (set spec.model.kind: BaseModel to serve a BaseModel)"
    elif kind == BASE_MODEL:
        obj = reader.get_or_none(resources.BASE_MODELS, name, namespace) if namespace else None
        hint = "no BaseModel of that name exists in the namespace"
    else:
        obj = None
        hint = f"spec.model.kind {kind!r} is neither {CLUSTER_BASE_MODEL} nor {BASE_MODEL}"
    if obj is None:
        raise ModelNotFound(f'referenced model "{name}" not found in namespace "{namespace}": {hint}')
    return ResolvedModel(
        kind=kind,
        name=name,
        namespace=namespace if kind == BASE_MODEL else None,
        obj=obj,
        ready=_state(obj) == READY_STATE,
    )


def _namespace_of(isvc: Mapping[str, Any]) -> str:
    meta = isvc.get("metadata")
    namespace = meta.get("namespace") if isinstance(meta, dict) else None
    return namespace if isinstance(namespace, str) else ""


def _state(obj: Obj) -> str | None:
    status = obj.get("status")
    state = status.get("state") if isinstance(status, dict) else None
    return state if isinstance(state, str) else None
