"""`kubectl ome wait`: block until an InferenceService reports the state `--for` names.

The first check runs at once, on the initial GET. `condition=Ready` and `rollout=...` then watch the
InferenceService and check every event, so they return as soon as the state holds; the other
predicates read again every 5 seconds. Outcomes: Matched (exit 0); TimedOut, NotFound, Deleted,
Replaced (exit 2, after the report).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ome.api.resources import INFERENCE_REPLICAS, INFERENCE_SERVICES
from ome.framework import errors
from ome.kubectl_ome.connection import parse_duration
from ome.kubectl_ome.context import RELEASE_HELD, RUNTIME_SYNC, Ctx
from ome.kubectl_ome.failures import CliError, Unmet
from ome.kubectl_ome.output import document, field_table, render
from ome.kubectl_ome.parsing import add_command, add_name, add_output
from ome.kubectl_ome.rollout_report import summarize
from ome.kubectl_ome.status_report import check_condition
from ome.resolution.modes import COMPONENTS

Obj = dict[str, Any]

POLL_SECONDS: Final = 5.0
MAX_TIMEOUT: Final = 24 * 3600.0
WATCH_SECONDS: Final = 300
_ROLLOUT: Final = {"stable": "Succeeded", "failed": "Failed", "rolled-back": "RolledBack"}
_UUID: Final = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_FLAGS: Final = {
    "condition": set(),
    "rollout": set(),
    "migration": {"request_id"},
    "replicas=ready": {"component", "replicas"},
    "replicas=current": {"component", "replicas", "ir_name", "ir_uid"},
    "runtime-sync": {"request_id"},
    "held-revision": {"component", "revision", "ir_name", "ir_uid"},
}


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    p = add_command(
        commands,
        "wait",
        help="Wait until an InferenceService reaches the state --for names",
        example="kubectl ome wait qwen2-5-7b -n demo --for=condition=Ready --timeout=30m",
        parents=parents,
    )
    add_name(p)
    p.add_argument(
        "--for",
        dest="predicate",
        required=True,
        help="Required: condition=Ready[=True|False|Unknown], rollout=stable|failed|rolled-back, "
        "migration=terminal, replicas=ready|current, runtime-sync=acknowledged, or "
        "held-revision=unheld",
    )
    p.add_argument("--component", choices=COMPONENTS, help="IR component for replica or held-revision waits")
    p.add_argument("--ir-name", help="Exact ActionResult target.name")
    p.add_argument("--ir-uid", help="Exact ActionResult target.uid")
    p.add_argument("--replicas", help="Exact count for replicas=ready (>=0) or replicas=current (>=1)")
    p.add_argument("--request-id", help="Canonical UUID for migration=terminal or runtime-sync=acknowledged")
    p.add_argument("--revision", help="Full ISVC-COMPONENT-REVISIONHASH, for held-revision=unheld")
    p.add_argument("--timeout", default="1m0s", help="Positive wait timeout, at most 24h (default 1m0s)")
    add_output(p)
    p.set_defaults(handler=wait)


@dataclass(frozen=True, slots=True)
class Predicate:
    kind: str
    """condition, rollout, migration, replicas=ready, replicas=current, runtime-sync, held-revision."""
    value: str
    requested: str


def parse_predicate(text: str) -> Predicate:
    key, _, rest = text.partition("=")
    if key == "condition" and rest in ("Ready", "Ready=True", "Ready=False", "Ready=Unknown"):
        status = rest.partition("=")[2] or "True"
        return Predicate("condition", status, f"Ready={status}")
    if key == "rollout" and rest in _ROLLOUT:
        return Predicate("rollout", _ROLLOUT[rest], f"Rollout={_ROLLOUT[rest]}")
    if key == "migration" and rest == "terminal":
        return Predicate("migration", rest, "Migration=Terminal")
    if key == "replicas" and rest in ("ready", "current"):
        return Predicate(f"replicas={rest}", rest, f"Replicas={rest.capitalize()}")
    if key == "runtime-sync" and rest == "acknowledged":
        return Predicate("runtime-sync", rest, "RuntimeSync=Acknowledged")
    if key == "held-revision" and rest == "unheld":
        return Predicate("held-revision", rest, "HeldRevision=Unheld")
    raise CliError(f'unsupported --for "{text}"; see kubectl ome wait --help')


def check_flags(pred: Predicate, args: argparse.Namespace) -> float:
    """The timeout in seconds; refuses flags the predicate doesn't take or misses."""
    given = {
        k
        for k in ("component", "ir_name", "ir_uid", "replicas", "request_id", "revision")
        if getattr(args, k) is not None
    }
    allowed = _FLAGS[pred.kind]
    if given - allowed:
        flag = sorted(given - allowed)[0].replace("_", "-")
        raise CliError(f"--{flag} is not valid with --for={args.predicate}")
    required = {
        "condition": set(),
        "rollout": set(),
        "migration": {"request_id"},
        "replicas=ready": {"component", "replicas"},
        "replicas=current": {"component", "replicas"},
        "runtime-sync": {"request_id"},
        "held-revision": {"component", "revision", "ir_name", "ir_uid"},
    }
    missing = required[pred.kind] - given
    if missing:
        raise CliError(f"--{sorted(missing)[0].replace('_', '-')} is required with --for={args.predicate}")
    if pred.kind == "replicas=current" and (args.ir_name is None) != (args.ir_uid is None):
        raise CliError("--ir-name and --ir-uid go together")
    if args.replicas is not None:
        if not str(args.replicas).isdigit() or (pred.kind == "replicas=current" and int(args.replicas) < 1):
            raise CliError("--replicas must be a nonnegative count (positive for replicas=current)")
    if args.request_id is not None and not _UUID.match(args.request_id):
        raise CliError("--request-id must be a canonical UUID")
    timeout = parse_duration(args.timeout)
    if timeout <= 0 or timeout > MAX_TIMEOUT:
        raise CliError("--timeout must be positive and at most 24h")
    return timeout


