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
from ome.kubectl_ome.output import document, field_table, render, rfc3339
from ome.kubectl_ome.parsing import add_command, add_name, add_output
from ome.kubectl_ome.rollout_report import summarize
from ome.kubectl_ome.status_report import check_condition
from ome.resolution.modes import COMPONENTS

Obj = dict[str, Any]

POLL_SECONDS: Final = 5.0
UNMET_MESSAGE: Final = "RequestedConditionUnmet"
clock: Callable[[], float] = time.monotonic
"""Measures Elapsed milliseconds (tests freeze it)."""
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
    """One check's verdict and its report rows, in the places the report puts them."""

    matched: bool
    reason: str
    evidence: str
    head: list[tuple[str, str]] = field(default_factory=list)
    """Between Requested and Outcome: the flag values."""
    observed: list[tuple[str, str]] = field(default_factory=list)
    """Between Outcome and Reason: what the check saw."""
    after: list[tuple[str, str]] = field(default_factory=list)
    """Between Evidence and Source method: freshness, caveats, inspection."""
    tail: list[tuple[str, str]] = field(default_factory=list)
    wide: list[tuple[str, str]] = field(default_factory=list)
    data: Obj = field(default_factory=dict)
    """The predicate's object in the JSON report (`observed`, `rollout`, `migration`, ...)."""


JSON_KEYS: Final = {
    "condition": "observed",
    "rollout": "rollout",
    "migration": "migration",
    "replicas=ready": "readyReplicas",
    "replicas=current": "scale",
    "runtime-sync": "runtimeSync",
    "held-revision": "heldRevision",
}
SHORT_FOOTER: Final = frozenset({"replicas=current", "held-revision"})


def _condition(pred: Predicate, isvc: Mapping[str, Any]) -> Check:
    cond = check_condition((isvc.get("status") or {}).get("conditions") or [], "Ready")
    state = "Complete" if not cond.warnings else "Partial"
    check = Check(
        False,
        "",
        "Reported",
        observed=[("Observed Ready", cond.status), ("Condition validity", cond.validity)],
        after=[
            ("Generation freshness", "Unverifiable"),
            ("Freshness caveat", "Reported condition; not current-spec convergence"),
            ("Condition inspection", f"{state} ({cond.inspected}/{cond.total})"),
            *(("Inspection warning", w) for w in cond.warnings),
        ],
        data={
            "status": cond.status,
            "validity": cond.validity,
            "generationFreshness": "Unverifiable",
            "inspection": {
                "state": state,
                "total": cond.total,
                "inspected": cond.inspected,
                "warnings": list(cond.warnings),
            },
        },
    )
    if cond.validity != "Valid":
        recorded = cond.status == "NotRecorded" and not cond.warnings
        check.reason = "ConditionNotRecorded" if recorded else "InvalidCondition"
        check.evidence = "Unavailable" if cond.status == "NotRecorded" else "Reported"
        return check
    check.matched = cond.status == pred.value
    check.reason = "ConditionMatched" if check.matched else "ConditionNotMatched"
    return check


def _rollout(pred: Predicate, isvc: Mapping[str, Any]) -> Check:
    summary = summarize(isvc)
    matched = summary.reported == pred.value
    return Check(
        matched,
        "RolloutMatched" if matched else "RolloutNotMatched",
        "Reported",
        observed=[
            ("Reported rollout", summary.reported),
            ("Rollout state", summary.state),
            ("Rollout validity", "Valid"),
        ],
        after=[
            ("Rollout epoch", summary.epoch),
            ("Coordination Ready", summary.coordination),
            ("Freshness caveat", "Reported rollout; not current-spec convergence"),
            ("Attribution caveat", "Same-object state; not action attribution"),
            ("Rollout inspection", "Complete"),
            ("Expansion", "JSON/YAML retain complete safe report values"),
        ],
        tail=[("Rollout issue", i) for i in summary.issues],
        data={
            "reported": summary.reported,
            "state": summary.state,
            "validity": "Valid",
            "epoch": summary.epoch,
            "coordinationReady": summary.coordination,
            "issues": list(summary.issues),
        },
    )


