"""The generated CRDs on a real apiserver.

Every sample (config/samples) and catalog object (config/models, config/runtimes) is accepted and
reads back as sent, plus only what the CRD's schema defaults; kubectl prints the documented
columns for InferenceServices and InferenceReplicas; and the schema rejects a bad enum value, a
missing required field and objects that break a CEL rule, naming the field.
"""

from __future__ import annotations

import asyncio
import copy
import re
import shutil
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from ome.api.resources import (
    ACCELERATOR_QUOTAS,
    INFERENCE_REPLICAS,
    INFERENCE_SERVICES,
    Resource,
    resource_for,
)
from ome.devcluster.paths import bin_dir
from ome.framework import errors
from ome.framework.client import Client

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "config" / "samples"
CRD_DIR = ROOT / "config" / "crd"
CATALOG_DIRS = (ROOT / "config" / "models", ROOT / "config" / "runtimes")

Obj = dict[str, Any]

# Printer columns of the v1.3 kubebuilder markers: (header, shown only with -o wide).
ISVC_COLUMNS = [
    ("URL", False), ("READY", False), ("BASEMODEL", False), ("RUNTIME", False),
    ("PLACEMENT", True), ("PLAN-SOURCE", True), ("PLAN-DRIFT", True), ("AGE", False),
]  # fmt: skip
IREP_COLUMNS = [
    ("COMPONENT", False), ("DESIRED", False), ("CURRENT", False), ("READY", False),
    ("AVAILABLE", False), ("AGE", False),
]  # fmt: skip


def _files() -> list[Path]:
    catalog = [p for d in CATALOG_DIRS for p in sorted(d.rglob("*.yaml")) if p.name != "kustomization.yaml"]
    return sorted(SAMPLES.glob("*.yaml")) + catalog


def _docs() -> list[tuple[str, Obj]]:
    out = []
    for path in _files():
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                out.append((str(path.relative_to(ROOT)), doc))
    return out


def _sample(name: str) -> Obj:
    doc: Obj = yaml.safe_load((SAMPLES / name).read_text())
    return doc


def _crds() -> dict[str, Obj]:
    """kind -> CRD, as committed in config/crd."""
    out = {}
    for path in CRD_DIR.glob("ome.io_*.yaml"):
        crd = yaml.safe_load(path.read_text())
        out[crd["spec"]["names"]["kind"]] = crd
    return out


CRDS = _crds()


def _schema(kind: str) -> Obj:
    schema: Obj = CRDS[kind]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def with_defaults(value: Any, schema: Obj) -> Any:
    """`value` with the schema's defaults filled in, as the apiserver's structural defaulting does."""
    value = copy.deepcopy(value)
    _default(value, schema)
    return value


def _default(value: Any, schema: Obj) -> None:
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for key, sub in props.items():
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
        for key, item in value.items():
            if key in props:
                _default(item, props[key])
            elif isinstance(schema.get("additionalProperties"), dict):
                _default(item, schema["additionalProperties"])
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            _default(item, schema["items"])


def _unique(doc: Obj, namespace: str, index: int) -> Obj:
    """A copy with a name no other object in the run uses (samples and catalog share names)."""
    out = copy.deepcopy(doc)
    meta = out.setdefault("metadata", {})
    meta.pop("namespace", None)
    meta["name"] = f"{meta['name'][:45]}-{namespace[-6:]}-{index}"
    return out


async def _create(client: Client, res: Resource, doc: Obj, namespace: str) -> Obj:
    for _attempt in range(50):  # discovery of fresh CRDs can lag a moment
        try:
            return await client.create(res, doc, namespace if res.namespaced else None)
        except errors.NotFound:
            await asyncio.sleep(0.1)
    raise AssertionError(f"{res.kind} never served")


@pytest.fixture
async def cluster_scoped(client: Client) -> AsyncIterator[list[tuple[Resource, str]]]:
    """Cluster-scoped objects to delete after the test (namespaced ones go with the namespace)."""
    created: list[tuple[Resource, str]] = []
    yield created
    for res, name in created:
        try:
            await client.delete(res, name)
        except errors.NotFound:
            pass


