"""`kubectl ome autoscale status|explain` (reads) and the alpha guarded `kubectl ome scale`, which sets
`spec.replicas` through the `/scale` subresource of one OMENative component's InferenceReplica."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from ome.api.resources import HPAS, INFERENCE_REPLICAS, SCALED_OBJECTS
from ome.framework import errors
from ome.kubectl_ome import autoscale_explain as autoscale_explain_report
from ome.kubectl_ome import effective, fetch, guarded, rollout_report
from ome.kubectl_ome.connection import add_ome_namespace
from ome.kubectl_ome.context import (
    PROMOTE,
    ROLLBACK,
    RUNTIME_SYNC,
    Ctx,
    annotations_of,
    read_for_action,
    read_isvc,
    resolve_active_runtime,
)
from ome.kubectl_ome.failures import CliError, Conflict, Refused
from ome.kubectl_ome.output import document, render
from ome.kubectl_ome.parsing import (
    OUTPUTS_NO_WIDE,
    add_command,
    add_component,
    add_group,
    add_guarded,
    add_name,
    add_output,
)
from ome.kubectl_ome.table import format_table
from ome.omenative.status import rows_of
from ome.resolution.modes import COMPONENTS

Obj = dict[str, Any]

UNKNOWN: Final = (
    "scale request outcome unknown; inspect kubectl ome autoscale status before preparing another request"
)
CLASSES: Final = ("HPA", "KEDA", "External", "None")
MANAGERS: Final = ("ome", "external", "none")
SOURCES: Final = ("isvc", "policy", "runtime", "legacy", "default")
HPA_CONDITIONS: Final = (
    ("ABLE-TO-SCALE", "AbleToScale"),
    ("SCALING-ACTIVE", "ScalingActive"),
    ("SCALING-LIMITED", "ScalingLimited"),
)
KEDA_CONDITIONS: Final = (
    ("READY", "Ready"),
    ("ACTIVE", "Active"),
    ("FALLBACK", "Fallback"),
    ("PAUSED", "Paused"),
)
ISSUE_ALIASES: Final = {
    "UnknownComponentStatus": "UnknownComp",
    "AutoscalerNotReported": "NoAutoscaler",
    "ScaleTargetNotReported": "NoTarget",
    "ClassInvalid": "BadClass",
    "ManagedByInvalid": "BadManager",
    "SpecSourceInvalid": "BadSpecSource",
    "ReplicaEvidenceAmbiguous": "ReplicaAmbig",
    "ReplicaEvidenceInvalid": "BadReplica",
    "ConditionConflict": "CondConflict",
}
INVALID: Final = "manual scale requires complete current selected replica and Scale evidence"
SOURCE_BAD: Final = "manual scale source evidence is unavailable or inconsistent"
BUSY: Final = "manual scale refused: selected lifecycle, migration or rollout work is active"
NEEDS_OVERRIDE: Final = (
    "manual scale is transient and requires --override-autoscaler --yes for every ownership class"
)
OUT_OF_BOUNDS: Final = "manual scale replicas must be positive and within verified bounds and partitions"
BAD_ARGS: Final = (
    "invalid scale arguments; require one service, component engine|decoder|router, positive base-10 "
    "--replicas, supported output/dry-run and valid namespace/context/timeout"
)


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    sub = add_group(
        commands,
        "autoscale",
        help="Each component's autoscaling state and its source",
        example="kubectl ome autoscale status chat -n prod",
    )
    p = add_command(
        sub,
        "status",
        help="The autoscaling the controller reports for each component",
        example="kubectl ome autoscale status chat -n prod --live-scale",
        parents=parents,
    )
    add_name(p)
    p.add_argument(
        "--live-scale",
        action="store_true",
        help="Compare parent counts with exact selected InferenceReplica and /scale reads",
    )
    p.add_argument(
        "--live-scaler",
        action="store_true",
        help="Inspect exact selected HPA or KEDA ScaledObject (additional read permission)",
    )
    add_output(p)
    p.set_defaults(handler=autoscale_status)
    p = add_command(
        sub,
        "explain",
        help="Which autoscaler each component should have, compared with the report",
        example="kubectl ome autoscale explain chat -n prod",
        parents=parents,
    )
    add_name(p)
    add_output(p, OUTPUTS_NO_WIDE)
    add_ome_namespace(p)
    p.set_defaults(handler=autoscale_explain)
    p = add_command(
        commands,
        "scale",
        help="Alpha. Request a transient Instance count for one OMENative component",
        example="kubectl ome scale chat -n prod --component engine --replicas 3 "
        "--override-autoscaler --yes --dry-run client",
        parents=parents,
    )
    add_name(p)
    add_component(p)
    p.add_argument("--replicas", required=True, help="Required positive base-10 logical Instance count")
    p.add_argument(
        "--override-autoscaler",
        action="store_true",
        help="Authorize a transient reconciliation-overwritten request; requires --yes",
    )
    add_guarded(p)
    p.set_defaults(handler=scale)


def _last_scale(value: Any) -> str:
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return "-"
    return moment.strftime("%b%d %H:%MZ")


def component_autoscaling(comp: str, entry: Mapping[str, Any]) -> tuple[str, dict[str, str], list[str]]:
    """A component's state, its row values and its issue codes."""
    scaler = entry.get("autoscaler") or {}
    values: dict[str, str] = {}
    issues: list[str] = []
    if not scaler:
        return "NotReported", {"CLASS": "Unknown"}, ["AutoscalerNotReported"]
    cls, manager, source = scaler.get("class"), scaler.get("managedBy"), scaler.get("specSource")
    values["CLASS"] = str(cls) if cls in CLASSES else "Unknown"
    values["MANAGED-BY"] = str(manager) if manager in MANAGERS else "Unknown"
    values["SPEC-SOURCE"] = str(source) if source in SOURCES else "Unknown"
    if cls not in CLASSES:
        issues.append("ClassInvalid")
    if manager not in MANAGERS:
        issues.append("ManagedByInvalid")
    if source is not None and source not in SOURCES:
        issues.append("SpecSourceInvalid")
    target = entry.get("scaleTargetRef") or {}
    if target.get("name"):
        values["TARGET-KIND"] = "IR" if target.get("kind") == "InferenceReplica" else str(target.get("kind"))
        values["TARGET-NAME"] = str(target["name"])
        values["TARGET-EVIDENCE"] = "Reported"
    else:
        values["TARGET-EVIDENCE"] = "NotReported"
        issues.append("ScaleTargetNotReported")
    managed = manager == "ome" and cls in ("HPA", "KEDA")
    current, desired = scaler.get("currentReplicas"), scaler.get("desiredReplicas")
    if not managed:
        values["REPLICA-EVIDENCE"] = "Unavailable"
        values["COND-EVIDENCE"] = "Unavailable"
    else:
        values["CURRENT"], values["DESIRED"] = str(current or 0), str(desired or 0)
        if not current or not desired:
            values["REPLICA-EVIDENCE"] = "Ambiguous"
            issues.append("ReplicaEvidenceAmbiguous")
        else:
            values["REPLICA-EVIDENCE"] = "Reported"
        if scaler.get("lastScaleTime"):
            values["LAST-SCALE"] = _last_scale(scaler["lastScaleTime"])
        conditions = scaler.get("conditions") or []
        values["COND-EVIDENCE"] = "Reported" if conditions else "NotReported"
        for row, type_ in HPA_CONDITIONS if cls == "HPA" else KEDA_CONDITIONS:
            found = {c.get("status") for c in conditions if c.get("type") == type_}
            if len(found) > 1:
                issues.append("ConditionConflict")
            elif found:
                values[row] = str(found.pop())
    invalid = {"ClassInvalid", "ManagedByInvalid", "SpecSourceInvalid"} & set(issues)
    state = "Invalid" if invalid else ("Partial" if issues else "Reported")
    return state, values, issues


