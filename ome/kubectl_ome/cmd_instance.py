"""`kubectl ome instance`: list, status, retry-blocks, and the alpha guarded `release-held`, which sets
`ome.io/release-held-revision` on the component's InferenceReplica to the held block's full target."""

from __future__ import annotations

import argparse
import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ome.api.resources import EVENTS, INFERENCE_REPLICAS, PODS
from ome.framework import errors
from ome.kubectl_ome import effective, fetch, guarded, instances
from ome.kubectl_ome.connection import add_ome_namespace
from ome.kubectl_ome.context import (
    RELEASE_HELD,
    RUNTIME_UNBOUND,
    Ctx,
    read_for_action,
    read_isvc,
    resolve_active_runtime,
)
from ome.kubectl_ome.failures import READ_FAILED, CliError, Conflict, Refused
from ome.kubectl_ome.output import dash, document, field_table, redact, render
from ome.kubectl_ome.parsing import (
    OUTPUTS_NO_WIDE,
    add_command,
    add_component,
    add_group,
    add_guarded,
    add_name,
    add_output,
)
from ome.kubectl_ome.table import format_table, shorten_end
from ome.omenative.instance_names import INSTANCE_INDEX_LABEL, ISVC_LABEL, RUNNER_LABEL

Obj = dict[str, Any]

UNKNOWN: Final = (
    "held-release request outcome unknown; inspect instance retry-blocks before another explicit request"
)
STATUS_WIDTH: Final = 64
MAX_PODS: Final = 16
RETRY_HEADERS: Final = ("COMP", "STATE", "TARGET", "ATT", "NEXT", "REL", "REASON")
_STATES: Final = {"Backoff": "BACKOFF", "RetryInProgress": "RUNNING", "Held": "HELD"}
_HASH: Final = re.compile(r"^[0-9a-f]{8}$")
NOT_RELEASABLE: Final = "no exact current valid Held retry block is releasable"
MAILBOX: Final = "a release-held mailbox is already present; inspect instance retry-blocks"
STALE_PREVIEW: Final = "held-release preview became stale; inspect instance retry-blocks and retry explicitly"
EVIDENCE_NAMES: Final = {"OK": "Reported", "SPARSE": "Reported", "EMPTY": "Reported"}


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    sub = add_group(
        commands,
        "instance",
        help="The OMENative Instances of an InferenceService",
        example="kubectl ome instance list chat -n prod",
    )
    p = add_command(
        sub,
        "list",
        help="List the Instances of every OMENative component",
        example="kubectl ome instance list chat -n prod",
        parents=parents,
    )
    add_name(p)
    add_output(p, OUTPUTS_NO_WIDE)
    p.set_defaults(handler=instance_list)
    p = add_command(
        sub,
        "status",
        help="Show one Instance, with its pods and their Warning events",
        example="kubectl ome instance status chat 0 --component engine -n prod",
        parents=parents,
    )
    add_name(p)
    p.add_argument("index", metavar="INDEX", type=int)
    add_component(p)
    add_ome_namespace(p)
    add_output(p)
    p.set_defaults(handler=instance_status)
    p = add_command(
        sub,
        "retry-blocks",
        help="Show the retry blocks of one component",
        example="kubectl ome instance retry-blocks chat --component engine -n prod",
        parents=parents,
    )
    add_name(p)
    add_component(p)
    add_output(p, OUTPUTS_NO_WIDE)
    p.set_defaults(handler=retry_blocks)
    p = add_command(
        sub,
        "release-held",
        help="Alpha. Ask OME to release one held revision",
        example="kubectl ome instance release-held chat --component engine --revision 7f9c4d2b -n prod",
        parents=parents,
    )
    add_name(p)
    add_component(p)
    p.add_argument(
        "--revision", required=True, help="Exact full target revision or eight-lowercase-hex hash (required)"
    )
    add_guarded(p)
    p.set_defaults(handler=release_held)