def test_printer_columns_in_config_crd_are_the_documented_ones() -> None:
    for kind, expected in (("InferenceService", ISVC_COLUMNS), ("InferenceReplica", IREP_COLUMNS)):
        cols = CRDS[kind]["spec"]["versions"][0]["additionalPrinterColumns"]
        assert [(c["name"].upper(), c.get("priority", 0) > 0) for c in cols] == expected, kind


async def test_all_crds_become_established(ome_crds: list[str]) -> None:
    assert sorted(ome_crds) == sorted(crd["metadata"]["name"] for crd in CRDS.values())
    assert len(ome_crds) == 14


async def test_samples_and_catalog_are_accepted_and_read_back_as_sent(
    client: Client, namespace: str, ome_crds: list[str], cluster_scoped: list[tuple[Resource, str]]
) -> None:
    docs = _docs()
    assert {d["kind"] for _, d in docs} == set(CRDS), "a kind has no sample"
    for index, (path, original) in enumerate(docs):
        res = resource_for(original["apiVersion"], original["kind"])
        doc = _unique(original, namespace, index)
        created = await _create(client, res, doc, namespace)
        if not res.namespaced:
            cluster_scoped.append((res, doc["metadata"]["name"]))
        expected = with_defaults(original["spec"], _schema(res.kind)["properties"]["spec"])
        assert created["spec"] == expected, f"{path}: the apiserver changed more than its defaults"
        got = await client.get(res, doc["metadata"]["name"], namespace if res.namespaced else None)
        assert got["spec"] == expected, path
        assert got["metadata"]["name"] == doc["metadata"]["name"]


async def _kubectl_out(kubeconfig: Path, *args: str) -> str:
    """Runs the cluster's kubectl (built with the control plane) and returns its output."""
    kubectl = bin_dir() / "kubectl"
    if not kubectl.is_file():
        found = shutil.which("kubectl")
        if found is None:
            pytest.skip(f"no kubectl in {kubectl.parent} or on PATH")
        kubectl = Path(found)
    proc = await asyncio.create_subprocess_exec(
        str(kubectl), f"--kubeconfig={kubeconfig}", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def _kubectl(kubeconfig: Path, *args: str) -> list[list[str]]:
    """kubectl's table output, the header row first, each row's cells cut at the headers' columns."""
    out = await _kubectl_out(kubeconfig, *args)
    header, *rows = [line for line in out.splitlines() if line.strip()]
    starts = [m.start() for m in re.finditer(r"\S+", header)]  # an empty cell prints as blanks
    bounds = list(zip(starts, [*starts[1:], None], strict=True))
    return [[line[a:b].strip() for a, b in bounds] for line in (header, *rows)]


@pytest.mark.parametrize("folder", CATALOG_DIRS, ids=lambda p: p.name)
async def test_catalog_applies_with_kustomize(kubeconfig: Path, ome_crds: list[str], folder: Path) -> None:
    """`kubectl apply -k` builds every catalog object, and the apiserver accepts them (server dry run)."""
    out = await _kubectl_out(kubeconfig, "apply", "-k", str(folder), "--dry-run=server", "-o", "name")
    names = sorted(out.split())
    docs = [d for path, d in _docs() if path.startswith(str(folder.relative_to(ROOT)))]
    assert names == sorted(f"{d['kind'].lower()}.ome.io/{d['metadata']['name']}" for d in docs)


def _headers(columns: list[tuple[str, bool]], wide: bool) -> list[str]:
    return ["NAME"] + [name for name, wide_only in columns if wide or not wide_only]


async def test_kubectl_get_isvc_prints_the_documented_columns(
    client: Client, namespace: str, kubeconfig: Path, ome_crds: list[str]
) -> None:
    isvc = _sample("inferenceservice_omenative.yaml")
    isvc["metadata"].pop("namespace")
    name = isvc["metadata"]["name"]
    created = await _create(client, INFERENCE_SERVICES, isvc, namespace)
    url = f"http://{name}.{namespace}.svc.cluster.local"
    now = "2026-01-01T00:00:00Z"
    created["status"] = {
        "url": url,
        "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": now},
            {"type": "RolloutPlanDrift", "status": "False", "reason": "InSync", "lastTransitionTime": now},
        ],
        "placement": {"phase": "Placed"},
        "rollout": {
            "activeRun": {
                "runID": "run-1",
                "openedAt": now,
                "pinnedAt": now,
                "plan": {"groups": [{"source": "Inline", "group": {"components": ["engine"], "blueGreen": {}}}]},
            }
        },
    }
    await client.update_status(INFERENCE_SERVICES, created)

    table = await _kubectl(kubeconfig, "get", "isvc", name, "-n", namespace)
    assert table[0] == _headers(ISVC_COLUMNS, wide=False)
    assert table[1][:-1] == [name, url, "True", "llama-3-2-3b-instruct", "srt-llama-3-2-3b-instruct"]

    wide = await _kubectl(kubeconfig, "get", "isvc", name, "-n", namespace, "-o", "wide")
    assert wide[0] == _headers(ISVC_COLUMNS, wide=True)
    assert wide[1][:-1] == [
        name, url, "True", "llama-3-2-3b-instruct", "srt-llama-3-2-3b-instruct", "Placed", "Inline", "False",
    ]  # fmt: skip


