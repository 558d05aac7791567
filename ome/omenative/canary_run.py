"""Rollout runs (pure): the pinned plan in `status.rollout`, its conditions, drift, repin and closing.

A run is one traversal of the rollout plan toward one set of target revisions. States and transitions:

    (no run) --a group member's target differs from what it runs, plan resolves--> Active (pinned)
    (no run) --the plan does not resolve--> Parked (RolloutPlanReady False + reason, RolloutPlanParked)
    Active   --every member converged / the canary completed--> closed Completed
    Active   --the canary rolled back and every Instance is on the stable revision--> closed RolledBack
    Active   --a member's target moves to a third revision--> closed Superseded, a fresh run opens
    Active   --ome.io/rollout-repin = the live plan's digest, or `now`--> Active (plan replaced, progress
               kept; a canary whose step would raise traffic holds before it: preStepHold)

Per-group digests are `rp1:` + the first 12 hex digits of the SHA-256 of the progression as a policy
body (`{"canary": ...}`, `{"blueGreen": {}}`, ...); the plan digest the repin annotation carries is
`rp1:` + the same hash of the group digests joined by `|` (a group with no progression counts as the
blue-green default). While a run is active, `RolloutPlanDrift` compares each live group's digest with
the pinned one (`SpecNewerThanRun` / `PolicyNewerThanRun` / `InSync`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

import orjson

from ome.omenative.pods_view import format_time
from ome.webhooks import canary_validation

Obj = dict[str, Any]
Event = tuple[str, str, str]

PLAN_READY: Final = "RolloutPlanReady"
PLAN_DRIFT: Final = "RolloutPlanDrift"
PINNED: Final = "Pinned"
NO_ACTIVE_RUN: Final = "NoActiveRun"
POLICY_NOT_FOUND: Final = "PolicyNotFound"
POLICY_NOT_READY: Final = "PolicyNotReady"
PROGRESSION_MISMATCH: Final = "ProgressionMismatch"
PROVIDER_UNBOUND: Final = "ProviderUnbound"
PLAN_INVALID: Final = "PlanInvalid"
SPEC_NEWER: Final = "SpecNewerThanRun"
POLICY_NEWER: Final = "PolicyNewerThanRun"
IN_SYNC: Final = "InSync"

RUN_OPENED: Final = "RolloutRunOpened"
RUN_CLOSED: Final = "RolloutRunClosed"
PLAN_PARKED: Final = "RolloutPlanParked"
PLAN_REPINNED: Final = "RolloutPlanRepinned"
REPIN_REJECTED: Final = "RolloutRepinRejected"
REPIN_ANNOTATION: Final = "ome.io/rollout-repin"

COMPLETED: Final = "Completed"
ROLLED_BACK: Final = "RolledBack"
SUPERSEDED: Final = "Superseded"

_PROGRESSIONS: Final = ("canary", "blueGreen", "rollingUpdate")
BLUE_GREEN_DEFAULT: Final = "rp1:cca45ec1fb0f"

# Go's encoding/json writes struct fields in declaration order; these are the v1beta1 orders.
_ORDER: Final = {
    "policy": ("canary", "blueGreen", "rollingUpdate"),
    "canary": ("steps", "prometheus", "scaleDownDelaySeconds", "readyTimeout"),
    "step": ("capacity", "traffic", "pause", "analysis"),
    "analysis": ("interval", "initialDelay", "failureLimit", "onInconclusive", "metrics"),
    "metric": ("name", "query", "operator", "threshold"),
    "prometheus": ("providerRef", "serverAddress", "authRef", "headers"),
    "rollingUpdate": ("maxSurge", "maxUnavailable"),
}


# -- digests ---------------------------------------------------------------------------------------


def short_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]


def _ordered(value: Any, kind: str | None) -> Any:
    if isinstance(value, Mapping):
        order = _ORDER.get(kind or "", ())
        keys = [k for k in order if k in value] + sorted(k for k in value if k not in order)
        child = {"steps": "step", "metrics": "metric"}
        return {
            k: _ordered(value[k], child.get(k, k if k in _ORDER else None))
            for k in keys
            if value[k] is not None
        }
    if isinstance(value, list):
        return [_ordered(v, kind) for v in value]
    return value


def body_digest(body: Mapping[str, Any]) -> str:
    """A policy body's portable digest; an inline progression digests as the same body."""
    return "rp1:" + short_hash(orjson.dumps(_ordered(dict(body), "policy")))


