"""BaseModel and ClusterBaseModel admission: the `pvc://` storage rules (serve-models-from-pvc.md, "The
webhook rejects the model" and "Sharded distribution is rejected").

A BaseModel's PVC URI names no namespace (`pvc://{pvc-name}/{sub-path}`: the model's own is used); a
ClusterBaseModel's names one (`pvc://{namespace}:{pvc-name}/{sub-path}`); the sub-path is required; a
`pvc://` model can't use `distribution: Sharded`. Other storage schemes pass unchecked here. The
InferenceService webhook asks `cluster_pvc_namespace_error` whether a service may serve such a model.
"""

from __future__ import annotations

import json
from typing import Final

from ome.models import storage
from ome.webhooks.handler import AdmissionRequest, Outcome
from ome.webhooks.loose import as_dict, text

SHARDED_PVC: Final = ("PVC storage URIs are not compatible with distribution=Sharded; "
                      "use distribution=PerNode (or omit) for pvc:// models")


def pvc_error(kind: str, spec: dict[str, object]) -> str | None:
    uri = text(as_dict(spec.get("storage")).get("storageUri"))
    if storage.scheme_of(uri) != "pvc":
        return None
    if spec.get("distribution") == "Sharded":  # v1.3 checks it first, whatever the URI's form
        return SHARDED_PVC
    quoted = json.dumps(uri)
    try:
        source = storage.parse(uri)
    except storage.StorageUriError as exc:
        problem = str(exc).rpartition(": ")[2]
        return f"invalid PVC storage URI {quoted}: invalid PVC storage URI format: {problem}"
    assert isinstance(source, storage.PvcSource)
    if kind == "ClusterBaseModel" and not source.namespace:
        return ("ClusterBaseModel PVC URI must specify a namespace (format: pvc://{namespace}:{pvc-name}/"
                f"{{sub-path}}), got {quoted}")
    if kind == "BaseModel" and source.namespace:
        return ("namespaced BaseModel PVC URI must not specify a namespace; the BaseModel's own namespace is "
                f"used, got {quoted}")
    return None


def cluster_pvc_namespace_error(model: dict[str, object], isvc_namespace: str) -> str | None:
    """An InferenceService may serve a `pvc://` ClusterBaseModel only in the claim's namespace: a pod can't
    mount a claim of another namespace (serve-models-from-pvc.md, "The webhook rejects the InferenceService").
    A BaseModel's claim is in its own namespace by construction; a malformed URI is the model's own error."""
    meta = as_dict(model.get("metadata"))
    if meta.get("namespace"):
        return None
    uri = text(as_dict(as_dict(model.get("spec")).get("storage")).get("storageUri"))
    if storage.scheme_of(uri) != "pvc":
        return None
    try:
        source = storage.parse(uri)
    except storage.StorageUriError:
        return None
    claim_ns = source.namespace if isinstance(source, storage.PvcSource) else None
    if not claim_ns or claim_ns == isvc_namespace:
        return None
    return (f"ClusterBaseModel {json.dumps(text(meta.get('name')))} references PVC in namespace "
            f"{json.dumps(claim_ns)}, but InferenceService is in namespace {json.dumps(isvc_namespace)}; "
            "Kubernetes does not allow pods to mount PVCs from another namespace. Either move the "
            f"InferenceService to namespace {json.dumps(claim_ns)} or replicate the PVC into namespace "
            f"{json.dumps(isvc_namespace)}.")


def _storage_fields(spec: dict[str, object]) -> tuple[str, object]:
    return text(as_dict(spec.get("storage")).get("storageUri")), spec.get("distribution")


def validate(request: AdmissionRequest, *, kind: str) -> Outcome:
    unchanged = request.old is not None and \
        _storage_fields(as_dict(request.old.get("spec"))) == _storage_fields(request.spec)
    if unchanged:  # an update that leaves the storage alone (finalizers, filled metadata) always passes
        return Outcome()
    error = pvc_error(kind, request.spec)
    return Outcome.deny(error) if error is not None else Outcome()


__all__ = ["SHARDED_PVC", "cluster_pvc_namespace_error", "pvc_error", "validate"]
