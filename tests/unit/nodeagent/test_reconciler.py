from __future__ import annotations

from typing import Any

from ome.api import resources
from ome.controllers.nodeagent import setup
from ome.controllers.nodeagent.reconciler import FINALIZERS, ModelStatusReconciler
from ome.framework.reconcile import Request, Result
from ome.models import labels
from ome.models.entries import Entry
from tests.unit.nodeagent.fakes import FakeReader, RecordingWriter

Obj = dict[str, Any]
LLAMA_CONFIG = {"modelType": "llama", "modelArchitecture": "LlamaForCausalLM", "modelParameterSize": "8.03B",
                "modelFormat": {"name": "safetensors", "version": "1.0.0"},
                "modelFramework": {"name": "transformers", "version": "4.42.3"},
                "modelCapabilities": ["TEXT_TO_TEXT"], "maxTokens": 131072}


def cbm(name: str = "llama", uri: str = "local:///m/llama", **meta: Any) -> Obj:
    return {"apiVersion": "ome.io/v1beta1", "kind": "ClusterBaseModel",
            "metadata": {"name": name, "resourceVersion": "1", "generation": 1, **meta},
            "spec": {"storage": {"storageUri": uri}}}


def node(name: str, **model_labels: str) -> Obj:
    return {"metadata": {"name": name, "labels": dict(model_labels)}}


def status_cm(node_name: str, **entries: Entry) -> Obj:
    return {"metadata": {"name": node_name, "namespace": "ome",
                         "labels": {labels.STATUS_CONFIGMAP_LABEL: "true"}},
            "data": {k: e.dumps() for k, e in entries.items()}}


KEY = labels.model_label_key("ClusterBaseModel", "llama")
CM_KEY = labels.configmap_key("ClusterBaseModel", "llama")


def world() -> tuple[FakeReader, RecordingWriter, ModelStatusReconciler]:
    reader = FakeReader()
    writer = RecordingWriter(reader)
    return reader, writer, ModelStatusReconciler(reader, writer, config_namespace="ome")


async def converge(rec: ModelStatusReconciler, writer: RecordingWriter, req: Request) -> int:
    """Reconcile as the watch events of our own writes would, until a pass writes nothing; returns passes."""
    for passes in range(1, 10):
        before = len(writer.patches)
        await rec.reconcile(req)
        if len(writer.patches) == before:
            return passes
    raise AssertionError("reconcile never settled")


async def test_first_reconcile_only_adds_the_finalizer() -> None:
    reader, writer, rec = world()
    reader.add(resources.CLUSTER_BASE_MODELS, cbm())
    await rec.reconcile(Request("", "llama"))
    assert [p[2] for p in writer.patches] == [
        {"metadata": {"finalizers": [FINALIZERS["ClusterBaseModel"]], "resourceVersion": "1"}}]


async def test_without_reports_the_model_is_in_transit() -> None:
    reader, writer, rec = world()
    reader.add(resources.CLUSTER_BASE_MODELS, cbm())
    reader.add(resources.NODES, node("n1"))
    assert await converge(rec, writer, Request("", "llama")) == 3  # finalizer, status, nothing
    obj = reader.get_or_none(resources.CLUSTER_BASE_MODELS, "llama")
    assert obj is not None
    assert obj["metadata"]["finalizers"] == [FINALIZERS["ClusterBaseModel"]]
    assert obj["status"]["state"] == "In_Transit"


async def test_ready_label_makes_the_model_ready_and_fills_the_spec() -> None:
    reader, writer, rec = world()
    reader.add(resources.CLUSTER_BASE_MODELS, cbm())
    reader.add(resources.NODES, node("n1", **{KEY: "Ready"}))
    reader.add(resources.NODES, node("n2", **{KEY: "Failed"}))
    reader.add(resources.NODES, node("n3"))
    reader.add(resources.CONFIGMAPS, status_cm("n1", **{CM_KEY: Entry("llama", "Ready", config=LLAMA_CONFIG)}))
    reader.add(resources.CONFIGMAPS, status_cm("n2", **{CM_KEY: Entry("llama", "Failed", message="disk full")}))
    await converge(rec, writer, Request("", "llama"))
    obj = reader.get_or_none(resources.CLUSTER_BASE_MODELS, "llama")
    assert obj is not None
    assert (obj["status"]["state"], obj["status"]["nodesReady"], obj["status"]["nodesFailed"]) == \
        ("Ready", ["n1"], ["n2"])
    assert "failed on n2: disk full" in obj["status"]["conditions"][0]["message"]
    assert obj["spec"]["modelArchitecture"] == "LlamaForCausalLM"
    assert obj["spec"]["modelParameterSize"] == "8.03B"