def progression_of(group: Mapping[str, Any]) -> dict[str, Any] | None:
    for key in _PROGRESSIONS:
        if group.get(key) is not None:
            return {key: group[key]}
    return None


def plan_digest(digests: Sequence[str | None]) -> str:
    joined = "|".join(d or BLUE_GREEN_DEFAULT for d in digests)
    return "rp1:" + short_hash(joined.encode())


# -- resolving the live plan ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PolicyView:
    spec: Mapping[str, Any]
    generation: int | None


@dataclass(slots=True)
class Composed:
    groups: list[Obj] = field(default_factory=list)
    digests: list[str | None] = field(default_factory=list)
    park: tuple[str, str] | None = None
    """(reason, message) when the plan does not resolve."""


def compose(
    groups: Sequence[Mapping[str, Any]],
    policies: Mapping[str, PolicyView | None],
    *,
    feature_enabled: bool,
    bound_providers: frozenset[str] | set[str],
) -> Composed:
    """The effective plan: each group's inline progression, else its policy's body (fail closed)."""
    out = Composed()
    for index, group in enumerate(groups):
        ref = group.get("policyRef") or {}
        inline = progression_of(group)
        entry: Obj = {"source": "Inline", "group": dict(group)}
        body = inline
        if inline is None and ref:
            name = str(ref.get("name") or "")
            if not feature_enabled:
                out.park = (
                    PLAN_INVALID,
                    f'groups[{index}].policyRef "{name}": the rollout policy feature is not enabled on this '
                    "cluster, so the ref cannot resolve",
                )
                return out
            policy = policies.get(name)
            if policy is None:
                out.park = (POLICY_NOT_FOUND, f'groups[{index}].policyRef "{name}": RolloutPolicy not found')
                return out
            if (error := canary_validation.policy_body_error(dict(policy.spec))) is not None:
                out.park = (
                    POLICY_NOT_READY,
                    f'groups[{index}].policyRef "{name}": policy body is invalid: {error}',
                )
                return out
            body = progression_of(policy.spec)
            kind = next(iter(body)) if body else None
            if kind != ref.get("progression"):
                out.park = (
                    PROGRESSION_MISMATCH,
                    f'groups[{index}]: policyRef "{name}" declares progression {ref.get("progression")} but '
                    f"the policy body is {kind}",
                )
                return out
            entry = {
                "source": "Policy",
                "policyRef": dict(ref),
                "group": {**dict(group), **(body or {})},
            }
            if policy.generation is not None:
                entry["policyGeneration"] = policy.generation
        canary = (body or {}).get("canary")
        if canary is not None:
            where = f"groups[{index}].canary (composed)"
            if (error := canary_validation.canary_plan_error(where, dict(canary))) is not None:
                out.park = (PLAN_INVALID, error)
                return out
            provider = ((canary.get("prometheus") or {}).get("providerRef") or {}).get("name")
            if provider and provider not in bound_providers:
                out.park = (
                    PROVIDER_UNBOUND,
                    f'groups[{index}]: metric provider "{provider}" is not bound in this cluster\'s '
                    "metricProviders configuration",
                )
                return out
        digest = body_digest(body) if body else None
        if digest:
            entry["portableDigest"] = digest
        out.groups.append(entry)
        out.digests.append(digest)
    return out