ROW_ORDER: Final = (
    "CLASS",
    "MANAGED-BY",
    "SPEC-SOURCE",
    "TARGET-KIND",
    "TARGET-NAME",
    "TARGET-EVIDENCE",
    "CURRENT",
    "DESIRED",
    "REPLICA-EVIDENCE",
    "LAST-SCALE",
    "LIVE-EVIDENCE",
    "LIVE-SPEC",
    "LIVE-CURRENT",
    "LIVE-COUNT",
    "COND-EVIDENCE",
    *(r for r, _ in HPA_CONDITIONS),
    *(r for r, _ in KEDA_CONDITIONS),
)


def autoscale_table(
    isvc: Mapping[str, Any], live: Mapping[str, dict[str, str]] | None = None
) -> tuple[str, list[list[str]], Obj]:
    components = (isvc.get("status") or {}).get("components") or {}
    per: dict[str, tuple[str, dict[str, str], list[str]]] = {}
    service_issues = ["UnknownComponentStatus"] if set(components) - set(COMPONENTS) else []
    for comp in COMPONENTS:
        if comp in components:
            state, values, issues = component_autoscaling(comp, components[comp] or {})
            values.update((live or {}).get(comp, {}))
            per[comp] = (state, values, issues)
    states = [s for s, _, _ in per.values()]
    if service_issues or "Invalid" in states:
        service = "Invalid"
    elif not per or all(s == "NotReported" for s in states):
        service = "Unavailable"
    elif any(s in ("Partial", "NotReported") for s in states):
        service = "Partial"
    else:
        service = "Reported"
    rows = [["STATE", service, *(per[c][0] if c in per else "-" for c in COMPONENTS)]]
    for key in ROW_ORDER:
        cells = [per[c][1].get(key, "-") if c in per else "-" for c in COMPONENTS]
        if any(cell != "-" for cell in cells):
            rows.append([key, "-", *cells])
    issue_cells = [
        ",".join(ISSUE_ALIASES.get(i, i) for i in per[c][2]) or "-" if c in per else "-" for c in COMPONENTS
    ]
    if service_issues or any(cell != "-" for cell in issue_cells):
        rows.append(["ISSUES", ",".join(ISSUE_ALIASES[i] for i in service_issues) or "-", *issue_cells])
    content = {
        "state": service,
        "components": [
            {"component": c, "state": s, "values": v, "issues": i} for c, (s, v, i) in per.items()
        ],
        "issues": service_issues,
    }
    return service, rows, content