async def test_a_second_reconcile_with_nothing_new_writes_nothing() -> None:
    reader, writer, rec = world()
    reader.add(resources.CLUSTER_BASE_MODELS, cbm())
    reader.add(resources.NODES, node("n1", **{KEY: "Ready"}))
    reader.add(resources.CONFIGMAPS, status_cm("n1", **{CM_KEY: Entry("llama", "Ready", config=LLAMA_CONFIG)}))
    assert await converge(rec, writer, Request("", "llama")) == 4  # finalizer, spec, status, nothing
    assert [p[3] for p in writer.patches] == [None, None, "status"]


async def test_user_set_fields_are_not_overwritten_and_skip_annotation_is_respected() -> None:
    reader, writer, rec = world()
    model = cbm(annotations={"ome.oracle.com/skip-config-parsing": "true"})
    reader.add(resources.CLUSTER_BASE_MODELS, model)
    reader.add(resources.NODES, node("n1", **{KEY: "Ready"}))
    reader.add(resources.CONFIGMAPS, status_cm("n1", **{CM_KEY: Entry("llama", "Ready", config=LLAMA_CONFIG)}))
    await converge(rec, writer, Request("", "llama"))
    assert not [p for p in writer.patches if "spec" in p[2]]


async def test_deletion_waits_while_a_node_still_reports_the_model() -> None:
    reader, writer, rec = world()
    finalizer = FINALIZERS["ClusterBaseModel"]
    reader.add(resources.CLUSTER_BASE_MODELS, cbm(finalizers=[finalizer], deletionTimestamp="2026-01-01T00:00:00Z"))
    reader.add(resources.NODES, node("n1", **{KEY: "Ready"}))
    result = await rec.reconcile(Request("", "llama"))
    assert result.requeue_after and writer.patches == []
    reader.add(resources.NODES, node("n1"))  # the agent removed its label
    assert await rec.reconcile(Request("", "llama")) == Result()
    assert writer.patches[-1][2]["metadata"]["finalizers"] == []
    assert writer.patches[-1][2]["metadata"]["resourceVersion"] == "1"  # a conditional write


async def test_entries_of_deleted_nodes_are_ignored() -> None:
    reader, writer, rec = world()
    finalizer = FINALIZERS["ClusterBaseModel"]
    reader.add(resources.CLUSTER_BASE_MODELS, cbm(finalizers=[finalizer], deletionTimestamp="2026-01-01T00:00:00Z"))
    reader.add(resources.CONFIGMAPS, status_cm("gone", **{CM_KEY: Entry("llama", "Ready")}))
    await rec.reconcile(Request("", "llama"))
    assert writer.patches[-1][2]["metadata"]["finalizers"] == []


async def test_pvc_model_status_is_left_to_the_metadata_controller() -> None:
    """A pvc:// model gets the finalizer here; its status comes from its metadata Job (modelmetadata)."""
    reader, writer, rec = world()
    model = cbm(uri="pvc://demo:store/llama")
    reader.add(resources.CLUSTER_BASE_MODELS, model)
    reader.add(resources.PVCS, {"metadata": {"name": "store", "namespace": "demo"}, "status": {"phase": "Bound"}})
    await converge(rec, writer, Request("", "llama"))
    obj = reader.get_or_none(resources.CLUSTER_BASE_MODELS, "llama")
    assert obj is not None and "status" not in obj
    assert [p[3] for p in writer.patches] == [None]  # the finalizer, no status write


async def test_basemodel_request_reads_the_namespaced_kind() -> None:
    reader, writer, rec = world()
    key = labels.model_label_key("BaseModel", "llama", "demo")
    reader.add(resources.BASE_MODELS, {**cbm(namespace="demo"), "kind": "BaseModel"})
    reader.add(resources.NODES, node("n1", **{key: "Failed"}))
    await converge(rec, writer, Request("demo", "llama"))
    obj = reader.get_or_none(resources.BASE_MODELS, "llama", "demo")
    assert obj is not None and obj["status"]["state"] == "Failed"
    assert obj["metadata"]["finalizers"] == [FINALIZERS["BaseModel"]]


def test_node_transform_keeps_only_model_labels() -> None:
    slim = setup.NODE_MODEL_LABELS({"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": "n1", "labels": {KEY: "Ready", "zone": "a"}, "annotations": {"x": "y"}}, "spec": {"x": 1}})
    assert slim["metadata"] == {"name": "n1", "labels": {KEY: "Ready"}}
    assert "spec" not in slim


def test_indexes_key_models_by_label_and_configmap_key() -> None:
    model = cbm(uri="pvc://demo:store/llama")
    assert setup.index_label_key(model) == [KEY]
    assert setup.index_configmap_key(model) == [CM_KEY]
