"""Render an OMENative component: the InferenceReplica `{isvc}-{component}` and its Service.

This controller writes only the InferenceReplica's spec; the InferenceReplica controller creates the
pods, headless and revision Services, ControllerRevisions and PodGroups, and reports status back.

The Service (and the PodDisruptionBudget) select the component's OMENative pods
(`ome.io/managed-by=OMENative`), so a component moved to OMENative switches its Service to the new pods at
once. `spec.replicas` is never set here: the autoscaler reconciler (ome/controllers/autoscaler) owns the
count through the InferenceReplica's scale subresource, with the HPA or ScaledObject and the budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.omenative import rollout_budget
from ome.omenative.revisions import EXCLUDED_KEYS_ANNOTATION
from ome.omenative.rollout_budget import OperatorDefault
from ome.resolution import autoscaling, naming, objects, quota_governance
from ome.resolution.components import ComponentPlan

Obj = dict[str, Any]

MANAGED_BY: Final = "OMENative"
RUNNER_LABEL: Final = "ome.io/runner"
PAUSE_ANNOTATION: Final = "ome.io/rollout-paused"
HISTORY_ANNOTATION: Final = "ome.io/revision-history-limit"
_PASSED_THROUGH: Final = ("topologyKey", "topologySpread", "topologySpreadKey")


def pod_selector(plan: ComponentPlan) -> dict[str, str]:
    return {**naming.selector_labels(plan.isvc, plan.component), naming.MANAGED_BY_LABEL: MANAGED_BY}


def service_selector(isvc: Mapping[str, Any], plan: ComponentPlan) -> dict[str, str]:
    """Leaders only when the InferenceService itself sets `worker` on the component; workers too when
    only the runtime does (a runtime-defined worker may serve requests itself)."""
    selector = pod_selector(plan)
    own = (isvc.get("spec") or {}).get(plan.component) or {}
    if own.get("worker") is not None and plan.worker_pod_spec is not None:
        selector[RUNNER_LABEL] = "leader"
    return selector


def render(isvc: Mapping[str, Any], plan: ComponentPlan, config: InferenceServiceConfig) -> list[Obj]:
    return [inference_replica(isvc, plan, config),
            objects.component_service(isvc, plan, service_selector(isvc, plan))]


def inference_replica(isvc: Mapping[str, Any], plan: ComponentPlan, config: InferenceServiceConfig) -> Obj:
    spec: Obj = {
        "parentRef": {"name": plan.isvc},
        "component": plan.component,
        "runners": runners(plan),
    }
    lifecycle = project_lifecycle(plan, config)
    if (window := lifecycle.pop("minReadySeconds", None)) is not None:
        spec["minReadySeconds"] = window  # the window in effect is the replica's own field
    if lifecycle:
        spec["lifecycle"] = lifecycle
    spec.update(rollout_controls(isvc))
    if (token := pairing_protocol(isvc, plan.component)) is not None:
        spec["pairingProtocol"] = token
    for key in _PASSED_THROUGH:
        if plan.merged.get(key) is not None:
            spec[key] = plan.merged[key]
    if (block := resolved_autoscaler(isvc, plan)) is not None:
        spec["autoscaler"] = block
    annotations = {**plan.annotations, **controller_marks(isvc)}
    if excluded := excluded_annotation_keys(isvc, plan):
        annotations[EXCLUDED_KEYS_ANNOTATION] = excluded
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceReplica",
        "metadata": objects.metadata(isvc, plan.name, plan.labels, annotations),
        "spec": spec,
    }


def resolved_autoscaler(isvc: Mapping[str, Any], plan: ComponentPlan) -> Obj | None:
    """The autoscaler block the autoscaler controller runs, whole from one place (autoscaling.resolve):
    the InferenceService's, else the runtime's, else the default `class: HPA`, which is projected too.

    None for a component that names an AutoscalerPolicy and sets no block itself: the policy object is
    read by the autoscaler controller, not by this projection, so the block it renders (or holds) is not
    known here, and the runtime's or the default would name a scaler that does not run.
    """
    own = (isvc.get("spec") or {}).get(plan.component) or {}
    # Without an inline block the merged one is the runtime's as it is (the merge skips a null).
    runtime = {"autoscaler": plan.merged.get("autoscaler")}
    resolution = autoscaling.resolve(mode=plan.mode, isvc_component=own, runtime_component=runtime,
                                     annotations=plan.annotations)
    if resolution.source == autoscaling.SOURCE_POLICY or not resolution.block:
        return None
    return resolution.block


def rollout_controls(isvc: Mapping[str, Any]) -> Obj:
    """`ome.io/rollout-paused` (exactly "true" or "freeze") and `ome.io/revision-history-limit` on the
    InferenceService, as the replica's spec.paused / pauseMode and revisionHistoryLimit."""
    annotations = (isvc.get("metadata") or {}).get("annotations") or {}
    out: Obj = {}
    pause = annotations.get(PAUSE_ANNOTATION)
    if pause in ("true", "freeze"):
        out["paused"] = True
        if pause == "freeze":
            out["pauseMode"] = "Freeze"
    limit = str(annotations.get(HISTORY_ANNOTATION) or "").strip()
    if limit.isdigit() and int(limit) >= 1:
        out["revisionHistoryLimit"] = int(limit)
    return out


