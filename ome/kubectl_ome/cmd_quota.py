"""`kubectl ome quota status|tree|validate`: the AcceleratorQuota tree as declared, and what the quota
manager reported for each node. Reads only AcceleratorQuotas (cluster-scoped; `-n` has no effect).

Every line of the text report fits 80 columns: a longer one keeps its first 71 characters and ends
in `#` and the first 8 hex digits of the SHA-256 of the whole line, so two cut lines that differ
still look different. `validate` exits 2 after the report when the tree breaks a rule.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from ome.api.resources import ACCELERATOR_QUOTAS
from ome.framework import errors
from ome.kubectl_ome import quota_tree, snapshot
from ome.kubectl_ome.context import Ctx
from ome.kubectl_ome.failures import CliError, Unmet
from ome.kubectl_ome.output import document, render, rfc3339
from ome.kubectl_ome.parsing import add_command, add_group, add_output
from ome.kubectl_ome.quota_tree import ROOT, Tree
from ome.kubectl_ome.table import format_table
from ome.resolution.accelerators import quantity

Obj = dict[str, Any]

WIDTH: Final = 80
PAGE_SIZE: Final = 500
PAGE_LIMIT: Final = 20
SHOWN: Final = 64
PART_ENTRIES: Final = 16
PART_LIMIT: Final = 64
DEFAULTED: Final = "Unknown/Defaulted"
NOT_REPORTED: Final = "Unavailable/NotReported"
REPORTED: Final = "Available/Reported"
CONDITION_TYPES: Final = ("Degraded", "Materialized", "Ready")
KNOWN_REASONS: Final = frozenset(
    {
        "Admitted",
        "CapacityExceeded",
        "ContainmentViolated",
        "ParentMissing",
        "ParentCycle",
        "Unreachable",
        "DepthExceeded",
        "NodeKindInvalid",
        "Frozen",
        "FlavorMissing",
        "ObjectConflict",
        "MaterializationFailed",
    }
)
TREE_HEADER: Final = (
    "Declared budgets; computed ancestry; advisory only.",
    "No admission, enforcement, controller, Kueue, or capacity claim.",
)
STATUS_FOOTER: Final = (
    "Zero optional scalars: Unknown/Defaulted; not proof of zero usage.",
    "Compact identities/lines may be clipped; -o wide retains safe fields.",
    "Computed ancestry: quota tree; no reported status path exists.",
)
ADVISORY: Final = {
    "code": "AdvisoryOnly",
    "message": "Declared budgets and computed ancestry do not prove admission, enforcement, controller "
    "installation, Kueue integration, materialization, or available capacity.",
}
VIOLATIONS: Final = "advisory quota validation found violations in the complete snapshot"


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    sub = add_group(
        commands,
        "quota",
        help="The AcceleratorQuota tree, its reported budgets, and a check of its rules",
        example="kubectl ome quota tree",
    )
    for name, help_, example, handler in (
        (
            "status",
            "The budgets, capacity, materialization and conditions the quota manager reported",
            "kubectl ome quota status team-alpha",
            quota_status,
        ),
        (
            "tree",
            "The declared tree, with each node's budgets",
            "kubectl ome quota tree team-alpha -o wide",
            quota_tree_cmd,
        ),
        (
            "validate",
            "Check the declared tree; exits 2 when it finds a problem",
            "kubectl ome quota validate",
            quota_validate,
        ),
    ):
        p = add_command(sub, name, help=help_, example=example, parents=parents)
        p.add_argument("names", metavar="ACCELERATORQUOTA", nargs="*")
        add_output(p)
        p.set_defaults(handler=handler)


def fit(line: str) -> str:
    """`line`, or its first 71 characters, `#` and 8 hex digits of its hash when it is over 80."""
    if len(line) <= WIDTH:
        return line
    return line[: WIDTH - 9] + "#" + hashlib.sha256(line.encode()).hexdigest()[:8]


def _lines(lines: Sequence[str]) -> str:
    return "".join(fit(line) + "\n" for line in lines)


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


@dataclass(slots=True)
class Snapshot:
    objects: list[Obj]
    pages: int
    complete: bool

    @property
    def completeness(self) -> str:
        return "Complete" if self.complete else "Partial"

    def summary(self) -> Obj:
        return {
            "scope": "Cluster",
            "completeness": self.completeness,
            "observedPages": self.pages,
            "observedItems": len(self.objects),
            "evidence": "Observed",
        }


# --- pure: tree and validate ----------------------------------------------------------------------


def tree_lines(tree: Tree, snap: Snapshot, target: str | None, *, validate: bool) -> list[str]:
    structure = "ProblemsDetected" if tree.problems else "NoProblemsDetected"
    lines = []
    if validate:
        result = "ViolationsDetected" if tree.problems else "NoProblemsDetected"
        lines += ["QUOTA VALIDATION (advisory)", f"Result: {result}; complete fetched snapshot only."]
    else:
        lines.append("QUOTA TREE (advisory)")
    lines += [
        *TREE_HEADER,
        f"Snapshot: {snap.completeness}; {len(snap.objects)} items / {snap.pages} pages; {structure}",
    ]
    keep = None
    if target is not None:
        lines.append(f"Selected ancestry and descendants: {target}")
        keep = quota_tree.selection(tree, target)
    return lines + quota_tree.node_lines(tree, keep)


def _shown_nodes(tree: Tree, target: str | None) -> list[Obj]:
    keep = quota_tree.selection(tree, target) if target else None
    return [
        quota_tree.node_entry(n, n.name == target) for n in tree.ordered() if keep is None or n.name in keep
    ]


def _problems(tree: Tree) -> list[Obj]:
    return [
        {"node": node, "reason": reason, "evidence": "Computed", "scope": "WholeSnapshot"}
        for node, reason in tree.problems
    ]


def _sources(snap: Snapshot, now: datetime) -> list[Obj]:
    return sorted(
        (
            {
                "kind": "AcceleratorQuota",
                "name": (o.get("metadata") or {}).get("name"),
                "generation": (o.get("metadata") or {}).get("generation"),
                "evidence": "Declared",
                "collectedAt": rfc3339(now),
            }
            for o in snap.objects
        ),
        key=lambda s: str(s["name"]),
    )


def tree_report(tree: Tree, snap: Snapshot, target: str | None, now: datetime, *, validate: bool) -> Obj:
    structure = "ProblemsDetected" if tree.problems else "NoProblemsDetected"
    topology = {
        "snapshot": snap.summary(),
        "structure": structure,
        "nodes": _shown_nodes(tree, target),
        "problems": _problems(tree),
    }
    content: Obj = {"valid": not tree.problems, "topology": topology} if validate else topology
    return document(
        "QuotaValidationReport" if validate else "QuotaTreeReport",
        content,
        collectedAt=rfc3339(now),
        target=target,
        sources=_sources(snap, now),
        warnings=[ADVISORY],
    )


def tree_wide(report: Mapping[str, Any]) -> str:
    content = report["content"]
    topology = content.get("topology", content)
    rows = [("report", str(report["kind"])), ("collectedAt", str(report["collectedAt"]))]
    if report.get("target"):
        rows.append(("target", str(report["target"])))
    if "valid" in content:
        rows.append(("valid", str(content["valid"]).lower()))
    rows += [("snapshot", compact(topology["snapshot"])), ("structure", str(topology["structure"]))]
    rows += [("node", compact(n)) for n in topology["nodes"]]
    rows += [("problem", compact(p)) for p in topology["problems"]]
    rows += [("source", compact(s)) for s in report["sources"]]
    rows += [("warning", compact(w)) for w in report["warnings"]]
    return format_table(("FIELD", "VALUE"), rows)


# --- pure: status ---------------------------------------------------------------------------------


def generation_freshness(reported: object, generation: int) -> str:
    if not isinstance(reported, int) or isinstance(reported, bool) or reported < 0 or generation < 0:
        return "Inconsistent"
    if reported == 0 or generation == 0:
        return "Unknown"
    if reported > generation:
        return "Inconsistent"
    return "Current" if reported == generation else "Stale"


def amount(value: object) -> str:
    """A reported quantity as written, or `Unknown/Defaulted` for zero or nothing."""
    got = quantity(value)
    return DEFAULTED if got is None or got == 0 else str(value)


def _reason(value: object) -> str:
    if not value:
        return "Unknown"
    return str(value) if value in KNOWN_REASONS else "Other"


def _part(items: object, *, invalid: str | None = None) -> tuple[str, list[Obj]]:
    if invalid:
        return f"Invalid/{invalid}", []
    if not isinstance(items, list) or not items:
        return NOT_REPORTED, []
    if len(items) > PART_LIMIT:
        return "Invalid/Oversize", []
    if not all(isinstance(i, dict) for i in items):
        return "Invalid/MalformedPayload", []
    return REPORTED, list(items)


def _trunc(state: str, entries: list[Obj]) -> str:
    return state + (f"; truncated {PART_ENTRIES}/{len(entries)}" if len(entries) > PART_ENTRIES else "")


def _time(value: object, now: datetime) -> datetime | None:
    try:
        when = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when <= now else None


def status_object(obj: Mapping[str, Any], now: datetime) -> tuple[list[str], Obj]:
    """The text lines of one AcceleratorQuota's reported status, and its JSON entry."""
    meta, status = obj.get("metadata") or {}, obj.get("status") or {}
    name, generation = str(meta.get("name") or ""), int(meta.get("generation") or 0)
    observed = status.get("observedGeneration") or 0
    fresh = generation_freshness(observed, generation)
    parent = str(status.get("parent") or "")
    source_gen = status.get("sourceGeneration") or 0
    budgets_state, budgets = _part(status.get("budgets"))
    capacity_state, capacity = _part(
        status.get("capacity"),
        invalid="UnexpectedNonRootCapacity" if status.get("capacity") and name != ROOT else None,
    )
    projections_state, _ = _part(status.get("clusters"))
    mat = status.get("materialization")
    mat_state = REPORTED if isinstance(mat, dict) and mat else NOT_REPORTED
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    supported = [c for c in conditions if c.get("type") in CONDITION_TYPES]
    if not conditions:
        cond_state = NOT_REPORTED
    elif not supported:
        cond_state = "Unavailable/NoSupportedConditions"
    elif len(supported) < len(conditions):
        cond_state = "Available/UnsupportedTypesOmitted"
    else:
        cond_state = REPORTED
    lines = [
        f"{name}: generation={generation} observed={observed} {fresh} (Reported)",
        f"  parent={parent} ({'Reported' if parent else 'Unavailable'}); sourceGeneration={source_gen} "
        f"({'Reported' if source_gen else 'Unknown'})",
        f"  budgets: {_trunc(budgets_state, budgets)}",
        f"  capacity: {_trunc(capacity_state, capacity)}",
        f"  projections: {projections_state}",
        f"  materialization: {mat_state}",
        f"  conditions: {cond_state}",
    ]
    entry: Obj = {
        "name": name,
        "generation": generation,
        "observedGeneration": observed,
        "freshness": fresh,
        "parent": {"name": parent, "state": "Reported" if parent else "Unavailable"},
        "sourceGeneration": source_gen,
        "parts": {
            "budgets": budgets_state,
            "capacity": capacity_state,
            "projections": projections_state,
            "materialization": mat_state,
            "conditions": cond_state,
        },
        "budgets": [],
        "capacity": [],
        "conditions": [],
    }
    for b in budgets[:PART_ENTRIES]:
        clusters = REPORTED if b.get("perCluster") else NOT_REPORTED
        usage = {k: amount(b.get(k)) for k in ("nominal", "admitted", "reserved", "borrowed")}
        lines += [
            f"  budget {b.get('resourceName')}/{b.get('resourceFlavor')} nominal={usage['nominal']} "
            f"admitted={usage['admitted']}",
            f"    reserved={usage['reserved']} borrowed={usage['borrowed']}; clusters={clusters}",
        ]
        entry["budgets"].append(
            {
                "resourceName": b.get("resourceName"),
                "resourceFlavor": b.get("resourceFlavor"),
                "usage": usage,
                "clusters": clusters,
                "evidence": "Reported",
            }
        )
    for c in capacity[:PART_ENTRIES]:
        clusters = REPORTED if c.get("perCluster") else NOT_REPORTED
        when = _time(c.get("observedAt"), now)
        sampled = f"{rfc3339(when)} (Reported/Unverifiable)" if when else f"{DEFAULTED} (Unknown)"
        lines += [
            f"  capacity {c.get('resourceName')}/{c.get('resourceFlavor')} "
            f"allocatable={amount(c.get('allocatable'))} highWater={amount(c.get('highWaterMark'))}",
            f"    sampled={sampled}; highWater is historical",
            f"    clusters={clusters}",
        ]
        entry["capacity"].append(
            {
                "resourceName": c.get("resourceName"),
                "resourceFlavor": c.get("resourceFlavor"),
                "allocatable": amount(c.get("allocatable")),
                "highWaterMark": amount(c.get("highWaterMark")),
                "sampledAt": rfc3339(when) if when else None,
                "clusters": clusters,
                "evidence": "Reported",
            }
        )
    mat = mat if isinstance(mat, dict) else {}
    output = "Frozen" if mat.get("frozen") else DEFAULTED
    applied = mat.get("lastAppliedGeneration") or 0
    lines.append(
        f"  output={output} reason={_reason(mat.get('reason'))}; lastApplied={applied} "
        f"{generation_freshness(applied, generation)}"
    )
    entry["materialization"] = {
        "output": output,
        "reason": _reason(mat.get("reason")),
        "lastAppliedGeneration": applied,
        "freshness": generation_freshness(applied, generation),
        "frozenAt": mat.get("frozenAt"),
        "lastAppliedTime": mat.get("lastAppliedTime"),
    }
    by_type = {c.get("type"): c for c in supported}
    for type_ in CONDITION_TYPES:
        cond = by_type.get(type_)
        if cond is None:
            continue
        status_ = cond.get("status") if cond.get("status") in ("True", "False") else "Unknown"
        cfresh = generation_freshness(cond.get("observedGeneration") or 0, generation)
        lines.append(f"  {type_}={status_} reason={_reason(cond.get('reason'))} {cfresh}")
        entry["conditions"].append(
            {
                "type": type_,
                "status": status_,
                "reason": _reason(cond.get("reason")),
                "freshness": cfresh,
                "lastTransitionTime": cond.get("lastTransitionTime"),
            }
        )
    return lines, entry


