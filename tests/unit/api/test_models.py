"""The ome.io/v1beta1 models: round trips, JSON names, kind metadata, validation."""

from __future__ import annotations

import copy
from typing import Any, get_args

import pytest
from pydantic import ValidationError

from ome.api.v1beta1 import (
    KINDS,
    ComponentExtensionSpec,
    InferenceReplica,
    InferenceReplicaSpec,
    InferenceReplicaStatus,
    InferenceService,
    InferenceServiceSpec,
    LifecycleStatus,
    OMEModel,
    ServingRuntime,
    parse_object,
)
from ome.api.v1beta1.autoscaler import ComponentAutoscaler

from .helpers import catalog_manifests, sample_manifests

ISVC: dict[str, Any] = {
    "apiVersion": "ome.io/v1beta1",
    "kind": "InferenceService",
    "metadata": {"name": "chat", "namespace": "prod", "labels": {"team": "a"}},
    "spec": {
        "deploymentMode": "OMENative",
        "model": {
            "name": "llama",
            "kind": "BaseModel",
            "fineTunedWeights": ["ft-1"],
            "overlays": [{"name": "draft", "kind": "ClusterBaseModel"}],
        },
        "runtime": {"name": "srt", "autoSync": False, "revision": "srt-abc"},
        "engine": {
            "minReplicas": 1,
            "maxReplicas": 4,
            "annotations": {"ome.io/deploymentMode": "OMENative"},
            "nodeSelector": {"gpu": "h100"},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
            "minAvailable": "50%",
            "maxUnavailable": 1,
            "deploymentStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
            "lifecycle": {
                "restartPolicy": "RecreateInstanceOnPodRestart",
                "updateStrategy": {
                    "type": "SurgeThenDrain",
                    "rollingUpdate": {"partition": 0, "maxSurge": 1, "maxUnavailable": "10%"},
                    "inPlaceUpdateStrategy": {"markNotReadyDuringLifecycle": True},
                },
                "readyPolicy": "AllPodReady",
                "instanceReadyTimeout": "30m",
                "minReadySeconds": 10,
                "migrationPolicy": {"mode": "Auto"},
            },
            "autoscaler": {
                "class": "KEDA",
                "keda": {
                    "triggers": [{"type": "prometheus", "metadata": {"query": "sum(x)"}}],
                    "fallback": {"failureThreshold": 3, "replicas": 2},
                },
            },
            "autoscalerPolicyRef": {"name": "pol"},
            "runner": {"name": "ome-container", "image": "img", "env": [{"name": "A", "value": "1"}]},
            "leader": {"runner": {"name": "leader"}, "nodeSelector": {"a": "b"}},
            "worker": {"size": 2, "runner": {"name": "worker"}},
            "topologyKey": "fabric",
            "topologySpread": "Required",
            "acceleratorOverride": {"acceleratorClass": "h100", "policy": "Cheapest"},
            "someFuturePodField": {"x": 1},
        },
        "router": {"config": {"a": "b"}, "runner": {"name": "router"}},
        "acceleratorSelector": {"constraints": {"minMemory": 80, "requiredFeatures": ["fp8"]}},
        "traffic": {
            "algorithm": "ConsistentHash",
            "consistentHash": {"type": "Header", "headers": [{"name": "x"}]},
        },
        "rollout": {
            "groups": [
                {
                    "components": ["engine"],
                    "canary": {
                        "steps": [
                            {"capacity": "25%", "traffic": 10, "pause": {"duration": "5m"}},
                            {
                                "capacity": 3,
                                "traffic": 100,
                                "analysis": {
                                    "interval": "1m",
                                    "failureLimit": 2,
                                    "metrics": [
                                        {"name": "err", "query": "q", "operator": "LTE", "threshold": "0.05"}
                                    ],
                                },
                            },
                        ],
                        "prometheus": {"serverAddress": "http://prom:9090"},
                    },
                    "policyRef": {"name": "p", "progression": "canary"},
                }
            ],
            "groupOrdering": "Concurrent",
            "pairingProtocol": "nixl-v2",
        },
        "scalingPolicy": {"mode": "Independent"},
        "placement": {"policy": "ClusterAffinity", "mode": "Split", "split": {"replicas": 4}},
        "routing": {"enabled": True, "capacityFactors": {"a": "2"}},
        "ttlSecondsAfterCreation": 3600,
        "unknownTopLevel": [1, 2, 3],
    },
    "status": {
        "observedGeneration": 3,
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        "url": "http://chat.prod.svc.cluster.local:8080",
        "components": {
            "engine": {
                "url": "http://chat-engine.prod",
                "lifecycle": {
                    "replicas": 1,
                    "readyReplicas": 1,
                    "servingReplicas": 1,
                    "currentRevision": "chat-engine-5d8f9c7a",
                    "rolloutHold": {"gate": "Budget", "reason": "surge", "since": "2026-01-01T00:00:00Z"},
                },
                "rolloutPhase": "Stable",
                "traffic": [{"revisionName": "chat-engine-rev-a", "percent": 100, "latestRevision": True}],
                "autoscaler": {"class": "KEDA", "managedBy": "ome", "currentReplicas": 1},
                "scaleTargetRef": {"apiVersion": "ome.io/v1beta1", "kind": "InferenceReplica", "name": "x"},
            }
        },
        "modelStatus": {
            "transitionStatus": "UpToDate",
            "modelRevisionStates": {"activeModelState": "Loaded", "targetModelState": ""},
            "lastFailureInfo": {"reason": "ModelLoadFailed", "exitCode": 137},
        },
        "somethingNew": {"kept": True},
    },
}

