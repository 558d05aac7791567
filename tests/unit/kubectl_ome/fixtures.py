"""Objects for the kubectl-ome unit tests, with the values of the docs' examples (`chat` in `prod`)."""

from __future__ import annotations

import argparse
import copy
from typing import Any

from ome.api.resources import INFERENCE_REPLICAS, INFERENCE_SERVICES, PODS, SERVING_RUNTIMES
from ome.kubectl_ome.cli import build_parser
from tests.unit.kubectl_ome.fakes import FakeClient

Obj = dict[str, Any]

RUNTIME: Obj = {
    "apiVersion": "ome.io/v1beta1",
    "kind": "ServingRuntime",
    "metadata": {"name": "vllm", "namespace": "prod"},
    "spec": {"containers": [{"name": "ome-container", "image": "vllm:1"}],
             "engineConfig": {"annotations": {"ome.io/deploymentMode": "OMENative"}}},
}

CANARY_STEPS = [
    {"capacity": "25%", "traffic": 10, "pause": {}},
    {"capacity": "100%", "traffic": 100},
]
PINNED_STEPS = [
    {"capacity": "50%", "traffic": 20, "pause": {}},
    {"capacity": "100%", "traffic": 100},
]


def isvc(**spec: Any) -> Obj:
    body: Obj = {"runtime": {"name": "vllm", "kind": "ServingRuntime"}, "engine": {"minReplicas": 1, "maxReplicas": 4}}
    body.update(spec)
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "chat", "namespace": "prod", "uid": "5d9f3c2a-8b41-4f7e-a0c6-1e2b3c4d5e6f",
                     "generation": 7, "annotations": {}},
        "spec": body,
        "status": {"observedGeneration": 7, "components": {"engine": {"lifecycle": {
            "currentRevision": "chat-engine-a", "updateRevision": "chat-engine-a"}}}},
    }


def canary_isvc(phase: str = "Paused", step: int = 0, observed: int = 10) -> Obj:
    """The rollout example: a canary at a manual gate, step 1 of 2, 25% capacity, 10% traffic."""
    obj = isvc(rollout={"groups": [{"components": ["engine"], "canary": {"steps": copy.deepcopy(CANARY_STEPS)}}]})
    obj["status"]["components"]["engine"] = {
        "rolloutPhase": phase,
        "canary": {"currentStep": step, "observedTrafficWeight": observed, "stableRevisionHash": "aaaaaaaa",
                   "canaryRevisionHash": "bbbbbbbb", "stepEnteredTime": "2026-08-31T18:00:00Z"},
    }
    obj["status"]["rollout"] = {"activeRun": {
        "runID": "chat-0123456789ab", "openedAt": "2026-08-31T18:00:00Z", "pinnedAt": "2026-08-31T18:00:00Z",
        "targetRevisions": [{"component": "engine", "revision": "cccccccc"}],
        "plan": {"groups": [{"source": "Inline", "portableDigest": "rp1:aaaaaaaaaaaa", "group": {
            "components": ["engine"], "canary": {"steps": copy.deepcopy(CANARY_STEPS)}}}]}}}
    return obj


def replica(rows: list[Obj] | None = None, **status: Any) -> Obj:
    body: Obj = {
        "observedGeneration": 2, "replicas": 1, "readyReplicas": 1, "servingReplicas": 1, "availableReplicas": 1,
        "currentRevision": "chat-engine-a", "updateRevision": "chat-engine-a",
        "instanceStatuses": rows if rows is not None else [{
            "index": 0, "incarnation": 1, "phase": "Ready", "runningRevision": "chat-engine-a",
            "targetRevision": "chat-engine-a", "podCount": 1, "servingPodCount": 1, "availablePodCount": 1,
            "admitted": True}],
    }
    body.update(status)
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceReplica",
        "metadata": {"name": "chat-engine", "namespace": "prod", "uid": "uid-ir", "generation": 2,
                     "annotations": {"ome.io/controller-write": "true", "ome.io/parent-generation": "7"}},
        "spec": {"component": "engine", "parentRef": {"name": "chat"}, "replicas": 1},
        "status": body,
    }


def pod(index: int = 0, node: str = "node-a") -> Obj:
    return {
        "metadata": {"name": f"chat-engine-{index}-default-0", "namespace": "prod", "labels": {
            "ome.io/inferenceservice": "chat", "component": "engine", "ome.io/instance-index": str(index),
            "ome.io/runner": "default", "ome.io/managed-by": "OMENative"}},
        "spec": {"nodeName": node, "containers": [{"name": "ome-container"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def cluster(service: Obj, ir: Obj | None = None, pods: list[Obj] | None = None) -> FakeClient:
    client = FakeClient()
    client.put(SERVING_RUNTIMES, copy.deepcopy(RUNTIME))
    client.put(INFERENCE_SERVICES, service)
    if ir is not None:
        client.put(INFERENCE_REPLICAS, ir)
    for p in pods or []:
        client.put(PODS, p)
    return client


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))
