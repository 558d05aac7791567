"""BaseModel / ClusterBaseModel admission of `pvc://` URIs, quoting guides/deploy-models/serve-models-from-pvc.md
(v1.3), "The webhook rejects the model" and "Sharded distribution is rejected"."""

from __future__ import annotations

from typing import Any

import pytest

from ome.api import resources
from ome.webhooks import registry
from tests.unit.resolution.fake_reader import FakeReader
from tests.unit.webhooks.reviews import call, review

Obj = dict[str, Any]


def model(kind: str, uri: str, **spec: Any) -> Obj:
    meta: Obj = {"name": "llama-3-2-1b-instruct"}
    if kind == "BaseModel":
        meta["namespace"] = "llama-demo"
    return {"apiVersion": "ome.io/v1beta1", "kind": kind, "metadata": meta,
            "spec": {"storage": {"storageUri": uri}, **spec}}


def answer(kind: str, obj: Obj, **kw: Any) -> Obj:
    return call(registry.handlers(FakeReader())[f"/validate-ome-io-v1beta1-{kind.lower()}"], review(kind, obj, **kw))


@pytest.mark.parametrize(("kind", "uri", "message"), [
    ("ClusterBaseModel", "pvc://model-storage/llama-3-2-1b-instruct",
     'ClusterBaseModel PVC URI must specify a namespace (format: pvc://{namespace}:{pvc-name}/{sub-path}), '
     'got "pvc://model-storage/llama-3-2-1b-instruct"'),
    ("BaseModel", "pvc://llama-demo:model-storage/llama-3-2-1b-instruct",
     "namespaced BaseModel PVC URI must not specify a namespace; the BaseModel's own namespace is used, "
     'got "pvc://llama-demo:model-storage/llama-3-2-1b-instruct"'),
    ("BaseModel", "pvc://model-storage",
     'invalid PVC storage URI "pvc://model-storage": invalid PVC storage URI format: missing subpath'),
])
def test_malformed_pvc_uris_are_denied_with_the_documented_text(kind: str, uri: str, message: str) -> None:
    got = answer(kind, model(kind, uri))
    assert got["allowed"] is False
    assert got["status"]["message"] == message


def test_sharded_distribution_is_denied_for_pvc_models() -> None:
    """"The webhook rejects a `pvc://` model with `distribution: Sharded`" """
    got = answer("BaseModel", model("BaseModel", "pvc://model-storage/llama", distribution="Sharded"))
    assert got["status"]["message"] == ("PVC storage URIs are not compatible with distribution=Sharded; "
                                        "use distribution=PerNode (or omit) for pvc:// models")
    assert answer("BaseModel", model("BaseModel", "pvc://model-storage/llama", distribution="PerNode"))["allowed"]
    # Checked before the URI's form, as v1.3 does.
    sharded_cbm = answer("ClusterBaseModel", model("ClusterBaseModel", "pvc://model-storage", distribution="Sharded"))
    assert sharded_cbm["status"]["message"].startswith("PVC storage URIs are not compatible with distribution=Sharded")


def test_the_documented_forms_and_other_schemes_pass() -> None:
    assert answer("BaseModel", model("BaseModel", "pvc://model-storage/llama-3-2-1b-instruct"))["allowed"]
    assert answer("ClusterBaseModel",
                  model("ClusterBaseModel", "pvc://llama-demo:model-storage/llama-3-2-1b-instruct"))["allowed"]
    assert answer("ClusterBaseModel", model("ClusterBaseModel", "hf://meta-llama/Llama-3.2-1B-Instruct",
                                            distribution="Sharded"))["allowed"]


def test_an_update_that_leaves_the_storage_alone_passes() -> None:
    """A finalizer or a filled-in field on a model admitted before never gets stuck behind the URI rule."""
    bad = model("ClusterBaseModel", "pvc://model-storage/llama")
    newer = {**bad, "metadata": {**bad["metadata"], "finalizers": ["clusterbasemodels.ome.io/finalizer"]}}
    assert answer("ClusterBaseModel", newer, old=bad, operation="UPDATE")["allowed"]


def _isvc_answer(namespace: str, *models: tuple[Any, Obj]) -> Obj:
    svc = {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService",
           "metadata": {"name": "llama", "namespace": namespace},
           "spec": {"model": {"name": "llama-3-2-1b-instruct", **({"kind": "BaseModel"} if models[0][0]
                                                                  is resources.BASE_MODELS else {})},
                    "engine": {"runner": {"image": "vllm:latest"}}}}
    reader = FakeReader(*models)
    return call(registry.handlers(reader)["/validate-ome-io-v1beta1-inferenceservice"],
                review("InferenceService", svc))


def test_a_service_outside_the_claims_namespace_of_a_cluster_pvc_model_is_denied() -> None:
    """"Since v1.3, the webhook also rejects an InferenceService that uses the ClusterBaseModel from another
    namespace, here `default`" (serve-models-from-pvc.md, "The webhook rejects the InferenceService")."""
    cbm = model("ClusterBaseModel", "pvc://llama-demo:model-storage/llama-3-2-1b-instruct")
    got = _isvc_answer("default", (resources.CLUSTER_BASE_MODELS, cbm))
    assert got["allowed"] is False
    assert got["status"]["message"] == (
        'ClusterBaseModel "llama-3-2-1b-instruct" references PVC in namespace "llama-demo", but InferenceService '
        'is in namespace "default"; Kubernetes does not allow pods to mount PVCs from another namespace. Either '
        'move the InferenceService to namespace "llama-demo" or replicate the PVC into namespace "default".')
    # "Create the InferenceService in `llama-demo`."
    assert _isvc_answer("llama-demo", (resources.CLUSTER_BASE_MODELS, cbm))["allowed"] is True
    # Other schemes, and a BaseModel (its claim is in its own namespace), are not concerned.
    hf = model("ClusterBaseModel", "hf://meta-llama/Llama-3.2-1B-Instruct")
    assert _isvc_answer("default", (resources.CLUSTER_BASE_MODELS, hf))["allowed"] is True
    bm = model("BaseModel", "pvc://model-storage/llama-3-2-1b-instruct")
    assert _isvc_answer("llama-demo", (resources.BASE_MODELS, bm))["allowed"] is True


@pytest.mark.parametrize(("uri", "problem"), [
    ("pvc://", "missing content after prefix"),
    ("pvc://:model-storage/llama", "empty namespace before colon"),
    ("pvc://llama-demo:/llama", "empty PVC name after colon"),
    ("pvc://llama-demo:model:storage/llama", "multiple colons not allowed in namespace:pvc-name"),
    ("pvc://Llama_Demo:model-storage/llama",
     'invalid namespace "Llama_Demo" (must be lowercase alphanumeric with hyphens, max 63 chars)'),
])
def test_other_malformed_pvc_uris_end_with_the_problem(uri: str, problem: str) -> None:
    """"Other malformed URIs get `invalid PVC storage URI`, with the problem at the end." (v1.3's problems)"""
    got = answer("ClusterBaseModel", model("ClusterBaseModel", uri))
    assert got["allowed"] is False
    assert got["status"]["message"] == f'invalid PVC storage URI "{uri}": invalid PVC storage URI format: {problem}'
