"""`kubectl ome cluster status` (alpha): the connection each WorkloadCluster declares and the Ready
condition its controller last wrote, as a `ClusterStatusReport`.

It reads only WorkloadClusters (never a workload cluster or its kubeconfig Secret), under a fixed
budget: 64 kept, 2 pages of 32, 4 requests. A failed read still prints the report and exits 0; the
report's `observation` says how the read went.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from ome.api.resources import WORKLOAD_CLUSTERS
from ome.framework import errors
from ome.kubectl_ome import snapshot
from ome.kubectl_ome.context import Ctx
from ome.kubectl_ome.failures import CliError
from ome.kubectl_ome.output import API_VERSION, render, rfc3339
from ome.kubectl_ome.parsing import add_command, add_group, add_output
from ome.kubectl_ome.table import format_table, shorten_end

Obj = dict[str, Any]

SOURCE_LIMIT: Final = 64
PAGE_LIMIT: Final = 2
REQUEST_LIMIT: Final = 4
PAGE_SIZE: Final = 32
CONDITION_SCAN: Final = 128
CONDITION_OUTPUT: Final = 32
HEADERS: Final = ("CLUSTER", "DECLARED", "READY", "FRESHNESS", "CONDITIONS")
# Column caps keep the table inside 80 columns (16+16+7+10+10 plus 4 gaps of 3).
_CAPS: Final = (16, 16, 7, 10, 10)
_STATUSES: Final = ("True", "False", "Unknown")


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    sub = add_group(
        commands,
        "cluster",
        help="Whether OME reports each WorkloadCluster as connected (alpha)",
        example="kubectl ome cluster status",
    )
    p = add_command(
        sub,
        "status",
        help="Alpha. The WorkloadCluster status that the controller reports",
        example="kubectl ome cluster status worker-a -o json",
        parents=parents,
    )
    p.add_argument("name", metavar="WORKLOADCLUSTER", nargs="?")
    add_output(p)
    p.set_defaults(handler=cluster_status)


# --- pure: one WorkloadCluster ------------------------------------------------------------------


def declared_kind(spec: Mapping[str, Any]) -> tuple[str, str | None]:
    """(`KubeConfigSecret` | `ClusterProfile` | `Invalid`, the ClusterProfile's name)."""
    source = spec.get("clusterSource") or {}
    kube, profile = source.get("kubeConfig"), source.get("clusterProfileRef")
    if kube and not profile and isinstance(kube, Mapping):
        ref = kube.get("secretRef") or {}
        key = kube.get("key", "kubeconfig")
        if (
            snapshot.valid_name(ref.get("name"))
            and snapshot.valid_name(ref.get("namespace"))
            and isinstance(key, str)
            and key
            and all(c.isalnum() or c in "-._" for c in key)
        ):
            return "KubeConfigSecret", None
    if profile and not kube and isinstance(profile, Mapping) and snapshot.valid_name(profile.get("name")):
        return "ClusterProfile", str(profile["name"])
    return "Invalid", None


def freshness(observed: object, generation: int) -> str:
    if not isinstance(observed, int) or isinstance(observed, bool) or observed <= 0:
        return "Unobserved"
    if observed > generation:
        return "Invalid"
    return "Current" if observed == generation else "Stale"


def _parse_time(value: object) -> datetime | None:
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def _well_formed(cond: object) -> bool:
    return (
        isinstance(cond, Mapping)
        and isinstance(cond.get("type"), str)
        and bool(cond.get("type"))
        and cond.get("status") in _STATUSES
    )


def condition_entry(cond: Mapping[str, Any], generation: int, now: datetime) -> Obj:
    when = _parse_time(cond.get("lastTransitionTime"))
    entry: Obj = {
        "type": "Ready" if cond.get("type") == "Ready" else "Other",
        "status": cond.get("status"),
    }
    observed = cond.get("observedGeneration")
    if isinstance(observed, int) and not isinstance(observed, bool):
        entry["observedGeneration"] = observed
    entry["freshness"] = freshness(observed, generation)
    entry["reason"] = "ConnectionFailed" if cond.get("reason") == "ConnectionFailed" else "Other"
    if when is not None:
        entry["transitionTime"] = rfc3339(when)
    entry["transitionState"] = "Reported" if when is not None and when <= now else "Malformed"
    return entry


def cluster_entry(obj: Mapping[str, Any], now: datetime) -> Obj:
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    generation = int(meta.get("generation") or 0)
    kind, profile = declared_kind(spec)
    conditions = (obj.get("status") or {}).get("conditions") or []
    scanned = conditions[:CONDITION_SCAN] if isinstance(conditions, list) else []
    malformed = not isinstance(conditions, list) or not all(_well_formed(c) for c in scanned)
    readies = [c for c in scanned if isinstance(c, Mapping) and c.get("type") == "Ready"]
    if len(readies) > 1:
        malformed = True
    ready = readies[0] if len(readies) == 1 and not malformed else None
    if malformed:
        state, fresh, reported = "Malformed", "Invalid", "Unknown"
    elif ready is None:
        state, fresh, reported = "Missing", "Unobserved", "Unknown"
    else:
        state, reported = "Reported", str(ready["status"])
        fresh = freshness(ready.get("observedGeneration"), generation)
    kept: list[Obj] = []
    if not malformed:
        ordered = sorted(scanned, key=lambda c: c.get("type") != "Ready")
        kept = [condition_entry(c, generation, now) for c in ordered[:CONDITION_OUTPUT]]
    transition = kept[0]["transitionState"] if ready is not None and kept else "Malformed"
    connected = (
        reported in ("True", "False")
        and fresh == "Current"
        and kind in ("KubeConfigSecret", "ClusterProfile")
        and transition == "Reported"
    )
    entry: Obj = {
        "name": str(meta.get("name") or ""),
        "generation": generation,
        "declaredConnectionKind": kind,
        "sourceState": "Malformed" if kind == "Invalid" else "Reported",
    }
    if profile:
        entry["declaredProfile"] = profile
    entry.update(
        {
            "profileResolution": "NotAttempted",
            "evidence": "Reported",
            "reportedReady": reported,
            "conditionState": state,
            "freshness": fresh,
            "connectionState": (
                ("ReportedReady" if reported == "True" else "ReportedNotReady") if connected else "Unknown"
            ),
            "totalConditions": len(conditions) if isinstance(conditions, list) else 0,
            "scannedConditions": len(scanned),
            "retainedConditions": len(kept),
            "conditionsTruncated": len(scanned) > len(kept) or len(scanned) < len(conditions or []),
            "conditions": kept,
        }
    )
    return entry


# --- pure: the report ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Budget:
    source_limit: int
    page_limit: int
    request_limit: int
    page_size: int


LIST_BUDGET: Final = Budget(SOURCE_LIMIT, PAGE_LIMIT, REQUEST_LIMIT, PAGE_SIZE)
NAMED_BUDGET: Final = Budget(1, 1, 1, 1)


def build_report(read: snapshot.PagedRead, budget: Budget, now: datetime, named: bool) -> Obj:
    clusters = sorted((cluster_entry(o, now) for o in read.items), key=lambda c: str(c["name"]))
    if read.failure is not None:
        observation = "Partial" if clusters else "Unavailable"
    elif read.truncated:
        observation = "Partial"
    elif not clusters:
        observation = "Unavailable" if named else "Empty"
    else:
        observation = "Complete"
    report: Obj = {
        "apiVersion": API_VERSION,
        "kind": "ClusterStatusReport",
        "collectedAt": rfc3339(now),
        "observation": observation,
    }
    if read.failure is not None:
        report["unavailableReason"] = read.failure
    report.update(
        {
            "requestedPages": read.calls,
            "observedPages": read.pages,
            "returnedSources": read.returned,
            "admittedSources": len(clusters),
            "sourceLimit": budget.source_limit,
            "pageLimit": budget.page_limit,
            "requestLimit": budget.request_limit,
            "pageSize": budget.page_size,
            "conditionScanLimit": CONDITION_SCAN,
            "conditionOutputLimit": CONDITION_OUTPUT,
            "sourcesTruncated": read.truncated,
            "clusters": clusters,
        }
    )
    return report


def _cut(value: str, cap: int) -> str:
    return shorten_end(value, cap)


def table(report: Mapping[str, Any]) -> str:
    rows: list[list[str]] = [
        ["@ observation", str(report["observation"]), "-", "-", "-"],
        ["@ availability", str(report.get("unavailableReason") or "-"), "-", "-", "-"],
        [
            "@ sources",
            f"returned={report['returnedSources']}",
            f"kept={report['admittedSources']}",
            f"max={report['sourceLimit']}",
            f"cut={str(report['sourcesTruncated']).lower()}",
        ],
        [
            "@ pages",
            f"seen={report['observedPages']}/{report['pageLimit']}",
            f"calls={report['requestedPages']}",
            f"cap={report['requestLimit']}",
            f"size={report['pageSize']}",
        ],
    ]
    truncated = False
    for c in report["clusters"]:
        declared = str(c["declaredConnectionKind"])
        state = str(c["conditionState"]) + ("*" if c["conditionsTruncated"] else "")
        cells = [str(c["name"]), declared, str(c["reportedReady"]), str(c["freshness"]), state]
        truncated |= bool(c["conditionsTruncated"])
        rows.append([_cut(value, cap) for value, cap in zip(cells, _CAPS, strict=True)])
    if not report["clusters"]:
        rows.append(["-", "-", "Unknown", "Unobserved", _cut(str(report["observation"]), _CAPS[4])])
    if truncated:
        rows.append(["@ * = truncated", "-", "-", "-", "-"])
    return format_table(HEADERS, rows)


def wide(report: Mapping[str, Any]) -> str:
    rows: list[tuple[str, str]] = [
        ("Observation", str(report["observation"])),
        ("Availability", str(report.get("unavailableReason") or "-")),
        (
            "Sources",
            f"returned={report['returnedSources']} kept={report['admittedSources']} "
            f"max={report['sourceLimit']} cut={str(report['sourcesTruncated']).lower()}",
        ),
        (
            "Pages",
            f"seen={report['observedPages']}/{report['pageLimit']} calls={report['requestedPages']} "
            f"cap={report['requestLimit']} size={report['pageSize']}",
        ),
        ("Condition scan/output limits", f"{report['conditionScanLimit']}/{report['conditionOutputLimit']}"),
        ("Collected at", str(report["collectedAt"])),
    ]
    for c in report["clusters"]:
        rows += [
            ("Cluster", str(c["name"])),
            ("Declared connection", str(c["declaredConnectionKind"])),
            ("Reported Ready", str(c["reportedReady"])),
            ("Ready freshness", str(c["freshness"])),
            ("Ready condition state", str(c["conditionState"])),
            ("Generation", str(c["generation"])),
            ("Source state", str(c["sourceState"])),
        ]
        if c.get("declaredProfile"):
            rows.append(("Declared profile", str(c["declaredProfile"])))
        rows += [
            ("Profile resolution", str(c["profileResolution"])),
            ("Evidence", str(c["evidence"])),
            ("Connection state", str(c["connectionState"])),
            (
                "Conditions total/scanned/kept",
                f"{c['totalConditions']}/{c['scannedConditions']}/{c['retainedConditions']}",
            ),
        ]
        for cond in c["conditions"]:
            rows += [
                ("Condition type/status", f"{cond['type']}/{cond['status']}"),
                (
                    "Observed generation/freshness",
                    f"{cond.get('observedGeneration', '-')}/{cond['freshness']}",
                ),
                ("Reason classification", str(cond["reason"])),
                ("Transition evidence", str(cond["transitionState"])),
                ("Transition time", str(cond.get("transitionTime") or "-")),
            ]
    return format_table(("FIELD", "EVIDENCE"), rows)


def render_report(report: Mapping[str, Any], output: str) -> str:
    if output in ("json", "yaml"):
        return render(report, output)
    return wide(report) if output == "wide" else table(report)


# --- I/O ----------------------------------------------------------------------------------------


async def read_named(ctx: Ctx, name: str) -> snapshot.PagedRead:
    read = snapshot.PagedRead(calls=1)
    try:
        obj = await ctx.client.get(WORKLOAD_CLUSTERS, name)
    except (errors.ApiError, TimeoutError) as exc:
        read.failure = snapshot.failure_reason(exc)
        return read
    read.pages = read.returned = 1
    meta = obj.get("metadata") or {}
    if meta.get("name") != name or meta.get("namespace"):
        read.failure = "MalformedPayload"
        return read
    read.items = [obj]
    return read


async def cluster_status(ctx: Ctx, args: argparse.Namespace) -> str:
    if args.name is not None and not snapshot.valid_name(args.name):
        raise CliError("invalid WorkloadCluster name")
    if args.name is not None:
        read, budget = await read_named(ctx, args.name), NAMED_BUDGET
    else:
        budget = LIST_BUDGET
        read = await snapshot.paged_list(
            ctx.client,
            WORKLOAD_CLUSTERS,
            page_size=budget.page_size,
            page_limit=budget.page_limit,
            request_limit=budget.request_limit,
            keep=budget.source_limit,
        )
    return render_report(build_report(read, budget, ctx.now(), args.name is not None), args.output)
