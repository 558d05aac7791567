"""Rollout groups on the real control plane with kwok: a prefill-decode InferenceService (engine and
decoder on OMENative) rolled blue-green, by rolling update with maintainRatio, and as a sequence with a
soak, by the whole manager path (InferenceService, autoscaler, InferenceReplica, Instance rollout and
rollout coordination controllers)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from ome.api import resources
from ome.api.resources import INFERENCE_REPLICAS, INFERENCE_SERVICES, PODS
from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.framework import errors
from ome.framework.client import Client
from ome.framework.manager import Manager
from ome.models import labels as model_labels
from tests.e2e.isvc_support import (
    NODE,
    create_when_served,
    eventually,
    grouped_rollout_manager,
    manager_running,
    model_body,
)
from tests.e2e.watching import watching

Obj = dict[str, Any]
pytestmark = pytest.mark.usefixtures("ome_crds")


def pd_runtime(name: str) -> Obj:
    def runner(mode: str) -> Obj:
        return {"runner": {"name": "ome-container", "image": "sglang:1", "args": ["--disaggregation-mode", mode],
                           "ports": [{"containerPort": 8080, "name": "http1"}]}}

    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterServingRuntime",
        "metadata": {"name": name},
        "spec": {
            "supportedModelFormats": [{"modelFormat": {"name": "safetensors"},
                                       "modelFramework": {"name": "transformers"}, "autoSelect": True}],
            "engineConfig": runner("prefill"),
            "decoderConfig": runner("decode"),
        },
    }


@contextlib.asynccontextmanager
async def pd_catalog(client: Client, namespace: str) -> AsyncIterator[tuple[str, str]]:
    model, runtime = f"llama-{namespace[-6:]}", f"srt-pd-{namespace[-6:]}"
    label = model_labels.model_label_key("ClusterBaseModel", model)
    await create_when_served(client, resources.CLUSTER_BASE_MODELS, model_body(model))
    await client.patch(resources.CLUSTER_BASE_MODELS, model, {"status": {"state": "Ready", "nodesReady": [NODE]}},
                       subresource="status")
    await create_when_served(client, resources.CLUSTER_SERVING_RUNTIMES, pd_runtime(runtime))
    await client.patch(resources.NODES, NODE, {"metadata": {"labels": {label: "Ready"}}})
    try:
        yield model, runtime
    finally:
        await client.patch(resources.NODES, NODE, {"metadata": {"labels": {label: None}}})
        for res, name in ((resources.CLUSTER_SERVING_RUNTIMES, runtime), (resources.CLUSTER_BASE_MODELS, model)):
            with contextlib.suppress(errors.NotFound):
                await client.delete(res, name)


@pytest.fixture
async def manager(kubeconfig: Path, client: Client) -> AsyncIterator[Manager]:
    async with manager_running(await grouped_rollout_manager(client, InferenceServiceConfig())) as mgr:
        yield mgr


def service(name: str, model: str, runtime: str, engines: int, decoders: int, rollout: Obj) -> Obj:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name},
        "spec": {
            "deploymentMode": "OMENative",
            "model": {"name": model},
            "runtime": {"name": runtime},
            "engine": {"minReplicas": engines, "maxReplicas": engines},
            "decoder": {"minReplicas": decoders, "maxReplicas": decoders},
            "rollout": rollout,
        },
    }


async def settled(client: Client, ns: str, name: str, engines: int, decoders: int) -> dict[str, str]:
    """Both replicas have every Instance Ready on one revision; their revision hashes."""
    async def check() -> dict[str, str] | None:
        out = {}
        for component, want in (("engine", engines), ("decoder", decoders)):
            st = (await client.get(INFERENCE_REPLICAS, f"{name}-{component}", ns)).get("status") or {}
            rows = st.get("instanceStatuses") or []
            if len(rows) != want or st.get("currentRevision") != st.get("updateRevision") or not all(
                r.get("phase") == "Ready" and r.get("runningRevision") == st.get("updateRevision") for r in rows
            ):
                return None
            out[component] = str(st["updateRevision"]).rsplit("-", 1)[-1]
        return out

    return await eventually(check, timeout=120)  # type: ignore[no-any-return]


def serving(pod: Obj) -> bool:
    if pod["metadata"].get("deletionTimestamp") or (pod.get("status") or {}).get("phase") != "Running":
        return False
    conds = {c["type"]: c["status"] for c in (pod.get("status") or {}).get("conditions") or []}
    return conds.get("ome.io/serving") == "True"


@dataclass
class PairWatch:
    """Serving pods per (component, revision hash) after every pod event, and every moment an old
    engine served with no old decoder, or no engine served with the decoder revision it pairs with."""

    pairs: dict[str, str]
    """engine revision hash -> the decoder revision hash its pods pair with."""
    pods: dict[str, Obj] = field(default_factory=dict)
    events: int = 0
    unpaired: list[str] = field(default_factory=list)
    seen: set[tuple[str, str]] = field(default_factory=set)

    def observe(self, event: str, pod: Obj) -> None:
        name = pod["metadata"]["name"]
        if event == "DELETED":
            self.pods.pop(name, None)
        else:
            self.pods[name] = pod
        self.events += 1
        count: dict[tuple[str, str], int] = {}
        for p in self.pods.values():
            if serving(p):
                labels = p["metadata"]["labels"]
                key = (labels["component"], labels["ome.io/revision-hash"])
                count[key] = count.get(key, 0) + 1
                self.seen.add(key)
        if len(self.pairs) < 2:
            return  # the new revisions are not known yet: nothing of them serves
        old_engine, new_engine = list(self.pairs)
        # An old engine talks to the old decoder revision for its whole life: never without one.
        n = count.get(("engine", old_engine), 0)
        if n and not count.get(("decoder", self.pairs[old_engine])):
            self.unpaired.append(f"old engine {old_engine} x{n} serving, old decoder none (event {self.events})")
        # And some engine always has its decoder revision serving (the documented pair).
        if not any(count.get(("engine", e)) and count.get(("decoder", d)) for e, d in self.pairs.items()):
            self.unpaired.append(f"no engine serving with its decoder revision (event {self.events})")


@contextlib.asynccontextmanager
async def watching_pods(client: Client, ns: str, watch: Any) -> AsyncIterator[None]:
    async with watching(client, PODS, ns, watch.observe) as items:
        for pod in items:
            watch.observe("ADDED", pod)
        yield


def env_of(pod: Obj) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in pod["spec"]["containers"][0].get("env") or []}


async def live_pods(client: Client, ns: str, component: str) -> list[Obj]:
    items, _ = await client.list(PODS, ns, label_selector={"component": component})
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


async def set_images(client: Client, ns: str, name: str, image: str, **extra: Any) -> None:
    patch: Obj = {"spec": {c: {"runner": {"image": image}} for c in ("engine", "decoder")}}
    patch["spec"].update(extra)
    await client.patch(INFERENCE_SERVICES, name, patch, ns)


async def test_blue_green_group_never_leaves_old_engines_without_old_decoders(
    client: Client, namespace: str, manager: Manager
) -> None:
    async with pd_catalog(client, namespace) as (model, runtime):
        rollout = {"pairingProtocol": "kv-v1", "groups": [{"components": ["engine", "decoder"]}]}
        await client.create(INFERENCE_SERVICES, service("pd", model, runtime, 2, 2, rollout), namespace)
        old = await settled(client, namespace, "pd", 2, 2)
        engines = await live_pods(client, namespace, "engine")
        # The pairing protocol on pods, the revision Services and the ControllerRevisions; peer variables.
        assert {p["metadata"]["labels"].get("ome.io/pairing-protocol") for p in engines} == {"kv-v1"}
        rev_svc = await client.get(resources.SERVICES, f"pd-decoder-rev-{old['decoder']}", namespace)
        assert rev_svc["metadata"]["labels"]["ome.io/pairing-protocol"] == "kv-v1"
        cr = await client.get(resources.CONTROLLER_REVISIONS, f"pd-engine-{old['engine']}", namespace)
        assert cr["metadata"]["labels"]["ome.io/pairing-protocol"] == "kv-v1"
        env = env_of(engines[0])
        assert env["OME_DECODER_ENDPOINT"] == f"pd-decoder.{namespace}.svc.cluster.local"
        assert env["OME_DECODER_REVISION_ENDPOINT"] == f"pd-decoder-rev-{old['decoder']}.{namespace}.svc.cluster.local"
        assert env_of((await live_pods(client, namespace, "decoder"))[0])["OME_ENGINE_ENDPOINT"] == (
            f"pd-engine.{namespace}.svc.cluster.local")

        watch = PairWatch(pairs={old["engine"]: old["decoder"]})
        phases: set[str] = set()

        def note_phases(event: str, isvc: Obj) -> None:
            # From a watch: every status the coordination controller writes is seen, however brief (a poll
            # on a loaded machine can miss all of a fast rollout's phases between two reads).
            for g in ((isvc.get("status") or {}).get("rolloutCoordination") or {}).get("groups") or []:
                phases.add(g.get("phase"))

        async with watching_pods(client, namespace, watch), \
                watching(client, INFERENCE_SERVICES, namespace, note_phases):
            await set_images(client, namespace, "pd", "sglang:2")

            async def new_hashes() -> dict[str, str] | None:
                out = {}
                for c in ("engine", "decoder"):
                    st = (await client.get(INFERENCE_REPLICAS, f"pd-{c}", namespace)).get("status") or {}
                    h = str(st.get("updateRevision") or "").rsplit("-", 1)[-1]
                    if not h or h == old[c]:
                        return None
                    out[c] = h
                return out

            new = await eventually(new_hashes, timeout=60)
            watch.pairs[new["engine"]] = new["decoder"]

            async def done() -> bool:
                with contextlib.suppress(AssertionError):
                    return bool(await settled(client, namespace, "pd", 2, 2) == new)
                return False

            await eventually(done, timeout=180, interval=0.3)
        assert watch.events > 10, watch.events
        assert not watch.unpaired, watch.unpaired[:5]
        assert ("engine", old["engine"]) in watch.seen and ("engine", new["engine"]) in watch.seen
        assert phases & {"Surging", "Waiting", "Shifting", "ScalingDown"}, phases
        # New engines pair with the new decoder revision.
        for pod in await live_pods(client, namespace, "engine"):
            assert env_of(pod)["OME_DECODER_REVISION_ENDPOINT"].startswith(f"pd-decoder-rev-{new['decoder']}.")

        async def coordinated() -> bool:
            isvc = await client.get(INFERENCE_SERVICES, "pd", namespace)
            cond: Obj = next((c for c in isvc["status"].get("conditions") or []
                         if c["type"] == "RolloutCoordinationReady"), {})
            groups = isvc["status"].get("rolloutCoordination", {}).get("groups") or []
            return cond.get("status") == "True" and [g["phase"] for g in groups] == ["Idle"]

        await eventually(coordinated, timeout=60)


async def test_rolling_group_keeps_the_ratio_within_tolerance(
    client: Client, namespace: str, manager: Manager
) -> None:
    async with pd_catalog(client, namespace) as (model, runtime):
        rollout = {"groups": [{"components": ["engine", "decoder"],
                               "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
                               "maintainRatio": {"tolerance": 25}}]}
        await client.create(INFERENCE_SERVICES, service("ratio", model, runtime, 4, 2, rollout), namespace)
        old = await settled(client, namespace, "ratio", 4, 2)
        await set_images(client, namespace, "ratio", "sglang:2")
        gaps: list[float] = []
        holds: set[str] = set()
        deadline = time.monotonic() + 180
        finished = False
        midway = 0  # snapshots taken while the rollout was under way (how many depends on the load)
        while time.monotonic() < deadline and not finished:
            items, _ = await client.list(INFERENCE_REPLICAS, namespace)  # one consistent snapshot
            progress: dict[str, float] = {}
            targets = {}
            for ir in items:
                st = ir.get("status") or {}
                component, target = ir["spec"]["component"], st.get("updateRevision") or ""
                targets[component] = target.rsplit("-", 1)[-1]
                rows = st.get("instanceStatuses") or []
                on = sum(1 for r in rows if r.get("runningRevision") == target or (
                    r.get("phase") == "Updating" and r.get("targetRevision") == target))
                progress[component] = on / int(ir["spec"].get("replicas") or 1)
                if (hold := st.get("rolloutHold")) is not None:
                    holds.add(hold["gate"])
            if all(targets.get(c) and targets[c] != old[c] for c in ("engine", "decoder")):
                gaps.append(abs(progress["engine"] - progress["decoder"]))
                finished = progress["engine"] == 1.0 and progress["decoder"] == 1.0
                midway += not finished and any(0.0 < p < 1.0 for p in progress.values())
            await asyncio.sleep(0.15)
        assert finished, gaps[-5:]
        await settled(client, namespace, "ratio", 4, 2)
        assert midway >= 2 and max(gaps) <= 0.25 + 1e-9, gaps
        assert "Ratio" in holds, holds


async def test_a_sequence_rolls_the_decoder_then_waits_out_the_soak(
    client: Client, namespace: str, manager: Manager
) -> None:
    async with pd_catalog(client, namespace) as (model, runtime):
        rollout = {"groups": [{"components": ["decoder"], "soak": "6s"}, {"components": ["engine"]}]}
        await client.create(INFERENCE_SERVICES, service("seq", model, runtime, 1, 1, rollout), namespace)
        old = await settled(client, namespace, "seq", 1, 1)
        await set_images(client, namespace, "seq", "sglang:2")
        reasons: list[str] = []
        first_new_engine: datetime | None = None
        decoder_done: datetime | None = None
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            isvc = await client.get(INFERENCE_SERVICES, "seq", namespace)
            hold = (((isvc.get("status") or {}).get("components") or {}).get("engine") or {}).get(
                "lifecycle", {}).get("rolloutHold") or {}
            if hold.get("reason") and (not reasons or reasons[-1] != f"{hold['gate']}|{hold['reason']}"):
                reasons.append(f"{hold['gate']}|{hold['reason']}")
            decoder = await client.get(INFERENCE_REPLICAS, "seq-decoder", namespace)
            ready: Obj = next((c for c in decoder["status"].get("conditions") or [] if c["type"] == "Ready"), {})
            dst = decoder.get("status") or {}
            if decoder_done is None and dst.get("currentRevision") == dst.get("updateRevision") and \
                    ready.get("status") == "True" and not dst["updateRevision"].endswith(old["decoder"]):
                decoder_done = datetime.fromisoformat(ready["lastTransitionTime"].replace("Z", "+00:00"))
            engines = await live_pods(client, namespace, "engine")
            fresh = [p for p in engines if p["metadata"]["labels"]["ome.io/revision-hash"] != old["engine"]]
            if fresh and first_new_engine is None:
                first_new_engine = datetime.fromisoformat(
                    fresh[0]["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
                engine_started = time.monotonic()
            if first_new_engine is not None and time.monotonic() - engine_started > 1:
                break
            await asyncio.sleep(0.2)
        assert decoder_done is not None and first_new_engine is not None, reasons
        # While the decoder rolls the engine is held by the plan or by the sequence; which of the two a
        # poll sees, if any, depends on how fast one decoder Instance moves (a loaded machine can roll it
        # between two polls, or even between two status writes), so only their kind is checked here: the
        # hold itself is the soak reason and the engine's start after it, below (the reason texts are
        # unit-tested in test_coordination_plan).
        before_soak = reasons[:reasons.index(soak)] if (soak := next(
            (r for r in reasons if r.startswith("Sequential|Sequential.Soak")), None)) else reasons
        assert all(r.split("|")[0] in ("Plan", "Sequential") for r in before_soak), reasons
        assert "Sequential|Sequential.Soak: engine waiting out the 6s soak after decoder" in reasons, reasons
        assert (first_new_engine - decoder_done).total_seconds() >= 5, (first_new_engine, decoder_done)
        new = await settled(client, namespace, "seq", 1, 1)
        assert new["engine"] != old["engine"] and new["decoder"] != old["decoder"]
        isvc = await client.get(INFERENCE_SERVICES, "seq", namespace)
        groups = isvc["status"]["rolloutCoordination"]["groups"]
        assert [(g["policy"], g["order"]) for g in groups] == [("Sequential", ["decoder", "engine"])]


async def test_a_pairing_protocol_change_keeps_a_same_token_pair_serving(
    client: Client, namespace: str, manager: Manager
) -> None:
    async with pd_catalog(client, namespace) as (model, runtime):
        rollout = {"pairingProtocol": "kv-v1", "groups": [{"components": ["engine", "decoder"], "blueGreen": {}}]}
        await client.create(INFERENCE_SERVICES, service("tok", model, runtime, 2, 2, rollout), namespace)
        await settled(client, namespace, "tok", 2, 2)
        lowest = {"kv-v1": 1 << 30}
        tokens_seen: set[str] = set()
        gaps: list[Any] = []

        class TokenWatch:
            pods: dict[str, Obj] = {}
            events = 0

            def observe(self, event: str, pod: Obj) -> None:
                name = pod["metadata"]["name"]
                if event == "DELETED":
                    self.pods.pop(name, None)
                else:
                    self.pods[name] = pod
                self.events += 1
                pairs: dict[str, set[str]] = {}
                for p in self.pods.values():
                    if serving(p):
                        labels = p["metadata"]["labels"]
                        token = labels.get("ome.io/pairing-protocol", "")
                        tokens_seen.add(token)
                        pairs.setdefault(token, set()).add(labels["component"])
                same = [t for t, comps in pairs.items() if {"engine", "decoder"} <= comps]
                if self.events > 4 and not same:  # past the initial listing of the four pods
                    gaps.append(sorted((p["metadata"]["name"], p["metadata"]["labels"].get(
                        "ome.io/pairing-protocol", ""), serving(p)) for p in self.pods.values()))
                if self.events > 4:
                    lowest["kv-v1"] = min(lowest["kv-v1"], len(same))

        watch = TokenWatch()
        async with watching_pods(client, namespace, watch):
            await client.patch(INFERENCE_SERVICES, "tok", {"spec": {"rollout": {"pairingProtocol": "kv-v2"}}},
                               namespace)

            async def moved() -> bool:
                pods = await live_pods(client, namespace, "engine") + await live_pods(client, namespace, "decoder")
                return len(pods) == 4 and all(p["metadata"]["labels"].get("ome.io/pairing-protocol") == "kv-v2"
                                              for p in pods) and all(serving(p) for p in pods)

            await eventually(moved, timeout=180, interval=0.3)
        assert watch.events > 10 and tokens_seen >= {"kv-v1", "kv-v2"}, tokens_seen
        assert lowest["kv-v1"] >= 1, gaps[:3]
