"""A model's status from what the nodes report, and its empty spec fields from its config. Pure.

The node label is the authority on where the model is: `Ready` and `Failed` labels become `nodesReady`
and `nodesFailed`, and the state follows the documented rules (any node Ready: `Ready`; else any node
Failed: `Failed`; else `In_Transit`). The node's ConfigMap entry adds the why: its failure message and
download progress go into the `Ready` condition's message. A `pvc://` model has no nodes: its state comes
from its claim, with the documented PVC reasons.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ome.models import labels, storage
from ome.models.entries import Entry

Obj = dict[str, Any]

IN_TRANSIT: Final = "In_Transit"
READY: Final = "Ready"
FAILED: Final = "Failed"
CONDITION_READY: Final = "Ready"
SKIP_CONFIG_PARSING: Final = "ome.oracle.com/skip-config-parsing"
# Reasons of the Ready condition: the PVC ones are documented; the node ones are ours.
NODES_READY: Final = "NodesReady"
NODES_FAILED: Final = "NodesFailed"
NODES_IN_TRANSIT: Final = "InTransit"
PVC_BOUND: Final = "PVCBound"
PVC_NOT_BOUND: Final = "PVCNotBound"
PVC_NOT_FOUND: Final = "PVCNotFound"
PVC_INVALID: Final = "PVCInvalid"


@dataclass(frozen=True, slots=True)
class NodeReport:
    """What one node says about one model: its label value (None: no label) and its ConfigMap entry."""

    node: str
    label: str | None = None
    entry: Entry | None = None

    @property
    def holds_model(self) -> bool:
        """Still reports the model: a label, or an entry not yet marked Deleted (deletion waits on both)."""
        return self.label is not None or (self.entry is not None and self.entry.status != labels.DELETED)


@dataclass(frozen=True, slots=True)
class Verdict:
    state: str
    reason: str
    message: str
    nodes_ready: tuple[str, ...] = ()
    nodes_failed: tuple[str, ...] = ()


def lifecycle_state(nodes_ready: Sequence[str], nodes_failed: Sequence[str]) -> str:
    if nodes_ready:
        return READY
    return FAILED if nodes_failed else IN_TRANSIT


def from_nodes(reports: Sequence[NodeReport]) -> Verdict:
    ordered = sorted(reports, key=lambda r: r.node)
    ready = tuple(r.node for r in ordered if r.label == labels.READY)
    failed = tuple(r.node for r in ordered if r.label == labels.FAILED)
    state = lifecycle_state(ready, failed)
    problems = [f"failed on {r.node}: {_why(r)}" for r in ordered if r.label == labels.FAILED]
    if state == READY:
        message = "; ".join([f"ready on {len(ready)} node(s): {', '.join(ready)}", *problems])
        return Verdict(state, NODES_READY, message, ready, failed)
    if state == FAILED:
        return Verdict(state, NODES_FAILED, "; ".join(problems), ready, failed)
    busy = [_progress_text(r) for r in ordered if r.label == labels.UPDATING]
    message = "; ".join(busy) if busy else "no node has reported the model Ready or Failed yet"
    return Verdict(state, NODES_IN_TRANSIT, message, ready, failed)


def _why(report: NodeReport) -> str:
    return (report.entry.message if report.entry else "") or "no reason reported"


def _progress_text(report: NodeReport) -> str:
    progress = report.entry.progress if report.entry else None
    if progress is None or not progress.total_bytes:
        return f"updating on {report.node}"
    return (f"{progress.phase.lower() or 'updating'} on {report.node}: {_size(progress.completed_bytes)} of "
            f"{_size(progress.total_bytes)} ({progress.percent:.0f}%)")


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024:
            return f"{value:.1f} {unit}" if unit != "B" else f"{n} B"
        value /= 1024
    return f"{value:.1f} TiB"


def from_pvc(model: Obj, pvc: Obj | None) -> Verdict:
    """The state of a `pvc://` model from its claim (None: not found)."""
    ref = pvc_reference(model)
    if isinstance(ref, str):
        return Verdict(FAILED, PVC_INVALID, ref)
    namespace, claim = ref
    if pvc is None:
        return Verdict(FAILED, PVC_NOT_FOUND, f"PVC {namespace}/{claim} not found")
    phase = (pvc.get("status") or {}).get("phase") or "Pending"
    if phase != "Bound":
        return Verdict(IN_TRANSIT, PVC_NOT_BOUND, f"PVC {namespace}/{claim} is {phase}, not Bound")
    return Verdict(READY, PVC_BOUND, f"PVC {namespace}/{claim} is Bound")


def pvc_reference(model: Obj) -> tuple[str, str] | str:
    """(namespace, claim) of a `pvc://` model, or why its URI is invalid for its kind."""
    uri = storage.storage_of(model).get("storageUri") or ""
    own_ns = model["metadata"].get("namespace") or ""
    try:
        source = storage.parse(uri)
    except storage.StorageUriError as exc:
        return str(exc)
    if not isinstance(source, storage.PvcSource):
        return f"not a PVC storage URI: {uri!r}"
    if own_ns and source.namespace:
        return f"namespaced BaseModel PVC URI must not specify a namespace, got {uri!r}"
    if not own_ns and not source.namespace:
        return f"ClusterBaseModel PVC URI must specify a namespace, got {uri!r}"
    return (source.namespace or own_ns, source.claim)


def desired_status(model: Obj, verdict: Verdict, now: str) -> Obj:
    """The status to write: state, nodes and a Ready condition whose time moves only on a flip."""
    current = model.get("status") or {}
    status = "True" if verdict.state == READY else "False"
    old = next((c for c in current.get("conditions") or [] if c.get("type") == CONDITION_READY), None)
    moved = old is None or old.get("status") != status
    condition = {"type": CONDITION_READY, "status": status, "reason": verdict.reason,
                 "message": verdict.message or verdict.reason,
                 "lastTransitionTime": now if moved else old["lastTransitionTime"],  # type: ignore[index]
                 "observedGeneration": model["metadata"].get("generation", 0)}
    out: Obj = {"state": verdict.state, "nodesReady": list(verdict.nodes_ready),
                "nodesFailed": list(verdict.nodes_failed), "conditions": [condition],
                "observedGeneration": model["metadata"].get("generation", 0)}
    return out


def status_differs(model: Obj, desired: Obj, condition_types: Sequence[str] = (CONDITION_READY,)) -> bool:
    """Whether writing `desired` would change the model's status: only the condition types this writer
    owns are compared, in the order it writes them."""
    current = model.get("status") or {}
    for key, value in desired.items():
        have = current.get(key)
        if key in ("nodesReady", "nodesFailed"):
            have = have or []
        if key == "conditions":
            have = [c for c in have or [] if c.get("type") in condition_types]
            have.sort(key=lambda c: condition_types.index(c.get("type")))
        if have != value:
            return True
    return False


def spec_fill(spec: Mapping[str, Any], config: Mapping[str, Any]) -> Obj:
    """The spec fields `config` can fill that are empty now: a value the user set always wins."""
    fill: Obj = {}
    for key in ("modelType", "modelArchitecture", "quantization", "modelParameterSize", "maxTokens"):
        if not spec.get(key) and config.get(key):
            fill[key] = config[key]
    if not spec.get("modelCapabilities") and config.get("modelCapabilities"):
        fill["modelCapabilities"] = list(config["modelCapabilities"])
    if not spec.get("modelFramework") and (config.get("modelFramework") or {}).get("name"):
        fill["modelFramework"] = dict(config["modelFramework"])
    have, want = spec.get("modelFormat") or {}, config.get("modelFormat") or {}
    fmt = {k: want[k] for k in ("name", "version") if want.get(k) and not have.get(k)}
    if fmt:
        fill["modelFormat"] = fmt
    if not spec.get("modelConfiguration") and config.get("decodedModelConfiguration"):
        fill["modelConfiguration"] = config["decodedModelConfiguration"]
    return fill
