"""Compute an InferenceService's status from what its workloads report (pure).

Conditions: `<Component>Ready` per declared or referenced component, `IngressReady`, `RuntimeReady` (not
for a service over referenced replicas, which has no runtime), `OverlaysReady` (with overlays),
`RuntimeDrifted` (a pinned runtime, only ever True; runtime_pinning.py) and `Ready` =
EngineReady and IngressReady (DecoderReady and RouterReady do not feed it). A component run by an
InferenceReplica, its own or one named in spec.replicaRefs, mirrors the replica (replica_status.py); a
referenced role without a usable replica reports `ReplicaRefMissing` or `ReplicaRefInvalid`.
A condition keeps its lastTransitionTime while its status stays the same, so an unchanged world computes
an identical status and the reconciler writes nothing.

The first status of a new service is held back while its workloads are known to be coming up
(`first_write_deferral`): every step of a start (the Deployment or replica created, its Instances
created, a serving gate opened) would otherwise be one status write, and a service that starts normally
reports once, when it is Ready (an OMENative one once its ready Instances also serve: the gate opening
is the last step, a kubelet status round after readiness). A failure signal (a pod's main container
failing, a Deployment past its progress deadline, a replica reporting a failed Instance or any problem
condition, a runtime, overlay or ingress problem) or the grace period `FIRST_STATUS_GRACE` since
creation writes it at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers.inferenceservice import replica_status
from ome.framework.timefmt import parse_time
from ome.resolution import modes, naming
from ome.resolution.components import ComponentPlan
from ome.resolution.replica_refs import Problem

Obj = dict[str, Any]

READY: Final = "Ready"
INGRESS_READY: Final = "IngressReady"
RUNTIME_READY: Final = "RuntimeReady"
OVERLAYS_READY: Final = "OverlaysReady"
INGRESS_DISABLED: Final = "IngressDisabled"
INGRESS_DISABLED_MESSAGE: Final = "Ingress creation is disabled, using external service for access"
VIRTUAL_DEPLOYMENT_MESSAGE: Final = "InferenceService is in VirtualDeployment mode"
MAIN_CONTAINER: Final = "ome-container"


FIRST_STATUS_GRACE: Final = 300.0
"""Seconds after creation by which a new service reports its first status even while still starting."""
_STARTING_REASONS: Final = frozenset(
    {"Initializing", replica_status.NO_REPLICAS, replica_status.INSUFFICIENT_AVAILABLE}
)
_REPLICA_PROBLEMS: Final = frozenset({"RolloutStalled", "DrainOverdue", "GangSchedulingUnavailable"})
"""InferenceReplica conditions that, True, are a problem to report rather than a step of a start."""


def component_condition(component: str) -> str:
    return f"{component.capitalize()}Ready"


@dataclass(frozen=True, slots=True)
class Cond:
    type: str
    status: str
    reason: str = ""
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "True"


@dataclass(frozen=True, slots=True)
class RoleRef:
    """A role of a service over referenced replicas, as the reconciler found its replica."""

    component: str
    replica_name: str
    replica: Obj | None
    problem: Problem | None = None


@dataclass(frozen=True, kw_only=True)
class Observed:
    """What the reconciler saw; all optional pieces default to "nothing observed"."""

    plans: Sequence[ComponentPlan] | None
    """None when the runtime could not be resolved: component conditions are then kept as they were."""
    workloads: Mapping[str, Obj | None] = field(default_factory=dict)
    engine_pods: Sequence[Obj] = ()
    runtime_error: str | None = None
    runtime_name: str | None = None
    has_model: bool = False
    external_port: int | None = None
    overlays_problem: str | None = None
    has_overlays: bool = False
    referenced: bool = False
    """The service fronts replicas named in spec.replicaRefs (`refs`) and declares no component."""
    refs: Sequence[RoleRef] = ()
    pin_fields: Mapping[str, str] = field(default_factory=dict)
    """status.pinnedRevisionName and status.lastRuntimeSyncToken (runtime pinning), when they have a value."""
    extra_conditions: Sequence[Cond] = ()
    """Conditions reported as given, such as RuntimeDrifted; none of them feeds Ready."""
    ingress: IngressState | None = None
    """With ingress creation on: whether the Ingress exists and its URL; None while creation is off."""
    traffic: Obj | None = None
    """status.traffic (routing.py): the backend policy OME wrote for the traffic intent; None without."""


@dataclass(frozen=True, slots=True)
class IngressState:
    created: bool
    reason: str = ""
    message: str = ""
    url: str | None = None
    address: str | None = None
    """status.address when it differs from the URL (HTTPRoutes: the cluster-local address)."""
    addresses: list[Obj] | None = None


def virtual_status(isvc: Mapping[str, Any], config: InferenceServiceConfig, now: str) -> Obj:
    """No workloads: Ready with reason VirtualDeployment and the URL of `{isvc}.{ns}.svc.{domain}`."""
    url = f"http://{_host(isvc['metadata']['name'], isvc, config)}"
    ready = Cond(READY, "True", modes.VIRTUAL_DEPLOYMENT, VIRTUAL_DEPLOYMENT_MESSAGE)
    return {
        "observedGeneration": isvc["metadata"].get("generation"),
        "url": url,
        "address": {"url": url},
        "conditions": _conditions([ready], _old_conditions(isvc), now),
    }


def compute(isvc: Mapping[str, Any], observed: Observed, config: InferenceServiceConfig, now: str) -> Obj:
    """The status fields this controller owns (see `OWNED_FIELDS`); others' fields are left alone."""
    old = dict(isvc.get("status") or {})
    conds = {c.type: c for c in _kept_component_conditions(old, observed)}
    components: Obj = {} if observed.plans is not None else _owned_components(old.get("components"))
    for plan in observed.plans or ():
        workload = observed.workloads.get(plan.component)
        cond = workload_condition(plan, workload)
        conds[cond.type] = cond
        replica = (plan.name, workload) if plan.mode == modes.OMENATIVE else None
        entry = _component_status(isvc, plan.component, cond, config, replica)
        if plan.mode == modes.RAW_DEPLOYMENT:  # what an autoscaler of the component scales
            entry["scaleTargetRef"] = {"apiVersion": "apps/v1", "kind": "Deployment", "name": plan.name}
        if entry:
            components[plan.component] = entry
    for ref in observed.refs:
        cond = ref_condition(ref)
        conds[cond.type] = cond
        fronted = (ref.replica_name, ref.replica) if ref.problem is None else None
        # An empty entry is left out: server-side apply turns `{}` in this map into null, which fails.
        if entry := _component_status(isvc, ref.component, cond, config, fronted):
            components[ref.component] = entry
    conds[INGRESS_READY] = _ingress_condition(config, observed.ingress)
    if not observed.referenced and (runtime := _runtime_condition(observed, old)) is not None:
        conds[RUNTIME_READY] = runtime
    if observed.has_overlays:
        conds[OVERLAYS_READY] = _overlays_condition(observed)
    for extra in observed.extra_conditions:
        conds[extra.type] = extra
    for raw in old.get("conditions") or []:  # written by the rollout controllers; kept as they are
        if raw.get("type") in FOREIGN_CONDITIONS and raw["type"] not in conds:
            kept = Cond(raw["type"], raw["status"], raw.get("reason", ""), raw.get("message", ""))
            conds[kept.type] = kept
    conds[READY] = _ready(conds)
    status: Obj = _urls(isvc, observed, config)
    status["observedGeneration"] = isvc["metadata"].get("generation")
    if components:  # apply turns an empty map into null, which the schema rejects; absent prunes it
        status["components"] = components
    status["conditions"] = _conditions(list(conds.values()), _old_conditions(isvc), now)
    if observed.has_model:
        status["modelStatus"] = model_status(conds[READY].ok, observed.engine_pods)
    status.update(observed.pin_fields)
    if observed.traffic is not None:
        status["traffic"] = observed.traffic
    return status


OWNED_FIELDS: Final = (
    "url",
    "address",
    "observedGeneration",
    "components",
    "conditions",
    "modelStatus",
    "pinnedRevisionName",
    "lastRuntimeSyncToken",
    "addresses",
    "traffic",
)
FOREIGN_CONDITIONS: Final = frozenset({"RolloutPlanReady", "RolloutPlanDrift", "RolloutCoordinationReady"})
"""Conditions the rollout run and coordination controllers write; this controller keeps them."""
COMPONENT_FIELDS: Final = ("url", "lifecycle", "scaleTargetRef", "autoscaler")
"""Within status.components.<c>, the fields this controller writes (`autoscaler` as the autoscaler
controller published it: autoscaler/entries.py)."""


def differs(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether writing `new` (owned fields only) would change `old` (the whole cached status)."""
    for key in OWNED_FIELDS:
        if key == "components":
            if _owned_components(old.get(key)) != _owned_components(new.get(key)):
                return True
        elif old.get(key) != new.get(key):
            return True
    return False


def _owned_components(components: Mapping[str, Any] | None) -> dict[str, Obj]:
    return {
        name: {k: entry[k] for k in COMPONENT_FIELDS if k in entry}
        for name, entry in (components or {}).items()
    }


def _kept_component_conditions(old: Mapping[str, Any], observed: Observed) -> list[Cond]:
    if observed.plans is not None:
        return []
    kept = []
    for raw in old.get("conditions") or []:
        if raw.get("type") in {component_condition(c) for c in modes.COMPONENTS}:
            kept.append(Cond(raw["type"], raw["status"], raw.get("reason", ""), raw.get("message", "")))
    return kept


def first_write_deferral(
    isvc: Mapping[str, Any], observed: Observed, computed: Mapping[str, Any], now: datetime
) -> float | None:
    """Seconds to hold back the first status of a new service (requeue then), or None to write it now.

    Written now when the service had a status before (a spec change of a running one reports its
    observedGeneration at once), when it is not starting normally (`_starting_normally`), when it is
    Ready with no OMENative serving gate still opening (the one write the hold is for), or once
    FIRST_STATUS_GRACE has passed since its creation. Otherwise held for what is left of the grace."""
    old = isvc.get("status") or {}
    if old.get("observedGeneration") is not None or old.get("conditions"):
        return None
    created = (isvc.get("metadata") or {}).get("creationTimestamp")
    if not created or not _starting_normally(observed, computed):
        return None
    ready = is_ready(computed)
    gates_opening = any(_gates_opening(observed.workloads.get(plan.component))
                        for plan in observed.plans or () if plan.mode == modes.OMENATIVE)
    if ready and not gates_opening:
        return None
    try:
        age = (now - parse_time(str(created))).total_seconds()
    except ValueError:
        return None
    return FIRST_STATUS_GRACE - age if age < FIRST_STATUS_GRACE else None


def _starting_normally(observed: Observed, computed: Mapping[str, Any]) -> bool:
    """Each component is the service's own Deployment or InferenceReplica (or not created yet) and
    reports no problem, and each condition that is not True only says a component is still coming up:
    no runtime, overlay, ingress or model load problem to report."""
    if not observed.plans or observed.referenced or observed.runtime_error or observed.overlays_problem:
        return False
    components = {component_condition(plan.component) for plan in observed.plans}
    for cond in computed.get("conditions") or ():
        if cond.get("type") == READY or cond.get("status") == "True":
            continue
        if cond.get("type") not in components or cond.get("reason") not in _STARTING_REASONS:
            return False  # ingress, runtime or a foreign condition not True, or a component failing
    if (computed.get("modelStatus") or {}).get("transitionStatus") == "BlockedByFailedLoad":
        return False
    for plan in observed.plans:
        if plan.mode not in (modes.RAW_DEPLOYMENT, modes.OMENATIVE):
            return False
        workload = observed.workloads.get(plan.component)
        if workload is not None and not _starting(plan.mode, workload):
            return False
    return True


def _gates_opening(replica: Mapping[str, Any] | None) -> bool:
    """Instances ready and not yet serving: their serving gates were just opened, and the replica's
    next status (serving and available counts) follows within a kubelet status round."""
    status = (replica or {}).get("status") or {}
    return int(status.get("readyReplicas") or 0) > int(status.get("servingReplicas") or 0)


def _starting(mode: str, workload: Mapping[str, Any]) -> bool:
    """The workload reports no problem: a Deployment within its progress deadline without a replica
    failure; a replica with no failed Instance and no problem condition."""
    status = workload.get("status") or {}
    if mode == modes.RAW_DEPLOYMENT:
        progressing, failure = _find(status, "Progressing"), _find(status, "ReplicaFailure")
        return not ((progressing or {}).get("status") == "False" or (failure or {}).get("status") == "True")
    for cond in status.get("conditions") or ():
        if cond.get("type") == "Ready" and cond.get("reason") == "InstanceFailed":
            return False
        if cond.get("type") in _REPLICA_PROBLEMS and cond.get("status") == "True":
            return False
    return True


def workload_condition(plan: ComponentPlan, workload: Mapping[str, Any] | None) -> Cond:
    type_ = component_condition(plan.component)
    if workload is None:
        return Cond(type_, "False", "Initializing", f"{plan.component} component initializing")
    if plan.mode == modes.OMENATIVE:
        return Cond(type_, *replica_status.readiness(workload))
    available = _find(workload.get("status") or {}, "Available")
    if available is not None and available.get("status") == "True":
        return Cond(type_, "True", available.get("reason", ""), available.get("message", ""))
    return Cond(type_, "False", "Initializing", f"{plan.component} component initializing")


def ref_condition(ref: RoleRef) -> Cond:
    """A referenced role: the replica's readiness, or why there is no replica to front."""
    type_ = component_condition(ref.component)
    if ref.problem is not None:
        return Cond(type_, "False", ref.problem.reason, ref.problem.message)
    return Cond(type_, *replica_status.readiness(ref.replica or {}))


def _ingress_condition(config: InferenceServiceConfig, state: IngressState | None) -> Cond:
    if state is None:
        return Cond(INGRESS_READY, "True", INGRESS_DISABLED, INGRESS_DISABLED_MESSAGE)
    if state.created:  # True with no reason: the routes exist (and, with HTTPRoutes, are accepted)
        return Cond(INGRESS_READY, "True")
    return Cond(INGRESS_READY, "False", state.reason, state.message)


def _runtime_condition(observed: Observed, old: Mapping[str, Any]) -> Cond | None:
    """Only after a runtime problem (inference-services.md §Status): False/RuntimeNotFound, then
    True/RuntimeResolved once a runtime resolves; never written for a service that had no problem."""
    if observed.runtime_error is not None:
        return Cond(RUNTIME_READY, "False", "RuntimeNotFound", observed.runtime_error)
    if _find(old, RUNTIME_READY) is None:
        return None
    return Cond(RUNTIME_READY, "True", "RuntimeResolved")


def _overlays_condition(observed: Observed) -> Cond:
    """True/AllOverlaysMounted, or False/OverlaysSkipped naming the overlays left out and why."""
    if observed.overlays_problem:
        return Cond(OVERLAYS_READY, "False", "OverlaysSkipped", observed.overlays_problem)
    return Cond(OVERLAYS_READY, "True", "AllOverlaysMounted")


def _ready(conds: Mapping[str, Cond]) -> Cond:
    for dependent in (component_condition("engine"), INGRESS_READY):
        cond = conds.get(dependent)
        if cond is None:
            return Cond(READY, "False", "Initializing", f"{dependent} is not reported yet")
        if not cond.ok:
            return Cond(READY, "False", cond.reason, cond.message)
    return Cond(READY, "True")


def _component_status(
    isvc: Mapping[str, Any],
    component: str,
    cond: Cond,
    config: InferenceServiceConfig,
    replica: tuple[str, Mapping[str, Any] | None] | None,
) -> Obj:
    """The URL once the workload is available; for a replica-run component, the replica as scale target
    and its lifecycle (once it reports any)."""
    entry: Obj = {}
    if cond.ok:
        name = naming.service_name(isvc["metadata"]["name"], component)
        entry["url"] = f"http://{_host(name, isvc, config)}"
    if replica is not None:
        replica_name, obj = replica
        if obj is not None and (mirrored := replica_status.lifecycle(obj)):
            entry["lifecycle"] = mirrored
        entry["scaleTargetRef"] = replica_status.scale_target_ref(replica_name)
    return entry


def _urls(isvc: Mapping[str, Any], observed: Observed, config: InferenceServiceConfig) -> Obj:
    if observed.ingress is not None:
        url = observed.ingress.url
        if not url:
            return {}
        found: Obj = {"url": url, "address": {"url": observed.ingress.address or url}}
        if observed.ingress.addresses:
            found["addresses"] = observed.ingress.addresses
        return found
    if observed.external_port is None:
        return {}
    url = f"http://{_host(isvc['metadata']['name'], isvc, config)}:{observed.external_port}"
    return {"url": url, "address": {"url": url}}


def _host(name: str, isvc: Mapping[str, Any], config: InferenceServiceConfig) -> str:
    return f"{name}.{isvc['metadata']['namespace']}.svc.{config.cluster_domain}"


def model_status(ready: bool, engine_pods: Sequence[Obj]) -> Obj:
    """InProgress until Ready, then UpToDate; BlockedByFailedLoad when the engine's main container fails."""
    if ready:
        return {
            "transitionStatus": "UpToDate",
            "modelRevisionStates": {"activeModelState": "Loaded", "targetModelState": "Loaded"},
            "modelCopies": {"failedCopies": 0, "totalCopies": len(engine_pods)},
        }
    for pod in sorted(engine_pods, key=_created, reverse=True):
        failure = main_container_failure(pod)
        if failure is not None:
            return {
                "transitionStatus": "BlockedByFailedLoad",
                "modelRevisionStates": {"activeModelState": "", "targetModelState": "FailedToLoad"},
                "lastFailureInfo": {"reason": "ModelLoadFailed", **failure},
            }
    target = "Loading" if engine_pods else "Pending"
    return {
        "transitionStatus": "InProgress",
        "modelRevisionStates": {"activeModelState": "", "targetModelState": target},
    }


def main_container_failure(pod: Mapping[str, Any]) -> Obj | None:
    """Exit code and message when the main container terminated with an error or crash-loops."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    main = next((s for s in statuses if s.get("name") == MAIN_CONTAINER), statuses[0] if statuses else None)
    if main is None:
        return None
    state, last = main.get("state") or {}, main.get("lastState") or {}
    terminated = state.get("terminated")
    if terminated is None and (state.get("waiting") or {}).get("reason") == "CrashLoopBackOff":
        terminated = last.get("terminated")
    if terminated is None or terminated.get("exitCode", 0) == 0:
        return None
    message = terminated.get("message") or terminated.get("reason") or "container terminated"
    return {"message": message, "exitCode": terminated["exitCode"]}


def _created(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("creationTimestamp") or "")


def is_ready(status: Mapping[str, Any]) -> bool:
    """Whether `status` (a computed or written one) says Ready."""
    return (_find(status, READY) or {}).get("status") == "True"


def _find(status: Mapping[str, Any], type_: str) -> Obj | None:
    for cond in status.get("conditions") or []:
        if cond.get("type") == type_:
            found: Obj = cond
            return found
    return None


def _old_conditions(isvc: Mapping[str, Any]) -> dict[str, Obj]:
    return {c["type"]: c for c in ((isvc.get("status") or {}).get("conditions") or []) if "type" in c}


def _conditions(conds: Sequence[Cond], old: Mapping[str, Obj], now: str) -> list[Obj]:
    """Sorted by type; lastTransitionTime moves only when the status does."""
    result = []
    for cond in sorted(conds, key=lambda c: c.type):
        previous = old.get(cond.type) or {}
        since = previous.get("lastTransitionTime") if previous.get("status") == cond.status else None
        entry: Obj = {"type": cond.type, "status": cond.status, "lastTransitionTime": since or now}
        if cond.reason:
            entry["reason"] = cond.reason
        if cond.message:
            entry["message"] = cond.message
        result.append(entry)
    return result
