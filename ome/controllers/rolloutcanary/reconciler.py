"""Rollout run and canary reconciler, keyed by InferenceService (I/O around the pure planners).

Each pass, for an InferenceService with `spec.rollout.groups` (or a run still pinned):

1. the run layer (`canary_run`): `status.rollout.groups` (where each group's plan comes from), a repin
   (`ome.io/rollout-repin`, removed whatever the outcome), a superseded run closed, a new run pinned
   into `status.rollout.activeRun` when a member gets a new target revision, or the rollout parked
   (`RolloutPlanReady` False with the reason, `RolloutPlanParked`);
2. each canary group's step machine (`canary_plan`), sampling Prometheus first when its analysis is due
   (`canary_prometheus`); it writes `status.components.<primary>.canary`, `.rolloutPhase` and
   `.traffic`, removes the promote / spent rollback annotations, records events and `ome_canary_*`;
3. the run closed once it completed or rolled back (`RolloutRunClosed`: `run <id> closed: RolledBack`),
   and `RolloutPlanDrift` while it is pinned.

The Instances move elsewhere: the Instance rollout reconciler asks the coordination hook how many
Instances may run the new revision (`canary_progression`), and moves a held group's Instances back to
the stable revision (`hold.revert_revision`). Status is written by server-side apply under this
controller's field manager, only when it changed; the InferenceService controller keeps the two
conditions this controller sets.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

import structlog

from ome.api.resources import INFERENCE_SERVICES, ROLLOUT_POLICIES
from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers import shared_conditions
from ome.controllers.rolloutcoordination import observe
from ome.framework import errors
from ome.framework.cache import SharedCache
from ome.framework.client import Client
from ome.framework.events import EventRecorder
from ome.framework.reconcile import Request, Result
from ome.framework.resources import SECRETS
from ome.omenative import canary_analysis as analysis
from ome.omenative import canary_metrics as metrics
from ome.omenative import canary_plan as cp
from ome.omenative import canary_run as run
from ome.omenative.canary_prometheus import PrometheusClient, Source
from ome.omenative.coordination_types import Member
from ome.webhooks.canary_validation import progression_kind

Obj = dict[str, Any]
log = structlog.get_logger("ome.controllers.rolloutcanary")

FIELD_MANAGER: Final = "ome-rollout-canary-controller"
PARK_REQUEUE: Final = 60.0
ACTIVE_REQUEUE: Final = 30.0


STATUS_ATTEMPTS: Final = 3
"""Status applies per pass before a 409 requeues it."""


class CanaryReconciler:
    def __init__(
        self,
        client: Client,
        cache: SharedCache,
        config: Callable[[], InferenceServiceConfig],
        *,
        prometheus: PrometheusClient,
        policy_enabled: bool = False,
        recorder: EventRecorder | None = None,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self._client = client
        self._cache = cache
        self._config = config
        self._prometheus = prometheus
        self._policy_enabled = policy_enabled
        self._recorder = recorder
        self._now = now or (lambda: datetime.now(UTC).replace(microsecond=0))
        self.writes = 0

    async def reconcile(self, req: Request) -> Result:
        isvc = self._cache.get_or_none(INFERENCE_SERVICES, req.name, req.namespace)
        if isvc is None or (isvc.get("metadata") or {}).get("deletionTimestamp"):
            return Result()
        groups = list(((isvc.get("spec") or {}).get("rollout") or {}).get("groups") or [])
        old_status = isvc.get("status") or {}
        if not groups and not (old_status.get("rollout") or {}).get("activeRun"):
            return Result()
        p = _Pass(self, isvc, groups)
        await p.execute()
        await self._finish(isvc, p)
        return Result(requeue_after=p.wake)

    # -- reads ---------------------------------------------------------------------------------------

    def policies(self, isvc: Mapping[str, Any], groups: list[Obj]) -> dict[str, run.PolicyView | None]:
        out: dict[str, run.PolicyView | None] = {}
        if not self._policy_enabled:
            return out
        for group in groups:
            name = str((group.get("policyRef") or {}).get("name") or "")
            if not name or name in out:
                continue
            found = self._cache.get_or_none(ROLLOUT_POLICIES, name, isvc["metadata"]["namespace"])
            out[name] = (
                run.PolicyView(found.get("spec") or {}, (found.get("metadata") or {}).get("generation"))
                if found is not None
                else None
            )
        return out

    def bound_providers(self) -> dict[str, Any]:
        config = self._config()
        providers = config.metric_providers
        if providers is None and config.autoscaler_policy is not None:
            providers = config.autoscaler_policy.metric_providers
        return dict(providers or {})

    async def source(
        self, namespace: str, prometheus: Mapping[str, Any], fallback: bool
    ) -> tuple[Source | None, tuple[str, str] | None]:
        """Where a sample goes: serverAddress, a bound providerRef, the default provider, the bundled
        address; the canary's authRef and headers on top. (source, (metric, message) when unusable)."""
        config = self._config().canary_analysis
        providers = self.bound_providers()
        headers: dict[str, str] = {}
        token_ref: Mapping[str, Any] | None = None
        address = str(prometheus.get("serverAddress") or "")
        ref = str((prometheus.get("providerRef") or {}).get("name") or "")
        if not address:
            name = ref or config.default_provider
            provider = providers.get(name) if name else None
            if provider is not None and not (ref and fallback):
                address = provider.server_address
                extra = provider.model_extra or {}
                headers.update({str(k): str(v) for k, v in (extra.get("headers") or {}).items()})
                token_ref = extra.get("authSecretRef")
            else:
                address = config.bundled_prometheus_address
                if ref:  # a providerRef unbound mid-rollout: no token or headers
                    prometheus = {}
        headers.update({str(k): str(v) for k, v in (prometheus.get("headers") or {}).items()})
        token_ref = prometheus.get("authRef") or token_ref
        if not address:
            return None, (analysis.PROMETHEUS_METRIC, "no Prometheus address: set canaryAnalysis."
                          "bundledPrometheusAddress or defaultProvider")
        if not address.startswith(("http://", "https://")):
            return None, (analysis.PROMETHEUS_METRIC, f"cannot build a client for address {address!r}")
        token = None
        if token_ref:
            try:
                secret = await self._client.get(SECRETS, str(token_ref.get("name")), namespace)
                raw = (secret.get("data") or {})[str(token_ref.get("key"))]
                token = base64.b64decode(raw).decode().strip()
            except (errors.ApiError, KeyError, ValueError) as exc:
                return None, (analysis.AUTH_METRIC, f"resolve bearer token: {exc}")
        return Source(address, headers, token), None

    # -- writes --------------------------------------------------------------------------------------

    async def _finish(self, isvc: Obj, p: _Pass) -> None:
        meta = isvc["metadata"]
        snapshot = isvc
        if p.consume:
            patch = {"metadata": {"annotations": {key: None for key in sorted(set(p.consume))}}}
            try:
                ns = meta["namespace"]
                snapshot = await self._client.patch(INFERENCE_SERVICES, meta["name"], patch, ns)
                self.writes += 1
            except errors.NotFound:
                return
        if p.changed():
            await self._apply_status(p, snapshot)
        for type_, reason, message in p.events:  # after the writes: a pass retried on 409 says it once
            if self._recorder is not None:
                self._recorder.event(isvc, "Warning" if type_ == "Warning" else "Normal", reason, message)

    async def _apply_status(self, p: _Pass, snapshot: Obj) -> None:
        """Apply this pass's status on the other writer's conditions as `snapshot` shows them, guarded by
        its resourceVersion (shared_conditions). The annotations this pass consumed are gone already, so
        a 409 is answered from a fresh read rather than by requeueing the pass."""
        meta, ours = snapshot["metadata"], p.status_body()
        for attempt in range(STATUS_ATTEMPTS):
            theirs = (snapshot.get("status") or {}).get("conditions") or []
            conditions = shared_conditions.rebase(ours["conditions"], theirs, run_controller=True)
            status = {**ours, "conditions": conditions}
            body = {
                "apiVersion": "ome.io/v1beta1",
                "kind": "InferenceService",
                "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
                "status": status,
            }
            body = shared_conditions.precondition(body, meta.get("resourceVersion"))
            try:
                await self._client.apply(
                    INFERENCE_SERVICES, body, field_manager=FIELD_MANAGER, subresource="status"
                )
            except errors.Conflict:
                if attempt + 1 == STATUS_ATTEMPTS:
                    raise
                try:
                    snapshot = await self._client.get(INFERENCE_SERVICES, meta["name"], meta["namespace"])
                except errors.NotFound:
                    return
                meta = snapshot["metadata"]
                continue
            except errors.NotFound:
                return
            self.writes += 1
            return


