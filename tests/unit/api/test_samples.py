"""The sample catalog (config/samples) and the model and runtime catalog (config/models, config/runtimes).

Every kind has a sample; every file says what it shows; the objects use only fields the v1.3 types
have; names the samples refer to exist; and the catalog holds what the v1.3 docs name.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ome.api.v1beta1 import KINDS, OMEModel, parse_object

from .helpers import (
    CATALOG_DIRS,
    REPO,
    SAMPLES,
    SEEDS,
    catalog_files,
    catalog_manifests,
    sample_manifests,
    seed_files,
)

SAMPLE_DOCS = sample_manifests()
CATALOG_DOCS = catalog_manifests()
ALL_DOCS = SAMPLE_DOCS + CATALOG_DOCS
ALL_FILES = sorted(SAMPLES.glob("*.yaml")) + catalog_files()

# The v1.3 docs name these catalog objects and files.
CATALOG_OBJECTS = {
    ("ClusterBaseModel", "llama-3-2-1b-instruct"): "config/models/meta/Llama-3.2-1B-Instruct.yaml",
    ("ClusterBaseModel", "llama-3-2-3b-instruct"): "config/models/meta/Llama-3.2-3B-Instruct.yaml",
    ("ClusterServingRuntime", "vllm-llama-3-2-1b-instruct"): "config/runtimes/vllm/llama-3-2-1b-instruct-rt.yaml",
    ("ClusterServingRuntime", "srt-llama-3-2-3b-instruct"): "config/runtimes/srt/meta/llama-3-2-3b-instruct-rt.yaml",
}
MULTI_NODE_RUNTIME = "srt-llama-3-2-3b-instruct-multi-node"
PD_RUNTIME = "srt-llama-3-2-3b-instruct-pd"
OME_MULTI_POD_VARS = ("OME_LEADER_ADDRESS", "OME_INSTANCE_POD_RANK", "OME_INSTANCE_POD_COUNT")


def _key(doc: dict[str, Any]) -> tuple[str, str]:
    return str(doc["kind"]), str(doc["metadata"]["name"])


def _objects(docs: list[tuple[str, dict[str, Any]]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for _, d in docs if d["kind"] == kind}


def _catalog(kind: str, name: str) -> dict[str, Any]:
    found = _objects(CATALOG_DOCS, kind).get(name)
    assert found is not None, f"the catalog has no {kind} {name}"
    return found


def _extras(value: Any, path: str) -> Iterator[str]:
    """JSON paths of keys no v1.3 type declares (OMEModel keeps them as extras)."""
    if isinstance(value, OMEModel):
        for key in value.model_extra or {}:
            yield f"{path}.{key}"
        for name, info in type(value).model_fields.items():
            yield from _extras(getattr(value, name), f"{path}.{info.alias or name}")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _extras(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _extras(item, f"{path}[{i}]")


# --- coverage and form -------------------------------------------------------------------------


def test_every_kind_has_a_sample() -> None:
    assert {d["kind"] for _, d in SAMPLE_DOCS} == {cls.crd.kind for cls in KINDS}


def test_sample_file_names_follow_kind_and_object() -> None:
    for name, doc in SAMPLE_DOCS:
        assert name.startswith(doc["kind"].lower() + "_"), name


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_each_file_opens_with_a_short_comment_saying_what_it_shows(path: Path) -> None:
    lines = path.read_text().splitlines()
    header = [line for line in lines[: lines.index("apiVersion: ome.io/v1beta1")]]
    assert 1 <= len(header) <= 3 and all(line.startswith("# ") for line in header), path.name
    assert len(list(yaml.safe_load_all(path.read_text()))) == 1, f"{path.name}: one object per file"


@pytest.mark.parametrize(("name", "doc"), ALL_DOCS, ids=[n for n, _ in ALL_DOCS])
def test_objects_use_only_v13_fields(name: str, doc: dict[str, Any]) -> None:
    obj = parse_object(doc)
    assert list(_extras(obj, doc["kind"])) == [], name
    assert obj.name, name
    namespaced = obj.crd.scope == "Namespaced"
    assert ("namespace" in doc["metadata"]) == namespaced, f"{name}: namespace vs. scope {obj.crd.scope}"


@pytest.mark.parametrize("folder", CATALOG_DIRS, ids=lambda p: p.name)
def test_catalog_kustomization_lists_every_file(folder: Path) -> None:
    kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
    assert kustomization["kind"] == "Kustomization"
    listed = kustomization["resources"]
    on_disk = sorted(str(p.relative_to(folder)) for p in folder.rglob("*.yaml") if p.name != "kustomization.yaml")
    assert listed == on_disk


def test_catalog_names_are_unique() -> None:
    keys = [_key(d) for _, d in CATALOG_DOCS]
    assert len(keys) == len(set(keys))
    assert {k for k, _ in keys} <= {"ClusterBaseModel", "ClusterServingRuntime"}


# --- what the docs name ------------------------------------------------------------------------


def test_catalog_holds_the_documented_models_and_runtimes() -> None:
    by_path = {path: _key(doc) for path, doc in CATALOG_DOCS}
    for key, path in CATALOG_OBJECTS.items():
        assert by_path.get(path) == key, path


def test_catalog_paths_in_the_docs_exist() -> None:
    pages = seed_files()
    assert pages, f"the v1.3 seed pages are missing: expected them at {SEEDS} (../shared/seeds)"
    paths = {m for p in pages for m in re.findall(r"\bconfig/[\w./-]+\.yaml\b", p.read_text())}
    assert paths
    for path in paths:
        assert (REPO / path).is_file(), path


def test_catalog_models_keep_their_weights_under_raid_models() -> None:
    for name, model in _objects(CATALOG_DOCS, "ClusterBaseModel").items():
        storage = model["spec"]["storage"]
        assert storage["path"] == f"/raid/models/{model['spec']['vendor']}/{name}", name
        assert storage["storageUri"].startswith("hf://"), name
        assert storage.get("key") == "hf-token", name  # Llama models are gated


def test_samples_and_catalog_agree_on_shared_objects() -> None:
    catalog = {_key(d): d for _, d in CATALOG_DOCS}
    shared = [(name, d) for name, d in SAMPLE_DOCS if _key(d) in catalog]
    assert len(shared) == 4
    for name, doc in shared:
        assert doc["spec"] == catalog[_key(doc)]["spec"], name


def _size(text: str) -> float:
    """A parameter count such as "500M" or "1.24B"."""
    match = re.fullmatch(r"([0-9.]+)([MBT]?)", text)
    assert match is not None, text
    return float(match[1]) * {"": 1, "M": 1e6, "B": 1e9, "T": 1e12}[match[2]]


@pytest.mark.parametrize(
    ("params", "runtime"),
    [("1.24B", "vllm-llama-3-2-1b-instruct"), ("3.21B", "srt-llama-3-2-3b-instruct")],
    ids=["1b", "3b"],
)
def test_one_catalog_runtime_is_auto_selectable_for_each_model(params: str, runtime: str) -> None:
    """The docs' minimal InferenceService warns that vllm-llama-3-2-1b-instruct is auto-selected."""
    candidates = []
    for name, rt in _objects(CATALOG_DOCS, "ClusterServingRuntime").items():
        spec = rt["spec"]
        formats = spec["supportedModelFormats"]
        if not any(f.get("autoSelect") and f["modelArchitecture"] == "LlamaForCausalLM" for f in formats):
            continue
        size = spec["modelSizeRange"]
        if _size(size["min"]) <= _size(params) <= _size(size["max"]):
            candidates.append(name)
    assert candidates == [runtime]


