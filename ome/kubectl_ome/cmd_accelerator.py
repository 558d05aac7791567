"""`kubectl ome accelerator explain`: reads the InferenceService, the runtime in force (or its pinned
ControllerRevision in the OME namespace) and prints `accelerator_report`'s report."""

from __future__ import annotations

import argparse
from typing import Any

from ome.api.resources import CONTROLLER_REVISIONS, INFERENCE_SERVICES
from ome.framework import errors
from ome.kubectl_ome import accelerator_report as ar
from ome.kubectl_ome import fetch, snapshot
from ome.kubectl_ome.connection import add_ome_namespace
from ome.kubectl_ome.context import Ctx
from ome.kubectl_ome.failures import CliError
from ome.kubectl_ome.output import render
from ome.kubectl_ome.parsing import add_command, add_group, add_name, add_output
from ome.resolution import modes
from ome.resolution import runtime_revisions as rr

Obj = dict[str, Any]


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    sub = add_group(
        commands,
        "accelerator",
        help="The accelerator class or policy an InferenceService asks for",
        example="kubectl ome accelerator explain llama-3-3-70b-instruct -n llama-demo",
    )
    p = add_command(
        sub,
        "explain",
        help="Each component's class or policy, and its base requests",
        example="kubectl ome accelerator explain llama-3-3-70b-instruct -n llama-demo -o wide",
        parents=parents,
    )
    add_name(p)
    add_output(p)
    add_ome_namespace(p)
    p.set_defaults(handler=accelerator_explain)


async def accelerator_explain(ctx: Ctx, args: argparse.Namespace) -> str:
    if not snapshot.valid_name(args.name):
        raise CliError(f'invalid InferenceService name "{args.name}"')
    where = f'read InferenceService "{ctx.namespace}/{args.name}": '
    try:
        isvc = await ctx.client.get(INFERENCE_SERVICES, args.name, ctx.namespace)
    except errors.NotFound:
        raise CliError(where + "not found") from None
    except (errors.ApiError, TimeoutError) as exc:
        raise CliError(where + snapshot.failure_reason(exc)) from None
    meta = isvc.get("metadata") or {}
    sources = [
        ar.Source(
            "InferenceService", f"{meta.get('namespace')}/{meta.get('name')}", str(meta.get("generation"))
        )
    ]
    runtime_spec: Obj | None = None
    unavailable: str | None = None
    runtime = await fetch.read_runtime(ctx.client, isvc)
    if modes.is_virtual(isvc) or runtime.obj is None:
        unavailable = ar.UNAVAILABLE_CONFIG
    else:
        rmeta = runtime.obj.get("metadata") or {}
        kind = str(
            runtime.obj.get("kind")
            or ("ServingRuntime" if str(runtime.ref).startswith("SR/") else "ClusterServingRuntime")
        )
        name = (
            f"{rmeta.get('namespace')}/{rmeta.get('name')}"
            if kind == "ServingRuntime"
            else str(rmeta.get("name"))
        )
        sources.append(ar.Source(kind, name, str(rmeta.get("generation") or "-")))
        runtime_spec = dict(runtime.obj.get("spec") or {})
        pinned = (isvc.get("status") or {}).get(rr.PINNED_FIELD)
        if pinned:
            try:
                revision = await ctx.client.get(CONTROLLER_REVISIONS, str(pinned), args.ome_namespace)
            except (errors.ApiError, TimeoutError):
                runtime_spec, unavailable = None, ar.UNAVAILABLE_CONFIG
            else:
                sources.append(ar.Source("ControllerRevision", f"{args.ome_namespace}/{pinned}", "-"))
                runtime_spec = dict(rr.revision_spec(revision))
    report = ar.build(isvc, runtime_spec, sources, unavailable, ctx.now())
    if args.output in ("json", "yaml"):
        return render(ar.report_document(report), args.output)
    return ar.wide(report) if args.output == "wide" else ar.table(report)