@dataclass(slots=True)
class Check:
    matched: bool
    reason: str
    evidence: str
    rows: list[tuple[str, str]] = field(default_factory=list)


def check_service(pred: Predicate, isvc: Mapping[str, Any], args: argparse.Namespace) -> Check:
    """The predicates answered by the InferenceService alone (pure)."""
    if pred.kind == "condition":
        cond = check_condition((isvc.get("status") or {}).get("conditions") or [], "Ready")
        rows = [
            ("Observed Ready", cond.status),
            ("Condition validity", cond.validity),
            ("Generation freshness", "Unverifiable"),
            (
                "Condition inspection",
                f"{'Complete' if not cond.warnings else 'Partial'} ({cond.inspected}/{cond.total})",
            ),
        ]
        rows += [("Inspection warning", w) for w in cond.warnings]
        if cond.validity != "Valid":
            reason = (
                "ConditionNotRecorded"
                if cond.status == "NotRecorded" and not cond.warnings
                else "InvalidCondition"
            )
            return Check(False, reason, "Unavailable" if cond.status == "NotRecorded" else "Reported", rows)
        matched = cond.status == pred.value
        return Check(matched, "ConditionMatched" if matched else "ConditionNotMatched", "Reported", rows)
    if pred.kind == "rollout":
        summary = summarize(isvc)
        rows = [
            ("Reported rollout", summary.reported),
            ("Rollout state", summary.state),
            ("Rollout epoch", summary.epoch),
            ("Coordination Ready", summary.coordination),
            ("Rollout validity", "Valid"),
            ("Rollout inspection", "Complete"),
        ]
        rows += [("Rollout issue", i) for i in summary.issues]
        matched = summary.reported == pred.value
        return Check(matched, "RolloutMatched" if matched else "RolloutNotMatched", "Reported", rows)
    if pred.kind == "runtime-sync":
        token = f"cli-runtime-sync-{args.request_id}"
        annotation = ((isvc.get("metadata") or {}).get("annotations") or {}).get(RUNTIME_SYNC)
        recorded = (isvc.get("status") or {}).get("lastRuntimeSyncToken")
        state = "Acknowledged" if recorded == token else ("Pending" if annotation == token else "Superseded")
        drifted = any(
            c.get("type") == "RuntimeDrifted" for c in (isvc.get("status") or {}).get("conditions") or []
        )
        matched = state == "Acknowledged" and not drifted
        return Check(
            matched,
            "TokenAcknowledged" if matched else f"Token{state}",
            "Reported",
            [("Request ID", str(args.request_id)), ("Token state", state)],
        )
    raise AssertionError(pred.kind)