def test_multi_node_runtime_uses_the_ome_variables() -> None:
    runtime = _catalog("ClusterServingRuntime", MULTI_NODE_RUNTIME)
    engine = runtime["spec"]["engineConfig"]
    assert set(engine) >= {"leader", "worker"} and "runner" not in engine
    assert engine["worker"]["size"] >= 1
    for role in ("leader", "worker"):
        runner = engine[role]["runner"]
        words = " ".join(runner.get("command", []) + runner.get("args", []))
        for var in OME_MULTI_POD_VARS:
            assert f"$({var})" in words, (role, var)
    assert all(f.get("autoSelect") is False for f in runtime["spec"]["supportedModelFormats"])
    text = yaml.safe_dump(runtime)
    assert "LWS_" not in text and "leaderworkerset" not in text


def test_prefill_decode_runtime_has_engine_decoder_and_router() -> None:
    spec = _catalog("ClusterServingRuntime", PD_RUNTIME)["spec"]
    prefill, decode = (" ".join(spec[c]["runner"]["args"]) for c in ("engineConfig", "decoderConfig"))
    assert "--disaggregation-mode=prefill" in prefill and "--disaggregation-mode=decode" in decode
    router = spec["routerConfig"]["runner"]["args"]
    assert "--pd-disaggregation" in router
    assert router[router.index("--prefill-selector") + 1] == "component=engine"
    assert router[router.index("--decode-selector") + 1] == "component=decoder"


# --- references between samples ----------------------------------------------------------------


def test_sample_references_resolve() -> None:
    models = set(_objects(ALL_DOCS, "ClusterBaseModel")) | set(_objects(ALL_DOCS, "BaseModel"))
    runtimes = set(_objects(ALL_DOCS, "ClusterServingRuntime")) | set(_objects(ALL_DOCS, "ServingRuntime"))
    replicas = set(_objects(SAMPLE_DOCS, "InferenceReplica"))
    isvcs = set(_objects(SAMPLE_DOCS, "InferenceService"))
    classes = set(_objects(SAMPLE_DOCS, "AcceleratorClass"))
    for name, doc in SAMPLE_DOCS:
        spec = doc["spec"]
        kind = doc["kind"]
        if kind in ("InferenceService", "InferenceReplica"):
            model = spec.get("model") or spec.get("modelRef")
            runtime = spec.get("runtime") or spec.get("runtimeRef")
            assert model is None or model["name"] in models, name
            assert runtime is None or runtime["name"] in runtimes, name
            for refs in (spec.get("replicaRefs") or {}).values():
                assert set(refs) <= replicas, name
        if kind == "FineTunedWeight":
            assert spec["baseModelRef"]["name"] in models, name
        if kind == "BenchmarkJob":
            assert spec["endpoint"]["inferenceService"]["name"] in isvcs, name
        if kind in ("ServingRuntime", "ClusterServingRuntime"):
            assert set((spec.get("acceleratorRequirements") or {}).get("acceleratorClasses") or []) <= classes
