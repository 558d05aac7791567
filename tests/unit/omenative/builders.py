"""Test objects for OMENative: replicas, runners and observed pods."""

from __future__ import annotations

from typing import Any

from ome.omenative.pods_view import PodView

Obj = dict[str, Any]


def template(image: str = "img:1", **spec: Any) -> Obj:
    return {
        "metadata": {"labels": {"team": "llm"}},
        "spec": {"containers": [{"name": "ome-container", "image": image}], **spec},
    }


def runners(workers: int = 0, image: str = "img:1") -> list[Obj]:
    if not workers:
        return [{"name": "default", "size": 1, "template": template(image)}]
    return [
        {"name": "worker", "size": workers, "template": template(image)},
        {"name": "leader", "size": 1, "template": template(image)},
    ]


def replica(name: str = "chat-engine", *, workers: int = 0, replicas: int | None = 1, **spec: Any) -> Obj:
    body: Obj = {"component": "engine", "parentRef": {"name": "chat"}, "runners": runners(workers), **spec}
    if replicas is not None:
        body["replicas"] = replicas
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceReplica",
        "metadata": {"name": name, "namespace": "ns", "uid": "u-1", "generation": 1},
        "spec": body,
    }


def pod(
    name: str,
    *,
    index: int = 0,
    runner: str = "default",
    incarnation: int = 1,
    digest: str = "abc",
    phase: str = "Running",
    containers_ready: bool = True,
    gate: str | None = "True",
    ready: bool = True,
    terminating: bool = False,
    ready_since: str = "2026-01-01T00:00:00Z",
) -> PodView:
    return PodView(
        name=name,
        index=index,
        runner=runner,
        incarnation=incarnation,
        revision_hash=digest,
        phase=phase,
        terminating=terminating,
        containers_ready=containers_ready,
        gate=gate,
        ready=ready,
        ready_since=ready_since if ready else None,
        has_ip=phase == "Running",
        restarted_at=None,
    )
