"""`kubectl ome admin doctor` and `admin recommendations`: GET-only checks of an OME installation."""

from __future__ import annotations

import argparse
import importlib.metadata
from typing import Any, Final

from ome.api.resources import DEPLOYMENTS, INFERENCE_SERVICES
from ome.framework import errors
from ome.framework.resources import CONFIGMAPS
from ome.kubectl_ome import alfred_report, doctor_report, snapshot
from ome.kubectl_ome.connection import add_ome_namespace
from ome.kubectl_ome.context import Ctx
from ome.kubectl_ome.failures import CliError, Unmet
from ome.kubectl_ome.output import document, render, rfc3339
from ome.kubectl_ome.parsing import add_command, add_group, add_output

Obj = dict[str, Any]

MANAGER: Final = "ome-controller-manager"
VIOLATIONS: Final = "doctor found required API violations"


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    sub = add_group(
        commands,
        "admin",
        help="Check an OME installation, and read Alfred's recommendations",
        example="kubectl ome admin doctor --context prod-east -n team-a",
    )
    p = add_command(
        sub,
        "doctor",
        help="Check that the cluster serves the APIs OME needs",
        example="kubectl ome admin doctor --context prod-east -n team-a",
        parents=parents,
    )
    p.add_argument("--isvc", help="Inspect only this exact named InferenceService in the workload namespace")
    add_ome_namespace(p)
    add_output(p)
    p.set_defaults(handler=doctor)
    p = add_command(
        sub,
        "recommendations",
        help="The moves from Alfred's latest decision pass",
        example="kubectl ome admin recommendations --alfred-namespace caretaker -o wide",
        parents=parents,
    )
    p.add_argument(
        "--alfred-config-key", default="config.yaml", help="Key inside Alfred's configuration ConfigMap"
    )
    p.add_argument(
        "--alfred-config-name", default="alfred-config", help="Name of Alfred's configuration ConfigMap"
    )
    p.add_argument(
        "--alfred-namespace", help="Namespace where Alfred is installed (defaults to --ome-namespace)"
    )
    add_ome_namespace(p)
    add_output(p)
    p.set_defaults(handler=recommendations)


def _discovery_reason(exc: BaseException) -> str:
    if isinstance(exc, errors.NotFound):
        return "NotFound"
    if isinstance(exc, errors.Forbidden):
        return "Forbidden"
    if isinstance(exc, errors.Unauthorized):
        return "Unauthorized"
    if isinstance(exc, errors.ServerTimeout | TimeoutError):
        return "Timeout"
    if isinstance(exc, errors.TooManyRequests):
        return "Throttled"
    if isinstance(exc, errors.ServerError):
        return "ServerError"
    if isinstance(exc, errors.TransportError) and exc.reason == "BadResponse":
        return "MalformedPayload"
    return "Unreadable"


async def discover(ctx: Ctx) -> dict[str, Obj | str]:
    out: dict[str, Obj | str] = {}
    for gv in doctor_report.GROUP_VERSIONS:
        path = "/api/v1" if gv == "v1" else f"/apis/{gv}"
        try:
            out[gv] = await ctx.client._call("GET", path)
        except (errors.ApiError, TimeoutError) as exc:
            out[gv] = _discovery_reason(exc)
    return out


def plugin_version() -> str:
    try:
        release = importlib.metadata.version("ome-py")
    except importlib.metadata.PackageNotFoundError:
        return ""
    return doctor_report.cli_version(release, dirty=False)


async def doctor(ctx: Ctx, args: argparse.Namespace) -> str:
    isvc: Obj | None = None
    if args.isvc is not None:
        if not snapshot.valid_name(args.isvc):
            raise CliError("invalid InferenceService name")
        try:
            isvc = await ctx.client.get(INFERENCE_SERVICES, args.isvc, ctx.namespace)
        except (errors.ApiError, TimeoutError):
            raise CliError("doctor collection failed") from None
    apis = doctor_report.classify(await discover(ctx))
    deployment: Obj | None = None
    try:
        deployment = await ctx.client.get(DEPLOYMENTS, MANAGER, args.ome_namespace)
        manager = "Available"
    except (errors.ApiError, TimeoutError) as exc:
        manager = _discovery_reason(exc)
    report = doctor_report.Doctor(
        context=ctx.context,
        namespace=ctx.namespace,
        ome_namespace=args.ome_namespace,
        apis=apis,
        manager=manager,
        isvc=args.isvc if isvc is not None else None,
        isvc_features=doctor_report.features(isvc),
        cli=plugin_version(),
        image=doctor_report.image_candidate(deployment),
    )
    if args.output in ("json", "yaml"):
        text = render(
            document(
                "DoctorReport",
                doctor_report.content(report),
                collectedAt=rfc3339(ctx.now()),
                warnings=doctor_report.warnings(report),
            ),
            args.output,
        )
    else:
        text = doctor_report.table(
            doctor_report.rows(report, args.output == "wide"), cut=args.output != "wide"
        )
    if report.violations:
        raise Unmet(text, VIOLATIONS)
    return text


async def _config_map_key(ctx: Ctx, name: str, namespace: str, key: str) -> tuple[str | None, str]:
    try:
        cm = await ctx.client.get(CONFIGMAPS, name, namespace)
    except (errors.ApiError, TimeoutError) as exc:
        reason = snapshot.failure_reason(exc)
        return None, {"TimedOut": "Unreadable"}.get(reason, reason)
    meta = cm.get("metadata") or {}
    if meta.get("name") != name or meta.get("namespace") != namespace:
        return None, "IdentityMismatch"
    data = cm.get("data") or {}
    if key not in data:
        return None, "KeyAbsent"
    return str(data[key]), "Available"


async def recommendations(ctx: Ctx, args: argparse.Namespace) -> str:
    namespace = args.alfred_namespace if args.alfred_namespace is not None else args.ome_namespace
    if not (
        snapshot.valid_name(namespace)
        and snapshot.valid_name(args.alfred_config_name)
        and args.alfred_config_key
    ):
        raise CliError("invalid Alfred namespace or config selection")
    raw, state = await _config_map_key(ctx, args.alfred_config_name, namespace, args.alfred_config_key)
    config = alfred_report.parse_config(raw, state)
    if config.state != "Available":
        record = alfred_report.Record("NotRead")
    elif not config.enabled:
        record = alfred_report.Record("Disabled")
    else:
        raw, state = await _config_map_key(ctx, config.record_map, namespace, alfred_report.RECORD_KEY)
        record = alfred_report.parse_record(raw, state)
    report = alfred_report.Recommendations(
        namespace, args.alfred_config_name, args.alfred_config_key, config, record, ctx.now()
    )
    if args.output in ("json", "yaml"):
        doc = document(
            "AlfredRecommendationsReport",
            alfred_report.content(report),
            collectedAt=rfc3339(ctx.now()),
            warnings=report.warnings(),
        )
        return render(doc, args.output)
    rows = alfred_report.rows(report, args.output == "wide")
    return doctor_report.table(rows, cut=args.output != "wide")
