"""`kubectl ome placement status|explain|endpoint` (alpha multi-cluster): reads the InferenceService,
and for `explain` the WorkloadClusters (at most 64, 2 pages of 32), for `endpoint` the TrafficMap of
the same name. Only the InferenceService read can fail the command; the others degrade into rows."""

from __future__ import annotations

import argparse
from typing import Any, Final

from ome.api.resources import INFERENCE_SERVICES, TRAFFIC_MAPS, WORKLOAD_CLUSTERS
from ome.framework import errors
from ome.kubectl_ome import placement_report as pr
from ome.kubectl_ome import snapshot
from ome.kubectl_ome.context import Ctx
from ome.kubectl_ome.failures import CliError
from ome.kubectl_ome.output import document, render, rfc3339
from ome.kubectl_ome.parsing import add_command, add_group, add_name, add_output

Obj = dict[str, Any]

FLEET_LIMIT: Final = 64
FLEET_PAGE: Final = 32
KINDS: Final = {
    "status": "PlacementStatusReport",
    "explain": "PlacementExplainReport",
    "endpoint": "PlacementEndpointReport",
}


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    sub = add_group(
        commands,
        "placement",
        help="Where an InferenceService runs across workload clusters (alpha)",
        example="kubectl ome placement status chat -n prod",
    )
    for name, help_ in (
        ("status", "The placement phase and the workload clusters chosen, with their endpoints"),
        ("explain", "Which workload clusters the placement selectors match, and the routing settings"),
        ("endpoint", "The routing table: each cluster's endpoint, weight, drains and recorded probe"),
    ):
        p = add_command(
            sub, name, help=help_, example=f"kubectl ome placement {name} chat -n prod", parents=parents
        )
        add_name(p)
        add_output(p)
        p.set_defaults(handler=placement)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, errors.ServerTimeout | TimeoutError):
        return "Timeout"
    return snapshot.failure_reason(exc)


async def read_fleet(ctx: Ctx) -> pr.Fleet:
    read = await snapshot.paged_list(
        ctx.client,
        WORKLOAD_CLUSTERS,
        page_size=FLEET_PAGE,
        page_limit=FLEET_LIMIT // FLEET_PAGE,
        request_limit=FLEET_LIMIT // FLEET_PAGE,
        keep=FLEET_LIMIT,
    )
    reason = ""
    if read.failure is not None:
        reason = "UnsupportedAPI" if read.failure == "NotFound" else read.failure
    elif read.truncated:
        reason = "PageBudgetExceeded"
    complete = read.failure is None and not read.truncated
    return pr.Fleet(read.items, read.returned, read.pages, complete, read.truncated, reason)


async def read_traffic_map(ctx: Ctx, isvc: Obj) -> tuple[Obj | None, str]:
    meta = isvc.get("metadata") or {}
    try:
        tm = await ctx.client.get(TRAFFIC_MAPS, str(meta.get("name")), ctx.namespace)
    except (errors.ApiError, TimeoutError) as exc:
        return None, _reason(exc)
    tm_meta, spec, status = tm.get("metadata") or {}, tm.get("spec") or {}, tm.get("status") or {}
    owned = spec.get("service") == meta.get("name") and status.get("sourceUID") in (None, meta.get("uid"))
    if not owned or tm_meta.get("deletionTimestamp") or meta.get("deletionTimestamp"):
        return None, "OwnershipUnbound"
    return tm, ""


async def placement(ctx: Ctx, args: argparse.Namespace) -> str:
    if not snapshot.valid_name(args.name):
        raise CliError("invalid InferenceService name")
    try:
        isvc = await ctx.client.get(INFERENCE_SERVICES, args.name, ctx.namespace)
    except (errors.ApiError, TimeoutError) as exc:
        raise CliError(f"InferenceService read unavailable: {_reason(exc)}") from None
    inp = pr.inputs(isvc)
    wide = args.output == "wide"
    now = ctx.now()
    if args.subcommand == "status":
        rows = pr.status_rows(inp, wide or args.output in ("json", "yaml"))
    elif args.subcommand == "explain":
        rows = pr.explain_rows(inp, await read_fleet(ctx), wide or args.output in ("json", "yaml"))
    else:
        tm, reason = await read_traffic_map(ctx, isvc)
        rows = pr.endpoint_rows(inp, tm, reason, now, wide or args.output in ("json", "yaml"))
    if args.output in ("json", "yaml"):
        doc = document(
            KINDS[args.subcommand],
            {"rows": [{"field": f, "value": v} for f, v in rows], "issues": list(inp.issues)},
            collectedAt=rfc3339(now),
            sources=[
                {
                    "kind": "InferenceService",
                    "namespace": inp.namespace,
                    "name": inp.name,
                    "generation": inp.generation,
                }
            ],
            warnings=[],
        )
        return render(doc, args.output)
    return pr.table(rows)
