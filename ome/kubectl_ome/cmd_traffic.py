"""`kubectl ome traffic status|explain` (read the InferenceService once) and the alpha guarded
`drain`/`undrain`, which add or remove one entry of the `ome.io/traffic-drain` annotation (a JSON map
of override ID to `{"cluster", "reason"}`) on a control-plane InferenceService."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Mapping
from typing import Any, Final

from ome.api.resources import INFERENCE_SERVICES
from ome.framework import errors
from ome.kubectl_ome import guarded, snapshot, traffic_explain, traffic_report
from ome.kubectl_ome.context import Ctx
from ome.kubectl_ome.failures import READ_FAILED, CliError, Refused
from ome.kubectl_ome.output import looks_secret, render
from ome.kubectl_ome.parsing import add_command, add_group
from ome.kubectl_ome.table import format_table

Obj = dict[str, Any]

DRAIN: Final = "ome.io/traffic-drain"
OUTPUTS: Final = ("table", "wide", "json", "yaml")
_LABEL: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
MAX_DRAINS: Final = 64
MAX_DRAIN_BYTES: Final = 32 * 1024
MAX_ANNOTATIONS: Final = 256
MAX_METADATA_BYTES: Final = 64 * 1024
PLACEMENT_COPY: Final = (
    "ome.io/placement-origin",
    "ome.io/placement-origin-uid",
    "ome.io/placement-control-plane",
)
LEGACY_PLACEMENT: Final = ("ome.io/accelerator-requirements", "ome.io/cluster-selector")
BOUNDS: Final = "traffic action refused: traffic-drain state exceeds safety bounds"
MALFORMED: Final = "traffic action refused: existing traffic-drain annotation is malformed or unsafe"
INELIGIBLE: Final = "traffic action refused: target is not eligible for cross-cluster traffic routing"
PREVIEW_WARNINGS: Final = [
    "API acceptance is not TrafficMap convergence or data-plane realization.",
    "The exact InferenceService UID/resourceVersion is tested atomically.",
    "Other annotations and traffic-drain override IDs are preserved.",
    "Run the previewed traffic status command to observe controller evidence.",
]


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    sub = add_group(
        commands,
        "traffic",
        help="Traffic status and declared behavior of an InferenceService; drain workload clusters (alpha)",
        example="kubectl ome traffic status chat -n prod",
    )
    for name, help_, handler in (
        ("status", "The traffic status the controller reports for an InferenceService", traffic_status),
        (
            "explain",
            "Declared traffic behavior against the status the controller reports",
            traffic_explain_cmd,
        ),
    ):
        p = add_command(
            sub, name, help=help_, example=f"kubectl ome traffic {name} chat -n prod", parents=parents
        )
        p.add_argument("names", metavar="INFERENCESERVICE", nargs="*")
        p.add_argument("-o", "--output", default="table", help="Output format: table, wide, json or yaml")
        p.set_defaults(handler=handler)
    p = add_command(
        sub,
        "drain",
        help="Alpha. Ask multi-cluster routing to hold one workload cluster at weight 0",
        example="kubectl ome traffic drain chat -n prod --workload-cluster worker-a --id maintenance-a \\\n"
        '  --reason "planned maintenance" --dry-run=server --yes',
        parents=parents,
    )
    _action_flags(p)
    p.add_argument("--workload-cluster", help="WorkloadCluster DNS name to drain (required)")
    p.add_argument("--reason", help="Bounded non-secret operator reason (required)")
    p.set_defaults(handler=traffic_drain, drain=True)
    p = add_command(
        sub,
        "undrain",
        help="Alpha. Remove one drain by its ID",
        example="kubectl ome traffic undrain chat -n prod --id maintenance-a --yes -o json",
        parents=parents,
    )
    _action_flags(p)
    p.set_defaults(handler=traffic_drain, drain=False, workload_cluster=None, reason=None)


def _action_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("names", metavar="INFERENCESERVICE", nargs="*")
    p.add_argument("--id", dest="override_id", help="DNS-1123 override ID (required)")
    p.add_argument("--dry-run", default="none", help="Dry-run mode: none, client or server")
    p.add_argument(
        "--yes", action="store_true", help="Confirm the exact preview without an interactive prompt"
    )
    p.add_argument("-o", "--output", default="table", help="Output: table, wide (bounded), json or yaml")


# --- status and explain ---------------------------------------------------------------------------


def _read_args(args: argparse.Namespace) -> str:
    if args.output not in OUTPUTS:
        raise CliError(f'unsupported output format "{args.output}" (supported: table, wide, json, yaml)')
    if len(args.names) != 1:
        raise CliError("exactly one inference service is required")
    name = str(args.names[0])
    if not snapshot.valid_name(name):
        raise CliError(f'invalid InferenceService name "{name}": must be a DNS-1123 subdomain')
    return name


_FIXED: Final = (
    (errors.NotFound, "not found"),
    (errors.Forbidden, "forbidden"),
    (errors.Unauthorized, "unauthorized"),
    (errors.TooManyRequests, "request throttled"),
    (errors.ServerTimeout, "request timed out"),
    (errors.ServerError, "server error"),
)


async def _read(ctx: Ctx, name: str, *, fixed: bool) -> Obj:
    where = f'get InferenceService "{ctx.namespace}/{name}": '
    try:
        return await ctx.client.get(INFERENCE_SERVICES, name, ctx.namespace)
    except TimeoutError:
        raise CliError(where + "request timed out") from None
    except errors.ApiError as exc:
        if fixed:
            word = next((w for t, w in _FIXED if isinstance(exc, t)), "API request failed")
            if exc.status == 503:
                word = "service unavailable"
            raise CliError(where + word) from None
        if isinstance(exc, errors.NotFound) and "the server could not find the requested resource" in str(
            exc.message
        ):
            raise CliError(
                where + "OME does not appear to be installed on this cluster; "
                "see https://github.com/ome-projects/ome#readme"
            ) from None
        raise CliError(where + (exc.message or str(exc))) from None


async def traffic_status(ctx: Ctx, args: argparse.Namespace) -> str:
    name = _read_args(args)
    isvc = await _read(ctx, name, fixed=False)
    now = ctx.now()
    report = traffic_report.build_status(isvc, now)
    if args.output in ("json", "yaml"):
        return render(traffic_report.status_document(report, now), args.output)
    rows = traffic_report.status_rows(report, wide=args.output == "wide")
    return format_table(("FIELD", "COMP", "VALUE", "SOURCE"), rows)


async def traffic_explain_cmd(ctx: Ctx, args: argparse.Namespace) -> str:
    name = _read_args(args)
    isvc = await _read(ctx, name, fixed=True)
    now = ctx.now()
    report = traffic_explain.build_explain(isvc, now)
    if args.output in ("json", "yaml"):
        return render(traffic_explain.explain_document(report, now), args.output)
    if args.output == "wide":
        rows = traffic_explain.explain_wide_rows(report, now)
        return format_table(("LAYER", "FIELD", "STATE", "VALUE", "SOURCE"), rows)
    return format_table(("LAYER", "STATE", "VALUE", "SOURCE"), traffic_explain.explain_rows(report))


# --- drain and undrain ----------------------------------------------------------------------------


def valid_label(value: object) -> bool:
    return (
        isinstance(value, str) and len(value) <= 63 and bool(_LABEL.match(value)) and not looks_secret(value)
    )


def valid_reason(value: object) -> bool:
    if not isinstance(value, str) or not value or len(value.encode()) > 256 or value != value.strip():
        return False
    if any(not ch.isprintable() for ch in value):  # line breaks, control and format characters
        return False
    return not looks_secret(value) and not re.search(r"\bsk-[A-Za-z0-9_-]{8,}", value)


def check_action_args(args: argparse.Namespace, namespace: str, context: str) -> str:
    """The documented checks, in order, before any request; returns the service's name."""
    if len(args.names) != 1:
        raise CliError("exactly one inference service is required")
    if args.output not in OUTPUTS:
        raise CliError("output must be table, wide, json or yaml")
    if args.dry_run not in guarded.DRY_RUN_MODES:
        raise CliError("dry-run must be none, client or server")
    name = str(args.names[0])
    if not snapshot.valid_name(name) or looks_secret(name):
        raise CliError("invalid inference service name")
    if args.drain and not args.workload_cluster:
        raise CliError(
            "traffic drain requires --workload-cluster; --cluster selects the Kubernetes API cluster"
        )
    if not valid_label(args.override_id):
        raise CliError("traffic override ID must be a DNS-1123 label")
    if args.drain and (not snapshot.valid_name(args.workload_cluster) or looks_secret(args.workload_cluster)):
        raise CliError("traffic drain cluster must be a DNS-1123 subdomain")
    if args.drain and not valid_reason(args.reason):
        raise CliError("traffic drain reason must be bounded, trimmed, printable, and non-secret")
    if not namespace:
        raise CliError("resolve workload namespace failed")
    if not valid_label(namespace):
        raise CliError("resolved workload namespace is invalid")
    if not context or looks_secret(context):
        raise CliError("selected kubeconfig context is unavailable or unsafe")
    return name


