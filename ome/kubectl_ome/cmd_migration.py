"""`kubectl ome migration status|history` and the alpha guarded `migration start`, which adds the
annotation `ome.io/migration-request-v1-<request-id>` holding the request as JSON to the
InferenceService (schemaVersion, component, instance, from_node, hint_target_nodes, reason,
requested_at, requested_by). State refusals exit 3, as documented."""

from __future__ import annotations

import argparse
import json
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ome.api.resources import CONFIGMAPS, INFERENCE_SERVICES, PODS
from ome.framework import errors
from ome.kubectl_ome import fetch, guarded
from ome.kubectl_ome.context import (
    MIGRATION_PREFIX,
    PAUSED,
    PROMOTE,
    ROLLBACK,
    Ctx,
    annotations_of,
    read_for_action,
    read_isvc,
    resolve_active_runtime,
)
from ome.kubectl_ome.failures import READ_FAILED, CliError, Conflict
from ome.kubectl_ome.output import document, looks_secret, render, rfc3339
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
from ome.omenative.instance_names import INSTANCE_INDEX_LABEL, ISVC_LABEL
from ome.omenative.status import rows_of
from ome.resolution.modes import COMPONENTS

Obj = dict[str, Any]

PRECONDITION: Final = (
    "migration precondition conflicts or is stale; inspect migration status and retry explicitly"
)
REJECTED: Final = "guarded migration rejected; inspect migration status using preview UUID"
TERMINAL: Final = ("Completed", "Failed", "Relocated")
_INDEX: Final = re.compile(r"^(0|[1-9][0-9]*)$")
_NODE: Final = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_BY: Final = re.compile(r"^[A-Za-z0-9_.:/@+-]{1,128}$")
_UUID: Final = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    sub = add_group(
        commands,
        "migration",
        help="OMENative migrations of an InferenceService",
        example="kubectl ome migration status chat -n prod",
    )
    p = add_command(
        sub,
        "status",
        help="The migrations running or recently ended",
        example="kubectl ome migration status chat -n prod",
        parents=parents,
    )
    add_name(p)
    add_component(p, required=False)
    add_output(p, OUTPUTS_NO_WIDE)
    p.set_defaults(handler=migration_status)
    p = add_command(
        sub,
        "history",
        help="Migration records with the audit ConfigMap's older ones",
        example="kubectl ome migration history chat -n prod",
        parents=parents,
    )
    add_name(p)
    add_component(p, required=False)
    add_output(p)
    p.set_defaults(handler=migration_history)
    p = add_command(
        sub,
        "start",
        help="Alpha. Ask OME to move one Instance to another node",
        example="kubectl ome migration start chat -n prod --component engine --instance 3 "
        '--reason "node-a maintenance" --dry-run client --yes',
        parents=parents,
    )
    add_name(p)
    p.add_argument("--component", help="Component: engine, decoder or router (required)")
    p.add_argument("--instance", help="Canonical instance index (required)")
    p.add_argument("--from-node", help="Source node hosting a current Pod; required for a multi-node gang")
    p.add_argument(
        "--hint-node", action="append", default=[], help="Ordered soft target-node preferences (max 8)"
    )
    p.add_argument("--reason", help="Bounded non-secret advisory reason")
    p.add_argument("--request-id", help="Lookup-only canonical UUID; never regenerated or replayed")
    p.add_argument("--requested-by", default="kubectl-ome", help="Bounded advisory tool/operator label")
    add_guarded(p)
    p.set_defaults(handler=migration_start)


def records(
    replicas: Sequence[tuple[str, Mapping[str, Any]]], component: str | None
) -> list[tuple[str, Obj, str]]:
    """(component, record, freshness) for each migration the InferenceReplicas record."""
    out = []
    for comp, replica in replicas:
        if component and comp != component:
            continue
        meta, status = replica.get("metadata") or {}, replica.get("status") or {}
        if status.get("observedGeneration") is None:
            continue  # Unobserved: its records stay hidden
        fresh = "Current" if status.get("observedGeneration") == meta.get("generation") else "Stale"
        out += [(comp, dict(m), fresh) for m in status.get("migrations") or []]
    return out


