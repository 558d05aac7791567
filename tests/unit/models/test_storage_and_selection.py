from __future__ import annotations

from typing import Any

import pytest

from ome.models import labels, selection, storage


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("hf://Qwen/Qwen2.5-7B-Instruct", storage.HfSource("Qwen/Qwen2.5-7B-Instruct", "main")),
        ("hf://meta-llama/Llama-3.1-8B@v1", storage.HfSource("meta-llama/Llama-3.1-8B", "v1")),
        ("hf://gpt2", storage.HfSource("gpt2", "main")),
        ("local:///mnt/data/models/x", storage.LocalSource("/mnt/data/models/x")),
        ("pvc://model-storage/llama", storage.PvcSource("model-storage", "llama")),
        ("pvc://demo:model-storage/a/b", storage.PvcSource("model-storage", "a/b", "demo")),
        ("vendor://openai/model/gpt", storage.VendorSource("openai/model/gpt")),
        ("s3://bucket/key", storage.Unsupported("s3")),
        ("oci://n/ns/b/bucket/o/prefix", storage.Unsupported("oci")),
    ],
)
def test_parse(uri: str, expected: object) -> None:
    assert storage.parse(uri) == expected


@pytest.mark.parametrize("uri", ["hf://", "hf://a/b/c", "pvc://claim", "pvc://claim/", "local://"])
def test_malformed_uris_are_errors(uri: str) -> None:
    with pytest.raises(storage.StorageUriError):
        storage.parse(uri)


def test_target_dir_prefers_path_then_local_then_root() -> None:
    def m(**s: Any) -> dict[str, Any]:
        return {"spec": {"storage": s}}

    assert storage.target_dir(m(storageUri="hf://a/b", path="/p"), "/root") == "/p"
    assert storage.target_dir(m(storageUri="local:///data/x"), "/root") == "/data/x"
    assert storage.target_dir(m(storageUri="hf://a/b"), "/root") == "/root/a/b"


LABELS = {"node.kubernetes.io/instance-type": "BM.GPU.H100.8", "zone": "a", "gpus": "8"}


@pytest.mark.parametrize(
    ("spec", "matches"),
    [
        ({}, True),
        ({"nodeSelector": {"zone": "a"}}, True),
        ({"nodeSelector": {"zone": "b"}}, False),
        ({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                   "values": ["BM.GPU.H100.8", "BM.GPU.H200.8"]}]}]}}}, True),
        ({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "missing", "operator": "NotIn", "values": ["x"]}]}]}}}, False),
        ({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "gpus", "operator": "Gt", "values": ["4"]}]}]}}}, True),
        ({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-node-1"]}]}]}}}, True),
        ({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-node-2"]}]}]}}}, False),
        ({"nodeSelector": {"zone": "b"}, "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Exists"}]}]}}}, False),
        ({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": [{"key": "zone", "operator": "In",
                                                               "values": ["z"]}]}}]}}, True),
    ],
    ids=["none", "selector", "selector-miss", "affinity-in", "notin-needs-label", "gt", "field-name",
         "field-miss", "both-must-match", "preferred-ignored"],
)
def test_node_selection(spec: dict[str, Any], matches: bool) -> None:
    assert selection.node_matches(spec, "gpu-node-1", LABELS) is matches


def test_configmap_keys() -> None:
    assert labels.configmap_key("ClusterBaseModel", "qwen") == "clusterbasemodel.qwen"
    assert labels.configmap_key("BaseModel", "llama", "demo") == "demo.basemodel.llama"
    long_key = labels.configmap_key("BaseModel", "m" * 253, "ns")
    assert len(long_key) == 253 and long_key.startswith("ns.basemodel.")


def test_json_pointer_escapes_the_slash() -> None:
    assert labels.json_pointer("models.ome.io/clusterbasemodel.q") == \
        "/metadata/labels/models.ome.io~1clusterbasemodel.q"


def test_request_namespace_decides_the_kind() -> None:
    assert labels.kind_of_namespace("") == "ClusterBaseModel"
    assert labels.kind_of_namespace("demo") == "BaseModel"
