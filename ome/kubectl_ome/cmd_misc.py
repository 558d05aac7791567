"""`kubectl ome logs` and `version`."""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, Final

import aiohttp

from ome.api.resources import DEPLOYMENTS, PODS
from ome.framework import errors
from ome.framework.client import Client
from ome.kubectl_ome.connection import add_ome_namespace
from ome.kubectl_ome.context import Ctx
from ome.kubectl_ome.failures import CliError
from ome.kubectl_ome.parsing import add_command
from ome.kubectl_ome.table import format_table
from ome.omenative.instance_names import (
    INSTANCE_INDEX_LABEL,
    ISVC_LABEL,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    REVISION_HASH_LABEL,
)
from ome.resolution.modes import COMPONENTS

Obj = dict[str, Any]

MANAGER_DEPLOYMENT: Final = "ome-controller-manager"
MAIN_CONTAINER: Final = "ome-container"
MAX_PODS: Final = 200

def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    p = add_command(
        commands,
        "logs",
        help="Print the logs of the pods behind an InferenceService",
        example="kubectl ome logs chat -n prod -c engine --instance 0 --tail 100",
        parents=parents,
    )
    p.add_argument("name", metavar="INFERENCESERVICE")
    p.add_argument("-c", "--component", help="Only this component: engine, decoder or router")
    p.add_argument("--container", help="Container name (default: the OME main container)")
    p.add_argument("-f", "--follow", action="store_true", help="Stream new log lines as they arrive")
    p.add_argument("--instance", type=int, default=-1, help="Only this OMENative instance index")
    p.add_argument("--runner", help="Only the pods of this runner (ome.io/runner), such as leader or worker")
    p.add_argument(
        "--ordinal", type=int, help="Only the pod with this ordinal in its runner (needs --instance)"
    )
    p.add_argument("--limit-bytes", type=int, default=0, help="Maximum bytes of logs per pod (0: no limit)")
    p.add_argument("--max-log-requests", type=int, default=5, help="Maximum concurrent log streams to follow")
    p.add_argument("--revision", help="Only this OMENative revision hash or full ControllerRevision name")
    p.add_argument("--since", default="0", help="Only logs newer than this duration (e.g. 10m)")
    p.add_argument("--tail", type=int, default=-1, help="Lines of recent log per pod (-1 for all)")
    p.set_defaults(handler=logs)
    p = add_command(
        commands,
        "version",
        help="Print the kubectl-ome and OME operator versions",
        example="kubectl ome version --ome-namespace ome-system",
        parents=parents,
    )
    add_ome_namespace(p)
    p.set_defaults(handler=version)


# --- logs ---------------------------------------------------------------------------------------


def log_selector(args: argparse.Namespace) -> dict[str, str]:
    """The labels `--component`, `--instance`, `--revision` and `--runner` add to the service's."""
    if args.component is not None and args.component not in COMPONENTS:
        raise CliError(f'invalid component "{args.component}" (valid: engine, decoder, router)')
    selector = {ISVC_LABEL: args.name}
    component = args.component
    if args.revision:
        prefix = f"{args.name}-"
        if args.revision.startswith(prefix) and args.revision[len(prefix) :].rsplit("-", 1)[0] in COMPONENTS:
            comp, rev_hash = args.revision[len(prefix) :].rsplit("-", 1)
            component = component or comp
        elif component is None:
            raise CliError("hash-only --revision requires --component")
        else:
            rev_hash = args.revision
        selector[MANAGED_BY_LABEL] = MANAGED_BY
        selector[REVISION_HASH_LABEL] = rev_hash
    if args.instance >= 0:
        if component is None:
            raise CliError("--instance requires --component")
        selector[MANAGED_BY_LABEL] = MANAGED_BY
        selector[INSTANCE_INDEX_LABEL] = str(args.instance)
    if args.runner:
        selector["ome.io/runner"] = args.runner
    if component:
        selector["component"] = component
    return selector


def pick_container(pod: Mapping[str, Any], wanted: str | None) -> str:
    containers = [str(c.get("name")) for c in (pod.get("spec") or {}).get("containers") or []]
    name = str((pod.get("metadata") or {}).get("name"))
    if wanted:
        if wanted not in containers:
            raise CliError(f"streaming logs for pod {name}: container {wanted} is not valid for pod {name}")
        return wanted
    if MAIN_CONTAINER in containers:
        return MAIN_CONTAINER
    if len(containers) == 1:
        return containers[0]
    raise CliError(
        f"streaming logs for pod {name}: a container name must be specified for pod {name}, "
        f"choose one of: [{' '.join(containers)}]"
    )


def _log_query(args: argparse.Namespace, container: str, follow: bool) -> list[tuple[str, str]]:
    from ome.kubectl_ome.connection import parse_duration

    query = [("container", container)]
    if follow:
        query.append(("follow", "true"))
    if args.tail >= 0:
        query.append(("tailLines", str(args.tail)))
    since = int(parse_duration(args.since)) if args.since not in ("0", "") else 0
    if since > 0:
        query.append(("sinceSeconds", str(since)))
    if args.limit_bytes > 0:
        query.append(("limitBytes", str(args.limit_bytes)))
    return query


def _transport(client: Client) -> Any:
    # The framework client decodes JSON; pod logs are plain text, read through its transport.
    return client._transport


