from __future__ import annotations

import asyncio
import base64
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from ome.api import resources
from ome.framework import errors
from ome.framework.reconcile import Request
from ome.modelagent import hf, prepare, staging
from ome.modelagent.agent import ModelAgent, eligible, fingerprint
from ome.modelagent.prepare import PrepareSettings, SecretReader
from ome.modelagent.reporter import NodeReporter
from ome.models import labels
from ome.models.entries import Entry
from tests.support.fake_hub import FakeHub, Repo, tiny_llama_files
from tests.unit.nodeagent.fakes import FakeReader

Obj = dict[str, Any]
NODE = "gpu-node-1"


class FakeApi:
    """Node label JSON patches and ConfigMap merge patches, recorded and applied in memory."""

    def __init__(self) -> None:
        self.node_labels: dict[str, str] = {}
        self.configmaps: dict[str, dict[str, str]] = {}
        self.secrets: dict[tuple[str, str], Obj] = {}
        self.calls: list[tuple[str, str]] = []

    async def get(self, res: resources.Resource, name: str, namespace: str | None = None) -> Obj:
        if res is resources.SECRETS and (namespace or "", name) in self.secrets:
            return self.secrets[(namespace or "", name)]
        raise errors.NotFound(404, "NotFound", f"{res.kind} {name} not found")

    async def create(self, res: resources.Resource, obj: Obj, namespace: str | None = None) -> Obj:
        self.calls.append(("create", res.kind))
        self.configmaps[obj["metadata"]["name"]] = dict(obj["data"])
        return obj

    async def patch(self, res: resources.Resource, name: str, patch: Any, namespace: str | None = None, *,
                    patch_type: str = "merge", idempotent: bool = False) -> Obj:
        self.calls.append(("patch", res.kind))
        if res is resources.NODES:
            assert idempotent, "label patches are declared idempotent, so dropped connections are retried"
        if res is resources.NODES:
            for op in patch:
                key = op["path"].removeprefix("/metadata/labels/").replace("~1", "/").replace("~0", "~")
                if op["op"] == "remove":
                    if key not in self.node_labels:
                        raise errors.Invalid(422, "Invalid", "no such label")
                    del self.node_labels[key]
                else:
                    self.node_labels[key] = op["value"]
            return {}
        if name not in self.configmaps:
            raise errors.NotFound(404, "NotFound", name)
        for k, v in patch["data"].items():
            if v is None:
                self.configmaps[name].pop(k, None)
            else:
                self.configmaps[name][k] = v
        return {}

    def entry(self, key: str) -> Entry:
        parsed = Entry.loads(self.configmaps[NODE][key])
        assert parsed is not None
        return parsed


def cbm(name: str, uri: str, path: str | None = None, **meta: Any) -> Obj:
    storage: Obj = {"storageUri": uri}
    if path:
        storage["path"] = path
    return {"metadata": {"name": name, "uid": f"uid-{name}", **meta}, "spec": {"storage": storage}}


def agent_for(reader: FakeReader, api: FakeApi, tmp_path: Path, endpoint: str = "http://127.0.0.1:9") -> ModelAgent:
    settings = PrepareSettings(models_root=str(tmp_path / "root"), hf_endpoint=endpoint, progress_interval=0.05)
    return ModelAgent(reader, NodeReporter(api, NODE, "ome"), SecretReader(api), node_labels={"zone": "a"},
                      settings=settings)


async def settle(agent: ModelAgent) -> None:
    tasks = [t for _, t in agent._tasks.values()]
    await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 30)


def local_model(tmp_path: Path) -> Path:
    path = tmp_path / "llama"
    path.mkdir()
    (path / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                                                  "hidden_size": 4096, "num_hidden_layers": 32, "vocab_size": 128256,
                                                  "num_attention_heads": 32, "num_key_value_heads": 8,
                                                  "intermediate_size": 14336}))
    return path


async def test_local_model_becomes_ready_with_its_config(tmp_path: Path) -> None:
    reader, api = FakeReader(), FakeApi()
    reader.add(resources.CLUSTER_BASE_MODELS, cbm("llama", f"local://{local_model(tmp_path)}"))
    agent = agent_for(reader, api, tmp_path)
    await agent.reconcile(Request("", "llama"))
    await settle(agent)
    key = labels.model_label_key("ClusterBaseModel", "llama")
    assert api.node_labels == {key: "Ready"}
    entry = api.entry(labels.configmap_key("ClusterBaseModel", "llama"))
    assert entry.status == "Ready" and entry.config and entry.config["modelParameterSize"] == "8.03B"