def check_replica(pred: Predicate, replica: Mapping[str, Any] | None, args: argparse.Namespace) -> Check:
    """The predicates answered by the component's InferenceReplica (pure)."""
    rows = [("Component", str(args.component))] if args.component else []
    if replica is None:
        return Check(False, "InferenceReplicaNotFound", "Unavailable", rows)
    meta, spec, status = replica.get("metadata") or {}, replica.get("spec") or {}, replica.get("status") or {}
    if status.get("observedGeneration") != meta.get("generation"):
        return Check(False, "InferenceReplicaStale", "Unavailable", rows)
    if pred.kind == "replicas=ready":
        ready = status.get("readyReplicas", 0)
        rows += [("Target ready", str(args.replicas)), ("Observed ready", str(ready))]
        matched = ready == int(args.replicas)
        return Check(matched, "CountMatched" if matched else "CountNotMatched", "Reported", rows)
    if pred.kind == "replicas=current":
        want = int(args.replicas)
        rows += [
            ("Target replicas", str(want)),
            ("Observed spec", str(spec.get("replicas"))),
            ("Observed current", str(status.get("replicas", 0))),
        ]
        matched = spec.get("replicas") == want and status.get("replicas", 0) == want
        return Check(matched, "CountMatched" if matched else "CountNotMatched", "Reported", rows)
    if pred.kind == "held-revision":
        rows.append(("Revision", str(args.revision)))
        held = any(
            b.get("targetRevision") == args.revision and b.get("state") == "Held"
            for b in status.get("retryBlocks") or []
        )
        mailbox = RELEASE_HELD in (meta.get("annotations") or {})
        rows.append(("Held", str(held).lower()))
        matched = not held and not mailbox
        return Check(matched, "RevisionUnheld" if matched else "RevisionHeld", "Reported", rows)
    if pred.kind == "migration":
        rec = next(
            (m for m in status.get("migrations") or [] if m.get("requestUUID") == args.request_id), None
        )
        phase = (rec or {}).get("phase")
        rows = [("Request ID", str(args.request_id)), ("Migration outcome", str(phase or "NotRecorded"))]
        matched = phase in ("Completed", "Failed", "Relocated")
        return Check(matched, "MigrationTerminal" if matched else "MigrationNotTerminal", "Reported", rows)
    raise AssertionError(pred.kind)


@dataclass(slots=True)
class Counters:
    gets: int = 0
    watches: int = 0
    polls: int = 0
    events: int = 0
    observations: int = 0
    method: str = "InitialGET"


async def _replica_check(
    ctx: Ctx, pred: Predicate, isvc: Mapping[str, Any], args: argparse.Namespace, counters: Counters
) -> Check:
    names = (
        [args.ir_name]
        if args.ir_name
        else [f"{args.name}-{c}" for c in ([args.component] if args.component else COMPONENTS)]
    )
    for name in names:
        try:
            counters.gets += 1
            replica = await ctx.client.get(INFERENCE_REPLICAS, name, ctx.namespace)
        except errors.NotFound:
            continue
        if args.ir_uid and (replica.get("metadata") or {}).get("uid") != args.ir_uid:
            return Check(False, "InferenceReplicaReplaced", "Unavailable")
        result = check_replica(pred, replica, args)
        if pred.kind != "migration" or result.matched or name == names[-1]:
            return result
    return check_replica(pred, None, args)