def resolution_view(
    groups: Sequence[Mapping[str, Any]], policies: Mapping[str, PolicyView | None]
) -> list[Obj]:
    """`status.rollout.groups`: per group, where its plan would come from now and its digest."""
    view: list[Obj] = []
    for index, group in enumerate(groups):
        ref = group.get("policyRef")
        inline = progression_of(group)
        entry: Obj = {"index": index, "source": "Inline" if inline is not None or not ref else "Policy"}
        if ref:
            entry["policyRef"] = dict(ref)
        policy = policies.get(str((ref or {}).get("name") or "")) if ref else None
        body = inline if inline is not None else (progression_of(policy.spec) if policy else None)
        if body:
            entry["observedDigest"] = body_digest(body)
        if inline is not None and ref:
            shadow: Obj = {"name": ref.get("name")}
            if policy is not None and (pbody := progression_of(policy.spec)):
                shadow["wouldPinDigest"] = body_digest(pbody)
            entry["shadowedPolicyRef"] = shadow
        view.append(entry)
    return view


# -- the run ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Target:
    """A group member's revisions: what the spec asks for and what its Instances mostly run."""

    target: str
    current: str
    replicas: int = 0
    updated: int = 0


def run_id(isvc: str, targets: Sequence[Obj], digests: Sequence[str | None], at: str) -> str:
    seed = orjson.dumps({"t": list(targets), "d": list(digests), "at": at})
    return f"{isvc}-{short_hash(seed)}"


def open_run(isvc: str, composed: Composed, targets: Mapping[str, Target], now: datetime) -> Obj:
    pinned: list[Obj] = []
    for entry in composed.groups:
        for component in entry["group"].get("components") or []:
            if any(p["component"] == component for p in pinned) or component not in targets:
                continue
            t = targets[component]
            row: Obj = {"component": component, "revision": t.target or t.current}
            if t.current and t.current != t.target:
                row["stableRevision"] = t.current
            pinned.append(row)
    at = format_time(now)
    return {
        "runID": run_id(isvc, pinned, composed.digests, at),
        "openedAt": at,
        "pinnedAt": at,
        "targetRevisions": pinned,
        "plan": {"groups": composed.groups},
    }


def close_run(run: Mapping[str, Any], outcome: str, now: datetime) -> Obj:
    """`status.rollout.lastRun`: the outcome and where each group's plan came from."""
    groups = [
        {k: g[k] for k in ("source", "policyRef", "portableDigest") if g.get(k) is not None}
        for g in (run.get("plan") or {}).get("groups") or []
    ]
    record: Obj = {"outcome": outcome, "openedAt": run.get("openedAt"), "closedAt": format_time(now)}
    if run.get("targetRevisions"):
        record["targetRevisions"] = run["targetRevisions"]
    if groups:
        record["groups"] = groups
    return record


def diverged(targets: Mapping[str, Target], members: Sequence[str]) -> bool:
    return any(
        (t := targets.get(c)) is not None and t.target and t.current and t.target != t.current
        for c in members
    )


def members_of(groups: Sequence[Mapping[str, Any]]) -> list[str]:
    out: list[str] = []
    for group in groups:
        out.extend(c for c in group.get("components") or [] if c not in out)
    return out


def retargeted(run: Mapping[str, Any], targets: Mapping[str, Target], held: str | None) -> bool:
    """A member's target moved off the pinned revision (a held, rolled-back revision is not a move)."""
    for row in run.get("targetRevisions") or []:
        t = targets.get(row.get("component"))
        if t is None or not t.target or not row.get("revision"):
            continue
        if t.target != row["revision"] and t.target != held:
            return True
    return False


def drift(
    groups: Sequence[Mapping[str, Any]], run: Mapping[str, Any], view: Sequence[Mapping[str, Any]]
) -> Obj:
    """The RolloutPlanDrift condition body (status, reason, message) for an active run."""
    pinned = (run.get("plan") or {}).get("groups") or []
    if len(groups) != len(pinned):
        return {
            "status": "True",
            "reason": SPEC_NEWER,
            "message": "spec.rollout group shape changed mid-run; the pinned plan continues until the next "
            "run or a repin",
        }
    for index, entry in enumerate(view):
        live = entry.get("observedDigest")
        was = pinned[index].get("portableDigest")
        if live == was:
            continue
        reason = POLICY_NEWER if entry.get("source") == "Policy" else SPEC_NEWER
        return {
            "status": "True",
            "reason": reason,
            "message": f"groups[{index}]: live render {live or '(unresolvable)'} differs from pinned "
            f"{was or BLUE_GREEN_DEFAULT}; the edit applies at the next run (or via ome.io/rollout-repin)",
        }
    return {"status": "False", "reason": IN_SYNC, "message": ""}