async def test_kubectl_get_irep_prints_the_documented_columns(
    client: Client, namespace: str, kubeconfig: Path, ome_crds: list[str]
) -> None:
    irep = _sample("inferencereplica_standalone.yaml")
    irep["metadata"].pop("namespace")
    name = irep["metadata"]["name"]
    irep["spec"]["replicas"] = 3
    created = await _create(client, INFERENCE_REPLICAS, irep, namespace)

    table = await _kubectl(kubeconfig, "get", "irep", name, "-n", namespace)
    assert table[0] == _headers(IREP_COLUMNS, wide=False)
    assert table[1][:-1] == [name, "engine", "3", "", "", ""]  # no status yet

    created["status"] = {"replicas": 3, "readyReplicas": 2, "availableReplicas": 1, "labelSelector": "a=b"}
    await client.update_status(INFERENCE_REPLICAS, created)
    table = await _kubectl(kubeconfig, "get", "irep", name, "-n", namespace)
    assert table[1][:-1] == [name, "engine", "3", "3", "2", "1"]


# --- rejections ----------------------------------------------------------------------------------


def _set(path: str, value: Any) -> Callable[[Obj], None]:
    def change(doc: Obj) -> None:
        *parents, last = path.split(".")
        node = doc
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value

    return change


def _drop(path: str) -> Callable[[Obj], None]:
    def change(doc: Obj) -> None:
        *parents, last = path.split(".")
        node = doc
        for part in parents:
            node = node[part]
        del node[last]

    return change


REJECTED = [
    pytest.param(
        "inferenceservice_minimal.yaml", _set("spec.deploymentMode", "MultiNode"),
        "spec.deploymentMode", 'Unsupported value: "MultiNode"', id="enum-deploymentMode",
    ),
    pytest.param(
        "inferencereplica_standalone.yaml", _drop("spec.component"),
        "spec.component", "Required value", id="required-component",
    ),
    pytest.param(
        "clusterbasemodel_llama-3-2-1b-instruct.yaml", _drop("spec.storage.storageUri"),
        "spec.storage.storageUri", "Required value", id="required-storageUri",
    ),
    pytest.param(
        "rolloutpolicy_canary-strict.yaml", _set("spec.blueGreen", {}),
        "spec", "exactly one of canary, blueGreen, or rollingUpdate must be set", id="cel-rolloutpolicy",
    ),
    pytest.param(
        "workloadcluster_worker-a.yaml", _set("spec.clusterSource.clusterProfileRef", {"name": "worker-a"}),
        "spec.clusterSource", "exactly one of kubeConfig or clusterProfileRef must be set", id="cel-workloadcluster",
    ),
    pytest.param(
        "acceleratorquota_team-beta.yaml", _drop("spec.parentRef"),
        "spec", "a ClusterQueue node must set parentRef", id="cel-acceleratorquota",
    ),
    pytest.param(
        "autoscalerpolicy_queue-depth.yaml", _set("spec.class", "HPA"),
        "spec", "class KEDA requires keda and forbids hpa; class HPA forbids keda", id="cel-autoscalerpolicy",
    ),
]  # fmt: skip


