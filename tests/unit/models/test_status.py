from __future__ import annotations

from typing import Any

import pytest

from ome.models import status
from ome.models.entries import Entry, Progress
from ome.models.status import NodeReport

Obj = dict[str, Any]


def model(name: str = "m", namespace: str | None = None, uri: str = "hf://org/m", **extra: Any) -> Obj:
    meta: Obj = {"name": name, "generation": 3, "resourceVersion": "7"}
    if namespace:
        meta["namespace"] = namespace
    return {"metadata": meta, "spec": {"storage": {"storageUri": uri}}, **extra}


@pytest.mark.parametrize(
    ("ready", "failed", "state"),
    [((), (), "In_Transit"), (("n1",), (), "Ready"), (("n1",), ("n2",), "Ready"), ((), ("n2",), "Failed")],
    ids=["nothing", "one-ready", "ready-wins-over-failed", "only-failed"],
)
def test_lifecycle_state_follows_documented_rules(ready: tuple[str, ...], failed: tuple[str, ...],
                                                  state: str) -> None:
    assert status.lifecycle_state(ready, failed) == state


def test_updating_nodes_keep_the_model_in_transit_and_show_progress() -> None:
    progress = Progress("Downloading", total_bytes=4 * 1024**3, completed_bytes=1024**3)
    verdict = status.from_nodes([NodeReport("n2", "Updating", Entry("m", "Updating", progress=progress))])
    assert verdict.state == "In_Transit"
    assert verdict.message == "downloading on n2: 1.0 GiB of 4.0 GiB (25%)"


def test_failed_node_reason_reaches_the_message_and_nodes_are_sorted() -> None:
    verdict = status.from_nodes([
        NodeReport("n3", "Failed", Entry("m", "Failed", message="local path /x does not exist")),
        NodeReport("n1", "Failed", None),
    ])
    assert verdict.state == "Failed" and verdict.nodes_failed == ("n1", "n3")
    assert verdict.message == "failed on n1: no reason reported; failed on n3: local path /x does not exist"


def test_entry_without_label_does_not_count_as_ready() -> None:
    verdict = status.from_nodes([NodeReport("n1", None, Entry("m", "Ready"))])
    assert verdict.state == "In_Transit" and verdict.nodes_ready == ()


@pytest.mark.parametrize(
    ("report", "holds"),
    [(NodeReport("n", "Ready"), True), (NodeReport("n", None, Entry("m", "Updating")), True),
     (NodeReport("n", None, Entry("m", "Deleted")), False), (NodeReport("n"), False)],
)
def test_a_node_holds_the_model_while_it_reports_it(report: NodeReport, holds: bool) -> None:
    assert report.holds_model is holds


@pytest.mark.parametrize(
    ("obj", "pvc", "state", "reason"),
    [
        (model(namespace="demo", uri="pvc://store/llama"), {"status": {"phase": "Bound"}}, "Ready", "PVCBound"),
        (model(namespace="demo", uri="pvc://store/llama"), {"status": {"phase": "Pending"}}, "In_Transit",
         "PVCNotBound"),
        (model(namespace="demo", uri="pvc://store/llama"), None, "Failed", "PVCNotFound"),
        (model(namespace="demo", uri="pvc://demo:store/llama"), None, "Failed", "PVCInvalid"),
        (model(uri="pvc://store/llama"), None, "Failed", "PVCInvalid"),
        (model(uri="pvc://store"), None, "Failed", "PVCInvalid"),
    ],
    ids=["bound", "pending", "missing", "basemodel-with-ns", "cluster-without-ns", "no-subpath"],
)
def test_pvc_models_follow_their_claim(obj: Obj, pvc: Obj | None, state: str, reason: str) -> None:
    verdict = status.from_pvc(obj, pvc)
    assert (verdict.state, verdict.reason) == (state, reason)


def test_pvc_not_found_message_names_the_claim() -> None:
    verdict = status.from_pvc(model(uri="pvc://llama-demo:model-storage/llama"), None)
    assert verdict.message == "PVC llama-demo/model-storage not found"


def test_condition_time_moves_only_when_readiness_flips() -> None:
    obj = model()
    first = status.desired_status(obj, status.Verdict("In_Transit", "InTransit", "a"), "T1")
    obj["status"] = first
    same = status.desired_status(obj, status.Verdict("In_Transit", "InTransit", "b"), "T2")
    flipped = status.desired_status(obj, status.Verdict("Ready", "NodesReady", "c", ("n1",)), "T3")
    assert same["conditions"][0]["lastTransitionTime"] == "T1"
    assert flipped["conditions"][0]["lastTransitionTime"] == "T3"
    assert flipped["nodesReady"] == ["n1"] and flipped["observedGeneration"] == 3


def test_status_differs_only_on_real_change() -> None:
    obj = model()
    verdict = status.Verdict("Ready", "NodesReady", "ready on 1 node(s): n1", ("n1",))
    obj["status"] = status.desired_status(obj, verdict, "T1")
    assert not status.status_differs(obj, status.desired_status(obj, verdict, "T9"))
    other = status.Verdict("Ready", "NodesReady", "ready on 2 node(s): n1, n2", ("n1", "n2"))
    assert status.status_differs(obj, status.desired_status(obj, other, "T9"))


def test_spec_fill_never_overwrites_user_values() -> None:
    spec = {"modelArchitecture": "Mine", "modelFormat": {"name": "safetensors"}}
    config = {"modelArchitecture": "LlamaForCausalLM", "modelType": "llama", "modelParameterSize": "8.03B",
              "modelFormat": {"name": "safetensors", "version": "1.0.0"}, "maxTokens": 131072,
              "modelFramework": {"name": "transformers", "version": "4.42.3"}, "modelCapabilities": ["TEXT_TO_TEXT"]}
    fill = status.spec_fill(spec, config)
    assert "modelArchitecture" not in fill
    assert fill["modelFormat"] == {"version": "1.0.0"}
    assert fill["modelType"] == "llama" and fill["maxTokens"] == 131072
    assert status.spec_fill({**spec, **fill, "modelFormat": {"name": "safetensors", "version": "1.0.0"}},
                            config) == {}
