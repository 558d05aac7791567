"""`kubectl ome runtime`: effective, explain, tree, history, and the alpha guarded `sync`, which sets
`ome.io/runtime-sync` to a new `cli-runtime-sync-<UUID>` token on a managed-pin InferenceService."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ome.api import resources
from ome.framework import errors
from ome.framework.client import Client
from ome.kubectl_ome import effective, explain, explain_context, fetch, guarded, runtime_tree, snapshot
from ome.kubectl_ome.connection import add_ome_namespace
from ome.kubectl_ome.context import PAUSED, RUNTIME_SYNC, Ctx, read_for_action, read_isvc
from ome.kubectl_ome.failures import READ_FAILED, CliError, Conflict, Refused
from ome.kubectl_ome.output import document, render
from ome.kubectl_ome.parsing import add_command, add_group, add_guarded, add_name, add_output
from ome.kubectl_ome.table import format_table
from ome.resolution import runtime_revisions as rr
from ome.resolution.runtime_inheritance import Link

Obj = dict[str, Any]

HISTORY_HEADERS: Final = ("WINDOW", "REVISION", "CREATED", "ROLES", "CHECK", "LIVE", "ISSUES")
LIST_PAGE: Final = 500
SYNC_STALE: Final = "runtime sync safety snapshot changed; refresh runtime effective and retry explicitly"


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    sub = add_group(
        commands,
        "runtime",
        help="The runtime behind an InferenceService",
        example="kubectl ome runtime effective llama-chat -n team-a",
    )
    p = add_command(
        sub,
        "explain",
        help="Which runtimes match a model, and why",
        example="kubectl ome runtime explain --model llama-3-8b -n team-a",
        parents=parents,
    )
    p.add_argument("--model", help="Explain selection for this BaseModel/ClusterBaseModel")
    p.add_argument("--isvc", help="Explain selection for this InferenceService's model")
    add_ome_namespace(p)
    p.add_argument(
        "--with-effective",
        action="store_true",
        help="Append bounded effective context for --isvc (auto scan: 1,000 items/2 pages)",
    )
    p.set_defaults(handler=runtime_explain)
    p = add_command(
        sub,
        "effective",
        help="The live and active runtime, each component's mode and the pin",
        example="kubectl ome runtime effective llama-chat -n team-a",
        parents=parents,
    )
    add_name(p)
    add_output(p)
    add_ome_namespace(p)
    p.set_defaults(handler=runtime_effective)
    p = add_command(
        sub,
        "tree",
        help="A runtime's inheritance chain and the InferenceServices that name it",
        example="kubectl ome runtime tree vllm-llama -n team-a",
        parents=parents,
    )
    p.add_argument("name", metavar="RUNTIME")
    p.add_argument(
        "--kind", help="Runtime kind: ServingRuntime or ClusterServingRuntime (auto-detected when omitted)"
    )
    p.add_argument(
        "--show-unattributed-users",
        action="store_true",
        help="Show unattributed and defensive duplicate-key evidence separately from runtime users",
    )
    add_output(p)
    p.set_defaults(handler=runtime_tree_cmd)
    p = add_command(
        sub,
        "history",
        help="The runtime revisions OME kept for an InferenceService's runtime",
        example="kubectl ome runtime history llama-chat -n team-a",
        parents=parents,
    )
    add_name(p)
    add_output(p)
    add_ome_namespace(p)
    p.set_defaults(handler=runtime_history)
    p = add_command(
        sub,
        "sync",
        help="Alpha. Move a pinned service to the runtime's current spec",
        example="kubectl ome runtime sync llama-chat -n team-a --dry-run client",
        parents=parents,
    )
    add_name(p)
    add_guarded(p)
    p.set_defaults(handler=runtime_sync)


async def collect_effective(
    client: Client, isvc: Obj, ome_namespace: str
) -> tuple[fetch.LiveRuntime, effective.Effective]:
    """The Live runtime (selected when spec.runtime names none, merged with its parents) and the
    `runtime effective` report over it and the revisions the service names in `ome_namespace`."""
    live = await fetch.read_live_runtime(client, isvc)
    ref = (isvc.get("spec") or {}).get("runtime") or {}
    revisions: dict[str, Obj | str] = {}
    for name in {ref.get("revision"), (isvc.get("status") or {}).get(rr.PINNED_FIELD)} - {None, ""}:
        try:
            revisions[str(name)] = await client.get(resources.CONTROLLER_REVISIONS, str(name), ome_namespace)
        except (errors.ApiError, TimeoutError) as exc:
            reason = snapshot.failure_reason(exc)
            revisions[str(name)] = {"TimedOut": "Unreadable"}.get(reason, reason)
    report = effective.build(
        isvc, live.read, revisions, inheritance_issue=live.inheritance_failed, chain=live.chain
    )
    return live, report


async def runtime_effective(ctx: Ctx, args: argparse.Namespace) -> str:
    if not snapshot.valid_name(args.name):
        raise CliError(f'InferenceService name "{args.name}" is invalid: must be a DNS-1123 subdomain')
    try:
        isvc = await ctx.client.get(resources.INFERENCE_SERVICES, args.name, ctx.namespace)
    except errors.NotFound:
        raise CliError(f'get InferenceService: inferenceservices.ome.io "{args.name}" not found') from None
    except errors.ApiError as exc:
        raise CliError(f"get InferenceService: {exc.message or exc}") from None
    _, report = await collect_effective(ctx.client, isvc, args.ome_namespace)
    if args.output in ("json", "yaml"):
        return render(effective.effective_document(isvc, report), args.output)
    if args.output == "wide":
        return effective.format_wide(report)
    return effective.format_effective(effective.effective_rows(report))


async def _effective_context(ctx: Ctx, isvc: Obj, ome_namespace: str) -> list[tuple[str, str, str]]:
    """The explain command's effective context; any failure to collect it leaves only its two rows
    (never the error, whose text may carry credentials). An interrupt is no failure: it propagates."""
    try:
        live, report = await collect_effective(ctx.client, isvc, ome_namespace)
    except Exception:  # noqa: BLE001 - documented: the context degrades, the command still succeeds
        return explain_context.unavailable_rows()
    return explain_context.context_rows(live, report)


async def runtime_explain(ctx: Ctx, args: argparse.Namespace) -> str:
    client, namespace = ctx.client, ctx.namespace
    if bool(args.model) == bool(args.isvc):
        raise CliError("exactly one of --model or --isvc is required")
    if args.with_effective and not args.isvc:
        raise CliError(explain_context.REQUIRES_ISVC)
    isvc: Obj | None = None
    model_name = args.model
    if args.isvc:
        isvc = await read_isvc(client, args.isvc, namespace)
        model_name = ((isvc.get("spec") or {}).get("model") or {}).get("name")
        if not model_name:
            raise CliError(f'InferenceService "{args.isvc}" has no spec.model; pass --model instead')
        if ((isvc.get("spec") or {}).get("runtime") or {}).get("name"):
            print(explain.EXPLICIT_NOTE, file=ctx.terminal.stderr)
    try:
        model = await client.get(resources.BASE_MODELS, model_name, namespace)
    except errors.NotFound:
        model = await client.get(resources.CLUSTER_BASE_MODELS, model_name)
    (local, _), (cluster, _) = await asyncio.gather(
        client.list(resources.SERVING_RUNTIMES, namespace), client.list(resources.CLUSTER_SERVING_RUNTIMES)
    )
    if len(local) + len(cluster) > explain.COLLECTION_LIMIT:
        raise CliError("runtime candidate snapshot exceeds the CLI collection limit")
    table = ""
    if not local and not cluster:
        no_runtimes = explain_context.NO_RUNTIMES if args.with_effective else explain.NO_RUNTIMES
        print(no_runtimes, file=ctx.terminal.stderr)
    else:
        table = explain.format_explain(explain.explain(local, cluster, model, isvc))
    if not args.with_effective or isvc is None:
        return table
    rows = await _effective_context(ctx, isvc, args.ome_namespace)
    return explain_context.append_context(table, rows)


# --- tree ---------------------------------------------------------------------------------------


async def _runtime_list(ctx: Ctx, res: Any, namespace: str | None) -> snapshot.PagedRead:
    return await snapshot.paged_list(
        ctx.client, res, namespace, page_size=LIST_PAGE, page_limit=2, request_limit=2, keep=2 * LIST_PAGE
    )


def _collection(kind: str, scope: str, read: snapshot.PagedRead) -> runtime_tree.Collection:
    status = "Unavailable" if read.failure else "Truncated" if read.truncated else "Complete"
    return runtime_tree.Collection(kind, scope, status, read.pages, len(read.items))


async def runtime_tree_cmd(ctx: Ctx, args: argparse.Namespace) -> str:
    if args.kind not in (None, "ServingRuntime", "ClusterServingRuntime"):
        raise CliError(
            f'unsupported runtime kind "{args.kind}" (supported: ServingRuntime, ClusterServingRuntime)'
        )
    if not snapshot.valid_name(args.name):
        raise CliError(f'runtime name "{args.name}" is invalid: must be a DNS-1123 subdomain')
    found: list[tuple[str, Obj]] = []
    for kind, res in (
        ("ServingRuntime", resources.SERVING_RUNTIMES),
        ("ClusterServingRuntime", resources.CLUSTER_SERVING_RUNTIMES),
    ):
        if args.kind in (None, kind):
            try:
                found.append(
                    (kind, await ctx.client.get(res, args.name, ctx.namespace if res.namespaced else None))
                )
            except errors.NotFound:
                pass
    if not found:
        raise CliError(f'project runtime inheritance tree: runtime target was not found: "{args.name}"')
    if len(found) > 1:
        raise CliError(
            f'runtime "{args.name}" is ambiguous; pass --kind ServingRuntime or --kind '
            f'ClusterServingRuntime: runtime target is ambiguous: "{args.name}" matched 2 runtimes'
        )
    kind, target = found[0]
    scope_ns = ctx.namespace if kind == "ServingRuntime" else None
    ns_scope = f"Namespace/{ctx.namespace}" if scope_ns else "AllNamespaces"
    cluster = await _runtime_list(ctx, resources.CLUSTER_SERVING_RUNTIMES, None)
    local = await _runtime_list(ctx, resources.SERVING_RUNTIMES, scope_ns)
    users = await _runtime_list(ctx, resources.INFERENCE_SERVICES, scope_ns)
    collections = [
        _collection("ClusterServingRuntime", "Cluster", cluster),
        _collection("ServingRuntime", ns_scope, local),
        _collection("InferenceService", ns_scope, users),
    ]
    for collection in collections[:2]:
        if collection.status != "Complete":
            raise CliError(
                f"runtime tree requires complete runtime evidence: {collection.kind} collection is "
                f"{collection.status.lower()} (pages={collection.pages} items={collection.items}); "
                "restore list access or narrow the runtime scope, then retry"
            )
    complete = collections[2].status == "Complete"
    tree = runtime_tree.build(Link(kind, target), cluster.items, local.items, users.items)
    if args.output in ("json", "yaml"):
        return render(
            document(
                "RuntimeTreeReport",
                runtime_tree.document_content(tree, collections, complete),
                warnings=[] if complete else ["PartialData", "SourceUnavailable"],
            ),
            args.output,
        )
    text = runtime_tree.lines(
        tree,
        collections,
        complete,
        show_unattributed=args.show_unattributed_users,
        wrap=args.output != "wide",
    )
    return "\n".join(text) + "\n"


# --- history ------------------------------------------------------------------------------------


def short_revision(name: str) -> str:
    if len(name) <= 14:
        return name
    return f"{name[:2]}...#{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def history_rows(
    isvc: Mapping[str, Any], revisions: Sequence[Mapping[str, Any]], live_hash: str | None, window: str
) -> list[list[str]]:
    spec_ref = (isvc.get("spec") or {}).get("runtime") or {}
    pinned = (isvc.get("status") or {}).get("pinnedRevisionName")
    ordered = sorted(
        revisions, key=lambda r: str((r.get("metadata") or {}).get("creationTimestamp")), reverse=True
    )
    rows = []
    for rev in ordered:
        meta = rev.get("metadata") or {}
        name = str(meta.get("name"))
        labels = meta.get("labels") or {}
        rev_hash = labels.get(rr.REVISION_HASH_LABEL)
        roles = (
            ("A" if name == (spec_ref.get("revision") or pinned) else "")
            + ("Q" if name == spec_ref.get("revision") else "")
            + ("R" if name == pinned else "")
            + "H"
        )
        check = "OK" if rev_hash and name.endswith(str(rev_hash)) else "BAD"
        live = "?" if not live_hash or not rev_hash else ("MATCH" if rev_hash == live_hash else "DIFF")
        created = str(meta.get("creationTimestamp") or "")
        rows.append(
            [
                window,
                short_revision(name),
                f"{created[2:16]}Z" if len(created) >= 16 else "-",
                roles,
                check,
                live,
                f"R{0 if check == 'OK' else 1}/G0",
            ]
        )
    return rows or [[window, "-", "-", "-", "-", "-", "R0/G0"]]


async def runtime_history(ctx: Ctx, args: argparse.Namespace) -> str:
    isvc = await read_isvc(ctx.client, args.name, ctx.namespace)
    runtime = await fetch.read_runtime(ctx.client, isvc)
    name = (runtime.ref or "").rsplit("/", 1)[-1]
    revisions: list[Obj] = []
    window = "U/I/0/1"
    if name:
        try:
            revisions, _ = await ctx.client.list(
                resources.CONTROLLER_REVISIONS,
                args.ome_namespace,
                label_selector={rr.RUNTIME_OF_LABEL: name},
                limit=LIST_PAGE,
            )
            window = "C/B/1/1"
        except errors.ApiError:
            window = "U/I/0/1"
    live_hash = rr.spec_hash(runtime.obj.get("spec")) if runtime.obj else None
    rows = history_rows(isvc, revisions, live_hash, window)
    if args.output in ("json", "yaml"):
        content = {
            "runtime": runtime.ref,
            "liveHash": live_hash,
            "revisions": [dict(zip([h.lower() for h in HISTORY_HEADERS], r, strict=True)) for r in rows],
        }
        return render(
            document(
                "RuntimeHistoryReport", content, metadata={"name": args.name, "namespace": ctx.namespace}
            ),
            args.output,
        )
    return format_table(HISTORY_HEADERS, rows)


# --- sync ---------------------------------------------------------------------------------------


drift_state = effective.drift_state
sync_state = effective.sync_state


async def runtime_sync(ctx: Ctx, args: argparse.Namespace) -> str:
    async def snapshot() -> tuple[Obj, Obj, Obj]:
        isvc = await read_for_action(ctx.client, args.name, ctx.namespace)
        runtime = await fetch.read_runtime(ctx.client, isvc)
        pinned = (isvc.get("status") or {}).get(rr.PINNED_FIELD)
        if runtime.obj is None or not pinned:
            raise Refused("runtime sync requires a resolved managed pin")
        try:
            revision = await ctx.client.get(resources.CONTROLLER_REVISIONS, str(pinned), args.ome_namespace)
        except errors.ApiError:
            raise CliError(READ_FAILED) from None
        return isvc, dict(runtime.obj), revision

    async def prepare() -> guarded.Action:
        isvc, runtime, revision = await snapshot()
        target = guarded.check_service(isvc)
        if effective.pin_mode(isvc) != "ManagedPin":
            raise Refused("runtime sync requires a resolved managed pin")
        drift, cause = drift_state(isvc)
        current = str(
            ((revision.get("metadata") or {}).get("labels") or {}).get(rr.REVISION_HASH_LABEL) or ""
        )
        live_hash = rr.spec_hash(runtime.get("spec"))
        if drift != "ReportedTrue" or cause != rr.REVISION_MISMATCH or live_hash == current:
            raise Refused(
                "runtime sync requires reported RevisionMismatch drift and a different live runtime"
            )
        state = sync_state(isvc)
        if state == "Pending":
            raise Refused("a runtime sync request is already pending")
        request_id = str(uuid.uuid4())
        token = f"cli-runtime-sync-{request_id}"
        ops = []
        old = ((isvc.get("metadata") or {}).get("annotations") or {}).get(RUNTIME_SYNC)
        if old is not None:
            ops.append({"op": "test", "path": guarded.annotation_path(RUNTIME_SYNC), "value": old})
        ops += guarded.set_annotation(isvc, RUNTIME_SYNC, token)
        depth = ((isvc.get("metadata") or {}).get("annotations") or {}).get(PAUSED)
        first = (isvc, runtime, revision)

        async def revalidate() -> None:
            try:
                again = await snapshot()
            except CliError:
                raise Conflict(SYNC_STALE) from None
            versions = [(o.get("metadata") or {}).get("resourceVersion") for o in again]
            if versions != [(o.get("metadata") or {}).get("resourceVersion") for o in first]:
                raise Conflict(SYNC_STALE)

        kind, ns = rr.source_kind(isvc), rr.source_namespace(isvc)
        return guarded.Action(
            name="runtime sync",
            resource=resources.INFERENCE_SERVICES,
            target=target,
            operations=ops,
            follow_up=guarded.follow_up("runtime effective", args.name, ctx.namespace, ctx.context)
            + f" --ome-namespace={args.ome_namespace}",
            preview=[
                ("Generation", str((isvc.get("metadata") or {}).get("generation"))),
                ("Freshness", "Unverifiable (advisory global status)"),
                ("Pinned revision", str((revision.get("metadata") or {}).get("name"))),
                ("Runtime", f"{kind}/{ns}/{(runtime.get('metadata') or {}).get('name')}"),
                ("Current hash", current),
                ("Target hash", live_hash),
                (
                    "Target revision",
                    rr.revision_name(kind, ns, str((runtime.get("metadata") or {}).get("name")), live_hash),
                ),
                ("Pause state", {"true": "Paused", "freeze": "Freeze"}.get(str(depth), "Not recognized")),
                ("Old sync token", state),
                ("Set annotation", RUNTIME_SYNC),
                ("Value", f'"{token}"'),
            ],
            warnings=[
                "The token asks for the live spec when the controller uses it, not the spec shown here."
            ],
            preview_title="ALPHA runtime sync preview (acceptance is not convergence)",
            request_id=request_id,
            revision_hash=live_hash,
            applied_message="API accepted annotation request; consumption and convergence not observed.",
            conflict_message="guarded annotation patch rejected; "
            "refresh runtime effective and retry explicitly",
            unknown_message="runtime sync request outcome unknown; check runtime effective; do not replay",
            revalidate=revalidate,
        )

    guarded.check_flags(args.dry_run, args.output)
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
