"""The autoscaler reconciler: each component's HPA or KEDA ScaledObject, its PodDisruptionBudget, the
replica counts OME holds, and the entries of `status.components.<c>.autoscaler`.

It runs next to the InferenceService controller in the same manager, reading the same cache; the
InferenceService controller renders the workloads and never the autoscalers or budgets. Per component, in
order (engine, decoder, router), decide.py says what is wanted; this applies it:

- the new scaler is applied before the old one is deleted (a switch of class deletes the scaler OME
  created before, only when it is ours: owned by this InferenceService);
- a scaler or budget of ours that a stranger already holds under our name fails the component with
  `is not controlled by expected owner` (`failed to preflight ... PodDisruptionBudget` for a budget);
- a component that fails logs `Failed to reconcile component`, skips the components after it and the
  status entries, and the key is retried with backoff;
- a policy hold records an `AutoscalerPolicyHold` Warning event when it starts.

It writes no InferenceService status: it publishes the entries (entries.py) and the InferenceService
reconciler, the one writer of that status, merges them into the status it writes (one write for both
parts), queued by the publication when the status does not show them yet.

Writes are server-side applies stamped with a hash (no-op reconciles write nothing), under the field
manager `ome-autoscaler-controller`. The watch event of one apply (the HPA's) re-runs a pass before the
cache shows the other (the budget's, absent while just created); the reconciler's `OwnApplies`
(framework/own_applies.py) keeps that pass from applying the same content again (`_apply`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final, Protocol

import structlog

from ome.api import resources
from ome.api.resources import Resource
from ome.config.config_source import ConfigSource
from ome.config.inferenceservice_config import InferenceServiceConfig, MetricProvider
from ome.controllers.autoscaler import components as component_reader
from ome.controllers.autoscaler import decide as deciding
from ome.controllers.autoscaler.entries import LEGACY_FIELD_MANAGER, AutoscalerEntries
from ome.controllers.inferenceservice import converge, runtime_pinning
from ome.framework import errors
from ome.framework.events import EventRecorder
from ome.framework.own_applies import OwnApplies, SeenVersion
from ome.framework.post_creates import PostCreates
from ome.framework.reconcile import Request, Result, RetryError
from ome.framework.store import OWNER_INDEX
from ome.framework.timefmt import format_time
from ome.framework.together import all_settled
from ome.resolution import autoscaler_objects as scalers
from ome.resolution import autoscaler_policy, autoscaling, modes, naming
from ome.resolution.autoscaling import PolicyHold

Obj = dict[str, Any]

FIELD_MANAGER: Final = LEGACY_FIELD_MANAGER  # still its manager for the HPAs, ScaledObjects and PDBs
log = structlog.get_logger("ome.controllers.autoscaler")

_SCALER_RESOURCES: Final = {
    "HorizontalPodAutoscaler": resources.HPAS,
    "ScaledObject": scalers.SCALED_OBJECTS,
}
_WORKLOADS: Final = {
    modes.RAW_DEPLOYMENT: resources.DEPLOYMENTS,
    modes.OMENATIVE: resources.INFERENCE_REPLICAS,
}


class Reader(runtime_pinning.Lister, Protocol):
    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None: ...


class Writer(converge.Writer, Protocol):
    async def patch(self, res: Resource, name: str, patch: Obj, namespace: str | None = None, *,
                    subresource: str | None = None) -> Obj: ...


class ComponentFailed(RetryError):
    """A component's autoscaling could not be reconciled; the later components were skipped."""


class Features:
    """What the controller found when it started: KEDA's CRDs, and whether AutoscalerPolicy is on."""

    def __init__(self, *, keda_served: bool, policy_enabled: bool) -> None:
        self.keda_served = keda_served
        self.policy_enabled = policy_enabled


def _utcnow() -> datetime:
    return datetime.now(UTC)


def providers_of(config: InferenceServiceConfig) -> Mapping[str, MetricProvider]:
    """Top-level metricProviders win; the nested autoscalerPolicy map is the older spelling."""
    if config.metric_providers is not None:
        return config.metric_providers
    return config.autoscaler_policy.metric_providers if config.autoscaler_policy is not None else {}