async def _component_reports(
    ctx: Ctx, isvc: Mapping[str, Any]
) -> tuple[list[instances.ComponentReport], list[str]]:
    found = await fetch.read_replicas(ctx.client, isvc)
    for line in found.warnings:
        ctx.terminal.stderr.write(f"warning: {line}\n")
    reads = instances.component_order(found.reads)
    generation = (isvc.get("metadata") or {}).get("generation")
    parent = generation if isinstance(generation, int) else None
    return [instances.component_report(r, parent) for r in reads], found.summary


async def instance_list(ctx: Ctx, args: argparse.Namespace) -> str:
    isvc = await read_isvc(ctx.client, args.name, ctx.namespace)
    reports, summary = await _component_reports(ctx, isvc)
    if args.output != "table":
        return render(instances.report_document(args.name, ctx.namespace, reports, summary), args.output)
    return instances.format_instances(instances.instance_lines(reports, summary))


# --- status -------------------------------------------------------------------------------------


def _evidence(report: instances.ComponentReport | None) -> str:
    if report is None:
        return "Unavailable"
    if report.evidence.startswith("STALE") or report.evidence == "PARENT-UNAVL":
        return "Stale"
    if report.evidence.startswith("BAD"):
        return "Malformed"
    return EVIDENCE_NAMES.get(report.evidence, "Unavailable")


def pod_row(pod: Mapping[str, Any]) -> str:
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    conds = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    restarts = sum(int(s.get("restartCount") or 0) for s in status.get("containerStatuses") or [])
    runner = (meta.get("labels") or {}).get(RUNNER_LABEL, "-")
    return (
        f"{meta.get('name')} {runner}/{status.get('phase') or 'Unknown'} "
        f"ready={conds.get('Ready') or 'False'} "
        f"serving={conds.get('ome.io/serving') or 'False'} restarts={restarts} "
        f"node={(pod.get('spec') or {}).get('nodeName') or '-'} "
        f"deleting={str(bool(meta.get('deletionTimestamp'))).lower()}"
    )


def instance_rows(
    component: str,
    index: int,
    mode: effective.ComponentMode | None,
    report: instances.ComponentReport | None,
    replica: Mapping[str, Any] | None,
    pods: Sequence[Mapping[str, Any]],
    events: Sequence[Mapping[str, Any]],
    pod_problem: str | None = None,
) -> list[tuple[str, str]]:
    """FIELD/VALUE rows of one Instance (pure)."""
    row = next((r for r in (report.rows if report else []) if r.get("index") == index), None)
    evidence = _evidence(report)
    issues: list[str] = []
    if mode is not None and mode.mode != "OMENative":
        state = "NotOMENative"
    elif replica is None:
        state = "NotProjected"
    elif report is None or evidence == "Unavailable":
        state = "Unavailable"
    elif row is None:
        state = "Missing"
    else:
        state = "Reported" if evidence == "Reported" and not pod_problem else "Partial"
    if pod_problem:
        issues.append(f"PodsUnavailable {pod_problem}")
    if evidence in ("Stale", "Malformed"):
        issues.append(f"Status{evidence}")
    rows = [("state", f"{state} {component}[{index}] evidence={evidence}")]
    source = mode.source if mode else "-"
    rows.append(
        (
            "deployment",
            f"mode={mode.mode if mode else 'Unknown'} source={source} origin=LiveRuntime evidence=Computed",
        )
    )
    encoding = report.encoding if report else "DenseV1"
    rows.append(("encoding", f"name={encoding} evidence={'Reported' if report else 'Unavailable'} reason=-"))
    if row is not None and replica is not None:
        name = (replica.get("metadata") or {}).get("name")
        rows.append(
            (
                "instance",
                f"{name} inc={row.get('incarnation', 0)} phase={row.get('phase')} "
                f"admitted={str(bool(row.get('admitted'))).lower()}",
            )
        )
        rows.append(
            (
                "revisions",
                f"running={dash(row.get('runningRevision'))} target={dash(row.get('targetRevision'))}",
            )
        )
        rows.append(
            (
                "persisted",
                f"pods={row.get('podCount', 0)} serving={row.get('servingPodCount', 0)} "
                f"available={row.get('availablePodCount', 0)}",
            )
        )
        rows.append(
            (
                "lifecycle",
                f"activeOrdinal={row.get('activeOrdinal', 0)} readySince={dash(row.get('readySince'))}",
            )
        )
        for cond in row.get("conditions") or []:
            rows.append(
                (
                    "condition",
                    f"{cond.get('type')}={cond.get('status')} gen={dash(cond.get('observedGeneration'))} "
                    f"evidence={evidence} reason={dash(cond.get('reason'))}",
                )
            )
        rows += [("announced", str(a)) for a in row.get("announced") or []]
        op = row.get("operation") or {}
        if op:
            rows.append(
                (
                    "operation",
                    f"type={op.get('type')} id={op.get('id')} step={op.get('step')} "
                    f"retries={op.get('retryCount', 0)}",
                )
            )
            if op.get("targetRevision") or op.get("reason"):
                rows.append(
                    (
                        "op target",
                        f"revision={dash(op.get('targetRevision'))} reason={dash(op.get('reason'))}",
                    )
                )
            rows.append(
                (
                    "op timing",
                    f"started={op.get('startedAt')} progress={op.get('lastProgressAt')} "
                    f"deadline={dash(op.get('deadline'))}",
                )
            )
            if op.get("waiting") or op.get("capacityRefusedAt"):
                rows.append(
                    (
                        "op hold",
                        f"{dash(op.get('waiting'))} capacityRefusedAt={dash(op.get('capacityRefusedAt'))}",
                    )
                )
            if op.get("strategy"):
                rows.append(("op strategy", str(op["strategy"])))
            if op.get("fromNode") or op.get("surgeIndex") is not None:
                hints = ",".join(op.get("hintTargetNodes") or []) or "-"
                rows.append(
                    (
                        "op nodes",
                        f"from={dash(op.get('fromNode'))} surge={dash(op.get('surgeIndex'))} hints={hints}",
                    )
                )
        failure = row.get("lastFailure") or {}
        if failure:
            rows.append(
                (
                    "failure",
                    f"pod={failure.get('podName')} container={dash(failure.get('containerName'))} "
                    f"reason={dash(failure.get('reason'))} exitCode={dash(failure.get('exitCode'))}",
                )
            )
            if failure.get("time"):
                rows.append(("fail time", str(failure["time"])))
    for m in ((replica or {}).get("status") or {}).get("migrations") or []:
        role = (
            "Source"
            if m.get("sourceInstance") == index
            else "Surge"
            if m.get("surgeInstance") == index
            else None
        )
        if role:
            rows.append(
                (
                    "migration",
                    f"{m.get('requestUUID')} role={role} phase={m.get('phase')} "
                    f"source={m.get('sourceInstance')} surge={dash(m.get('surgeInstance'))}",
                )
            )
    rows += [("pod", pod_row(p)) for p in pods]
    for event in events:
        involved = event.get("involvedObject") or {}
        count = event.get("count") or (event.get("series") or {}).get("count") or 1
        rows.append(("event", f"Pod/{involved.get('name')} reason={event.get('reason')} count={count}"))
    rows += [("issue", i) for i in issues]
    return [(f, redact(v)) for f, v in rows]


def _rank_pod(pod: Mapping[str, Any]) -> tuple[bool, str]:
    meta = pod.get("metadata") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )
    return (ready and not meta.get("deletionTimestamp"), str(meta.get("name")))


async def instance_status(ctx: Ctx, args: argparse.Namespace) -> str:
    isvc = await read_isvc(ctx.client, args.name, ctx.namespace)
    runtime = await fetch.read_runtime(ctx.client, isvc)
    modes = {m.component: m for m in effective.component_modes(isvc, runtime.obj)}
    reports, _ = await _component_reports(ctx, isvc)
    report = next((r for r in reports if r.component == args.component), None)
    found = await fetch.read_replicas(ctx.client, isvc)
    replica = next(
        (r.replica for r in found.reads if r.component == args.component and not r.duplicate), None
    )
    pods: list[Obj] = []
    events: list[Any] = []
    pod_problem = None
    try:
        selector = {ISVC_LABEL: args.name, "component": args.component, INSTANCE_INDEX_LABEL: str(args.index)}
        items, _ = await ctx.client.list(PODS, ctx.namespace, label_selector=selector)
        pods = sorted(items, key=_rank_pod)[:MAX_PODS]
        names = {("Pod", str((p.get("metadata") or {}).get("name"))) for p in pods}
        listed, _ = await ctx.client.list(EVENTS, ctx.namespace, field_selector="type=Warning")
        events = fetch.warning_events(listed, names)
    except errors.ApiError as exc:
        pod_problem = type(exc).__name__
    rows = instance_rows(
        args.component, args.index, modes.get(args.component), report, replica, pods, events, pod_problem
    )
    if args.output in ("json", "yaml"):
        doc = document(
            "InstanceStatusReport",
            {"rows": [{"field": f, "value": v} for f, v in rows]},
            metadata={"name": args.name, "namespace": ctx.namespace},
        )
        return render(doc, args.output)
    return field_table(rows, None if args.output == "wide" else STATUS_WIDTH)


# --- retry blocks -------------------------------------------------------------------------------


def short_target(name: str) -> str:
    if len(name) <= 14:
        return name
    return f"{name[:5]}#{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def _next(value: Any) -> str:
    text = str(value or "")
    return f"{text[2:16]}Z" if len(text) >= 16 else "-"


def releasable(block: Mapping[str, Any], fresh: bool) -> bool:
    return fresh and block.get("state") == "Held" and isinstance(block.get("attemptsStarted"), int)


def retry_rows(component: str, replica: Mapping[str, Any] | None, issues: Sequence[str]) -> list[list[str]]:
    if replica is None:
        return [[component, "ISSUE", "-", "-", "-", "-", "NO_COMPONENT"]]
    meta, status = replica.get("metadata") or {}, replica.get("status") or {}
    fresh = status.get("observedGeneration") == meta.get("generation")
    rows: list[list[str]] = []
    for block in status.get("retryBlocks") or []:
        attempts = block.get("attemptsStarted", 0)
        rows.append(
            [
                component,
                _STATES.get(str(block.get("state")), "INVALID"),
                short_target(str(block.get("targetRevision"))),
                "99+" if isinstance(attempts, int) and attempts > 99 else str(attempts),
                _next(block.get("nextRetryAt")),
                "YES" if releasable(block, fresh) else "NO",
                shorten_end(str(block.get("reason") or "-"), 13),
            ]
        )
    if not status or status.get("observedGeneration") is None:
        rows.append([component, "ISSUE", "-", "-", "-", "-", "STATUS_UNOBS"])
    elif not fresh:
        rows.append([component, "ISSUE", "-", "-", "-", "-", "STATUS_STALE"])
    rows += [[component, "ISSUE", "-", "-", "-", "-", i] for i in issues]
    return rows or [[component, "EMPTY", "-", "-", "-", "-", "-"]]


async def retry_blocks(ctx: Ctx, args: argparse.Namespace) -> str:
    isvc = await read_isvc(ctx.client, args.name, ctx.namespace)
    found = await fetch.read_replicas(ctx.client, isvc)
    mine = [r for r in found.reads if r.component == args.component]
    issues = ["DUP_COMP"] if any(r.duplicate for r in mine) else []
    if instances.SOURCE_UNAVAILABLE in found.summary:
        issues.append("COLL_UNAV")
    replica = next((r.replica for r in mine if not r.duplicate), None)
    rows = retry_rows(args.component, replica, issues)
    if args.output in ("json", "yaml"):
        status = (replica or {}).get("status") or {}
        fresh = status.get("observedGeneration") == ((replica or {}).get("metadata") or {}).get("generation")
        blocks = [{**b, "releaseEligible": releasable(b, fresh)} for b in status.get("retryBlocks") or []]
        content = {
            "component": args.component,
            "blocks": blocks,
            "summary": {"total": len(blocks), "held": sum(b.get("state") == "Held" for b in blocks)},
            "issues": [r[6] for r in rows if r[1] == "ISSUE"],
        }
        return render(
            document(
                "InstanceRetryBlocksReport", content, metadata={"name": args.name, "namespace": ctx.namespace}
            ),
            args.output,
        )
    return format_table(RETRY_HEADERS, rows)


# --- release-held -------------------------------------------------------------------------------


def match_block(replica: Mapping[str, Any], revision: str, name: str, component: str) -> Obj:
    """The Held block `--revision` names (full name or its 8-hex hash); refuses otherwise."""
    if _HASH.match(revision):
        revision = f"{name}-{component}-{revision}"
    status = replica.get("status") or {}
    meta = replica.get("metadata") or {}
    if status.get("observedGeneration") != meta.get("generation"):
        raise Refused(NOT_RELEASABLE)
    if ((meta.get("annotations") or {}).get("ome.io/controller-write")) != "true":
        raise Refused(NOT_RELEASABLE)
    for block in status.get("retryBlocks") or []:
        if block.get("targetRevision") == revision and releasable(block, True):
            return dict(block)
    raise Refused(NOT_RELEASABLE)


async def release_held(ctx: Ctx, args: argparse.Namespace) -> str:
    if not (_HASH.match(args.revision) or args.revision.startswith(f"{args.name}-{args.component}-")):
        raise CliError("invalid --revision; use the full target revision or its eight-lowercase-hex hash")

    async def read_replica(isvc: Mapping[str, Any]) -> Obj:
        found = await fetch.read_replicas(ctx.client, isvc)
        if instances.SOURCE_UNAVAILABLE in found.summary:
            raise CliError(READ_FAILED)
        mine = [r for r in found.reads if r.component == args.component]
        if len(mine) != 1 or mine[0].replica is None:
            raise Refused(NOT_RELEASABLE)
        return dict(mine[0].replica)

    async def prepare() -> guarded.Action:
        isvc = await read_for_action(ctx.client, args.name, ctx.namespace)
        guarded.check_service(isvc)
        active = await resolve_active_runtime(ctx.client, isvc, args.ome_namespace)
        if args.component not in active.omenative:
            raise Refused(RUNTIME_UNBOUND)
        replica = await read_replica(isvc)
        target = guarded.target_of(replica, "InferenceReplica")
        if RELEASE_HELD in ((replica.get("metadata") or {}).get("annotations") or {}):
            raise Refused(MAILBOX)
        block = match_block(replica, args.revision, args.name, args.component)
        full = str(block["targetRevision"])

        async def revalidate() -> None:
            try:
                again = await read_replica(await read_for_action(ctx.client, args.name, ctx.namespace))
            except CliError:
                raise Conflict(STALE_PREVIEW) from None
            if (again.get("metadata") or {}).get("resourceVersion") != target.resource_version:
                raise Conflict(STALE_PREVIEW)

        return guarded.Action(
            name="instance release-held",
            resource=INFERENCE_REPLICAS,
            target=target,
            operations=guarded.set_annotation(replica, RELEASE_HELD, full),
            follow_up=guarded.follow_up(
                "instance retry-blocks",
                args.name,
                ctx.namespace,
                ctx.context,
                f"--component={args.component}",
            ),
            preview=[
                ("Component", args.component),
                ("Revision", full),
                ("State", str(block.get("state"))),
                ("Attempts", str(block.get("attemptsStarted"))),
                ("Reason", dash(block.get("reason"))),
                ("Set annotation", RELEASE_HELD),
                ("Value", f'"{full}"'),
            ],
            warnings=[
                "Fix what made the revision fail first: OME retries it after the release.",
                "A paused InferenceService stays paused.",
            ],
            preview_title="HELD RELEASE PREVIEW",
            revision_hash=full.rsplit("-", 1)[-1],
            applied_message="API accepted release annotation request; "
            "controller release/convergence not observed.",
            conflict_message="guarded held-release rejected; inspect instance retry-blocks",
            unknown_message=UNKNOWN,
            revalidate=revalidate,
            denied_message=UNKNOWN,
        )

    return await guarded.run_guarded(
        ctx.client,
        prepare,
        ctx.terminal,
        context=ctx.context,
        ome_namespace=args.ome_namespace,
        dry_run=args.dry_run,
        yes=args.yes,
        output=args.output,
    )
