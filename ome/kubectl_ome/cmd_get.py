"""`kubectl ome get`: OME resources with per-kind columns (`get_columns`), and the merged `models` and
`runtimes` views (the namespaced kind first, then the cluster-scoped one, with a SCOPE column).

An API error names the operation, the resource and the object or namespace, then the reason:
`get inferenceservices team-a/missing: NotFound`, `list clusterbasemodels: Forbidden`.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from ome.api import resources
from ome.api.resources import Resource
from ome.framework import errors
from ome.kubectl_ome import get_columns
from ome.kubectl_ome.context import Ctx
from ome.kubectl_ome.failures import CliError
from ome.kubectl_ome.output import render
from ome.kubectl_ome.parsing import add_command, add_output
from ome.kubectl_ome.table import format_table

Obj = dict[str, Any]

# RESOURCE -> (resources, aliases). Merged views list the namespaced kind first.
KINDS: Final[dict[str, tuple[tuple[Resource, ...], tuple[str, ...]]]] = {
    "inferenceservices": ((resources.INFERENCE_SERVICES,), ("inferenceservice", "isvc", "isvcs")),
    "inferencereplicas": ((resources.INFERENCE_REPLICAS,), ("inferencereplica", "ir")),
    "models": ((resources.BASE_MODELS, resources.CLUSTER_BASE_MODELS), ("model",)),
    "basemodels": ((resources.BASE_MODELS,), ("basemodel", "bm")),
    "clusterbasemodels": ((resources.CLUSTER_BASE_MODELS,), ("clusterbasemodel", "cbm")),
    "runtimes": ((resources.SERVING_RUNTIMES, resources.CLUSTER_SERVING_RUNTIMES), ("runtime",)),
    "servingruntimes": ((resources.SERVING_RUNTIMES,), ("servingruntime", "srt")),
    "clusterservingruntimes": ((resources.CLUSTER_SERVING_RUNTIMES,), ("clusterservingruntime", "csrt")),
    "finetunedweights": ((resources.FINE_TUNED_WEIGHTS,), ("finetunedweight", "ftw")),
    "acceleratorclasses": ((resources.ACCELERATOR_CLASSES,), ("acceleratorclass", "ac")),
    "acceleratorquotas": ((resources.ACCELERATOR_QUOTAS,), ("acceleratorquota", "aq")),
    "benchmarkjobs": ((resources.BENCHMARK_JOBS,), ("benchmarkjob", "bj")),
    "rolloutpolicies": ((resources.ROLLOUT_POLICIES,), ("rolloutpolicy", "rp")),
    "autoscalerpolicies": ((resources.AUTOSCALER_POLICIES,), ("autoscalerpolicy", "ap")),
    "workloadclusters": ((resources.WORKLOAD_CLUSTERS,), ("workloadcluster", "wc")),
    "trafficmaps": ((resources.TRAFFIC_MAPS,), ("trafficmap", "tm", "tmap")),
}


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    p = add_command(
        commands,
        "get",
        help="List OME resources, with merged model and runtime views",
        example="kubectl ome get isvc -n prod",
        parents=parents,
    )
    p.add_argument("resource", metavar="RESOURCE")
    p.add_argument("object_name", metavar="NAME", nargs="?")
    p.add_argument("-A", "--all-namespaces", action="store_true", help="List across all namespaces")
    p.add_argument("-l", "--selector", help="Label selector to filter on")
    add_output(p)
    p.set_defaults(handler=get)


def resolve_kind(text: str) -> str:
    lowered = text.lower()
    for kind, (_, aliases) in KINDS.items():
        if lowered == kind or lowered in aliases:
            return kind
    raise CliError(f'unknown resource "{text}" (valid resources: {", ".join(KINDS)})')


def age(created: Any, now: datetime) -> str:
    try:
        then = datetime.fromisoformat(str(created).replace("Z", "+00:00"))
    except ValueError:
        return "-"
    seconds = int((now - then).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


def get_table(
    kind: str,
    items: Sequence[tuple[Resource, Mapping[str, Any]]],
    now: datetime,
    wide: bool,
    all_namespaces: bool,
) -> str:
    """NAME, [NAMESPACE first with -A], [SCOPE], the kind's columns, AGE, then the Wide columns."""
    merged = len(KINDS[kind][0]) > 1
    namespaced = any(r.namespaced for r in KINDS[kind][0])
    rows: list[list[str]] = []
    headers: list[str] = []
    for res, obj in items:
        meta = obj.get("metadata") or {}
        for cols, wide_cols in get_columns.rows_of(kind, obj):
            shown = cols + [("AGE", age(meta.get("creationTimestamp"), now))] + (wide_cols if wide else [])
            headers = ["NAME", *(["SCOPE"] if merged else []), *(h for h, _ in shown)]
            row = [
                str(meta.get("name")),
                *(["Namespaced" if res.namespaced else "Cluster"] if merged else []),
                *(v for _, v in shown),
            ]
            if all_namespaces and namespaced:
                headers.insert(0, "NAMESPACE")
                row.insert(0, str(meta.get("namespace") or "-"))
            rows.append(row)
    return format_table(headers, rows) if rows else ""


def _reason(exc: errors.ApiError) -> str:
    if isinstance(exc, errors.NotFound):
        return "NotFound"
    if isinstance(exc, errors.Forbidden):
        return "Forbidden"
    if isinstance(exc, errors.Unauthorized):
        return "Unauthorized"
    if isinstance(exc, errors.TransportError | errors.ServerError):
        return "Unavailable"
    return exc.reason or "Unreadable"


def _where(res: Resource, namespace: str | None, name: str | None = None) -> str:
    target = "/".join(p for p in (namespace if res.namespaced else None, name) if p)
    return f"{res.plural} {target}".rstrip()


async def get(ctx: Ctx, args: argparse.Namespace) -> str:
    kind = resolve_kind(args.resource)
    if args.object_name and (args.all_namespaces or args.selector):
        raise CliError("a NAME can't be combined with -A or -l")
    kinds = KINDS[kind][0]
    if args.all_namespaces and not any(r.namespaced for r in kinds):
        ctx.terminal.stderr.write(f"warning: {kind} are cluster-scoped; -A is ignored\n")
    found: list[tuple[Resource, Obj]] = []
    for res in kinds:
        ns = None if not res.namespaced or args.all_namespaces else ctx.namespace
        if args.object_name:
            try:
                found.append((res, await ctx.client.get(res, args.object_name, ns)))
                break
            except errors.NotFound:
                if res is kinds[-1] and not found:
                    raise CliError(f"get {_where(res, ns, args.object_name)}: NotFound") from None
                continue
            except errors.ApiError as exc:
                raise CliError(f"get {_where(res, ns, args.object_name)}: {_reason(exc)}") from None
        try:
            items, _ = await ctx.client.list(res, ns, label_selector=args.selector)
        except errors.NotFound:
            raise CliError(f"list {_where(res, ns)}: OMEAPIMissing (install OME first)") from None
        except errors.ApiError as exc:
            raise CliError(f"list {_where(res, ns)}: {_reason(exc)}") from None
        found += [(res, i) for i in items]
    if args.output in ("json", "yaml"):
        if args.object_name:
            return render(found[0][1], args.output)
        # The key order kubectl prints an empty List in.
        return render(
            {"apiVersion": "v1", "items": [o for _, o in found], "kind": "List", "metadata": {}}, args.output
        )
    text = get_table(kind, found, ctx.now(), args.output == "wide", args.all_namespaces)
    if not text:
        if any(r.namespaced for r in kinds) and not args.all_namespaces:
            ctx.terminal.stderr.write(f"No resources found in {ctx.namespace} namespace.\n")
        else:
            ctx.terminal.stderr.write(f"No {kind} found.\n")
    return text