def status_lines(
    objects: Sequence[Mapping[str, Any]], snap: Snapshot, now: datetime
) -> tuple[list[str], list[Obj]]:
    ordered = sorted(objects, key=lambda o: str((o.get("metadata") or {}).get("name")))
    lines = [
        "QUOTA STATUS (reported)",
        "Reported evidence only; no enforcement or free-capacity claim.",
        f"Snapshot: {snap.completeness}; {len(snap.objects)} items / {snap.pages} pages",
    ]
    entries = []
    for obj in ordered[:SHOWN]:
        more, entry = status_object(obj, now)
        lines += more
        entries.append(entry)
    if len(ordered) > SHOWN:
        lines.append(f"Showing the first {SHOWN} of {len(ordered)} AcceleratorQuotas; name one for others.")
    return lines + list(STATUS_FOOTER), entries


# --- I/O ------------------------------------------------------------------------------------------


def _one_name(args: argparse.Namespace, what: str) -> str | None:
    if len(args.names) > 1:
        raise CliError(f"{what} accepts at most one AcceleratorQuota name")
    if args.names and not snapshot.valid_name(args.names[0]):
        raise CliError("AcceleratorQuota name is invalid")
    return args.names[0] if args.names else None


async def read_all(ctx: Ctx) -> Snapshot:
    read = await snapshot.paged_list(
        ctx.client,
        ACCELERATOR_QUOTAS,
        page_size=PAGE_SIZE,
        page_limit=PAGE_LIMIT,
        request_limit=PAGE_LIMIT,
        keep=PAGE_SIZE * PAGE_LIMIT,
    )
    if read.failure is not None:
        raise CliError(
            "AcceleratorQuota snapshot unavailable: "
            + ("UnsupportedAPI" if read.failure == "NotFound" else read.failure)
        )
    return Snapshot(read.items, read.pages, not read.truncated)