class _Pass:
    """One reconcile's working state for one InferenceService."""

    def __init__(self, owner: CanaryReconciler, isvc: Obj, groups: list[Obj]) -> None:
        self.owner = owner
        self.isvc = isvc
        self.groups = groups
        self.now = owner._now()  # noqa: SLF001
        status = isvc.get("status") or {}
        self.old_status = status
        self.rollout: Obj = dict(status.get("rollout") or {})
        self.conditions: list[Obj] = [dict(c) for c in status.get("conditions") or []]
        self.components: dict[str, Obj] = {}
        """Per primary component: the canary fields this pass writes."""
        self.events: list[tuple[str, str, str]] = []
        self.consume: list[str] = []
        self.wake: float | None = None
        self.annotations: dict[str, str] = dict((isvc.get("metadata") or {}).get("annotations") or {})
        self.members: dict[str, Member] = observe.members(owner._cache, isvc, {})  # noqa: SLF001

    @property
    def ns(self) -> str:
        return str(self.isvc["metadata"]["namespace"])

    @property
    def name(self) -> str:
        return str(self.isvc["metadata"]["name"])

    def wake_in(self, seconds: float | None) -> None:
        if seconds is not None:
            self.wake = seconds if self.wake is None else min(self.wake, seconds)

    def condition(self, type_: str, status: str, reason: str, message: str) -> bool:
        changed = run.condition_changed(self.conditions, type_, status, reason)
        self.conditions = run.set_condition(self.conditions, type_, status, reason, message, self.now)
        return changed

    def targets(self) -> dict[str, run.Target]:
        return {
            c: run.Target(m.target, m.current or m.target, m.desired, m.on_target)
            for c, m in self.members.items()
            if m.target
        }

    def canary_entry(self, primary: str) -> tuple[Obj, str | None]:
        entry = ((self.old_status.get("components") or {}).get(primary)) or {}
        if primary in self.components:
            entry = {**entry, **self.components[primary]}
        return dict(entry.get("canary") or {}), entry.get("rolloutPhase")

    # -- the pass --------------------------------------------------------------------------------

    async def execute(self) -> None:
        policies = self.owner.policies(self.isvc, self.groups)
        self.rollout["groups"] = run.resolution_view(self.groups, policies) if self.groups else None
        active = self.rollout.get("activeRun")
        targets = self.targets()
        def compose() -> run.Composed:  # only when needed: it re-validates every body
            return run.compose(
                self.groups, policies, feature_enabled=self.owner._policy_enabled,  # noqa: SLF001
                bound_providers=set(self.owner.bound_providers()),
            )

        if active and run.REPIN_ANNOTATION in self.annotations:
            active = self._repin(active, compose())
        if active and run.retargeted(active, targets, self._held_hash(active)):
            message = "run {id} superseded by a new target revision; opening a fresh run"
            self._close(active, run.SUPERSEDED, message)
            active = None
        parked = False
        if not active and self.groups:
            diverged = [c for c in run.members_of(self.groups) if self._diverged(c, targets)]
            if diverged:
                composed = compose()
                if composed.park is not None:
                    parked = True
                    reason, message = composed.park
                    if self.condition(run.PLAN_READY, "False", reason, message):
                        self.events.append((
                            "Warning", run.PLAN_PARKED,
                            f"rollout parked ({reason}): {message} — the new revision is held, the previous "
                            "revision keeps serving",
                        ))
                    self.wake_in(PARK_REQUEUE)
                else:
                    active = run.open_run(self.name, composed, targets, self.now)
                    self.rollout["activeRun"] = active
                    digest = run.plan_digest(composed.digests)
                    self.events.append(("Normal", run.RUN_OPENED, f"run {active['runID']} opened ({digest})"))
        if not parked:
            for group in self._canary_groups(active):
                await self._canary(group)
        if active:
            outcome = self._closed_outcome(active)
            if outcome is not None:
                self._close(active, outcome, "run {id} closed: " + outcome)
                active = None
        if active:
            self.rollout["activeRun"] = active
            self.condition(run.PLAN_READY, "True", run.PINNED, f"run {active['runID']} pinned")
            body = run.drift(self.groups, active, self.rollout.get("groups") or [])
            self.condition(run.PLAN_DRIFT, body["status"], body["reason"], body["message"])
            self.wake_in(ACTIVE_REQUEUE)
        elif not parked and self.groups:
            self.rollout.pop("activeRun", None)
            last = (self.rollout.get("lastRun") or {}).get("outcome")
            message = f"last run closed {last}" if last else "no rollout in progress"
            self.condition(run.PLAN_READY, "True", run.NO_ACTIVE_RUN, message)
            self.condition(run.PLAN_DRIFT, "False", run.IN_SYNC, "")

    def _diverged(self, component: str, targets: Mapping[str, run.Target]) -> bool:
        t = targets.get(component)
        if t is None or not t.target or not t.current or t.target == t.current:
            return False
        for group in self.groups:  # a held (rolled-back) canary revision opens nothing
            if component in (group.get("components") or []) and progression_kind(group) == "canary":
                primary = cp.primary(list(group.get("components") or []))
                canary, _ = self.canary_entry(primary)
                lead = targets.get(primary)
                if lead is not None and canary.get("rolledBackRevisionHash") == lead.target:
                    return False
        return True

    def _held_hash(self, active: Mapping[str, Any]) -> str | None:
        for entry in (active.get("plan") or {}).get("groups") or []:
            group = entry.get("group") or {}
            if group.get("canary") is not None:
                canary, _ = self.canary_entry(cp.primary(list(group.get("components") or [])))
                return canary.get("rolledBackRevisionHash")
        return None

    def _repin(self, active: Obj, composed: run.Composed) -> Obj:
        want = self.annotations.get(run.REPIN_ANNOTATION, "")
        group = next(((g.get("group") or {}) for g in (active.get("plan") or {}).get("groups") or []
                      if (g.get("group") or {}).get("canary") is not None), None)
        primary = cp.primary(list((group or {}).get("components") or [])) if group else None
        canary = self.canary_entry(primary)[0] if primary else None
        result = run.repin(active, want, composed, canary or None, self.now)
        self.consume.append(run.REPIN_ANNOTATION)
        if result.outcome:
            metrics.REPIN_TOTAL.labels(self.ns, result.outcome).inc()
        if result.event is not None:
            self.events.append(result.event)
        if result.run is None:
            return active
        if result.canary is not None and primary is not None:
            self.components.setdefault(primary, {})["canary"] = result.canary
        self.rollout["activeRun"] = result.run
        self.condition(run.PLAN_DRIFT, "False", run.IN_SYNC, "")
        return result.run

    def _close(self, active: Obj, outcome: str, message: str) -> None:
        self.rollout["lastRun"] = run.close_run(active, outcome, self.now)
        self.rollout.pop("activeRun", None)
        self.events.append(("Normal", run.RUN_CLOSED, message.format(id=active.get("runID"))))

    def _canary_groups(self, active: Mapping[str, Any] | None) -> list[Obj]:
        """The canary groups to drive: the pinned plan's, else the spec's inline ones."""
        if active:
            return [dict(g.get("group") or {}) for g in (active.get("plan") or {}).get("groups") or []
                    if (g.get("group") or {}).get("canary") is not None]
        return [g for g in self.groups if g.get("canary") is not None]

    def _closed_outcome(self, active: Mapping[str, Any]) -> str | None:
        for entry in (active.get("plan") or {}).get("groups") or []:
            group = entry.get("group") or {}
            members = [m for c in group.get("components") or [] if (m := self.members.get(c)) is not None]
            if group.get("canary") is not None:
                canary, phase = self.canary_entry(cp.primary(list(group.get("components") or [])))
                if canary.get("rolledBackRevisionHash"):
                    if phase != cp.ROLLED_BACK:
                        return None
                    return run.ROLLED_BACK
                if phase != cp.STABLE or any(m.rolling for m in members):
                    return None
                continue
            if any(m.rolling for m in members):
                return None
        return run.COMPLETED

    async def _canary(self, group: Obj) -> None:
        components = [c for c in group.get("components") or [] if c in self.members]
        if not components:
            return
        primary = cp.primary(components)
        lead = self.members.get(primary)
        if lead is None or not lead.target or not lead.synced and not lead.current:
            return
        block = dict(group.get("canary") or {})
        previous, phase = self.canary_entry(primary)
        config = self.owner._config()  # noqa: SLF001
        inp = cp.Inputs(
            canary=block,
            members={c: cp.Member(self.members[c].desired, self.members[c].ready_target,
                                  self.members[c].on_target) for c in components},
            target_hash=lead.target,
            stable_hash=lead.current or lead.target,
            previous=previous or None,
            phase=phase,
            annotations=self.annotations,
            now=self.now,
            ready_timeout=cp.ready_timeout(self.annotations, block, config.rollout.ready_timeout_seconds),
            paused=self.annotations.get("ome.io/rollout-paused") in ("true", "freeze"),
        )
        if cp.sample_due(inp):
            inp = await self._sampled(inp, primary, block, previous)
        plan = cp.plan(inp)
        if not plan.status:
            return  # no canary (the first revision, or nothing to do)
        entry: Obj = {"canary": plan.status, "rolloutPhase": plan.phase}
        traffic = [
            {k: v for k, v in {**t, "revisionName": f"{self.name}-{primary}-rev-{t['revisionHash']}"}.items()
             if k != "revisionHash"}
            for t in plan.traffic
        ]
        entry["traffic"] = traffic or None
        self.components[primary] = entry
        self.consume.extend(plan.consume)
        self.events.extend(plan.events)
        self.wake_in(plan.wake_after)
        results = plan.status.get("metricResults") or []
        metrics.observe_pass(
            self.ns, self.name, primary,
            step=int(plan.status.get("currentStep") or 0),
            weight=int(plan.status.get("observedTrafficWeight") or 0),
            completed=plan.completed or plan.phase == cp.STABLE, advances=plan.step_advances,
            rollback_cause=plan.rollback_cause, evaluated=plan.evaluated,
            failed_checks=int(plan.status.get("analysisFailedChecks") or 0),
            values=[(str(r.get("name")), float(r["value"])) for r in results if r.get("value") is not None],
        )
        if plan.rollback_cause:
            log.info("canary rolled back", namespace=self.ns, name=self.name, cause=plan.rollback_cause)

    async def _sampled(self, inp: cp.Inputs, primary: str, block: Obj, previous: Obj) -> cp.Inputs:
        steps = list(block.get("steps") or [])
        spec = steps[int(previous.get("currentStep") or 0)]["analysis"]
        prometheus = dict(block.get("prometheus") or {})
        ref = str((prometheus.get("providerRef") or {}).get("name") or "")
        unbound = bool(ref) and ref not in self.owner.bound_providers()
        source, problem = await self.owner.source(self.ns, prometheus, unbound)
        variables = analysis.variables(self.ns, self.name, primary, inp.target_hash,
                                       str(previous.get("stableRevisionHash") or inp.stable_hash))
        timeout = self.owner._config().canary_analysis.query_timeout_seconds  # noqa: SLF001
        sample = await self.owner._prometheus.sample(  # noqa: SLF001
            source, list(spec.get("metrics") or []), variables, timeout=timeout, now=self.now,
            source_error=problem,
        )
        return cp.Inputs(**{**{n: getattr(inp, n) for n in cp.Inputs.__slots__}, "sample": sample})

    # -- the status write ------------------------------------------------------------------------

    def status_body(self) -> Obj:
        body: Obj = {"conditions": self.conditions}
        rollout = {k: v for k, v in self.rollout.items() if v is not None}
        if rollout:
            body["rollout"] = rollout
        components = {}
        for name, entry in self._component_fields().items():
            fields = {k: v for k, v in entry.items() if v is not None}
            if fields:
                components[name] = fields
        if components:
            body["components"] = components
        return body

    def _component_fields(self) -> dict[str, Obj]:
        """This controller's fields of every component it ever wrote, so an apply keeps owning them."""
        out: dict[str, Obj] = {}
        active = self.rollout.get("activeRun") or (self.old_status.get("rollout") or {}).get("activeRun")
        primaries = {cp.primary(list(g.get("components") or [])) for g in self._canary_groups(active)}
        primaries |= {cp.primary(list(g.get("components") or [])) for g in self.groups if g.get("canary")}
        for name, entry in (self.old_status.get("components") or {}).items():
            if name not in primaries:
                continue
            kept = {k: entry[k] for k in ("canary", "rolloutPhase", "traffic") if k in entry}
            if kept:
                out[name] = kept
        for name, entry in self.components.items():
            out[name] = {**out.get(name, {}), **entry}
        return out

    def changed(self) -> bool:
        old = self.old_status
        if [c for c in old.get("conditions") or []] != self.conditions:
            return True
        old_rollout = {k: v for k, v in (old.get("rollout") or {}).items() if v is not None}
        new_rollout = {k: v for k, v in self.rollout.items() if v is not None}
        if old_rollout != new_rollout:
            return True
        for name, entry in self.components.items():
            was = (old.get("components") or {}).get(name) or {}
            for key in ("canary", "rolloutPhase", "traffic"):
                if was.get(key) != entry.get(key):
                    return True
        return False