@dataclass(slots=True)
class Repin:
    run: Obj | None = None
    """The repinned run, or None when the request was rejected or already in force."""
    canary: Obj | None = None
    """The clamped canary status, when the plan has a canary."""
    event: Event | None = None
    outcome: str | None = None
    """`applied` or `rejected` (ome_rollout_repin_total); None for pure cleanup."""


def repin(
    run: Mapping[str, Any], want: str, composed: Composed, canary: Mapping[str, Any] | None, now: datetime
) -> Repin:
    """Apply `ome.io/rollout-repin`: the fresh render must have the requested digest (or `now`)."""
    old = plan_digest([g.get("portableDigest") for g in (run.get("plan") or {}).get("groups") or []])
    if composed.park is not None:
        reason, message = composed.park
        return Repin(
            event=(
                "Warning",
                REPIN_REJECTED,
                f"repin rejected: the current source does not render ({reason}): {message}",
            ),
            outcome="rejected",
        )
    fresh = plan_digest(composed.digests)
    if fresh == old:
        return Repin()
    if want != "now" and want != fresh:
        return Repin(
            event=(
                "Warning",
                REPIN_REJECTED,
                f"repin rejected: expected render digest {want} but the current render is {fresh} (a "
                "concurrent edit landed; re-issue with the current digest)",
            ),
            outcome="rejected",
        )
    old_steps = _canary_steps((run.get("plan") or {}).get("groups") or [])
    new_run = {**dict(run), "plan": {"groups": composed.groups}, "pinnedAt": format_time(now)}
    new_canary = clamp(canary, old_steps, _canary_steps(composed.groups)) if canary else None
    return Repin(
        run=new_run,
        canary=new_canary,
        event=("Normal", PLAN_REPINNED, f"run {run.get('runID')} repinned: {old} -> {fresh}"),
        outcome="applied",
    )


def _canary_steps(groups: Sequence[Mapping[str, Any]]) -> list[Obj] | None:
    for entry in groups:
        canary = (entry.get("group") or {}).get("canary")
        if canary is not None:
            return list(canary.get("steps") or [])
    return None


def clamp(canary: Mapping[str, Any], old_steps: list[Obj] | None, new_steps: list[Obj] | None) -> Obj:
    """Keep the step (the last one when the new plan is shorter); done stays done; a step that would raise
    the recorded weight holds before it."""
    out = dict(canary)
    if not new_steps:
        return out
    step = int(out.get("currentStep") or 0)
    if old_steps and step >= len(old_steps):
        out["currentStep"] = len(new_steps)
        return out
    step = min(max(step, 0), len(new_steps) - 1)
    out["currentStep"] = step
    if int(new_steps[step].get("traffic") or 0) > int(out.get("observedTrafficWeight") or 0):
        out["preStepHold"] = True
    return out


# -- conditions ------------------------------------------------------------------------------------


def set_condition(
    conditions: Sequence[Mapping[str, Any]], type_: str, status: str, reason: str, message: str, now: datetime
) -> list[Obj]:
    """Replace one condition (the list sorted by type, as the InferenceService controller writes it); its
    transition time moves only when something in it changes."""
    out = [dict(c) for c in conditions if c.get("type") != type_]
    previous = next((c for c in conditions if c.get("type") == type_), None)
    same = previous is not None and (
        previous.get("status"),
        previous.get("reason"),
        previous.get("message") or "",
    ) == (status, reason, message)
    cond: Obj = {
        "type": type_,
        "status": status,
        "reason": reason,
        "lastTransitionTime": previous.get("lastTransitionTime") if same and previous else format_time(now),
    }
    if message:
        cond["message"] = message
    out.append(cond)
    return sorted(out, key=lambda c: str(c.get("type")))


def condition_changed(conditions: Sequence[Mapping[str, Any]], type_: str, status: str, reason: str) -> bool:
    previous = next((c for c in conditions if c.get("type") == type_), None)
    return previous is None or (previous.get("status"), previous.get("reason")) != (status, reason)
