"""`kubectl ome status`: the reads behind the report (the InferenceService, its pods, the Warning
events of both, its runtime), bounded as documented: events of at most 15 pods (not Ready or being
deleted first), 25 per object and 100 in all."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

from ome.framework import errors
from ome.framework.client import Client
from ome.framework.resources import EVENTS, PODS
from ome.kubectl_ome import fetch, status_report
from ome.kubectl_ome.connection import add_ome_namespace
from ome.kubectl_ome.context import Ctx, read_isvc
from ome.kubectl_ome.output import field_table, render
from ome.kubectl_ome.parsing import OUTPUTS_ALL, add_command, add_name, add_output
from ome.kubectl_ome.status_report import Observation
from ome.omenative.instance_names import ISVC_LABEL

Obj = dict[str, Any]


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    parser = add_command(
        commands,
        "status",
        help="Why an InferenceService is or isn't ready, in one report",
        example="kubectl ome status qwen2-5-7b -n demo -o wide",
        parents=parents,
    )
    add_name(parser)
    add_output(parser, OUTPUTS_ALL)
    add_ome_namespace(parser)
    parser.set_defaults(handler=service_status)


def read_failure(exc: errors.ApiError) -> str:
    if isinstance(exc, errors.Forbidden):
        return "Forbidden"
    if isinstance(exc, errors.Unauthorized):
        return "Unauthorized"
    if isinstance(exc, errors.NotFound):
        return "NotFound"
    if isinstance(exc, errors.ServerTimeout):
        return "Timeout"
    if isinstance(exc, errors.TooManyRequests | errors.ServerError | errors.TransportError):
        return "Unavailable"
    return "Unreadable"


def _pod_ready(pod: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def event_targets(
    pods: Sequence[Mapping[str, Any]], limit: int = status_report.MAX_EVENT_PODS
) -> tuple[list[str], int]:
    """The pods whose events the report reads: those not Ready or being deleted first."""

    def rank(pod: Mapping[str, Any]) -> tuple[bool, str]:
        meta = pod.get("metadata") or {}
        troubled = bool(meta.get("deletionTimestamp")) or not _pod_ready(pod)
        return (not troubled, str(meta.get("name")))

    ordered = sorted(pods, key=rank)
    names = [str((p.get("metadata") or {}).get("name")) for p in ordered]
    return names[:limit], max(len(names) - limit, 0)


def select_events(
    events: Sequence[Mapping[str, Any]], isvc: str, pods: Sequence[str]
) -> tuple[list[Mapping[str, Any]], bool]:
    """Warning events of the service and the chosen pods, newest first, 25 per object and 100 in all."""
    targets = {("InferenceService", isvc), *(("Pod", p) for p in pods)}
    kept = fetch.warning_events(events, targets, limit=len(events))
    per_object: dict[tuple[str, str], int] = {}
    out: list[Mapping[str, Any]] = []
    truncated = False
    for event in kept:
        involved = event.get("involvedObject") or {}
        key = (str(involved.get("kind")), str(involved.get("name")))
        per_object[key] = per_object.get(key, 0) + 1
        if per_object[key] > status_report.MAX_EVENTS_PER_OBJECT or len(out) >= status_report.MAX_EVENTS:
            truncated = True
            continue
        out.append(event)
    return out, truncated


async def read_pods(client: Client, namespace: str, name: str) -> tuple[list[Obj], Observation]:
    try:
        items, _ = await client.list(PODS, namespace, label_selector={ISVC_LABEL: name})
    except errors.ApiError as exc:
        return [], Observation("Unavailable", 0, True, read_failure(exc))
    return list(items), Observation("Reported", len(items), False)


async def service_status(ctx: Ctx, args: argparse.Namespace) -> str:
    isvc = await read_isvc(
        ctx.client, args.name, ctx.namespace, missing="status InferenceService was not found"
    )
    runtime = await fetch.read_runtime(ctx.client, isvc)
    pods, pod_observation = await read_pods(ctx.client, ctx.namespace, args.name)
    targets, skipped = event_targets(pods)
    try:
        items, _ = await ctx.client.list(EVENTS, ctx.namespace, field_selector="type=Warning")
        events, truncated = select_events(items, args.name, targets)
        partial = truncated or skipped > 0
        event_observation = Observation("Partial" if partial else "Reported", len(events), partial)
    except errors.ApiError as exc:
        events, event_observation = [], Observation("Unavailable", 0, True, read_failure(exc))
    inputs = status_report.StatusInputs(
        isvc=isvc,
        runtime=runtime,
        pods=pods,
        pod_observation=pod_observation,
        events=events,
        event_observation=event_observation,
        collected_at=ctx.now(),
        event_targets_skipped=skipped,
    )
    if args.output in ("json", "yaml"):
        return render(status_report.status_document(inputs), args.output)
    rows = status_report.status_rows(inputs, wide=args.output == "wide")
    if args.output == "wide":
        return field_table(rows)
    return status_report.format_status(rows)