async def test_missing_local_path_fails_with_the_reason(tmp_path: Path) -> None:
    reader, api = FakeReader(), FakeApi()
    reader.add(resources.CLUSTER_BASE_MODELS, cbm("gone", "local:///does/not/exist"))
    agent = agent_for(reader, api, tmp_path)
    await agent.reconcile(Request("", "gone"))
    await settle(agent)
    assert api.node_labels == {labels.model_label_key("ClusterBaseModel", "gone"): "Failed"}
    assert "local path /does/not/exist does not exist" in api.entry("clusterbasemodel.gone").message


@pytest.mark.parametrize("uri", ["s3://bucket/model", "oci://n/ns/b/bucket/o/model", "github://org/repo"])
async def test_unsupported_schemes_fail_instead_of_staying_updating(tmp_path: Path, uri: str) -> None:
    reader, api = FakeReader(), FakeApi()
    reader.add(resources.CLUSTER_BASE_MODELS, cbm("m", uri, path=str(tmp_path / "m")))
    agent = agent_for(reader, api, tmp_path)
    await agent.reconcile(Request("", "m"))
    await settle(agent)
    assert list(api.node_labels.values()) == ["Failed"]
    assert "unsupported storage scheme" in api.entry("clusterbasemodel.m").message


async def test_pvc_and_unselected_models_are_skipped(tmp_path: Path) -> None:
    reader, api = FakeReader(), FakeApi()
    reader.add(resources.CLUSTER_BASE_MODELS, cbm("p", "pvc://ns:claim/sub"))
    other = cbm("o", "local:///x")
    other["spec"]["storage"]["nodeSelector"] = {"zone": "b"}
    reader.add(resources.CLUSTER_BASE_MODELS, other)
    agent = agent_for(reader, api, tmp_path)
    await agent.reconcile(Request("", "p"))
    await agent.reconcile(Request("", "o"))
    assert api.calls == []


async def test_hf_model_downloads_verifies_and_publishes(tmp_path: Path) -> None:
    reader, api = FakeReader(), FakeApi()
    target = tmp_path / "models" / "tiny"
    reader.add(resources.CLUSTER_BASE_MODELS, cbm("tiny", "hf://org/tiny", path=str(target)))
    async with FakeHub({"org/tiny": Repo(tiny_llama_files())}) as hub:
        agent = agent_for(reader, api, tmp_path, hub.url)
        await agent.reconcile(Request("", "tiny"))
        await settle(agent)
    assert list(api.node_labels.values()) == ["Ready"]
    assert sorted(p.name for p in target.iterdir()) == [".ome-model.json", "config.json", "model.safetensors",
                                                         "tokenizer_config.json"]
    assert not staging.staging_dir(target).exists()
    assert api.entry("clusterbasemodel.tiny").config["modelArchitecture"] == "LlamaForCausalLM"  # type: ignore[index]


async def test_corrupt_hf_file_fails_and_never_appears_at_the_path(tmp_path: Path) -> None:
    reader, api = FakeReader(), FakeApi()
    target = tmp_path / "models" / "tiny"
    reader.add(resources.CLUSTER_BASE_MODELS, cbm("tiny", "hf://org/tiny", path=str(target)))
    async with FakeHub({"org/tiny": Repo(tiny_llama_files(), corrupt={"model.safetensors"})}) as hub:
        agent = agent_for(reader, api, tmp_path, hub.url)
        await agent.reconcile(Request("", "tiny"))
        await settle(agent)
    assert list(api.node_labels.values()) == ["Failed"]
    assert "checksum mismatch for model.safetensors" in api.entry("clusterbasemodel.tiny").message
    assert not target.exists()


async def test_gated_hf_model_uses_the_token_from_the_models_secret(tmp_path: Path) -> None:
    reader, api = FakeReader(), FakeApi()
    model = cbm("tiny", "hf://org/tiny", path=str(tmp_path / "t"), namespace="demo")
    model["spec"]["storage"]["key"] = "hf-token"
    reader.add(resources.BASE_MODELS, model)
    api.secrets[("demo", "hf-token")] = {"data": {"token": base64.b64encode(b"s3cret").decode()}}
    async with FakeHub({"org/tiny": Repo(tiny_llama_files(), token="s3cret")}) as hub:
        agent = agent_for(reader, api, tmp_path, hub.url)
        await agent.reconcile(Request("demo", "tiny"))
        await settle(agent)
    assert list(api.node_labels.values()) == ["Ready"]


async def test_missing_secret_fails_with_the_documented_message(tmp_path: Path) -> None:
    reader, api = FakeReader(), FakeApi()
    model = cbm("tiny", "hf://org/tiny", path=str(tmp_path / "t"))
    model["spec"]["storage"]["key"] = "hf-token"
    reader.add(resources.CLUSTER_BASE_MODELS, model)
    agent = agent_for(reader, api, tmp_path)
    await agent.reconcile(Request("", "tiny"))
    await settle(agent)
    assert api.entry("clusterbasemodel.tiny").message.startswith("Failed to retrieve secret ome/hf-token")