async def logs(ctx: Ctx, args: argparse.Namespace) -> str:
    if args.limit_bytes and args.follow:
        raise CliError("--limit-bytes cannot be used with --follow")
    selector = log_selector(args)
    try:
        pods, _ = await ctx.client.list(PODS, ctx.namespace, label_selector=selector)
    except errors.ApiError as exc:
        raise CliError(f"discover pods: {exc}") from None
    if len(pods) > MAX_PODS:
        raise CliError(
            "pod discovery was truncated after 1 requests; narrow the query with --component, "
            "--instance, or --revision"
        )
    if args.ordinal is not None:
        if args.instance < 0:
            raise CliError("--ordinal requires --instance")
        pods = [p for p in pods if str((p.get("metadata") or {}).get("name")).endswith(f"-{args.ordinal}")]
    if not pods:
        shown = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
        raise CliError(
            f'no pods found for InferenceService "{args.name}" in namespace "{ctx.namespace}" '
            f"(selector {shown})"
        )
    pods.sort(key=lambda p: str((p.get("metadata") or {}).get("name")))
    prefix = len(pods) > 1
    if args.follow and len(pods) > args.max_log_requests:
        raise CliError(
            f"you are attempting to follow {len(pods)} log streams, but maximum allowed concurrency is "
            f"{args.max_log_requests}, use --max-log-requests to increase the limit"
        )
    transport = _transport(ctx.client)

    def label(pod: Mapping[str, Any]) -> str:
        meta = pod.get("metadata") or {}
        return f"[{(meta.get('labels') or {}).get('component', '-')}/{meta.get('name')}] " if prefix else ""

    if not args.follow:
        for pod in pods:
            name = str((pod.get("metadata") or {}).get("name"))
            if not (pod.get("spec") or {}).get("nodeName"):
                continue
            query = _log_query(args, pick_container(pod, args.container), False)
            try:
                data = await transport.request(
                    "GET", PODS.path(ctx.namespace, name, "log"), query=query, accept="text/plain"
                )
            except errors.ApiError as exc:
                raise CliError(f"streaming logs for pod {name}: {exc.message or exc}") from None
            text = data.decode(errors="replace")
            ctx.stdout.write("".join(label(pod) + line for line in text.splitlines(keepends=True)))
            ctx.stdout.flush()
        return ""

    async def follow(pod: Mapping[str, Any]) -> None:
        name = str((pod.get("metadata") or {}).get("name"))
        if not (pod.get("spec") or {}).get("nodeName"):
            return
        query = _log_query(args, pick_container(pod, args.container), True)
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=10)
        async with transport.stream(
            PODS.path(ctx.namespace, name, "log"), query=query, accept="text/plain", timeout=timeout
        ) as content:
            async for raw in content:
                ctx.stdout.write(label(pod) + raw.decode(errors="replace"))
                ctx.stdout.flush()

    await asyncio.gather(*(follow(p) for p in pods))
    return ""


# --- version ------------------------------------------------------------------------------------


def client_version() -> str:
    try:
        release = importlib.metadata.version("ome-py")
    except importlib.metadata.PackageNotFoundError:
        release = "unknown"
    commit = "unknown"
    here = Path(__file__).resolve().parent
    try:
        done = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        if done.returncode == 0 and done.stdout.strip():
            commit = done.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return f"v{release} (commit {commit})" if release != "unknown" else f"unknown (commit {commit})"


def operator_version(deployment: Mapping[str, Any]) -> str:
    containers = (
        (((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")
    ) or []
    chosen = next((c for c in containers if c.get("name") == "manager"), None)
    if chosen is None and len(containers) == 1:
        chosen = containers[0]
    if chosen is None:
        return "unknown (manager container unavailable)"
    image = str(chosen.get("image") or "")
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.partition(":")[2]
    if tag and digest:
        return f"{tag}@{digest}"
    if tag or digest:
        return tag or digest
    return "unknown (image has no tag or digest)"


_REASONS: Final = (
    (errors.NotFound, "NotFound"),
    (errors.Forbidden, "Forbidden"),
    (errors.Unauthorized, "Unauthorized"),
    (errors.ServerTimeout, "TimedOut"),
    (errors.TooManyRequests, "TooManyRequests"),
    (errors.TransportError, "Unavailable"),
    (errors.ServerError, "ServerError"),
)


async def version(ctx: Ctx, args: argparse.Namespace) -> str:
    try:
        deployment = await ctx.client.get(DEPLOYMENTS, MANAGER_DEPLOYMENT, args.ome_namespace)
        operator = operator_version(deployment)
    except errors.ApiError as exc:
        reason = next((r for t, r in _REASONS if isinstance(exc, t)), "MalformedResponse")
        if isinstance(exc, errors.ServerError) and exc.status == 503:
            reason = "ServiceUnavailable"
        if isinstance(exc, errors.NotFound) and MANAGER_DEPLOYMENT not in exc.message:
            # A 404 that doesn't name the Deployment: a proxy or another server answered.
            operator = "unknown (get deployments.apps: OMEAPIMissing (install OME first))"
        else:
            operator = f"unknown (get deployments.apps {args.ome_namespace}/{MANAGER_DEPLOYMENT}: {reason})"
    return version_text(ctx.stdout, client_version(), operator)


def version_text(stdout: IO[str], client: str, operator: str) -> str:
    """A COMPONENT/VERSION table on a terminal, `Client Version:` and `Operator Version:` lines otherwise."""
    if stdout.isatty():
        return format_table(("COMPONENT", "VERSION"), [("Client", client), ("Operator", operator)])
    return f"Client Version: {client}\nOperator Version: {operator}\n"