class AutoscalerReconciler:
    def __init__(
        self,
        *,
        reader: Reader,
        writer: Writer,
        recorder: EventRecorder,
        config: InferenceServiceConfig,
        features: Features,
        entries: AutoscalerEntries,
        config_namespace: str = "ome",
        config_source: ConfigSource | None = None,
        clock: Callable[[], datetime] = _utcnow,
        seen: SeenVersion | None = None,
        posts: PostCreates | None = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._posts = posts  # HPAs and budgets created by POST (framework/post_creates.py)
        self._recorder = recorder
        self._config = config
        self._features = features
        self._entries = entries
        self._config_namespace = config_namespace
        self._config_source = config_source
        self._clock = clock
        self._applied = OwnApplies(seen)  # seen: SharedCache.seen_version, the informers' progress

    async def reconcile(self, req: Request) -> Result:
        if self._config_source is not None:
            self._config = await self._config_source.current()
        isvc = self._reader.get_or_none(resources.INFERENCE_SERVICES, req.name, req.namespace)
        if isvc is None or (isvc.get("metadata") or {}).get("deletionTimestamp"):
            self._entries.forget(req.namespace, req.name)
            return Result()  # owner references take our objects away with the service
        found = component_reader.resolve(self._reader, isvc, self._config, self._config_namespace)
        if found is None:
            return Result()
        entries: dict[str, Obj] = {}
        holds: list[float] = []
        failure: Exception | None = None
        for component in found:
            try:
                entries[component.plan.component], hold = await self._component(isvc, component)
                if hold is not None:
                    holds.append(hold)
            except ComponentFailed as exc:
                log.error("Failed to reconcile component", component=component.plan.component, error=str(exc))
                failure = exc
                break
        await self._delete_removed(isvc, {c.plan.component for c in found})
        if failure is not None:
            raise failure
        if holds:  # a new HPA's report is due: the entries go out with it (decide.SCALER_REPORT_GRACE)
            return Result(requeue_after=min(holds))
        self._entries.publish(isvc, entries)  # the InferenceService reconciler writes them
        return Result()

    async def _component(self, isvc: Obj, component: component_reader.Component) -> tuple[Obj, float | None]:
        """The component's status entry, and the seconds it is held back for (None: not held)."""
        plan = component.plan
        namespace, name = isvc["metadata"]["namespace"], isvc["metadata"]["name"]
        scaled_object = self._scaled_object(namespace, scalers.scaled_object_name(name, plan.component))
        keda_hpa = None
        if scaled_object is not None:
            keda_name = scalers.keda_hpa_name(scaled_object)
            keda_hpa = self._reader.get_or_none(resources.HPAS, keda_name, namespace)
        inputs = deciding.inputs_for(
            isvc, plan, component.runtime_component,
            policy=self._policy(isvc, component),
            hpa=self._reader.get_or_none(resources.HPAS, scalers.hpa_name(name, plan.component), namespace),
            scaled_object=scaled_object, keda_hpa=keda_hpa,
            pdb=self._reader.get_or_none(resources.PDBS, plan.name, namespace),
            workload=self._workload(plan.mode, plan.name, namespace),
        )
        desired = deciding.decide(inputs, self._config, keda_served=self._features.keda_served)
        if desired.resolution.hold is not None:
            self._hold_event(isvc, plan.component, desired.resolution.hold)
        if desired.error is not None:
            raise ComponentFailed(desired.error)
        # The HPA and the budget are created once their workload is in the cache (its event brings this
        # pass back): an HPA made before its target gets a FailedGetScale warning event and a status
        # write from the HPA controller, and one more status write once the target is there.
        follows = inputs.workload is None and plan.mode in _WORKLOADS
        self._check_scaler_owner(isvc, inputs, desired)  # a stranger's scaler fails the component unwritten
        writes = [self._converge_scaler(isvc, inputs, desired, create=not follows)]
        if desired.pdb_error is None:
            # The scaler and the budget are independent objects: written together, one round trip (two
            # on an object's first change after its POST, which moves its fields first), not two.
            writes.append(self._converge_pdb(isvc, inputs, desired.pdb, create=not follows))
        await all_settled(*writes)
        if desired.pdb_error is not None:
            raise ComponentFailed(desired.pdb_error)
        if desired.scale_to is not None and inputs.workload is not None:
            await self._scale(plan.mode, inputs.workload, desired.scale_to)
        now = self._clock()
        old = self._old_autoscaler(isvc, plan.component)
        return (deciding.status_entry(inputs, desired, old, format_time(now)),
                deciding.awaiting_scaler_report(inputs, desired, old, now))

    async def _scale(self, mode: str, workload: Mapping[str, Any], replicas: int) -> None:
        """Set the count through the scale subresource, only over the count this decision was made from:
        the cached resourceVersion is a precondition, so a `kubectl scale` or an autoscaler's write that
        the cache has not seen yet is never overwritten (409: requeued, decided again)."""
        meta = workload["metadata"]
        log.info("Setting replicas", workload=meta["name"], replicas=replicas)
        body = {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "spec": {"replicas": replicas}}
        try:
            await self._writer.patch(_WORKLOADS[mode], meta["name"], body, meta["namespace"],
                                     subresource="scale")
        except errors.NotFound:
            pass  # deleted meanwhile; its watch brings the service back

    # -- reads ------------------------------------------------------------------------------------

    def _scaled_object(self, namespace: str, name: str) -> Obj | None:
        if not self._features.keda_served:
            return None
        return self._reader.get_or_none(scalers.SCALED_OBJECTS, name, namespace)

    def _workload(self, mode: str, name: str, namespace: str) -> Obj | None:
        res = _WORKLOADS.get(mode)
        return self._reader.get_or_none(res, name, namespace) if res is not None else None

    def _policy(self, isvc: Obj, component: component_reader.Component) -> autoscaling.PolicyOutcome | None:
        ref = autoscaling.policy_ref(component.isvc_component)
        inline = component.isvc_component.get("autoscaler")
        if ref is None or inline or component.plan.mode == modes.MULTINODE:
            return None
        namespace = isvc["metadata"]["namespace"]
        policy = None
        if self._features.policy_enabled:
            policy = self._reader.get_or_none(resources.AUTOSCALER_POLICIES, ref, namespace)
        try:
            bounds = autoscaling.replica_bounds(
                component=component.plan.component, mode=component.plan.mode,
                isvc_component=component.isvc_component, runtime_component=component.runtime_component,
                defaults=self._config.deploy.replicas)
        except autoscaling.AutoscalingError:
            return None  # decide() reports the bounds
        ctx = autoscaler_policy.Context(namespace, isvc["metadata"]["name"], component.plan.component, bounds)
        return autoscaler_policy.outcome(ref, policy, ctx, enabled=self._features.policy_enabled,
                                         keda_served=self._features.keda_served,
                                         providers=providers_of(self._config))

    # -- writes -----------------------------------------------------------------------------------

    async def _converge_scaler(self, isvc: Obj, inputs: deciding.Inputs, desired: deciding.Desired, *,
                               create: bool = True) -> None:
        """`create=False`: a scaler not there yet is not made (nor is the old one deleted)."""
        existing = _scalers(inputs)
        if desired.scaler is not None:
            kind = desired.scaler["kind"]
            cached = existing[kind]
            if cached is None and not create:
                return
            await self._apply(desired.scaler, cached)  # its owner was checked before any write (_component)
        # The new scaler exists before the old one goes (a failed create leaves the old one scaling).
        wanted = {desired.scaler["kind"]} if desired.scaler is not None else set()
        for kind, cached in existing.items():
            if cached is None or kind in wanted or kind in desired.keep or not _controlled_by(cached, isvc):
                continue
            await self._delete(_SCALER_RESOURCES[kind], cached)

    @staticmethod
    def _check_scaler_owner(isvc: Obj, inputs: deciding.Inputs, desired: deciding.Desired) -> None:
        """ComponentFailed when the desired scaler's name is held by an object this service does not
        control."""
        if desired.scaler is None:
            return
        kind = desired.scaler["kind"]
        cached = _scalers(inputs)[kind]
        if cached is not None and not _controlled_by(cached, isvc):
            meta = cached["metadata"]
            raise ComponentFailed(
                f"{kind} {meta.get('namespace')}/{meta['name']} is not controlled by expected owner "
                f"InferenceService {isvc['metadata']['name']}"
            )

    async def _converge_pdb(self, isvc: Obj, inputs: deciding.Inputs, pdb: Obj | None, *,
                            create: bool = True) -> None:
        if pdb is not None:
            if inputs.pdb is None and not create:
                return
            await self._apply(pdb, inputs.pdb)
        elif inputs.pdb is not None and _controlled_by(inputs.pdb, isvc):
            await self._delete(resources.PDBS, inputs.pdb)

    async def _apply(self, desired: Obj, cached: Mapping[str, Any] | None) -> None:
        # A cache older than our last apply is compared with that apply, not with itself (OwnApplies).
        await converge.converge(self._writer, desired, cached, applies=self._applied,
                                field_manager=FIELD_MANAGER, posts=self._posts, reader=self._reader)

    async def _delete(self, res: Resource, obj: Mapping[str, Any]) -> None:
        await converge.delete(self._writer, res, obj, self._applied)

    async def _delete_removed(self, isvc: Obj, declared: set[str]) -> None:
        """Autoscalers and budgets of components the spec no longer declares."""
        selector = {naming.ISVC_LABEL: isvc["metadata"]["name"]}
        kinds: list[Resource] = [resources.HPAS, resources.PDBS]
        if self._features.keda_served:
            kinds.append(scalers.SCALED_OBJECTS)
        owned = (OWNER_INDEX, str(isvc["metadata"].get("uid") or ""))  # not a scan of the namespace
        for res in kinds:
            for child in self._reader.list(res, isvc["metadata"]["namespace"], label_selector=selector,
                                           index=owned):
                component = (child["metadata"].get("labels") or {}).get(naming.COMPONENT_LABEL)
                if component not in declared and _controlled_by(child, isvc):
                    await self._delete(res, child)

    def _hold_event(self, isvc: Obj, component: str, hold: PolicyHold) -> None:
        old = self._old_autoscaler(isvc, component)
        previous = next((c for c in old.get("conditions") or []
                         if c.get("type") == autoscaling.RESOLVED_CONDITION), None) or {}
        if previous.get("status") == "False" and previous.get("reason") == hold.reason:
            return  # the hold already started
        self._recorder.event(isvc, "Warning", autoscaler_policy.HOLD_EVENT,
                             autoscaler_policy.hold_event_message(component, hold))

    def _old_autoscaler(self, isvc: Obj, component: str) -> Obj:
        """The component's entry as last reported: as published in this process (the status may not
        show it yet, while a new service's first status is held back), else as the status has it."""
        meta = isvc["metadata"]
        published = self._entries.published(meta.get("namespace", ""), meta["name"])
        if published is not None:
            return dict((published.get(component) or {}).get("autoscaler") or {})
        components = (isvc.get("status") or {}).get("components") or {}
        return dict((components.get(component) or {}).get("autoscaler") or {})


def _controlled_by(child: Mapping[str, Any], isvc: Mapping[str, Any]) -> bool:
    uid = isvc["metadata"].get("uid")
    refs: Sequence[Mapping[str, Any]] = child["metadata"].get("ownerReferences") or []
    return any(ref.get("uid") == uid and ref.get("controller") for ref in refs)


def _scalers(inputs: deciding.Inputs) -> dict[str, Mapping[str, Any] | None]:
    """The cached scaler of each kind the component may have."""
    return {"HorizontalPodAutoscaler": inputs.hpa, "ScaledObject": inputs.scaled_object}