async def _live_counts(ctx: Ctx, isvc: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    components = (isvc.get("status") or {}).get("components") or {}
    out: dict[str, dict[str, str]] = {}
    for comp, entry in components.items():
        target = (entry or {}).get("scaleTargetRef") or {}
        if target.get("kind") != "InferenceReplica" or not target.get("name"):
            out[comp] = {"LIVE-EVIDENCE": "Unsupported" if target.get("name") else "NotSelected"}
            continue
        try:
            live = await ctx.client.get(INFERENCE_REPLICAS, str(target["name"]), ctx.namespace)
        except errors.NotFound:
            out[comp] = {"LIVE-EVIDENCE": "NotFound"}
            continue
        except errors.Forbidden:
            out[comp] = {"LIVE-EVIDENCE": "Forbidden"}
            continue
        except errors.ApiError:
            out[comp] = {"LIVE-EVIDENCE": "Unavailable"}
            continue
        spec_n, cur_n = (
            (live.get("spec") or {}).get("replicas", 0),
            (live.get("status") or {}).get("replicas", 0),
        )
        scaler = (entry or {}).get("autoscaler") or {}
        equal = spec_n == scaler.get("desiredReplicas") and cur_n == scaler.get("currentReplicas")
        out[comp] = {
            "LIVE-EVIDENCE": "Reported",
            "LIVE-SPEC": str(spec_n),
            "LIVE-CURRENT": str(cur_n),
            "LIVE-COUNT": "Equal" if equal else "Drift",
        }
    return out


def scaler_rows(kind: str, scaler: Mapping[str, Any]) -> dict[str, str]:
    """SCALER-* rows from a live HorizontalPodAutoscaler or ScaledObject (pure)."""
    meta, status = scaler.get("metadata") or {}, scaler.get("status") or {}
    conds = {str(c.get("type")): str(c.get("status")) for c in status.get("conditions") or []}
    rows = {"SCALER-KIND": kind, "SCALER-EVIDENCE": "Reported"}
    pairs: tuple[tuple[str, str], ...]
    if kind == "HPA":
        observed = status.get("observedGeneration")
        rows["SCALER-GEN"] = (
            "Matched" if observed is not None and observed == meta.get("generation") else "Unproven"
        )
        if rows["SCALER-GEN"] != "Matched":
            rows["SCALER-EVIDENCE"] = "Stale"
        rows["SCALER-CURRENT"] = str(status.get("currentReplicas", 0))
        rows["SCALER-DESIRED"] = str(status.get("desiredReplicas", 0))
        pairs = (
            ("SCALER-ABLE", "AbleToScale"),
            ("SCALER-SCALING", "ScalingActive"),
            ("SCALER-LIMITED", "ScalingLimited"),
        )
    else:
        rows["SCALER-GEN"] = "Unproven"
        pairs = (
            ("SCALER-READY", "Ready"),
            ("SCALER-ACTIVE", "Active"),
            ("SCALER-FALLBACK", "Fallback"),
            ("SCALER-PAUSED", "Paused"),
        )
    rows.update({row: conds[type_] for row, type_ in pairs if type_ in conds})
    if meta.get("deletionTimestamp"):
        rows["SCALER-EVIDENCE"] = "Deleting"
    return rows


async def _live_scalers(ctx: Ctx, isvc: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    components = (isvc.get("status") or {}).get("components") or {}
    out: dict[str, dict[str, str]] = {}
    for comp, entry in components.items():
        scaler = (entry or {}).get("autoscaler") or {}
        target = str(((entry or {}).get("scaleTargetRef") or {}).get("name") or "")
        cls = scaler.get("class")
        if scaler.get("managedBy") != "ome" or cls not in ("HPA", "KEDA") or not target:
            out[comp] = {"SCALER-KIND": str(cls or "Unknown"), "SCALER-EVIDENCE": "NotSelected"}
            continue
        res, name = (HPAS, target) if cls == "HPA" else (SCALED_OBJECTS, f"scaledobject-{target}")
        try:
            out[comp] = scaler_rows(str(cls), await ctx.client.get(res, name, ctx.namespace))
        except errors.ApiError as exc:
            reason = {404: "NotFound", 403: "Forbidden"}.get(exc.status, "Unavailable")
            out[comp] = {"SCALER-KIND": str(cls), "SCALER-EVIDENCE": reason}
    return out


async def autoscale_status(ctx: Ctx, args: argparse.Namespace) -> str:
    isvc = await read_isvc(ctx.client, args.name, ctx.namespace)
    live = await _live_counts(ctx, isvc) if args.live_scale else {}
    if args.live_scaler:
        for comp, found in (await _live_scalers(ctx, isvc)).items():
            live.setdefault(comp, {}).update(found)
    state, rows, content = autoscale_table(isvc, live)
    if args.output in ("json", "yaml"):
        doc = document(
            "AutoscaleStatusReport", content, metadata={"name": args.name, "namespace": ctx.namespace}
        )
        doc["warnings"] = [] if state == "Reported" else [{"code": "PartialData"}]
        return render(doc, args.output)
    return format_table(("FIELD", "SERVICE", "ENGINE", "DECODER", "ROUTER"), rows)


async def autoscale_explain(ctx: Ctx, args: argparse.Namespace) -> str:
    isvc = await read_isvc(ctx.client, args.name, ctx.namespace)
    runtime = await fetch.read_runtime(ctx.client, isvc)
    state, columns, service = autoscale_explain_report.explain(
        isvc, runtime.obj, effective.component_modes(isvc, runtime.obj)
    )
    if args.output in ("json", "yaml"):
        content = autoscale_explain_report.explain_document(state, columns, service)
        doc = document(
            "AutoscaleExplainReport", content, metadata={"name": args.name, "namespace": ctx.namespace}
        )
        return render(doc, args.output)
    return autoscale_explain_report.format_explain(columns, service, state)


# --- scale --------------------------------------------------------------------------------------


def bounds(isvc: Mapping[str, Any], runtime: Mapping[str, Any] | None, comp: str) -> tuple[int, int]:
    """`minReplicas..maxReplicas` from the service, else the runtime; without a max only the min."""
    body = (isvc.get("spec") or {}).get(comp) or {}
    config = ((runtime or {}).get("spec") or {}).get(f"{comp}Config") or {}
    low = body.get("minReplicas", config.get("minReplicas"))
    high = body.get("maxReplicas", config.get("maxReplicas"))
    low = low if isinstance(low, int) and low > 0 else 1
    high = high if isinstance(high, int) and high > 0 else low
    return low, max(high, low)


def busy(isvc: Mapping[str, Any], comp: str, replica: Mapping[str, Any]) -> bool:
    status = replica.get("status") or {}
    rows = rows_of(status)
    if any(r.get("operation") or r.get("phase") != "Ready" for r in rows):
        return True
    if any(
        m.get("phase") not in ("Completed", "Failed", "Relocated") for m in status.get("migrations") or []
    ):
        return True
    if status.get("currentRevision") != status.get("updateRevision"):
        return True
    entry = ((isvc.get("status") or {}).get("components") or {}).get(comp) or {}
    return entry.get("rolloutPhase") not in (None, "Stable")


async def scale(ctx: Ctx, args: argparse.Namespace) -> str:
    text = str(args.replicas)
    if not text.isdigit() or text.startswith("0") or int(text) > 2**31 - 1:
        raise CliError(BAD_ARGS)
    if args.override_autoscaler and not args.yes:
        raise CliError(BAD_ARGS)
    if not args.override_autoscaler:
        raise CliError(NEEDS_OVERRIDE)
    if not args.yes:
        raise CliError(BAD_ARGS)
    wanted = int(text)
    name = f"{args.name}-{args.component}"

    async def read_ir() -> Obj:
        try:
            return await ctx.client.get(INFERENCE_REPLICAS, name, ctx.namespace)
        except errors.ApiError:
            raise CliError(SOURCE_BAD) from None

    async def prepare() -> guarded.Action:
        isvc = await read_for_action(ctx.client, args.name, ctx.namespace)
        guarded.check_service(isvc)
        annotations = annotations_of(isvc)
        if PROMOTE in annotations or ROLLBACK in annotations:
            raise Refused("a rollout promote or rollback mailbox is present")
        sync = annotations.get(RUNTIME_SYNC)
        if sync and sync != (isvc.get("status") or {}).get("lastRuntimeSyncToken"):
            raise CliError(SOURCE_BAD)
        active = await resolve_active_runtime(ctx.client, isvc, args.ome_namespace)
        if args.component not in active.omenative:
            raise CliError(SOURCE_BAD)
        body = (isvc.get("spec") or {}).get(args.component) or {}
        if body.get("autoscalerPolicyRef") and not body.get("autoscaler"):
            raise CliError(
                "manual scale requires locally verifiable autoscaling; "
                "winning policy resolution is unavailable"
            )
        replica = await read_ir()
        target = guarded.target_of(replica, "InferenceReplica")
        meta, spec, status = (
            replica.get("metadata") or {},
            replica.get("spec") or {},
            replica.get("status") or {},
        )
        current = spec.get("replicas")
        if not isinstance(current, int) or current < 1 or spec.get("component") != args.component:
            raise CliError(INVALID)
        stamp = (meta.get("annotations") or {}).get("ome.io/parent-generation")
        if status.get("observedGeneration") != meta.get("generation") or (
            stamp is not None and str(stamp) != str((isvc.get("metadata") or {}).get("generation"))
        ):
            raise Refused("controller safety evidence is stale or inconsistent")
        if busy(isvc, args.component, replica) or rollout_report.active_run(isvc):
            raise CliError(BUSY)
        low, high = bounds(isvc, active.runtime.obj, args.component)
        if not low <= wanted <= high:
            raise CliError(OUT_OF_BOUNDS)
        scaler = (((isvc.get("status") or {}).get("components") or {}).get(args.component) or {}).get(
            "autoscaler"
        ) or {}
        cls = str(scaler.get("class") or (body.get("autoscaler") or {}).get("class") or "HPA")
        owner = {"HPA": "ome", "KEDA": "ome", "External": "external", "None": "none"}.get(cls, "ome")
        source = (
            "isvc"
            if body.get("autoscaler") or body.get("minReplicas")
            else "runtime"
            if active.runtime.obj
            and ((active.runtime.obj.get("spec") or {}).get(f"{args.component}Config") or {}).get(
                "minReplicas"
            )
            else "default"
        )
        instances = (
            f"{status.get('replicas', 0)} total; {status.get('readyReplicas', 0)} ready; "
            f"{status.get('servingReplicas', 0)} serving; {status.get('availableReplicas', 0)} available"
        )

        async def revalidate() -> None:
            again = await read_ir()
            if (again.get("metadata") or {}).get("resourceVersion") != target.resource_version:
                raise CliError(
                    "manual scale source changed; inspect current status and prepare a new request"
                )

        rows = [
            ("component", args.component),
            ("replicas", f"{current} -> {wanted}"),
            ("bounds", f"{low}..{high}"),
            ("class / owner", f"{cls} / {owner}"),
            ("source", source),
        ]
        return guarded.Action(
            name="scale",
            resource=INFERENCE_REPLICAS,
            target=target,
            operations=[{"op": "replace", "path": "/spec/replicas", "value": wanted}],
            subresource="scale",
            follow_up=guarded.follow_up("autoscale status", args.name, ctx.namespace, ctx.context),
            preview=[
                ("parent", args.name),
                ("parent generation", str((isvc.get("metadata") or {}).get("generation"))),
                ("IR", name),
                ("IR generation", str(meta.get("generation"))),
                ("parent stamp", str(stamp or "-")),
                ("component", args.component),
                ("/scale spec.replicas", f"{current} -> {wanted}"),
                ("bounds", f"{low}..{high}"),
                ("verified ownership", f"{cls} / {owner}"),
                ("verified source", source),
                ("override / transient", "true / true"),
                ("reported Instances", instances),
                ("lifecycle / canary", "No observed selected active work"),
                ("parent freshness", "Unverifiable (advisory)"),
                ("IR proofs revalidated", "1"),
            ],
            warnings=[
                "This is a transient /scale request, not a change to parent replica bounds.",
                "The owner of the count can overwrite it at any time.",
                "A scale-down drains and deletes Instances, even on a paused InferenceService.",
                "The patch guards only the InferenceReplica.",
            ],
            preview_title="ALPHA guarded scale preview (not controller convergence)",
            result_rows=[
                *rows,
                ("instances", instances),
                ("field", "/scale spec.replicas"),
                ("override", "Yes"),
                ("transient", "Yes"),
                ("parent freshness", "Unverifiable"),
            ],
            extra={
                "scale": {
                    "component": args.component,
                    "currentReplicas": current,
                    "requestedReplicas": wanted,
                    "bounds": {"min": low, "max": high},
                    "class": cls,
                    "owner": owner,
                    "source": source,
                }
            },
            client_message="Validated locally; no scale patch sent.",
            applied_message="API accepted transient scale request; convergence not observed.",
            conflict_message="guarded scale precondition rejected; "
            "inspect current status and prepare a new request",
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


__all__ = ["Conflict", "fetch", "register"]
