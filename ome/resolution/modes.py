"""Deployment-mode resolution: which workload runs a component (deployment-modes page, "How OME resolves
the mode").

A component's mode is the first rule that sets one:

1. its `ome.io/deploymentMode` annotation, from the merged component (the InferenceService's value wins
   over the runtime's); RawDeployment, OMENative, MultiNode and VirtualDeployment count, others are skipped;
2. the InferenceService's `spec.deploymentMode`;
3. a `leader` or `worker` on an engine or decoder (from either side) makes it OMENative;
4. RawDeployment.

The InferenceService's own metadata annotation sets no component's mode; only VirtualDeployment means
something there (`is_virtual`). VirtualDeployment on a component, and MultiNode on a router, resolve but
cannot be reconciled: `check_reconcilable` raises for them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

ANNOTATION: Final = "ome.io/deploymentMode"

RAW_DEPLOYMENT: Final = "RawDeployment"
OMENATIVE: Final = "OMENative"
MULTINODE: Final = "MultiNode"
VIRTUAL_DEPLOYMENT: Final = "VirtualDeployment"

ANNOTATION_MODES: Final = frozenset({RAW_DEPLOYMENT, OMENATIVE, MULTINODE, VIRTUAL_DEPLOYMENT})
SPEC_MODES: Final = frozenset({RAW_DEPLOYMENT, OMENATIVE})
COMPONENTS: Final = ("engine", "decoder", "router")
"""Reconcile order: a component that cannot be reconciled stops the ones after it."""

Rule = Literal["Annotation", "Spec", "LeaderWorker", "Default"]


@dataclass(frozen=True, slots=True)
class ModeDecision:
    mode: str
    rule: Rule
    """Which rule decided, as `kubectl ome runtime effective` prints it: `RawDeployment (Default)`."""

    def __str__(self) -> str:
        return f"{self.mode} ({self.rule})"


class UnreconcilableModeError(Exception):
    """A component resolved to a mode it cannot run in (VirtualDeployment, or MultiNode on the router)."""

    def __init__(self, component: str, mode: str) -> None:
        super().__init__(f"deployment mode {mode} is not supported for the {component} component")
        self.component = component
        self.mode = mode


def annotation_mode(annotations: Mapping[str, str] | None) -> str | None:
    """The annotation's mode when it is one OME accepts, else None (the rule is skipped)."""
    value = (annotations or {}).get(ANNOTATION)
    return value if value in ANNOTATION_MODES else None


def resolve(component: str, merged: Mapping[str, Any], spec_mode: str | None) -> ModeDecision:
    """The mode of `component`, from its merged spec (runtime config + InferenceService, ISVC winning)."""
    if (mode := annotation_mode(merged.get("annotations"))) is not None:
        return ModeDecision(mode, "Annotation")
    if spec_mode in SPEC_MODES:
        return ModeDecision(spec_mode, "Spec")
    if component != "router" and (merged.get("leader") is not None or merged.get("worker") is not None):
        return ModeDecision(OMENATIVE, "LeaderWorker")
    return ModeDecision(RAW_DEPLOYMENT, "Default")


def is_virtual(isvc: Mapping[str, Any]) -> bool:
    """VirtualDeployment in the InferenceService's own metadata annotations: no workloads at all."""
    annotations = (isvc.get("metadata") or {}).get("annotations") or {}
    return bool(annotations.get(ANNOTATION) == VIRTUAL_DEPLOYMENT)


def check_reconcilable(component: str, mode: str) -> None:
    """Raise for a mode the component cannot run in; the reconciler stops at this component."""
    if mode == VIRTUAL_DEPLOYMENT or (component == "router" and mode == MULTINODE):
        raise UnreconcilableModeError(component, mode)


def declared_mode(isvc_component: Mapping[str, Any] | None, spec_mode: str | None) -> str:
    """The mode the InferenceService itself declares for a component: its own annotation, else
    spec.deploymentMode, else "" (what runtime auto-selection and the webhook compare)."""
    own = annotation_mode((isvc_component or {}).get("annotations"))
    if own is not None:
        return own
    return spec_mode if spec_mode in SPEC_MODES else ""
