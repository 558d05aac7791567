"""Runtime config + InferenceService component merge: strategic-merge semantics, the ISVC winning."""

from __future__ import annotations

from ome.resolution.merge import apply_runner, merge_component, strategic_merge, upsert_env


def test_scalars_and_maps_from_isvc_win_and_runtime_keys_survive() -> None:
    runtime = {"minReplicas": 1, "nodeSelector": {"a": "1", "b": "1"}, "annotations": {"x": "rt"}}
    isvc = {"minReplicas": 2, "nodeSelector": {"b": "2"}}
    merged = merge_component(runtime, isvc)
    assert merged == {"minReplicas": 2, "nodeSelector": {"a": "1", "b": "2"}, "annotations": {"x": "rt"}}


def test_unset_isvc_value_keeps_runtime_value() -> None:
    assert merge_component({"maxReplicas": 5}, {"maxReplicas": None}) == {"maxReplicas": 5}


def test_containers_merge_by_name_and_env_by_name() -> None:
    runtime = {
        "containers": [
            {
                "name": "ome-container",
                "image": "a",
                "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "1"}],
            }
        ]
    }
    isvc = {
        "containers": [
            {"name": "ome-container", "env": [{"name": "B", "value": "2"}, {"name": "C", "value": "3"}]},
            {"name": "sidecar", "image": "s"},
        ]
    }
    merged = merge_component(runtime, isvc)
    main, sidecar = merged["containers"]
    assert main["image"] == "a"
    assert main["env"] == [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "2"},
        {"name": "C", "value": "3"},
    ]
    assert sidecar == {"name": "sidecar", "image": "s"}


def test_volumes_by_name_and_volume_mounts_by_mount_path() -> None:
    runtime = {
        "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory"}}],
        "runner": {"volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}]},
    }
    isvc = {
        "volumes": [{"name": "shm", "emptyDir": {"sizeLimit": "1Gi"}}, {"name": "cache", "emptyDir": {}}],
        "runner": {
            "volumeMounts": [{"name": "shm2", "mountPath": "/dev/shm"}, {"name": "cache", "mountPath": "/c"}]
        },
    }
    merged = merge_component(runtime, isvc)
    assert merged["volumes"] == [
        {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
        {"name": "cache", "emptyDir": {}},
    ]
    assert merged["runner"]["volumeMounts"] == [
        {"name": "shm2", "mountPath": "/dev/shm"},
        {"name": "cache", "mountPath": "/c"},
    ]


def test_args_and_tolerations_are_replaced_not_merged() -> None:
    runtime = {"runner": {"args": ["--a"]}, "tolerations": [{"key": "x"}]}
    isvc = {"runner": {"args": ["--b"]}, "tolerations": [{"key": "y"}]}
    merged = merge_component(runtime, isvc)
    assert merged["runner"]["args"] == ["--b"]
    assert merged["tolerations"] == [{"key": "y"}]


def test_leader_and_worker_merge_recursively() -> None:
    runtime = {"worker": {"size": 2, "runner": {"image": "w"}}}
    isvc = {"worker": {"runner": {"resources": {"limits": {"nvidia.com/gpu": "8"}}}}}
    merged = merge_component(runtime, isvc)
    assert merged["worker"] == {
        "size": 2,
        "runner": {"image": "w", "resources": {"limits": {"nvidia.com/gpu": "8"}}},
    }


def test_merge_does_not_modify_inputs() -> None:
    runtime = {"containers": [{"name": "c", "env": [{"name": "A", "value": "1"}]}]}
    isvc = {"containers": [{"name": "c", "env": [{"name": "A", "value": "2"}]}]}
    strategic_merge(runtime, isvc)
    assert runtime["containers"][0]["env"][0]["value"] == "1"


def test_runner_merges_into_same_named_container_with_args_appended() -> None:
    pod = {"containers": [{"name": "ome-container", "image": "a", "args": ["--x"]}, {"name": "side"}]}
    spec = apply_runner(pod, {"name": "ome-container", "args": ["--y"], "env": [{"name": "E", "value": "1"}]})
    assert spec["containers"][0] == {
        "name": "ome-container",
        "image": "a",
        "args": ["--x", "--y"],
        "env": [{"name": "E", "value": "1"}],
    }
    assert pod["containers"][0]["args"] == ["--x"]


def test_runner_without_container_adds_one_named_ome_container() -> None:
    spec = apply_runner({}, {"image": "vllm"})
    assert spec["containers"] == [{"name": "ome-container", "image": "vllm"}]


def test_upsert_env_keeps_existing_unless_overwrite() -> None:
    container = {"env": [{"name": "MODEL_PATH", "value": "user"}]}
    upsert_env(container, "MODEL_PATH", "/models", overwrite=False)
    assert container["env"] == [{"name": "MODEL_PATH", "value": "user"}]
    upsert_env(container, "MODEL_PATH", "/models", overwrite=True)
    assert container["env"] == [{"name": "MODEL_PATH", "value": "/models"}]