def parse_drains(value: str) -> dict[str, Obj]:
    """The annotation's drains; Refused when it is not a map of valid entries."""
    try:
        parsed = json.loads(value, object_pairs_hook=_no_duplicates)
    except (ValueError, TypeError):
        raise Refused(MALFORMED) from None
    if not isinstance(parsed, dict):
        raise Refused(MALFORMED)
    for key, entry in parsed.items():
        if (
            not valid_label(key)
            or not isinstance(entry, dict)
            or set(entry) != {"cluster", "reason"}
            or not snapshot.valid_name(entry.get("cluster"))
            or not valid_reason(entry.get("reason"))
        ):
            raise Refused(MALFORMED)
    return parsed


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate key")
    return dict(pairs)


def _metadata_bytes(meta: Mapping[str, Any]) -> int:
    return len(
        json.dumps([meta.get("annotations") or {}, meta.get("labels") or {}, meta.get("finalizers") or []])
    )


def eligible(isvc: Mapping[str, Any]) -> bool:
    placement = (isvc.get("spec") or {}).get("placement")
    if placement is not None:
        return bool(
            isinstance(placement, Mapping)
            and (placement.get("requirements") or placement.get("clusterSelector"))
        )
    annotations = (isvc.get("metadata") or {}).get("annotations") or {}
    return any(k in annotations for k in LEGACY_PLACEMENT)