def _assert_names_field(err: errors.ApiError, field: str, message: str) -> None:
    assert isinstance(err, errors.Invalid), err
    causes = [(c.field, c.message) for c in err.causes]
    assert any(f == field and message in m for f, m in causes), causes
    assert field in err.message and message in err.message, err.message


@pytest.mark.parametrize(("sample", "change", "field", "message"), REJECTED)
async def test_schema_rejects_bad_objects_naming_the_field(
    client: Client, namespace: str, ome_crds: list[str], cluster_scoped: list[tuple[Resource, str]],
    sample: str, change: Callable[[Obj], None], field: str, message: str,
) -> None:  # fmt: skip
    doc = _unique(_sample(sample), namespace, 0)
    res = resource_for(doc["apiVersion"], doc["kind"])
    change(doc)
    with pytest.raises(errors.ApiError) as caught:
        created = await _create(client, res, doc, namespace)
        if not res.namespaced:
            cluster_scoped.append((res, created["metadata"]["name"]))
    _assert_names_field(caught.value, field, message)


async def test_acceleratorquota_name_longer_than_a_label_value_is_rejected(
    client: Client, namespace: str, ome_crds: list[str], cluster_scoped: list[tuple[Resource, str]]
) -> None:
    doc = _sample("acceleratorquota_team-beta.yaml")
    doc["metadata"]["name"] = f"team-{namespace[-6:]}-" + "x" * 60
    with pytest.raises(errors.ApiError) as caught:
        created = await _create(client, ACCELERATOR_QUOTAS, doc, namespace)
        cluster_scoped.append((ACCELERATOR_QUOTAS, created["metadata"]["name"]))
    assert isinstance(caught.value, errors.Invalid)
    assert "may not exceed 63 characters" in caught.value.message


async def test_inferencereplica_status_encoding_union_is_enforced(
    client: Client, namespace: str, ome_crds: list[str]
) -> None:
    irep = _sample("inferencereplica_standalone.yaml")
    irep["metadata"].pop("namespace")
    created = await _create(client, INFERENCE_REPLICAS, irep, namespace)
    columns = {"members": "0", "phases": [{"value": "Ready", "indexes": "0"}]}
    dense = [{"index": 0, "phase": "Ready"}]

    bad = copy.deepcopy(created)
    bad["status"] = {"instanceStatusColumns": columns}
    with pytest.raises(errors.ApiError) as caught:
        await client.update_status(INFERENCE_REPLICAS, bad)
    _assert_names_field(caught.value, "status", "instanceStatusColumns requires instanceStatusEncoding")

    bad["status"] = {"instanceStatusEncoding": "ColumnarV2", "instanceStatusColumns": columns,
                     "instanceStatuses": dense}
    with pytest.raises(errors.ApiError) as caught:
        await client.update_status(INFERENCE_REPLICAS, bad)
    _assert_names_field(caught.value, "status", "requires instanceStatusColumns and forbids instanceStatuses")

    bad["status"] = {"instanceStatusEncoding": "DenseV1", "instanceStatuses": dense}
    with pytest.raises(errors.ApiError) as caught:
        await client.update_status(INFERENCE_REPLICAS, bad)
    _assert_names_field(caught.value, "status.instanceStatusEncoding", 'Unsupported value: "DenseV1"')

    for status in ({"instanceStatuses": dense}, {"instanceStatusEncoding": "ColumnarV2",
                                                   "instanceStatusColumns": columns}):
        good = copy.deepcopy(created)
        good["status"] = status
        written = await client.update_status(INFERENCE_REPLICAS, good)
        assert written["status"] == status
        created = written