IREP: dict[str, Any] = {
    "apiVersion": "ome.io/v1beta1",
    "kind": "InferenceReplica",
    "metadata": {"name": "chat-engine", "namespace": "prod"},
    "spec": {
        "parentRef": {"name": "chat"},
        "component": "engine",
        "replicas": 3,
        "runners": [
            {"name": "leader", "size": 1, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {}}},
            {"name": "worker", "size": 2, "template": {"spec": {"containers": [{"name": "c"}]}}},
        ],
        "pacing": {"partition": 1, "maxUnavailable": "25%", "rollbackToRevision": "r1"},
        "paused": True,
        "pauseMode": "Freeze",
    },
    "status": {
        "replicas": 3,
        "labelSelector": "a=b",
        "instanceStatusEncoding": "ColumnarV2",
        "instanceStatusColumns": {
            "members": "0-2",
            "phases": [{"value": "Ready", "indexes": "0-2"}],
            "incarnations": [{"value": 1, "indexes": "0-2"}],
            "entries": [{"index": 1, "readySince": "2026-01-01T00:00:00Z"}],
        },
        "retryBlocks": [{"targetRevision": "r2", "state": "Held", "attemptsStarted": 3}],
        "migrations": [
            {
                "requestUUID": "u",
                "trigger": "Manual",
                "sourceInstance": 0,
                "phase": "Accepted",
                "startedAt": "2026-01-01T00:00:00Z",
                "deadline": "2026-01-01T01:00:00Z",
            }
        ],
    },
}


@pytest.mark.parametrize("doc", [ISVC, IREP], ids=["isvc", "irep"])
def test_round_trip_keeps_every_field(doc: dict[str, Any]) -> None:
    original = copy.deepcopy(doc)
    assert parse_object(doc).to_dict() == original
    assert doc == original  # the input is not mutated