def _runtime_sync(isvc: Mapping[str, Any], args: argparse.Namespace) -> Check:
    token = f"cli-runtime-sync-{args.request_id}"
    meta, spec, status = isvc.get("metadata") or {}, isvc.get("spec") or {}, isvc.get("status") or {}
    annotation = (meta.get("annotations") or {}).get(RUNTIME_SYNC)
    recorded = status.get("lastRuntimeSyncToken")
    state = "Acknowledged" if recorded == token else ("Pending" if annotation == token else "Superseded")
    drifted = any(c.get("type") == "RuntimeDrifted" for c in status.get("conditions") or [])
    ref = spec.get("runtime") or {}
    managed = bool(ref.get("name")) and ref.get("autoSync") is False and not ref.get("revision")
    placed = bool(spec.get("placement")) or any(
        k.startswith("ome.io/placement-") for k in meta.get("annotations") or {}
    )
    matched = state == "Acknowledged" and not drifted and managed and not placed
    observed = [
        ("Token state", state),
        ("Drift state", "Drifted" if drifted else "Clear"),
        ("Managed pin", "Managed" if managed else "NotManaged"),
        ("Placement", "Placed" if placed else "Direct"),
        ("Validity", "Valid"),
    ]
    return Check(
        matched,
        "RuntimeSyncObserved"
        if matched
        else f"RuntimeSync{state}"
        if state != "Acknowledged"
        else "RuntimeSyncBlocked",
        "Reported",
        head=[("Request ID", str(args.request_id))],
        observed=observed,
        after=[
            ("Interpretation", "Token acknowledged in bound parent snapshot"),
            ("Sync caveat", "Reported token; not live-runtime convergence"),
            ("Attribution", "Same-object state; not action attribution"),
        ],
        data={k[0].lower() + k[1:].replace(" ", ""): v for k, v in observed},
    )


def check_service(pred: Predicate, isvc: Mapping[str, Any], args: argparse.Namespace) -> Check:
    """The predicates answered by the InferenceService alone (pure)."""
    if pred.kind == "condition":
        return _condition(pred, isvc)
    if pred.kind == "rollout":
        return _rollout(pred, isvc)
    if pred.kind == "runtime-sync":
        return _runtime_sync(isvc, args)
    raise AssertionError(pred.kind)


def _head(pred: Predicate, args: argparse.Namespace) -> list[tuple[str, str]]:
    if pred.kind == "migration":
        return [("Request ID", str(args.request_id))]
    rows = [("Component", str(args.component))] if args.component else []
    if pred.kind == "replicas=ready":
        rows.append(("Target ready", str(args.replicas)))
    elif pred.kind == "replicas=current":
        rows.append(("Target replicas", str(args.replicas)))
    elif pred.kind == "held-revision":
        rows += [("Revision", str(args.revision)), ("InferenceReplica", str(args.ir_name))]
    return rows


_NOT_MATCHED: Final = {
    "replicas=ready": "ReplicaReadyNotMatched",
    "replicas=current": "ReplicaScaleNotMatched",
    "held-revision": "Held",
    "migration": "MigrationNotTerminal",
}


def check_replica(pred: Predicate, replica: Mapping[str, Any] | None, args: argparse.Namespace) -> Check:
    """The predicates answered by the component's InferenceReplica (pure)."""
    head = _head(pred, args)
    if replica is None:
        return Check(
            False,
            "InferenceReplicaNotFound",
            "Unavailable",
            head=head,
            observed=[("Validity", "Unavailable")],
            data={"validity": "Unavailable"},
        )
    meta, spec, status = replica.get("metadata") or {}, replica.get("spec") or {}, replica.get("status") or {}
    fresh = "Current" if status.get("observedGeneration") == meta.get("generation") else "Stale"
    if fresh != "Current" and pred.kind != "replicas=current":
        return Check(
            False,
            "InferenceReplicaStale",
            "Unavailable",
            head=head,
            observed=[("Validity", "Unavailable")],
            data={"validity": "Unavailable"},
        )
    if pred.kind == "replicas=ready":
        ready = status.get("readyReplicas", 0)
        matched = ready == int(args.replicas)
        return Check(
            matched, "ReplicaReadyMatched" if matched else _NOT_MATCHED[pred.kind], "Reported", head=head,
            observed=[("Observed ready", str(ready)), ("Count validity", "Valid")],
            after=[("Interpretation", "Exact at observed IR snapshot")],
            wide=[("Count authority", "IR status; not /scale or an action receipt"),
                  ("Readiness caveat", "Ready count; not serving or availability"),
                  ("Cancellation", "Cooperative requests; plugins may ignore it")],
            data={"observedReady": ready, "targetReady": int(args.replicas), "validity": "Valid"},
        )  # fmt: skip
    if pred.kind == "replicas=current":
        want = int(args.replicas)
        current = status.get("replicas", 0)
        matched = fresh == "Current" and spec.get("replicas") == want and current == want
        observed = [
            ("Spec replicas", str(spec.get("replicas"))),
            ("Current replicas", str(current)),
            ("Ready replicas", str(status.get("readyReplicas", 0))),
            ("Status encoding", str(status.get("instanceStatusEncoding") or "DenseV1")),
            ("Validity", "Valid"),
            ("Freshness", fresh),
        ]
        return Check(
            matched, "ReplicaScaleMatched" if matched else _NOT_MATCHED[pred.kind], "Reported", head=head,
            observed=observed,
            after=[("Interpretation", "Exact desired and current count at IR snapshot"),
                   ("Count caveat", "Current = logical Instances any phase; Ready separate"),
                   ("Attribution", "Exact IR snapshot; not action attribution")],
            data={"specReplicas": spec.get("replicas"), "currentReplicas": current,
                  "readyReplicas": status.get("readyReplicas", 0), "freshness": fresh, "validity": "Valid"},
        )  # fmt: skip
    if pred.kind == "held-revision":
        blocks = [b for b in status.get("retryBlocks") or [] if b.get("targetRevision") == args.revision]
        target = str(blocks[0].get("state") or "Unknown") if blocks else "Absent"
        mailbox = RELEASE_HELD in (meta.get("annotations") or {})
        matched = target != "Held" and not mailbox
        return Check(
            matched, "Unheld" if matched else _NOT_MATCHED[pred.kind], "Reported", head=head,
            observed=[("Target state", target), ("Mailbox", "Present" if mailbox else "Absent"),
                      ("Validity", "Valid")],
            after=[("Interpretation", "Exact revision no longer Held on original IR"),
                   ("Attribution", "Unverifiable; not action attribution"),
                   ("State caveat", "Pruning/re-Held races; no request receipt")],
            data={"targetState": target, "mailbox": "Present" if mailbox else "Absent", "validity": "Valid"},
        )  # fmt: skip
    if pred.kind == "migration":
        rec = next(
            (m for m in status.get("migrations") or [] if m.get("requestUUID") == args.request_id), None
        )
        phase = str((rec or {}).get("phase") or "NotRecorded")
        terminal = phase in ("Completed", "Failed", "Relocated")
        outcome = str((rec or {}).get("outcome") or phase) if terminal else "-"
        return Check(
            terminal, "MigrationMatched" if terminal else _NOT_MATCHED[pred.kind], "Reported", head=head,
            observed=[("Migration phase", phase), ("Migration outcome", outcome),
                      ("Component", str(spec.get("component") or "-")), ("Migration validity", "Valid")],
            after=[("Attribution", "Exact request ID in live IR status")],
            data={"migrationPhase": phase, "migrationOutcome": outcome, "component": spec.get("component"),
                  "validity": "Valid"},
        )  # fmt: skip
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
    """The InferenceReplica reads belong to the check: GET / WATCH / polls counts the service's reads."""
    names = (
        [args.ir_name]
        if args.ir_name
        else [f"{args.name}-{c}" for c in ([args.component] if args.component else COMPONENTS)]
    )
    for name in names:
        try:
            replica = await ctx.client.get(INFERENCE_REPLICAS, name, ctx.namespace)
        except errors.NotFound:
            continue
        if args.ir_uid and (replica.get("metadata") or {}).get("uid") != args.ir_uid:
            return Check(False, "InferenceReplicaReplaced", "Unavailable", head=_head(pred, args))
        result = check_replica(pred, replica, args)
        if pred.kind != "migration" or result.matched or name == names[-1]:
            return result
    return check_replica(pred, None, args)