async def quota_status(ctx: Ctx, args: argparse.Namespace) -> str:
    name = _one_name(args, "quota diagnostic")
    if name is not None:
        try:
            obj = await ctx.client.get(ACCELERATOR_QUOTAS, name)
        except (errors.ApiError, TimeoutError) as exc:
            raise CliError(f"AcceleratorQuota target unavailable: {snapshot.failure_reason(exc)}") from None
        snap = Snapshot([obj], 1, True)
    else:
        snap = await read_all(ctx)
    now = ctx.now()
    lines, entries = status_lines(snap.objects, snap, now)
    report = document(
        "QuotaStatusReport",
        {"snapshot": snap.summary(), "objects": entries},
        collectedAt=rfc3339(now),
        target=name,
        warnings=[],
    )
    if args.output in ("json", "yaml"):
        return render(report, args.output)
    if args.output == "wide":
        rows = [("report", "QuotaStatusReport"), ("collectedAt", str(report["collectedAt"]))]
        if name:
            rows.append(("target", name))
        rows.append(("snapshot", compact(snap.summary())))
        rows += [("object", compact(e)) for e in entries]
        return format_table(("FIELD", "VALUE"), rows)
    return _lines(lines)


async def _tree(ctx: Ctx, args: argparse.Namespace, *, validate: bool) -> tuple[str, bool]:
    name = _one_name(args, "quota tree")
    snap = await read_all(ctx)
    tree = quota_tree.build(snap.objects)
    if name is not None and name not in tree.nodes:
        raise CliError("AcceleratorQuota target was not found in the complete snapshot")
    report = tree_report(tree, snap, name, ctx.now(), validate=validate)
    if args.output in ("json", "yaml"):
        text = render(report, args.output)
    elif args.output == "wide":
        text = tree_wide(report)
    else:
        text = _lines(tree_lines(tree, snap, name, validate=validate))
    return text, bool(tree.problems)


async def quota_tree_cmd(ctx: Ctx, args: argparse.Namespace) -> str:
    return (await _tree(ctx, args, validate=False))[0]


async def quota_validate(ctx: Ctx, args: argparse.Namespace) -> str:
    text, problems = await _tree(ctx, args, validate=True)
    if problems:
        raise Unmet(text, VIOLATIONS)
    return text