def pairing_protocol(isvc: Mapping[str, Any], component: str) -> str | None:
    """spec.rollout.pairingProtocol, for the engine and the decoder (the router pairs with neither): part
    of their revisions, so a new token rolls both."""
    if component not in ("engine", "decoder"):
        return None
    token = ((isvc.get("spec") or {}).get("rollout") or {}).get("pairingProtocol")
    return str(token) if token else None


def excluded_annotation_keys(isvc: Mapping[str, Any], plan: ComponentPlan) -> str:
    """The InferenceService annotations the pod templates inherit but the component does not declare:
    left out of the revision hash, so annotating the InferenceService starts no rollout."""
    own = (isvc.get("metadata") or {}).get("annotations") or {}
    declared = plan.merged.get("annotations") or {}
    inherited = {k for k, v in own.items() if k not in declared and plan.annotations.get(k) == v}
    return ",".join(sorted(inherited))


def controller_marks(isvc: Mapping[str, Any]) -> dict[str, str]:
    """What every replica write of the controller carries (ours win over copied service annotations):
    the mark the replica webhook admits projected writes by, and the service generation applied."""
    marks = {naming.CONTROLLER_WRITE_ANNOTATION: naming.CONTROLLER_WRITE_VALUE}
    generation = (isvc.get("metadata") or {}).get("generation")
    if isinstance(generation, int):
        marks[naming.PARENT_GENERATION_ANNOTATION] = str(generation)
    return marks


def runners(plan: ComponentPlan) -> list[Obj]:
    """`default` for a single-pod Instance; `leader` (1 pod) and `worker` (`worker.size` pods) otherwise."""
    if plan.leader_pod_spec is None or plan.worker_pod_spec is None:
        specs = [plan.pod_spec]
        is_governed = quota_governance.governed(specs, quota_governance.QUOTA.names)
        return [_runner("default", 1, plan, plan.pod_spec, is_governed)]
    specs = [plan.leader_pod_spec, plan.worker_pod_spec]
    is_governed = quota_governance.governed(specs, quota_governance.QUOTA.names)
    return [
        _runner("leader", 1, plan, plan.leader_pod_spec, is_governed),
        _runner("worker", max(plan.worker_size, 1), plan, plan.worker_pod_spec, is_governed),
    ]


def _runner(name: str, size: int, plan: ComponentPlan, pod_spec: Obj, is_governed: bool = True) -> Obj:
    # --accelerator-resources: a component requesting none of them keeps no queue label on its pods.
    meta: Obj = {"labels": quota_governance.pod_labels(plan.labels, is_governed)}
    if plan.annotations:
        meta["annotations"] = dict(plan.annotations)
    return {"name": name, "size": size, "template": {"metadata": meta, "spec": pod_spec}}


def project_lifecycle(plan: ComponentPlan, config: InferenceServiceConfig) -> Obj:
    """The component's lifecycle, with the operator's update-strategy and minReadySeconds defaults
    filled where the InferenceService and runtime leave them unset."""
    lifecycle: Obj = dict(plan.merged.get("lifecycle") or {})
    default = config.deploy.update_strategy.for_component(plan.component)
    if default is not None:
        # Field by field: the type, then only the budget that type reads (rollout_budget.filled).
        fill = OperatorDefault(default.type, default.max_surge, default.max_unavailable)
        lifecycle["updateStrategy"] = rollout_budget.filled(lifecycle, fill)
    if "minReadySeconds" not in lifecycle and config.deploy.min_ready_seconds is not None:
        lifecycle["minReadySeconds"] = config.deploy.min_ready_seconds
    return lifecycle