@pytest.mark.parametrize(
    ("name", "doc"), sample_manifests() + catalog_manifests(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_samples_and_catalog_parse_and_round_trip(name: str, doc: dict[str, Any]) -> None:
    original = copy.deepcopy(doc)
    obj = parse_object(doc)
    assert obj.to_dict() == original, name


def test_snake_case_attributes_and_extras() -> None:
    isvc = InferenceService.model_validate(ISVC)
    assert isvc.spec is not None and isvc.spec.engine is not None
    assert isvc.spec.deployment_mode == "OMENative"
    assert isvc.spec.engine.min_replicas == 1
    assert isvc.spec.engine.node_selector == {"gpu": "h100"}
    assert isvc.spec.engine.worker is not None and isvc.spec.engine.worker.size == 2
    assert isvc.spec.engine.autoscaler is not None and isvc.spec.engine.autoscaler.class_ == "KEDA"
    assert isvc.spec.engine.model_extra == {"someFuturePodField": {"x": 1}}
    assert isvc.spec.ttl_seconds_after_creation == 3600
    assert isvc.status is not None and isvc.status.condition("Ready") is not None
    assert isvc.name == "chat" and isvc.namespace == "prod"


def test_models_can_be_built_by_attribute_name() -> None:
    spec = InferenceServiceSpec(deployment_mode="RawDeployment", engine={"min_replicas": 2})  # type: ignore[arg-type]
    isvc = InferenceService(metadata={"name": "a"}, spec=spec)
    out = isvc.to_dict()
    assert list(out)[:2] == ["apiVersion", "kind"]
    assert out == {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "a"},
        "spec": {"deploymentMode": "RawDeployment", "engine": {"minReplicas": 2}},
    }
    assert ComponentAutoscaler(class_="HPA").to_dict() == {"class": "HPA"}


@pytest.mark.parametrize(
    ("doc", "error"),
    [
        ({"spec": {"deploymentMode": "MultiNode"}}, "deploymentMode"),
        ({"spec": {"model": {"kind": "BaseModel"}}}, "name"),
        ({"spec": {"engine": {"topologySpread": "Sometimes"}}}, "topologySpread"),
        ({"kind": "ServingRuntime"}, "does not match"),
    ],
)
def test_invalid_documents_are_rejected(doc: dict[str, Any], error: str) -> None:
    with pytest.raises(ValidationError, match=error):
        InferenceService.model_validate({"apiVersion": "ome.io/v1beta1", "metadata": {"name": "x"}, **doc})


def test_parse_object_needs_ome_api_version_and_kind() -> None:
    with pytest.raises(ValueError, match="apiVersion"):
        parse_object({"apiVersion": "v1", "kind": "Pod"})
    with pytest.raises(ValueError, match="unknown ome.io kind"):
        parse_object({"apiVersion": "ome.io/v1beta1", "kind": "Nope"})
    assert isinstance(
        parse_object({"apiVersion": "ome.io/v1beta1", "kind": "ServingRuntime"}), ServingRuntime
    )


KIND_TABLE = {
    "InferenceService": ("inferenceservices", "Namespaced", ("isvc",)),
    "InferenceReplica": ("inferencereplicas", "Namespaced", ("irep",)),
    "ServingRuntime": ("servingruntimes", "Namespaced", ()),
    "ClusterServingRuntime": ("clusterservingruntimes", "Cluster", ()),
    "BaseModel": ("basemodels", "Namespaced", ()),
    "ClusterBaseModel": ("clusterbasemodels", "Cluster", ()),
    "FineTunedWeight": ("finetunedweights", "Cluster", ()),
    "AcceleratorClass": ("acceleratorclasses", "Cluster", ()),
    "BenchmarkJob": ("benchmarkjobs", "Namespaced", ()),
    "AutoscalerPolicy": ("autoscalerpolicies", "Namespaced", ()),
    "RolloutPolicy": ("rolloutpolicies", "Namespaced", ()),
    "AcceleratorQuota": ("acceleratorquotas", "Cluster", ("aq",)),
    "WorkloadCluster": ("workloadclusters", "Cluster", ("wlc",)),
    "TrafficMap": ("trafficmaps", "Namespaced", ("tm", "tmap")),
}


def test_kind_metadata() -> None:
    assert {cls.crd.kind: (cls.crd.plural, cls.crd.scope, cls.crd.short_names) for cls in KINDS} == KIND_TABLE
    scale = InferenceReplica.crd.scale
    assert scale is not None
    assert (scale.spec_replicas_path, scale.status_replicas_path, scale.label_selector_path) == (
        ".spec.replicas",
        ".status.replicas",
        ".status.labelSelector",
    )


def _aliases(cls: type[OMEModel]) -> set[str]:
    return {info.alias or name for name, info in cls.model_fields.items()}


def test_v13_field_sets() -> None:
    assert _aliases(InferenceServiceSpec) == {
        "deploymentMode", "engine", "decoder", "model", "runtime", "router", "acceleratorSelector",
        "traffic", "rollout", "scalingPolicy", "placement", "routing", "replicaRefs",
        "ttlSecondsAfterCreation",
    }  # fmt: skip
    assert _aliases(ComponentExtensionSpec) == {
        "minReplicas", "maxReplicas", "timeoutSeconds", "labels", "annotations",
        "servicePortAppProtocols", "minAvailable", "maxUnavailable", "deploymentStrategy",
        "lifecycle", "autoscaler", "autoscalerPolicyRef",
    }  # fmt: skip
    assert {"readyReplicas", "servingReplicas", "availableReplicas", "updatedReplicas",
            "updatedReadyReplicas", "currentRevision", "updateRevision", "rolloutHold"} <= _aliases(
        LifecycleStatus
    )  # fmt: skip
    assert {"runners", "lifecycle", "pacing", "autoscaler", "paused", "pauseMode", "component",
            "parentRef", "replicas", "modelRef", "runtimeRef"} <= _aliases(InferenceReplicaSpec)  # fmt: skip
    assert {"instanceStatuses", "instanceStatusEncoding", "instanceStatusColumns", "retryBlocks",
            "migrations", "labelSelector", "rolloutHold"} <= _aliases(InferenceReplicaStatus)  # fmt: skip


def _all_models() -> set[type[OMEModel]]:
    seen: set[type[OMEModel]] = set()
    todo: list[type[OMEModel]] = list(KINDS)
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        for info in cls.model_fields.values():
            todo.extend(_models_in(info.annotation))
    return seen


def _models_in(tp: Any) -> list[type[OMEModel]]:
    found: list[type[OMEModel]] = []
    if isinstance(tp, type) and issubclass(tp, OMEModel):
        found.append(tp)
    for arg in get_args(tp):
        found.extend(_models_in(arg))
    return found


def test_every_field_has_a_unique_json_name() -> None:
    models = _all_models()
    assert len(models) > 100
    for cls in models:
        aliases = [info.alias for info in cls.model_fields.values()]
        assert None not in aliases, cls
        assert len(aliases) == len(set(aliases)), cls