def status_rows(recs: Sequence[tuple[str, Obj, str]]) -> list[list[str]]:
    if not recs:
        return [["-/-", "Empty/Current", "-"]]
    rows = []
    for comp, rec, fresh in recs:
        phase = str(rec.get("phase"))
        cls = "Terminal" if phase in TERMINAL else "Active"
        message = f"MSG: {rec.get('message')}" if rec.get("message") else "-"
        rows.append(
            [f"{str(rec.get('requestUUID'))[:8]}/{comp}", f"{phase}/{cls}/{fresh}", shorten_end(message, 26)]
        )
    return rows


async def _replicas(ctx: Ctx, isvc: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    found = await fetch.read_replicas(ctx.client, isvc)
    return [(r.component, r.replica) for r in found.reads if r.replica is not None and not r.duplicate]


async def migration_status(ctx: Ctx, args: argparse.Namespace) -> str:
    isvc = await read_isvc(ctx.client, args.name, ctx.namespace)
    recs = records(await _replicas(ctx, isvc), args.component)
    if args.output in ("json", "yaml"):
        active = sum(r.get("phase") not in TERMINAL for _, r, _ in recs)
        content = {
            "summary": {
                "state": "Reported" if recs else "Empty",
                "records": len(recs),
                "active": active,
                "terminal": len(recs) - active,
                "invalid": 0,
            },
            "migrations": [{"component": c, **r, "freshness": f} for c, r, f in recs],
            "issues": [],
        }
        return render(
            document(
                "MigrationStatusReport", content, metadata={"name": args.name, "namespace": ctx.namespace}
            ),
            args.output,
        )
    return format_table(("SUBJECT/COMP", "STATUS", "DETAIL"), status_rows(recs))


async def migration_history(ctx: Ctx, args: argparse.Namespace) -> str:
    isvc = await read_isvc(ctx.client, args.name, ctx.namespace)
    recs = records(await _replicas(ctx, isvc), args.component)
    rows = []
    for comp, rec, _ in recs:
        phase = str(rec.get("phase"))
        when = str(rec.get("completedAt") or rec.get("allocatedAt") or rec.get("startedAt") or "")
        rows.append(
            [
                "AUTH",
                f"{str(rec.get('requestUUID'))[:8]}/{comp[0].upper()}",
                f"{phase}/{'T' if phase in TERMINAL else 'A'}",
                f"{when[5:16]}Z" if len(when) >= 16 else "-",
                shorten_end(str(rec.get("message") or "-"), 20),
            ]
        )
    audit: list[Obj] = []
    try:
        cm = await ctx.client.get(CONFIGMAPS, f"{args.name}-ome-migration-audit", ctx.namespace)
        parsed = json.loads((cm.get("data") or {}).get("history.json") or "[]")
        audit = parsed if isinstance(parsed, list) else list((parsed or {}).get("entries") or [])
    except (errors.ApiError, ValueError):
        audit = []
    for entry in audit:
        comp = str(entry.get("component") or "-")
        if args.component and comp != args.component:
            continue
        phase = str(entry.get("phase") or entry.get("outcome") or "Started")
        when = str(entry.get("completedAt") or entry.get("startedAt") or "")
        rows.append(
            [
                "AUDIT",
                f"{str(entry.get('requestUUID') or entry.get('id') or '-')[:8]}/{comp[:1].upper()}",
                f"{phase}/{'A' if phase == 'Started' else 'T'}",
                f"{when[5:16]}Z" if len(when) >= 16 else "-",
                shorten_end(str(entry.get("message") or entry.get("outcome") or "-"), 20),
            ]
        )
    if args.output in ("json", "yaml"):
        keys = ("evidence", "request", "phase", "when", "detail")
        content = {
            "summary": {"state": "Reported" if rows else "Empty", "records": len(rows)},
            "records": [dict(zip(keys, r, strict=True)) for r in rows],
            "issues": [],
        }
        return render(
            document(
                "MigrationHistoryReport", content, metadata={"name": args.name, "namespace": ctx.namespace}
            ),
            args.output,
        )
    return format_table(
        ("EVID", "REQUEST/COMP", "PHASE/STATE", "WHEN", "DETAIL"), rows or [["-", "-", "Empty", "-", "-"]]
    )


# --- start --------------------------------------------------------------------------------------


def check_start_flags(args: argparse.Namespace) -> list[str]:
    """Refusals before any read (exit 1); returns the hint nodes, split and in order."""
    if args.instance is None or not _INDEX.match(str(args.instance)) or int(args.instance) > 2**31 - 1:
        raise CliError("instance must be a canonical integer from 0 through 2147483647")
    if args.component not in COMPONENTS:
        raise CliError("invalid migration request values; use --help")
    if args.reason is not None and (
        len(args.reason.encode()) > 256 or not args.reason.isprintable() or looks_secret(args.reason)
    ):
        raise CliError("invalid migration request values; use --help")
    if not _BY.match(args.requested_by) or (args.request_id and not _UUID.match(args.request_id)):
        raise CliError("invalid migration request values; use --help")
    if args.from_node is not None and not _NODE.match(args.from_node):
        raise CliError("invalid migration request values; use --help")
    hints = [h for value in args.hint_node for h in value.split(",") if h]
    if (
        len(hints) > 8
        or len(set(hints)) != len(hints)
        or any(not _NODE.match(h) for h in hints)
        or (args.from_node and args.from_node in hints)
    ):
        raise CliError("invalid migration node hints")
    return hints


def instance_ready(replica: Mapping[str, Any], index: int) -> Obj:
    """The Instance row, when it can move now; a state refusal (exit 3) otherwise."""
    status = replica.get("status") or {}
    meta = replica.get("metadata") or {}
    if status.get("observedGeneration") != meta.get("generation"):
        raise Conflict(PRECONDITION)
    row = next((r for r in rows_of(status) if r.get("index") == index), None)
    if row is None or row.get("phase") != "Ready" or row.get("operation"):
        raise Conflict(PRECONDITION)
    if row.get("runningRevision") != status.get("updateRevision"):
        raise Conflict(PRECONDITION)
    for rec in status.get("migrations") or []:
        if rec.get("phase") not in TERMINAL and index in (
            rec.get("sourceInstance"),
            rec.get("surgeInstance"),
        ):
            raise Conflict(PRECONDITION)
    return dict(row)


async def migration_start(ctx: Ctx, args: argparse.Namespace) -> str:
    hints = check_start_flags(args)
    index = int(args.instance)
    guarded.check_flags(args.dry_run, args.output)

    async def read_state() -> tuple[Obj, Obj, list[Obj]]:
        isvc = await read_for_action(ctx.client, args.name, ctx.namespace)
        found = await fetch.read_replicas(ctx.client, isvc)
        mine = [r for r in found.reads if r.component == args.component and r.replica is not None]
        if len(mine) != 1:
            raise Conflict(PRECONDITION)
        try:
            pods, _ = await ctx.client.list(
                PODS,
                ctx.namespace,
                label_selector={
                    ISVC_LABEL: args.name,
                    "component": args.component,
                    INSTANCE_INDEX_LABEL: str(index),
                },
            )
        except errors.ApiError:
            raise CliError(READ_FAILED) from None
        return isvc, dict(mine[0].replica or {}), pods

    async def prepare() -> guarded.Action:
        isvc, replica, pods = await read_state()
        target = guarded.check_service(isvc)
        active = await resolve_active_runtime(ctx.client, isvc, args.ome_namespace)
        annotations = annotations_of(isvc)
        if (
            annotations.get(PAUSED) in ("true", "freeze")
            or PROMOTE in annotations
            or ROLLBACK in annotations
            or args.component not in active.omenative
            or (replica.get("spec") or {}).get("paused")
        ):
            raise Conflict(PRECONDITION)
        policy = (((isvc.get("spec") or {}).get(args.component) or {}).get("lifecycle") or {}).get(
            "migrationPolicy"
        )
        if (policy or {}).get("mode") == "Never":
            raise Conflict(PRECONDITION)
        row = instance_ready(replica, index)
        nodes = sorted(
            {
                str((p.get("spec") or {}).get("nodeName"))
                for p in pods
                if (p.get("spec") or {}).get("nodeName")
            }
        )
        if not pods or len(nodes) != len(pods) and len(nodes) == 0:
            raise Conflict(PRECONDITION)
        source = args.from_node or (nodes[0] if len(nodes) == 1 else None)
        if source is None or source not in nodes or source in hints:
            raise Conflict(PRECONDITION)
        for key, value in annotations.items():
            if key.startswith(MIGRATION_PREFIX):
                try:
                    body = json.loads(value)
                except ValueError:
                    raise CliError("invalid retained migration payload") from None
                if (
                    body.get("component") == args.component
                    and body.get("instance") == index
                    and not args.request_id
                ):
                    raise Conflict(PRECONDITION)
        request_id = args.request_id or str(uuid.uuid4())
        payload: Obj = {
            "schemaVersion": "v1",
            "component": args.component,
            "instance": index,
            "from_node": source,
        }
        if hints:
            payload["hint_target_nodes"] = hints
        if args.reason:
            payload["reason"] = args.reason
        payload["requested_at"] = rfc3339(ctx.now())
        payload["requested_by"] = args.requested_by
        key = MIGRATION_PREFIX + request_id
        value = json.dumps(payload, separators=(",", ":"))
        if args.request_id:  # lookup only: the retained request must match the flags, else exit 3
            retained = annotations.get(key)
            try:
                same = retained is not None and {
                    k: v for k, v in json.loads(retained).items() if k != "requested_at"
                } == {k: v for k, v in payload.items() if k != "requested_at"}
            except ValueError:
                same = False
            if not same:
                raise Conflict(PRECONDITION)
        rmeta = replica.get("metadata") or {}
        first = (replica, pods)

        async def revalidate() -> None:
            _, again, again_pods = await read_state()
            before = [
                (first[0].get("metadata") or {}).get("resourceVersion"),
                *sorted(str((p.get("metadata") or {}).get("resourceVersion")) for p in first[1]),
            ]
            after = [
                (again.get("metadata") or {}).get("resourceVersion"),
                *sorted(str((p.get("metadata") or {}).get("resourceVersion")) for p in again_pods),
            ]
            if before != after:
                raise Conflict(PRECONDITION)

        preview = [
            ("Request UUID", request_id),
            ("Schema", "v1"),
            ("Component", args.component),
            ("Instance", str(index)),
            ("From node", source),
            ("Hint nodes", ", ".join(hints) or "<absent>"),
            ("Reason", json.dumps(args.reason) if args.reason else "<absent>"),
            ("Requested at", payload["requested_at"]),
            ("Requested by", args.requested_by),
            ("Lookup only", str(bool(args.request_id)).lower()),
            ("Source IR", str(rmeta.get("name"))),
            ("IR UID", str(rmeta.get("uid"))),
            ("IR version", str(rmeta.get("resourceVersion"))),
        ]
        if not args.request_id:
            preview += [
                ("Migration mode", str((policy or {}).get("mode") or "Auto")),
                ("Running revision", str(row.get("runningRevision"))),
                ("Incarnation", str(row.get("incarnation", 0))),
                ("Current nodes", ", ".join(nodes)),
            ]
        action = guarded.Action(
            name="migration start",
            resource=INFERENCE_SERVICES,
            target=target,
            operations=guarded.set_annotation(isvc, key, value),
            follow_up=guarded.follow_up(
                "migration status", args.name, ctx.namespace, ctx.context, f"--component={args.component}"
            ),
            preview=preview,
            warnings=[
                "Node hints are soft preferences; capacity, scheduling and controller convergence",
                "are not guaranteed.",
                "Parent UID/resourceVersion CAS is not an IR/Pod/runtime transaction.",
            ],
            preview_title="ALPHA guarded migration preview (not controller convergence)",
            request_id=request_id,
            applied_message="API accepted annotation request; delivery and convergence not observed.",
            conflict_message=REJECTED,
            unknown_message="migration request failed or outcome unknown; inspect migration status using the "
            f"preview UUID: {request_id}",
            revalidate=revalidate,
        )
        if args.request_id:
            action.operations = []
            action.warnings = []
        return action

    if args.request_id:
        return await _lookup(ctx, args, prepare)
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


async def _lookup(ctx: Ctx, args: argparse.Namespace, prepare: Any) -> str:
    """`--request-id`: the retained request matched; nothing is sent and the command exits 0."""
    action = await prepare()
    ctx.terminal.stderr.write(guarded.preview_text(action, ctx.context, args.ome_namespace, args.dry_run))
    outcome = guarded.Outcome(
        args.dry_run,
        False,
        False,
        "Identical retained mailbox observed; no replay sent; inspect migration status.",
    )
    return guarded.format_result(action, outcome, args.output, ctx.now())
