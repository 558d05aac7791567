"""The manifests under config/ the charts are made from, read as objects: the kustomize inputs and the
chart's own additions (config/chart/, which kustomize does not read)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import yaml

Obj = dict[str, Any]
ROOT: Final = Path(__file__).resolve().parents[3]
CONFIG: Final = ROOT / "config"
NAMESPACE: Final = "ome"

_LOADER: Final = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the CRDs are large: libyaml when present


def parse(text: str) -> list[Obj]:
    return [d for d in yaml.load_all(text, Loader=_LOADER) if d]


def load(*parts: str) -> list[Obj]:
    return parse(CONFIG.joinpath(*parts).read_text())


def object_key(obj: Obj) -> tuple[str, str, str]:
    meta = obj.get("metadata") or {}
    return obj.get("kind", ""), meta.get("namespace") or "", meta.get("name", "")


def manager_doc() -> Obj:
    return next(d for d in load("manager", "manager.yaml") if d["kind"] == "Deployment")


def chart_lifecycle() -> Obj:
    """The lifecycle keys the chart adds to config/'s (config/chart/lifecycle.yaml)."""
    return dict(load("chart", "lifecycle.yaml")[0])


def chart_coordination() -> Obj:
    """The chart's `coordination` entry (config/chart/coordination.yaml), a value of its own as the docs name
    it (`ome.controller.coordination.defaultRatioTolerancePercent`)."""
    return dict(load("chart", "coordination.yaml")[0])


def chart_event_recorder() -> Obj:
    """The chart's `eventRecorder` entry (config/chart/event_recorder.yaml), the value
    `ome.controller.eventRecorder`; config/configmap has none."""
    return dict(load("chart", "event_recorder.yaml")[0])


def chart_pod_disruption_budget() -> Obj:
    """The chart's `podDisruptionBudget` entry (config/chart/pod_disruption_budget.yaml), the value
    `ome.controller.podDisruptionBudget`; config/configmap has none, so a manifest install has no defaults."""
    return dict(load("chart", "pod_disruption_budget.yaml")[0])


def chart_ome_agent() -> Obj:
    """config/chart/ome_agent.yaml: the chart's OCI settings and model-init resources under ome.omeAgent."""
    return dict(load("chart", "ome_agent.yaml")[0])


def chart_controller() -> Obj:
    """config/chart/controller.yaml: the chart's `rollout` value."""
    return dict(load("chart", "controller.yaml")[0])