def plan_drain(
    isvc: Mapping[str, Any], name: str, namespace: str, args: argparse.Namespace
) -> tuple[guarded.Target, dict[str, Obj], dict[str, Obj], str]:
    """The checks after the read, in the documented order; (target, before, after, cluster)."""
    meta = isvc.get("metadata") or {}
    if meta.get("name") != name or meta.get("namespace") != namespace:
        raise CliError("action target response does not match exact request")
    annotations = dict(meta.get("annotations") or {})
    labels = dict(meta.get("labels") or {})
    raw = annotations.get(DRAIN)
    if (
        len(annotations) > MAX_ANNOTATIONS
        or len(labels) > MAX_ANNOTATIONS
        or len(meta.get("finalizers") or []) > 64
        or _metadata_bytes(meta) > MAX_METADATA_BYTES
        or (raw is not None and len(str(raw).encode()) > MAX_DRAIN_BYTES)
    ):
        raise CliError(BOUNDS)
    if any(k in labels or k in annotations for k in PLACEMENT_COPY) or any(
        k in labels for k in LEGACY_PLACEMENT
    ):
        raise Refused("placement sources and derived services cannot be mutated")
    if not eligible(isvc):
        raise CliError(INELIGIBLE)
    target = guarded.target_of(isvc, "InferenceService")
    before = parse_drains(str(raw)) if raw is not None else {}
    if len(before) > MAX_DRAINS:
        raise CliError(BOUNDS)
    after = dict(before)
    if args.drain:
        if args.override_id in before:
            raise CliError("traffic drain refused: override ID already exists")
        after[args.override_id] = {"cluster": args.workload_cluster, "reason": args.reason}
        cluster = str(args.workload_cluster)
    else:
        if args.override_id not in before:
            raise CliError("traffic undrain refused: override ID does not exist")
        cluster = str(before[args.override_id]["cluster"])
        del after[args.override_id]
    encoded = json.dumps(after, separators=(",", ":"), sort_keys=True)
    if after and (
        len(after) > MAX_DRAINS
        or len(encoded.encode()) > MAX_DRAIN_BYTES
        or (raw is None and len(annotations) + 1 > MAX_ANNOTATIONS)
        or _metadata_bytes({**meta, "annotations": {**annotations, DRAIN: encoded}}) > MAX_METADATA_BYTES
    ):
        raise CliError(BOUNDS)
    return target, before, after, cluster


def drain_operations(isvc: Mapping[str, Any], after: Mapping[str, Obj]) -> list[Obj]:
    if not after:
        return guarded.remove_annotation(isvc, DRAIN)
    return guarded.set_annotation(isvc, DRAIN, json.dumps(after, separators=(",", ":"), sort_keys=True))


async def traffic_drain(ctx: Ctx, args: argparse.Namespace) -> str:
    name = check_action_args(args, ctx.namespace, ctx.context)
    verb = "traffic drain" if args.drain else "traffic undrain"

    async def prepare() -> guarded.Action:
        try:
            isvc = await ctx.client.get(INFERENCE_SERVICES, name, ctx.namespace)
        except errors.ApiError:
            raise CliError(READ_FAILED) from None
        target, before, after, cluster = plan_drain(isvc, name, ctx.namespace, args)
        follow = guarded.follow_up("traffic status", name, ctx.namespace, ctx.context)
        counts = f"{len(before)} -> {len(after)}"
        preview = [("Override ID", args.override_id), ("Cluster", cluster)]
        if args.drain:
            preview.append(("Reason", json.dumps(args.reason)))
        preview += [("Override count", counts), ("Annotation", DRAIN), ("Follow-up", follow)]
        return guarded.Action(
            name=verb,
            resource=INFERENCE_SERVICES,
            target=target,
            operations=drain_operations(isvc, after),
            follow_up=follow,
            preview=preview,
            warnings=list(PREVIEW_WARNINGS),
            preview_title="ALPHA guarded traffic action (not TrafficMap convergence)",
            applied_message="API accepted traffic annotation request; not TrafficMap convergence.",
            client_message="Validated locally; no patch sent. TrafficMap convergence was not observed.",
            conflict_message="guarded annotation patch rejected; refresh traffic status and retry explicitly",
            unknown_message=READ_FAILED,
            result_rows=[("override-id", args.override_id), ("cluster", cluster), ("overrides", counts)],
            extra={
                "traffic": {
                    "overrideID": args.override_id,
                    "cluster": cluster,
                    "overridesBefore": len(before),
                    "overridesAfter": len(after),
                }
            },
        )

    return await guarded.run_guarded(
        ctx.client,
        prepare,
        ctx.terminal,
        context=ctx.context,
        ome_namespace=None,
        dry_run=args.dry_run,
        yes=args.yes,
        output=args.output,
    )
