"""Render a MultiNode (deprecated) component: LeaderWorkerSet `lws-{isvc}-{component}` and its Service.

MultiNode gets no PodDisruptionBudget or autoscaler. As documented, its Service selects the leader pods
of every LeaderWorkerSet in the namespace (`ray.io/node-type=head`), which is why the docs ask to keep one
LeaderWorkerSet per namespace.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ome.resolution import naming, objects, workload_metadata
from ome.resolution.components import ComponentPlan

Obj = dict[str, Any]

HEAD_LABEL: Final = "ray.io/node-type"
HEAD: Final = "head"
_WORKER_DROPPED_ANNOTATIONS: Final = ("prometheus.io/path", "prometheus.io/port", "prometheus.io/scrape")


def render(isvc: Mapping[str, Any], plan: ComponentPlan) -> list[Obj]:
    return [leader_worker_set(isvc, plan), objects.component_service(isvc, plan, {HEAD_LABEL: HEAD})]


def leader_worker_set(isvc: Mapping[str, Any], plan: ComponentPlan) -> Obj:
    leader = plan.leader_pod_spec if plan.leader_pod_spec is not None else plan.pod_spec
    worker = plan.worker_pod_spec if plan.worker_pod_spec is not None else plan.pod_spec
    app = naming.truncate(plan.name)
    queues = workload_metadata.queue_labels(plan.annotations)
    leader_labels = {**plan.labels, naming.APP_LABEL: app, HEAD_LABEL: HEAD, **queues}
    worker_annotations = {k: v for k, v in plan.annotations.items() if k not in _WORKER_DROPPED_ANNOTATIONS}
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": objects.metadata(isvc, naming.lws_name(plan.isvc, plan.component), plan.labels),
        "spec": {
            "replicas": max(int(plan.merged.get("minReplicas") or 1), 1),
            "startupPolicy": "LeaderCreated",
            "rolloutStrategy": {
                "type": "RollingUpdate",
                "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 1},
            },
            "networkConfig": {"subdomainPolicy": "Shared"},
            "leaderWorkerTemplate": {
                "size": plan.worker_size + 1,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": {"metadata": _meta(leader_labels, plan.annotations), "spec": leader},
                "workerTemplate": {
                    "metadata": _meta({**plan.labels, **queues}, worker_annotations),
                    "spec": worker,
                },
            },
        },
    }


def _meta(labels: Mapping[str, str], annotations: Mapping[str, str]) -> Obj:
    meta: Obj = {"labels": dict(labels)}
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta
