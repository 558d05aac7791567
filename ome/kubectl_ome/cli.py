"""`kubectl-ome`: the OME kubectl plugin (`kubectl ome ...` runs it).

    kubectl ome instance list INFERENCESERVICE [-n NS] [-o table|json|yaml]
    kubectl ome status INFERENCESERVICE [-n NS] [-o table|wide|json|yaml]
    kubectl ome runtime effective INFERENCESERVICE [-n NS] [-o table|json|yaml]
    kubectl ome runtime explain (--model NAME | --isvc NAME) [-n NS]

Global flags as kubectl's: --kubeconfig, --context, -n/--namespace (default: the context's namespace,
else "default"). Errors print one line, `error: <message>`, to stderr and exit 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import yaml

from ome.framework import errors, resources
from ome.framework.client import Client
from ome.framework.transport import ClientSettings, RetryPolicy
from ome.kubectl_ome import effective, explain, fetch, instances, status_report
from ome.kubectl_ome.table import format_table

Obj = dict[str, Any]

TIMEOUT: Final = 30.0
"""Seconds for a whole command."""
USER_AGENT: Final = "kubectl-ome/0.1"


class CliError(Exception):
    """A failure the CLI explains in one line."""


def _global_flags() -> argparse.ArgumentParser:
    """The kubectl connection flags; SUPPRESS defaults so they can appear before or after the command."""
    flags = argparse.ArgumentParser(add_help=False)
    sup = argparse.SUPPRESS
    flags.add_argument("--kubeconfig", default=sup, help="Path to the kubeconfig file")
    flags.add_argument("--context", default=sup, help="The kubeconfig context to use")
    flags.add_argument("-n", "--namespace", default=sup, help="The namespace (default: the context's)")
    return flags


def build_parser() -> argparse.ArgumentParser:
    flags = _global_flags()
    parser = argparse.ArgumentParser(prog="kubectl-ome", description="OME kubectl plugin", parents=[flags])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    instance = commands.add_parser("instance", help="OMENative Instances of an InferenceService")
    instance_cmds = instance.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")
    listing = instance_cmds.add_parser("list", parents=[flags], help="List the Instances")
    listing.add_argument("name", metavar="INFERENCESERVICE")
    listing.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")

    status = commands.add_parser("status", parents=[flags], help="Why an InferenceService is or isn't ready")
    status.add_argument("name", metavar="INFERENCESERVICE")
    status.add_argument("-o", "--output", choices=("table", "wide", "json", "yaml"), default="table")

    runtime = commands.add_parser("runtime", help="The runtime behind an InferenceService")
    runtime_cmds = runtime.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")
    why = runtime_cmds.add_parser("explain", parents=[flags], help="Which runtimes OME can choose, and why")
    why.add_argument("--model", help="explain selection for this BaseModel/ClusterBaseModel")
    why.add_argument("--isvc", help="explain selection for this InferenceService's model")
    eff = runtime_cmds.add_parser("effective", parents=[flags], help="Each component's mode and its rule")
    eff.add_argument("name", metavar="INFERENCESERVICE")
    eff.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    return parser


def kubeconfig_path(flag: str | None) -> str:
    """The flag, else the first file in $KUBECONFIG, else ~/.kube/config."""
    if flag:
        return flag
    env = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    return env[0] if env else os.path.expanduser("~/.kube/config")


def context_namespace(config: Mapping[str, Any], context: str | None) -> str:
    """The namespace of `context` (else the current context) in a kubeconfig, else "default"."""
    name = context or config.get("current-context")
    for entry in config.get("contexts") or []:
        if entry.get("name") == name:
            return str((entry.get("context") or {}).get("namespace") or "default")
    return "default"


def resolve_namespace(flag: str | None, path: str, context: str | None) -> str:
    if flag:
        return flag
    try:
        config = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError):
        return "default"
    return context_namespace(config if isinstance(config, dict) else {}, context)


def render(document: Obj, output: str) -> str:
    if output == "json":
        return json.dumps(document, indent=2, default=str) + "\n"
    return str(yaml.safe_dump(document, sort_keys=False, default_flow_style=False))


async def _connect(path: str, context: str | None) -> Client:
    if not Path(path).exists():
        raise CliError(f"kubeconfig {path} does not exist")
    try:
        return await Client.from_kubeconfig(
            path, context=context, settings=ClientSettings(user_agent=USER_AGENT, max_retries=2)
        )
    except Exception as exc:  # the kubeconfig loader raises its own types, or ValueError/KeyError
        raise CliError(f"cannot load kubeconfig {path}: {exc}") from exc


async def _get_isvc(client: Client, name: str, namespace: str) -> Obj:
    try:
        return await fetch.read_isvc(client, name, namespace)
    except errors.NotFound:
        raise CliError(f'InferenceService "{name}" not found in namespace "{namespace}"') from None


async def instance_list(client: Client, name: str, namespace: str, output: str) -> str:
    isvc = await _get_isvc(client, name, namespace)
    found = await fetch.read_replicas(client, isvc)
    _warn(found.warnings)
    reads = instances.component_order(found.reads)
    reports = [instances.component_report(r) for r in reads]
    if output != "table":
        return render(instances.report_document(name, namespace, reports, found.summary), output)
    return instances.format_instances(instances.instance_lines(reports, found.summary))


async def runtime_effective(client: Client, name: str, namespace: str, output: str) -> str:
    isvc = await _get_isvc(client, name, namespace)
    runtime = await fetch.read_runtime(client, isvc)
    if output != "table":
        return render(effective.effective_document(isvc, runtime), output)
    return effective.format_effective(effective.effective_rows(isvc, runtime))


async def runtime_explain(client: Client, args: argparse.Namespace, namespace: str) -> str:
    if bool(args.model) == bool(args.isvc):
        raise CliError("exactly one of --model or --isvc is required")
    isvc: Obj | None = None
    model_name = args.model
    if args.isvc:
        isvc = await _get_isvc(client, args.isvc, namespace)
        model_name = ((isvc.get("spec") or {}).get("model") or {}).get("name")
        if not model_name:
            raise CliError(f'InferenceService "{args.isvc}" has no spec.model; pass --model instead')
        if ((isvc.get("spec") or {}).get("runtime") or {}).get("name"):
            print(explain.EXPLICIT_NOTE, file=sys.stderr)
    try:
        model = await client.get(resources.BASE_MODELS, model_name, namespace)
    except errors.NotFound:
        model = await client.get(resources.CLUSTER_BASE_MODELS, model_name)  # NotFound: the API's message
    (local, _), (cluster, _) = await asyncio.gather(
        client.list(resources.SERVING_RUNTIMES, namespace), client.list(resources.CLUSTER_SERVING_RUNTIMES)
    )
    if len(local) + len(cluster) > explain.COLLECTION_LIMIT:
        raise CliError("runtime candidate snapshot exceeds the CLI collection limit")
    if not local and not cluster:
        print(explain.NO_RUNTIMES, file=sys.stderr)
        return ""
    return explain.format_explain(explain.explain(local, cluster, model, isvc))


async def service_status(client: Client, name: str, namespace: str, output: str) -> str:
    isvc = await _get_isvc(client, name, namespace)
    runtime, found, pods = await asyncio.gather(
        fetch.read_runtime(client, isvc),
        fetch.read_replicas(client, isvc),
        fetch.read_pod_names(client, namespace, name),
    )
    pod_names, pod_problem = pods
    issues = [*found.warnings, *([pod_problem] if pod_problem else [])]
    reads = instances.component_order(found.reads)
    targets = {("InferenceService", name)}
    targets |= {("InferenceReplica", r.name) for r in reads}
    targets |= {("Pod", p) for p in pod_names}
    events, event_problem = await fetch.read_events(client, namespace, targets)
    if event_problem:
        issues.append(event_problem)
    inputs = status_report.StatusInputs(
        isvc=isvc,
        modes=effective.component_modes(isvc, runtime.obj),
        runtime=runtime,
        replicas=[instances.component_report(r) for r in reads],
        replica_objects={r.name: r.replica for r in reads if r.replica is not None},
        events=events,
        issues=[*found.summary, *issues],
    )
    if output in ("json", "yaml"):
        return render(status_report.status_document(inputs), output)
    rows = status_report.status_rows(inputs)
    if output == "wide":
        return format_table(("FIELD", "VALUE"), rows)
    return status_report.format_status(rows)


def _warn(lines: Sequence[str]) -> None:
    for line in lines:
        print(f"warning: {line}", file=sys.stderr)


async def run(args: argparse.Namespace) -> str:
    path = kubeconfig_path(getattr(args, "kubeconfig", None))
    context = getattr(args, "context", None)
    namespace = resolve_namespace(getattr(args, "namespace", None), path, context)
    command = (args.command, getattr(args, "subcommand", None))
    handlers = {
        ("instance", "list"): instance_list,
        ("status", None): service_status,
        ("runtime", "effective"): runtime_effective,
    }
    client = await _connect(path, context)
    try:
        if command == ("runtime", "explain"):
            return await asyncio.wait_for(runtime_explain(client, args, namespace), TIMEOUT)
        return await asyncio.wait_for(handlers[command](client, args.name, namespace, args.output), TIMEOUT)
    finally:
        await client.close()


def describe(exc: BaseException) -> str:
    """One line for any failure; never a traceback."""
    if isinstance(exc, CliError):
        return str(exc)
    if isinstance(exc, errors.Forbidden | errors.Unauthorized):
        return f"{exc.reason.lower() or 'forbidden'}: {exc.message}"
    if isinstance(exc, errors.TransportError):
        return f"cannot reach the API server: {exc.message or exc}"
    if isinstance(exc, errors.ApiError):
        return f"API request failed: {exc}"
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return f"read was cancelled or timed out (limit {TIMEOUT:.0f}s)"
    return f"{type(exc).__name__}: {exc}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse printed usage or help; bad usage exits 1, as kubectl-ome does
        return 0 if exc.code in (0, None) else 1
    try:
        out = asyncio.run(run(args))
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 1
    except Exception as exc:
        print(f"error: {describe(exc)}", file=sys.stderr)
        return 1
    try:
        sys.stdout.write(out)
        sys.stdout.flush()
    except BrokenPipeError:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