async def test_reconciling_again_writes_nothing_and_delete_releases(tmp_path: Path) -> None:
    reader, api = FakeReader(), FakeApi()
    reader.add(resources.CLUSTER_BASE_MODELS, cbm("llama", f"local://{local_model(tmp_path)}"))
    agent = agent_for(reader, api, tmp_path)
    await agent.reconcile(Request("", "llama"))
    await settle(agent)
    calls = len(api.calls)
    await agent.reconcile(Request("", "llama"))
    await settle(agent)
    assert len(api.calls) == calls
    reader.objects.clear()
    await agent.reconcile(Request("", "llama"))
    assert api.node_labels == {} and api.configmaps[NODE] == {}
    assert (tmp_path / "llama").is_dir()  # local:// files are never deleted


def test_fingerprint_ignores_node_selection_and_descriptive_fields() -> None:
    base = cbm("m", "local:///x")
    moved = cbm("m", "local:///x")
    moved["spec"]["storage"]["nodeSelector"] = {"zone": "b"}
    moved["spec"]["displayName"] = "Nice"
    moved["spec"]["storage"]["downloadPolicy"] = "ReuseIfExists"  # matters only for hf://
    assert fingerprint(base) == fingerprint(moved)
    relabelled = cbm("m", "local:///x", labels={"a": "b"})
    assert fingerprint(base) != fingerprint(relabelled)
    assert fingerprint(cbm("m", "hf://a/b")) != fingerprint(
        {**cbm("m", "hf://a/b"), "spec": {"storage": {"storageUri": "hf://a/b", "downloadPolicy": "ReuseIfExists"}}})


def test_deleting_models_are_not_eligible() -> None:
    assert not eligible(cbm("m", "local:///x", deletionTimestamp="now"), NODE, {})


async def test_reporter_removes_a_label_that_is_already_gone() -> None:
    api = FakeApi()
    reporter = NodeReporter(api, NODE, "ome")
    reporter.seed_labels({"models.ome.io/clusterbasemodel.x": "Ready", "zone": "a"})
    assert reporter.model_labels == {"models.ome.io/clusterbasemodel.x": "Ready"}
    await reporter.set_label("models.ome.io/clusterbasemodel.x", None)  # 422 from the fake: already absent
    assert reporter.model_labels == {}