async def wait(ctx: Ctx, args: argparse.Namespace) -> str:
    pred = parse_predicate(args.predicate)
    timeout = check_flags(pred, args)
    counters = Counters()
    started = time.monotonic()
    outcome, last = "TimedOut", Check(False, "PredicateUnmet", "Unavailable")
    uid: str | None = None

    async def evaluate(isvc: Mapping[str, Any]) -> Check:
        counters.observations += 1
        if pred.kind in ("condition", "rollout", "runtime-sync"):
            return check_service(pred, isvc, args)
        return await _replica_check(ctx, pred, isvc, args, counters)

    async def run() -> str:
        nonlocal uid, last
        counters.gets += 1
        try:
            isvc = await ctx.client.get(INFERENCE_SERVICES, args.name, ctx.namespace)
        except errors.NotFound:
            return "NotFound"
        uid = (isvc.get("metadata") or {}).get("uid")
        while True:
            if (isvc.get("metadata") or {}).get("deletionTimestamp"):
                return "Deleted"
            last = await evaluate(isvc)
            if last.matched:
                return "Matched"
            if pred.kind in ("condition", "rollout"):
                nxt = await _next_event(ctx, args.name, isvc, counters)
            else:
                await asyncio.sleep(POLL_SECONDS)
                counters.polls += 1
                counters.method = "Poll"
                counters.gets += 1
                try:
                    nxt = await ctx.client.get(INFERENCE_SERVICES, args.name, ctx.namespace)
                except errors.NotFound:
                    nxt = None
            if nxt is None:
                return "Deleted"
            if (nxt.get("metadata") or {}).get("uid") != uid:
                return "Replaced"
            isvc = nxt

    try:
        outcome = await asyncio.wait_for(run(), timeout)
    except TimeoutError:
        outcome = "TimedOut"
    elapsed = int((time.monotonic() - started) * 1000)
    rows = [
        ("Service", f"{ctx.namespace}/{args.name}"),
        ("Requested", pred.requested),
        ("Outcome", outcome),
        ("Reason", last.reason),
        ("Evidence", last.evidence),
        *last.rows,
        ("Source method", counters.method),
    ]
    if pred.kind not in ("replicas=current", "held-revision"):
        rows.append(("Polling fallback", "false"))
    rows += [
        ("Elapsed milliseconds", str(elapsed)),
        ("GET / WATCH / polls", f"{counters.gets} / {counters.watches} / {counters.polls}"),
    ]
    if pred.kind in ("condition", "rollout"):
        rows.append(("Events / observations", f"{counters.events} / {counters.observations}"))
    if args.output in ("json", "yaml"):
        content = {
            "requested": pred.requested,
            "outcome": outcome,
            "reason": last.reason,
            "evidence": last.evidence,
            "observed": dict(last.rows),
            "elapsedMilliseconds": elapsed,
            "counts": {"get": counters.gets, "watch": counters.watches, "polls": counters.polls},
            "sourceMethod": counters.method,
            "pollingFallback": False,
        }
        text = render(
            document("WaitReport", content, metadata={"name": args.name, "namespace": ctx.namespace}),
            args.output,
        )
    else:
        text = field_table(rows, None if args.output == "wide" else 64)
    if outcome != "Matched":
        raise Unmet(text, None)
    return text


async def _next_event(ctx: Ctx, name: str, current: Mapping[str, Any], counters: Counters) -> Obj | None:
    """The next version of the InferenceService from a watch (a fresh GET when the watch expired)."""
    version = str((current.get("metadata") or {}).get("resourceVersion") or "")
    while True:
        counters.watches += 1
        try:
            async for kind, obj in ctx.client.watch(
                INFERENCE_SERVICES,
                ctx.namespace,
                resource_version=version,
                timeout_seconds=WATCH_SECONDS,
                field_selector=f"metadata.name={name}",
                allow_bookmarks=True,
            ):
                if kind == "BOOKMARK":
                    version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                    continue
                counters.events += 1
                counters.method = "Watch"
                if kind == "DELETED":
                    return None
                return obj
        except errors.Gone:
            counters.gets += 1
            counters.method = "RefreshGET"
            try:
                return await ctx.client.get(INFERENCE_SERVICES, name, ctx.namespace)
            except errors.NotFound:
                return None


WaitCheck = Callable[[Mapping[str, Any]], Awaitable[Check]]