def report_rows(
    pred: Predicate, service: str, outcome: str, check: Check, counters: Counters, elapsed: int, wide: bool
) -> list[tuple[str, str]]:
    rows = [("Service", service), ("Requested", pred.requested), *check.head, ("Outcome", outcome)]
    rows += [*check.observed, ("Reason", check.reason), ("Evidence", check.evidence), *check.after]
    rows.append(("Source method", counters.method))
    counts = ("GET / WATCH / polls", f"{counters.gets} / {counters.watches} / {counters.polls}")
    if pred.kind in SHORT_FOOTER:
        rows += [counts, ("Elapsed milliseconds", str(elapsed))]
    else:
        rows += [("Polling fallback", "false"), ("Elapsed milliseconds", str(elapsed)), counts]
    if pred.kind in ("condition", "rollout"):
        rows.append(("Events / observations", f"{counters.events} / {counters.observations}"))
    rows += check.tail
    if wide:
        rows += check.wide
    return rows


async def wait(ctx: Ctx, args: argparse.Namespace) -> str:
    pred = parse_predicate(args.predicate)
    timeout = check_flags(pred, args)
    counters = Counters()
    started = clock()
    outcome, last = "TimedOut", Check(False, "PredicateUnmet", "Unavailable", head=_head(pred, args))
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
    elapsed = int((clock() - started) * 1000)
    if args.output in ("json", "yaml"):
        content: Obj = {"requested": pred.requested, "outcome": outcome, "reason": last.reason}
        content[JSON_KEYS[pred.kind]] = last.data
        content.update(
            {
                "evidence": last.evidence,
                "elapsedMilliseconds": elapsed,
                "counts": {
                    "gets": counters.gets,
                    "watches": counters.watches,
                    "polls": counters.polls,
                    "events": counters.events,
                    "observations": counters.observations,
                },
                "sourceMethod": counters.method,
                "pollingFallback": False,
            }
        )
        text = render(
            document(
                "WaitReport",
                content,
                metadata={"namespace": ctx.namespace, "name": args.name},
                collectedAt=rfc3339(ctx.now()),
                sources=[],
                warnings=[],
            ),
            args.output,
        )
    else:
        rows = report_rows(
            pred, f"{ctx.namespace}/{args.name}", outcome, last, counters, elapsed, args.output == "wide"
        )
        text = field_table(rows, None if args.output == "wide" else 64)
    if outcome != "Matched":
        raise Unmet(text, UNMET_MESSAGE)
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