class ThreadRecorder:
    """Wraps a function and records whether each call ran off the event loop's thread."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.loop_thread = threading.get_ident()
        self.off_loop: list[bool] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.off_loop.append(threading.get_ident() != self.loop_thread)
        return self.fn(*args, **kwargs)


async def test_deleting_weights_and_scanning_run_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    removals = ThreadRecorder(staging.remove_tree)
    scans = ThreadRecorder(prepare.read_config)
    monkeypatch.setattr(staging, "remove_tree", removals)
    monkeypatch.setattr(prepare, "read_config", scans)
    reader, api = FakeReader(), FakeApi()
    target = tmp_path / "models" / "tiny"
    reader.add(resources.CLUSTER_BASE_MODELS, cbm("tiny", "hf://org/tiny", path=str(target)))
    async with FakeHub({"org/tiny": Repo(tiny_llama_files())}) as hub:
        agent = agent_for(reader, api, tmp_path, hub.url)
        await agent.reconcile(Request("", "tiny"))
        await settle(agent)
    assert scans.off_loop == [True]
    model = reader.objects.pop(("ClusterBaseModel", None, "tiny"))
    model["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    reader.add(resources.CLUSTER_BASE_MODELS, model)
    await agent.reconcile(Request("", "tiny"))
    assert not target.exists()
    assert removals.off_loop and all(removals.off_loop)


async def test_the_progress_monitor_walks_the_download_directory_off_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    walks = ThreadRecorder(staging.directory_bytes)
    monkeypatch.setattr(staging, "directory_bytes", walks)
    reader, api = FakeReader(), FakeApi()
    reader.add(resources.CLUSTER_BASE_MODELS, cbm("tiny", "hf://org/tiny", path=str(tmp_path / "m" / "tiny")))
    async with FakeHub({"org/tiny": Repo(tiny_llama_files())}) as hub:
        agent = agent_for(reader, api, tmp_path, hub.url)
        await agent.reconcile(Request("", "tiny"))
        await settle(agent)
    assert walks.off_loop and all(walks.off_loop)


async def test_a_cancelled_download_holds_its_slot_until_its_thread_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One download slot: a model deleted mid-file keeps the slot until its thread has stopped."""
    file_done = threading.Event()
    started: list[str] = []

    def fake_plan(repo_id: str, revision: str, *, endpoint: str, token: str | None) -> hf.Plan:
        return hf.Plan("c0ffee", (hf.RemoteFile("model.safetensors", 1, None, None),))

    def slow_download(repo_id: str, p: hf.Plan, target: Path, *, stop: threading.Event, **_: Any) -> None:
        started.append(repo_id)
        if repo_id == "org/first":
            file_done.wait(30)  # a big file: the stop flag is read only between files
        if stop.is_set():
            raise hf.Cancelled(repo_id)

    monkeypatch.setattr(hf, "plan", fake_plan)
    monkeypatch.setattr(hf, "download", slow_download)
    monkeypatch.setattr(prepare, "read_config", lambda model, target: None)
    reader, api = FakeReader(), FakeApi()
    reader.add(resources.CLUSTER_BASE_MODELS, cbm("first", "hf://org/first", path=str(tmp_path / "first")))
    reader.add(resources.CLUSTER_BASE_MODELS, cbm("second", "hf://org/second", path=str(tmp_path / "second")))
    settings = PrepareSettings(models_root=str(tmp_path / "root"), progress_interval=60)
    agent = ModelAgent(reader, NodeReporter(api, NODE, "ome"), SecretReader(api), settings=settings, workers=1)
    await agent.reconcile(Request("", "first"))
    async with asyncio.timeout(10):
        while started != ["org/first"]:  # noqa: ASYNC110 -- the thread reports by appending
            await asyncio.sleep(0.01)
    reader.objects.pop(("ClusterBaseModel", None, "first"))
    releasing = asyncio.create_task(agent.reconcile(Request("", "first")))  # deleted: cancel its download
    await agent.reconcile(Request("", "second"))
    for _ in range(50):
        await asyncio.sleep(0)
    assert agent._slots.locked(), "the slot is still the cancelled download's"  # noqa: SLF001
    assert started == ["org/first"] and not releasing.done()
    file_done.set()  # the thread finishes its file, sees the stop flag and ends
    await asyncio.wait_for(releasing, 10)
    await settle(agent)
    assert started == ["org/first", "org/second"]
    assert api.node_labels == {labels.model_label_key("ClusterBaseModel", "second"): "Ready"}


async def test_run_to_end_waits_for_the_thread_even_when_cancelled_twice() -> None:
    stop, proceed, ended = threading.Event(), threading.Event(), threading.Event()

    def work() -> None:
        proceed.wait(30)
        ended.set()

    task = asyncio.create_task(prepare.run_to_end(stop, work))
    await asyncio.sleep(0)
    task.cancel()
    for _ in range(20):
        await asyncio.sleep(0)
    task.cancel()
    for _ in range(20):
        await asyncio.sleep(0)
    assert stop.is_set() and not task.done()
    proceed.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 10)
    assert ended.is_set()


async def test_a_node_label_change_reevaluates_its_models(tmp_path: Path) -> None:
    """The agent reads its Node from the cache on every reconcile (it watches the Node)."""
    reader, api = FakeReader(), FakeApi()
    node = reader.add(resources.NODES, {"metadata": {"name": NODE, "labels": {"zone": "b"}}})
    model = cbm("llama", f"local://{local_model(tmp_path)}")
    model["spec"]["storage"]["nodeSelector"] = {"zone": "a"}
    reader.add(resources.CLUSTER_BASE_MODELS, model)
    agent = agent_for(reader, api, tmp_path)  # its fallback labels say zone=a: the cached node wins
    await agent.reconcile(Request("", "llama"))
    await settle(agent)
    assert api.node_labels == {}
    node["metadata"]["labels"] = {"zone": "a"}
    await agent.reconcile(Request("", "llama"))
    await settle(agent)
    assert api.node_labels == {labels.model_label_key("ClusterBaseModel", "llama"): "Ready"}
    node["metadata"]["labels"] = {"zone": "c"}
    await agent.reconcile(Request("", "llama"))
    assert api.node_labels == {}


def test_the_agent_watches_only_its_own_node_and_maps_label_changes_to_every_model() -> None:
    from kubernetes_asyncio.client import Configuration  # noqa: PLC0415

    from ome.framework.client import Client  # noqa: PLC0415
    from ome.modelagent.main import AgentOptions, build  # noqa: PLC0415

    client = Client.from_configuration(Configuration(host="http://127.0.0.1:9"))
    manager, _ = build(client, AgentOptions(node_name=NODE, install_signal_handlers=False))
    nodes = [i for i in manager.cache.informers if i.resource == resources.NODES]
    assert [(i.field_selector, i.namespace, i.label_selector) for i in nodes] == [(f"metadata.name={NODE}", None, None)]
