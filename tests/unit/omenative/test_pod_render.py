from __future__ import annotations

import pytest

from ome.omenative import instance_names as names
from ome.omenative import pod_render, revisions
from tests.unit.omenative.builders import replica, template


def render(rep: dict, index: int = 0, incarnation: int = 1) -> dict[str, dict]:
    data = revisions.from_spec(rep["spec"])
    assert data is not None
    ident = pod_render.PodIdentity("chat", "engine", index, incarnation, "", 0, "abc12345", 3)
    return {p["metadata"]["name"]: p for p in pod_render.instance_pods(rep, data, ident)}


def env(pod: dict, container: int = 0) -> dict[str, str]:
    return {e["name"]: e["value"] for e in pod["spec"]["containers"][container]["env"]}


def test_pod_names_follow_isvc_component_index_runner_ordinal() -> None:
    assert sorted(render(replica(workers=2), index=4)) == [
        "chat-engine-4-leader-0",
        "chat-engine-4-worker-0",
        "chat-engine-4-worker-1",
    ]


def test_standalone_replica_names_pods_after_itself() -> None:
    rep = replica("llama-pool")
    del rep["spec"]["parentRef"]
    assert names.base_name(rep) == "llama-pool"


def test_ome_labels_win_over_the_template_and_template_labels_stay() -> None:
    rep = replica(workers=1)
    for runner in rep["spec"]["runners"]:
        runner["template"]["metadata"]["labels"]["ome.io/runner"] = "bogus"
    pod = render(rep)["chat-engine-0-worker-0"]
    assert pod["metadata"]["labels"] == {
        "team": "llm",
        "ome.io/inferenceservice": "chat",
        "component": "engine",
        "ome.io/managed-by": "OMENative",
        "ome.io/instance-index": "0",
        "ome.io/instance-incarnation": "1",
        "ome.io/runner": "worker",
        "ome.io/pod-ordinal": "0",
        "ome.io/revision-hash": "abc12345",
        "scheduling.x-k8s.io/pod-group": "chat-engine-0",
    }


def test_pairing_protocol_label_only_when_set() -> None:
    rep = replica(pairingProtocol="nixl-v1")
    assert (
        render(rep)["chat-engine-0-default-0"]["metadata"]["labels"]["ome.io/pairing-protocol"] == "nixl-v1"
    )
    assert "ome.io/pairing-protocol" not in render(replica())["chat-engine-0-default-0"]["metadata"]["labels"]


def test_single_pod_env_has_no_leader_variables() -> None:
    assert env(render(replica())["chat-engine-0-default-0"]) == {
        "OME_INFERENCESERVICE_NAME": "chat",
        "OME_COMPONENT": "engine",
        "OME_COMPONENT_REPLICAS": "3",
        "OME_INSTANCE_INDEX": "0",
        "OME_RUNNER": "default",
        "OME_RUNNER_SIZE": "1",
        "OME_RUNNER_INDEX": "0",
        "OME_INSTANCE_SUBDOMAIN": "chat-engine-0",
    }


@pytest.mark.parametrize(
    ("pod", "rank", "runner_index"),
    [
        ("chat-engine-2-leader-0", "0", "0"),
        ("chat-engine-2-worker-0", "1", "0"),
        ("chat-engine-2-worker-1", "2", "1"),
    ],
    ids=["leader", "worker-0", "worker-1"],
)
def test_multi_pod_env_gives_rank_count_and_leader_address(pod: str, rank: str, runner_index: str) -> None:
    got = env(render(replica(workers=2), index=2)[pod])
    assert got["OME_LEADER_ADDRESS"] == "chat-engine-2-leader-0.chat-engine-headless"
    assert (got["OME_INSTANCE_POD_RANK"], got["OME_INSTANCE_POD_COUNT"]) == (rank, "3")
    assert got["OME_RUNNER_INDEX"] == runner_index


def test_ome_env_overrides_same_name_vars_in_every_container_but_init() -> None:
    rep = replica()
    spec = rep["spec"]["runners"][0]["template"]["spec"]
    spec["containers"][0]["env"] = [{"name": "OME_RUNNER", "value": "x"}, {"name": "KEEP", "value": "1"}]
    spec["containers"].append({"name": "sidecar", "image": "s"})
    spec["initContainers"] = [{"name": "init", "image": "i"}]
    pod = render(rep)["chat-engine-0-default-0"]
    assert env(pod)["OME_RUNNER"] == "default" and env(pod)["KEEP"] == "1"
    assert [e["name"] for e in pod["spec"]["containers"][0]["env"]].count("OME_RUNNER") == 1
    assert env(pod, 1)["OME_RUNNER"] == "default"
    assert "env" not in pod["spec"]["initContainers"][0]


def test_tpu_variables_for_multi_pod_tpu_instances_only() -> None:
    rep = replica(workers=1)
    for runner in rep["spec"]["runners"]:
        runner["template"]["spec"]["containers"][0]["resources"] = {"limits": {"google.com/tpu": "4"}}
    got = env(render(rep)["chat-engine-0-worker-0"])
    assert got["TPU_WORKER_ID"] == "1"
    assert got["TPU_WORKER_HOSTNAMES"] == (
        "chat-engine-0-leader-0.chat-engine-headless,chat-engine-0-worker-0.chat-engine-headless"
    )
    assert "TPU_WORKER_ID" not in env(render(replica(workers=1))["chat-engine-0-worker-0"])


def test_serving_readiness_gate_added_once() -> None:
    rep = replica()
    rep["spec"]["runners"][0]["template"] = template(readinessGates=[{"conditionType": "ome.io/serving"}])
    pod = render(rep)["chat-engine-0-default-0"]
    assert pod["spec"]["readinessGates"] == [{"conditionType": "ome.io/serving"}]
    assert (
        pod["spec"]["subdomain"] == "chat-engine-headless"
        and pod["spec"]["hostname"] == pod["metadata"]["name"]
    )


def test_long_service_names_are_truncated_to_a_dns_label() -> None:
    name = names.headless_service_name("x" * 60, "engine")
    assert len(name) == 63 and name.endswith("engine-headless")


def test_revision_hash_covers_worker_template_and_pairing_protocol() -> None:
    base = revisions.from_spec(replica(workers=1)["spec"])
    worker_changed = replica(workers=1)
    worker_changed["spec"]["runners"][0]["template"]["spec"]["containers"][0]["image"] = "img:2"
    paired = replica(workers=1, pairingProtocol="p1")
    assert base is not None
    hashes = {
        revisions.revision_hash(d)
        for d in (base, revisions.from_spec(worker_changed["spec"]), revisions.from_spec(paired["spec"]))
        if d
    }
    assert len(hashes) == 3 and all(len(h) == 8 for h in hashes)


def test_revision_pruning_keeps_live_and_newest() -> None:
    existing = [{"metadata": {"name": f"r{i}"}, "revision": i} for i in range(1, 6)]
    assert revisions.prunable(existing, live={"r1"}, limit=2) == ["r3", "r2"]
