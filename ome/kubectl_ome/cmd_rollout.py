"""`kubectl ome rollout`: status, explain, history, validate, and the alpha guarded actions pause,
resume, promote, rollback and repin over the annotations the rollout controller reads:

  pause     sets    ome.io/rollout-paused=true
  resume    removes ome.io/rollout-paused (with --discard-pending-actions also the two mailboxes)
  promote   sets    ome.io/rollout-promote=<canary revision hash>
  rollback  sets    ome.io/rollout-rollback=true
  repin     sets    ome.io/rollout-repin=<digest of the current plan>
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ome.api.resources import INFERENCE_SERVICES
from ome.kubectl_ome import fetch, guarded, instances, rollout_checks, rollout_report
from ome.kubectl_ome.context import (
    PAUSED,
    PROMOTE,
    REPIN,
    ROLLBACK,
    Ctx,
    annotations_of,
    read_for_action,
    read_isvc,
    resolve_active_runtime,
)
from ome.kubectl_ome.failures import READ_FAILED, CliError, Refused, Unmet
from ome.kubectl_ome.output import document, render, rfc3339
from ome.kubectl_ome.parsing import add_command, add_group, add_guarded, add_name, add_output
from ome.omenative import canary_plan
from ome.omenative.status import rows_of

Obj = dict[str, Any]

MAILBOX: Final = "a rollout promote or rollback mailbox is present"
NO_WORK: Final = "no applicable active rollout or lifecycle work was observed"
STALE: Final = "controller safety evidence is stale or inconsistent"
PAUSED_CANARY: Final = "globally paused canary cannot consume a request"
NO_GATE: Final = "promote requires an active indefinite manual gate; analysis requires explicit override"
ROLLBACK_PHASES: Final = ("Pending", "Canarying", "Paused", "Promoting", "Failed")
PAUSE_WARNINGS: Final = (
    "Scope: service-wide OMENative lifecycle, not a full workload freeze.",
    "true holds Update/Create/Migration; RestartPolicy repair continues.",
    "freeze also holds existing-instance repair; resume clears either depth.",
    "Canary timed gates continue aging and may advance immediately on resume.",
    "Deliberate scale-down and deletion teardown can still proceed.",
    "Parent UID/resourceVersion CAS is not a multi-object transaction.",
)
REPIN_PREFIX: Final = "rollout repin refused: "


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    sub = add_group(
        commands,
        "rollout",
        help="Rollout progress, plans and history; alpha rollout actions",
        example="kubectl ome rollout status chat -n prod",
    )
    reads = (
        ("status", "Show rollout progress for an InferenceService", rollout_status),
        ("explain", "Show the declared, live and pinned plans, and what holds the rollout", rollout_explain),
        ("history", "Show the active run, the last run and the current revisions", rollout_history),
        ("validate", "Check the rollout, traffic and autoscaling configuration", rollout_validate),
    )
    for name, text, handler in reads:
        parser = add_command(
            sub, name, help=text, example=f"kubectl ome rollout {name} chat -n prod", parents=parents
        )
        add_name(parser)
        add_output(parser)
        parser.set_defaults(handler=handler)
    actions = (
        ("pause", "Alpha. Hold rollout work across the whole service", rollout_pause, ""),
        ("resume", "Alpha. Clear a pause", rollout_resume, " --yes"),
        ("promote", "Alpha. Pass the manual gate a canary waits at", rollout_promote, ""),
        ("rollback", "Alpha. Abort a canary to its stable revision", rollout_rollback, ""),
        ("repin", "Alpha. Move the active run to the current plan", rollout_repin, " --dry-run server --yes"),
    )
    for name, text, handler, extra in actions:
        parser = add_command(
            sub, name, help=text, example=f"kubectl ome rollout {name} chat -n prod{extra}", parents=parents
        )
        add_name(parser)
        add_guarded(parser, ome_namespace=name != "repin")
        if name == "resume":
            parser.add_argument(
                "--discard-pending-actions",
                action="store_true",
                help="Atomically discard pending promote/rollback mailboxes; requires --yes",
            )
        if name == "promote":
            parser.add_argument(
                "--override-analysis",
                action="store_true",
                help="Bypass only this active analysis gate, including warm-up and bake; requires --yes",
            )
        parser.set_defaults(handler=handler)


# --- reads --------------------------------------------------------------------------------------


def _sources(isvc: Mapping[str, Any], collected: str) -> list[Obj]:
    meta = isvc.get("metadata") or {}
    return [
        {
            "kind": "InferenceService",
            "namespace": meta.get("namespace"),
            "name": meta.get("name"),
            "uid": meta.get("uid"),
            "generation": meta.get("generation"),
            "evidence": "Observed",
            "collectedAt": collected,
        }
    ]


def _report(kind: str, ctx: Ctx, isvc: Mapping[str, Any], content: Obj, warnings: list[str]) -> Obj:
    meta = isvc.get("metadata") or {}
    collected = rfc3339(ctx.now())
    doc = document(
        kind,
        content,
        metadata={"namespace": meta.get("namespace"), "name": meta.get("name")},
        collectedAt=collected,
        sources=_sources(isvc, collected),
    )
    doc["warnings"] = [{"code": w} for w in warnings]
    return doc


async def rollout_status(ctx: Ctx, args: argparse.Namespace) -> str:
    isvc = await read_isvc(ctx.client, args.name, ctx.namespace)
    summary = rollout_report.summarize(isvc)
    if args.output in ("json", "yaml"):
        doc = _report(
            "RolloutStatusReport", ctx, isvc, rollout_report.status_document(summary), summary.warnings
        )
        return render(doc, args.output)
    if args.output == "wide":
        return rollout_report.format_status_wide(summary)
    return rollout_report.format_status(summary)


async def rollout_explain(ctx: Ctx, args: argparse.Namespace) -> str:
    isvc = await read_isvc(ctx.client, args.name, ctx.namespace)
    rows = rollout_report.explain_rows(isvc)
    if args.output in ("json", "yaml"):
        warnings = ["PartialData"] if any(item == "ISSUES" for _, item, _ in rows) else []
        return render(
            _report("RolloutExplainReport", ctx, isvc, rollout_report.explain_document(isvc), warnings),
            args.output,
        )
    return rollout_report.format_explain(rows)


async def rollout_history(ctx: Ctx, args: argparse.Namespace) -> str:
    isvc = await read_isvc(ctx.client, args.name, ctx.namespace)
    rows = rollout_checks.history_rows(isvc)
    if args.output in ("json", "yaml"):
        records = [
            dict(zip([h.lower() for h in rollout_checks.HISTORY_HEADERS], r, strict=True)) for r in rows
        ]
        return render(_report("RolloutHistoryReport", ctx, isvc, {"records": records}, []), args.output)
    return rollout_checks.format_history(isvc)


async def rollout_validate(ctx: Ctx, args: argparse.Namespace) -> str:
    isvc = await read_isvc(ctx.client, args.name, ctx.namespace)
    checks = rollout_checks.validate_checks(isvc)
    state = rollout_checks.overall(checks)
    if args.output in ("json", "yaml"):
        warnings = ["PartialData"] if state == "Unverifiable" else []
        text = render(
            _report("RolloutValidateReport", ctx, isvc, {"overall": state, "checks": checks}, warnings),
            args.output,
        )
    else:
        text = rollout_checks.format_validate(checks, wide=args.output == "wide")
    if state == "Invalid":
        raise Unmet(text, "rollout validation found invalid configuration")
    if state == "Unverifiable":
        raise Unmet(text, "rollout validation could not verify all prerequisites")
    return text


# --- the evidence the actions check -------------------------------------------------------------


def active_work(isvc: Mapping[str, Any], replicas: list[Mapping[str, Any]]) -> tuple[int, int]:
    """(Instance operations, unfinished migrations) the status records; rollout work counts as one op."""
    operations = migrations = 0
    for replica in replicas:
        status = replica.get("status") or {}
        rows = rows_of(status) if status else []
        operations += sum(1 for r in rows if r.get("operation") or r.get("phase") not in ("Ready", None))
        migrations += sum(
            1
            for m in status.get("migrations") or []
            if m.get("phase") not in ("Completed", "Failed", "Relocated")
        )
        if status.get("currentRevision") and status.get("currentRevision") != status.get("updateRevision"):
            operations += 1
    components = (isvc.get("status") or {}).get("components") or {}
    for entry in components.values():
        lifecycle = (entry or {}).get("lifecycle") or {}
        phase = (entry or {}).get("rolloutPhase")
        if phase not in (None, "Stable") or (
            lifecycle.get("currentRevision")
            and lifecycle.get("currentRevision") != lifecycle.get("updateRevision")
        ):
            operations += 1
    if rollout_report.active_run(isvc):
        operations += 1
    return operations, migrations


async def _replica_objects(ctx: Ctx, isvc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    found = await fetch.read_replicas(ctx.client, isvc)
    if found.summary and instances.SOURCE_UNAVAILABLE in found.summary:
        raise CliError(READ_FAILED)
    return [r.replica for r in found.reads if r.replica is not None]


def _follow(ctx: Ctx, name: str, command: str = "rollout status") -> str:
    return guarded.follow_up(command, name, ctx.namespace, ctx.context)


async def _run(ctx: Ctx, args: argparse.Namespace, prepare: Any, ome_namespace: bool = True) -> str:
    guarded.check_flags(args.dry_run, args.output)
    return await guarded.run_guarded(
        ctx.client,
        prepare,
        ctx.terminal,
        context=ctx.context,
        ome_namespace=getattr(args, "ome_namespace", None) if ome_namespace else None,
        dry_run=args.dry_run,
        yes=args.yes,
        output=args.output,
    )


def _conflict(action: str) -> str:
    return f"guarded {action} rejected; inspect rollout status and retry explicitly"


# --- pause and resume ---------------------------------------------------------------------------


async def rollout_pause(ctx: Ctx, args: argparse.Namespace) -> str:
    async def prepare() -> guarded.Action:
        isvc = await read_for_action(ctx.client, args.name, ctx.namespace)
        target = guarded.check_service(isvc)
        annotations = annotations_of(isvc)
        if annotations.get(PAUSED) in ("true", "freeze"):
            raise Refused("service is already paused; freeze is preserved")
        if PROMOTE in annotations or ROLLBACK in annotations:
            raise Refused(MAILBOX)
        active = await resolve_active_runtime(ctx.client, isvc, args.ome_namespace)
        replicas = await _replica_objects(ctx, isvc)
        operations, migrations = active_work(isvc, replicas)
        if operations + migrations == 0:
            raise Refused(NO_WORK)
        return guarded.Action(
            name="rollout pause",
            resource=INFERENCE_SERVICES,
            target=target,
            operations=guarded.set_annotation(isvc, PAUSED, "true"),
            follow_up=_follow(ctx, args.name),
            preview=[
                ("Affected", ",".join(active.omenative)),
                ("Pause depth", "true"),
                ("Set annotation", PAUSED),
                ("Value", '"true"'),
                ("Active records", f"operations={operations} migrations={migrations}"),
            ],
            warnings=list(PAUSE_WARNINGS),
            conflict_message=_conflict("rollout pause"),
            unknown_message="rollout pause request outcome unknown; do not replay, check rollout status",
        )

    return await _run(ctx, args, prepare)


async def rollout_resume(ctx: Ctx, args: argparse.Namespace) -> str:
    if args.discard_pending_actions and not args.yes:
        raise CliError("--discard-pending-actions requires --yes")

    async def prepare() -> guarded.Action:
        isvc = await read_for_action(ctx.client, args.name, ctx.namespace)
        target = guarded.check_service(isvc)
        annotations = annotations_of(isvc)
        depth = annotations.get(PAUSED)
        if depth not in ("true", "freeze"):
            raise Refused("service has no recognized pause")
        mailboxes = [k for k in (PROMOTE, ROLLBACK) if k in annotations]
        if mailboxes and not args.discard_pending_actions:
            raise Refused(MAILBOX)
        active = await resolve_active_runtime(ctx.client, isvc, args.ome_namespace)
        replicas = await _replica_objects(ctx, isvc)
        operations, migrations = active_work(isvc, replicas)
        ops = guarded.remove_annotation(isvc, PAUSED)
        preview = [
            ("Affected", ",".join(active.omenative)),
            ("Pause depth", str(depth)),
            ("Remove annotation", PAUSED),
            ("Value", f'"{depth}"'),
        ]
        for key in mailboxes:
            ops += guarded.remove_annotation(isvc, key)
            preview += [("Remove annotation", key), ("Value", f'"{annotations[key]}"')]
        preview.append(("Active records", f"operations={operations} migrations={migrations}"))
        return guarded.Action(
            name="rollout resume",
            resource=INFERENCE_SERVICES,
            target=target,
            operations=ops,
            follow_up=_follow(ctx, args.name),
            preview=preview,
            warnings=list(PAUSE_WARNINGS),
            conflict_message=_conflict("rollout resume"),
            unknown_message="rollout resume request outcome unknown; do not replay, check rollout status",
        )

    return await _run(ctx, args, prepare)


# --- promote and rollback -----------------------------------------------------------------------


def _canary(isvc: Mapping[str, Any]) -> tuple[str, Obj, Obj, list[Obj]]:
    """The canary component of the active run, its status entry, its canary status and its steps."""
    run = rollout_report.active_run(isvc)
    if not run:
        raise Refused(NO_WORK)
    groups = [g for g in rollout_report.pinned_groups(isvc) if rollout_report.strategy(g) == "Canary"]
    if not groups:
        raise Refused(NO_WORK)
    if len(groups) > 1:
        raise Refused(STALE)
    components = (isvc.get("status") or {}).get("components") or {}
    for comp in groups[0].get("components") or []:
        entry = dict(components.get(comp) or {})
        canary = dict(entry.get("canary") or {})
        if canary:
            steps = list((groups[0].get("canary") or {}).get("steps") or [])
            return comp, entry, canary, steps
    raise Refused(NO_WORK)


def _canary_preview(
    run_id: str, comp: str, entry: Obj, canary: Obj, steps: list[Obj]
) -> list[tuple[str, str]]:
    step = canary.get("currentStep", 0)
    current = steps[step] if isinstance(step, int) and 0 <= step < len(steps) else {}
    return [
        ("Run", run_id),
        ("Component", comp),
        ("Phase", str(entry.get("rolloutPhase") or "-")),
        ("Step", f"{step} of {len(steps)} (zero-based)"),
        ("Gate", canary_plan.gate(current) if current else "-"),
        (
            "Traffic",
            f"{current.get('traffic', '-')}% target, {canary.get('observedTrafficWeight', '-')}% observed",
        ),
        ("Stable revision", str(canary.get("stableRevisionHash") or "-")),
        ("Canary revision", str(canary.get("canaryRevisionHash") or "-")),
    ]


async def rollout_promote(ctx: Ctx, args: argparse.Namespace) -> str:
    if args.override_analysis and not args.yes:
        raise CliError("--override-analysis requires --yes")

    async def prepare() -> guarded.Action:
        isvc = await read_for_action(ctx.client, args.name, ctx.namespace)
        target = guarded.check_service(isvc)
        annotations = annotations_of(isvc)
        if annotations.get(PAUSED) in ("true", "freeze"):
            raise Refused(PAUSED_CANARY)
        if PROMOTE in annotations or ROLLBACK in annotations:
            raise Refused(MAILBOX)
        await resolve_active_runtime(ctx.client, isvc, args.ome_namespace)
        comp, entry, canary, steps = _canary(isvc)
        step = canary.get("currentStep")
        if not isinstance(step, int) or not 0 <= step < len(steps) or not canary.get("canaryRevisionHash"):
            raise Refused(STALE)
        current = steps[step]
        wanted = "Analysis" if args.override_analysis else "Manual"
        last = step == len(steps) - 1
        phase = entry.get("rolloutPhase")
        ok_phase = (phase == "Promoting" and current.get("traffic") == 100) if last else phase == "Paused"
        traffic_matches = canary.get("observedTrafficWeight") == current.get("traffic")
        if (
            canary_plan.gate(current) != wanted
            or not ok_phase
            or not canary.get("stepEnteredTime")
            or not traffic_matches
            or canary.get("preStepHold")
        ):
            raise Refused(NO_GATE)
        revision = str(canary["canaryRevisionHash"])
        run_id = str((rollout_report.active_run(isvc) or {}).get("runID") or "-")
        message = guarded.APPLIED_MESSAGE
        if args.override_analysis:
            message = "Analysis override: " + message
        return guarded.Action(
            name="rollout promote",
            resource=INFERENCE_SERVICES,
            target=target,
            operations=guarded.set_annotation(isvc, PROMOTE, revision),
            follow_up=_follow(ctx, args.name),
            preview=[
                *_canary_preview(run_id, comp, entry, canary, steps),
                ("Set annotation", PROMOTE),
                ("Value", f'"{revision}"'),
            ],
            warnings=[
                "Each promote advances one step; the controller removes the annotation once it records it."
            ],
            revision_hash=revision,
            applied_message=message,
            conflict_message=_conflict("rollout promote"),
            unknown_message="rollout promote request outcome unknown; do not replay, check rollout status",
        )

    return await _run(ctx, args, prepare)


async def rollout_rollback(ctx: Ctx, args: argparse.Namespace) -> str:
    async def prepare() -> guarded.Action:
        isvc = await read_for_action(ctx.client, args.name, ctx.namespace)
        target = guarded.check_service(isvc)
        annotations = annotations_of(isvc)
        if annotations.get(PAUSED) in ("true", "freeze"):
            raise Refused(PAUSED_CANARY)
        if PROMOTE in annotations or ROLLBACK in annotations:
            raise Refused(MAILBOX)
        await resolve_active_runtime(ctx.client, isvc, args.ome_namespace)
        comp, entry, canary, steps = _canary(isvc)
        if entry.get("rolloutPhase") not in ROLLBACK_PHASES or canary.get("rolledBackRevisionHash"):
            raise Refused(NO_WORK)
        revision = str(canary.get("canaryRevisionHash") or "")
        if not revision:
            raise Refused(STALE)
        run_id = str((rollout_report.active_run(isvc) or {}).get("runID") or "-")
        return guarded.Action(
            name="rollout rollback",
            resource=INFERENCE_SERVICES,
            target=target,
            operations=guarded.set_annotation(isvc, ROLLBACK, "true"),
            follow_up=_follow(ctx, args.name),
            preview=[
                *_canary_preview(run_id, comp, entry, canary, steps),
                ("Set annotation", ROLLBACK),
                ("Value", '"true"'),
            ],
            warnings=["The annotation stays until a different target revision appears."],
            revision_hash=revision,
            conflict_message=_conflict("rollout rollback"),
            unknown_message="rollout rollback request outcome unknown; do not replay, check rollout status",
        )

    return await _run(ctx, args, prepare)


# --- repin --------------------------------------------------------------------------------------


def _topology(groups: Sequence[Mapping[str, Any]]) -> list[tuple[str, tuple[str, ...], Any, Any, Any]]:
    return [
        (
            rollout_report.strategy(g),
            tuple(g.get("components") or []),
            g.get("order"),
            g.get("soak"),
            g.get("maintainRatio"),
        )
        for g in groups
    ]


async def rollout_repin(ctx: Ctx, args: argparse.Namespace) -> str:
    async def prepare() -> guarded.Action:
        isvc = await read_for_action(ctx.client, args.name, ctx.namespace)
        target = guarded.check_service(isvc)
        run = rollout_report.active_run(isvc)
        if not run:
            raise Refused(REPIN_PREFIX + "no active pinned run")
        live = rollout_report.groups_of(isvc)
        if not live:
            raise Refused(REPIN_PREFIX + "empty live plans are not supported by this command")
        annotations = annotations_of(isvc)
        if any(k in annotations for k in (REPIN, PROMOTE, ROLLBACK)):
            raise Refused(REPIN_PREFIX + "a rollout action mailbox is already present")
        if sum(rollout_report.strategy(g) == "Canary" for g in live) > 1:
            raise Refused(REPIN_PREFIX + "this command supports at most one canary group")
        pinned = rollout_report.pinned_groups(isvc)
        if _topology(pinned) != _topology(live):
            raise Refused(REPIN_PREFIX + "live and pinned rollout topology differ")
        drift = rollout_report.condition(isvc, "RolloutPlanDrift")
        ready = rollout_report.condition(isvc, "RolloutPlanReady")
        live_digest = rollout_report.live_plan_digest(isvc)
        pinned_digest = rollout_report.pinned_plan_digest(isvc)
        if drift is not None and drift.get("status") == "False":
            raise Refused(REPIN_PREFIX + "the current plan is already pinned")
        if live_digest and live_digest == pinned_digest:
            raise Refused(REPIN_PREFIX + "the current plan is already pinned")
        if (
            drift is None
            or drift.get("status") != "True"
            or ready is None
            or ready.get("status") != "True"
            or not live_digest
            or not pinned_digest
        ):
            raise Refused(REPIN_PREFIX + "controller plan evidence is missing, stale or inconsistent")
        run_id = str(run.get("runID"))
        rows = [
            ("run-id", run_id),
            ("pinned-plan-digest", pinned_digest),
            ("requested-plan-digest", live_digest),
            ("group-count", str(len(live))),
        ]
        return guarded.Action(
            name="rollout repin",
            resource=INFERENCE_SERVICES,
            target=target,
            operations=guarded.set_annotation(isvc, REPIN, live_digest),
            follow_up=_follow(ctx, args.name, "rollout explain"),
            preview=[
                ("Run", run_id),
                ("Pinned plan", pinned_digest),
                ("Requested plan", live_digest),
                ("Drift", f"{drift.get('status')}/{drift.get('reason') or '-'}"),
                ("Set annotation", REPIN),
                ("Value", f'"{live_digest}"'),
            ],
            warnings=["The controller repins only if its own render of the plan has this digest."],
            result_rows=rows,
            extra={
                "rollout": {
                    "runID": run_id,
                    "pinnedPlanDigest": pinned_digest,
                    "requestedPlanDigest": live_digest,
                    "groupCount": len(live),
                }
            },
            applied_message="API accepted repin annotation; controller consumption not observed.",
            conflict_message=_conflict("rollout repin"),
            unknown_message="rollout repin request outcome unknown; do not replay, check rollout explain",
        )

    return await _run(ctx, args, prepare, ome_namespace=False)
