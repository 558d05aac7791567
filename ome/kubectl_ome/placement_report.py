"""`placement status|explain|endpoint` reports (pure): the alpha multi-cluster placement an
InferenceService declares and the control plane reports, the WorkloadClusters its selectors match, and
its TrafficMap routing table. Each is a FIELD/VALUE list; field names over 18 characters and values
over 59 end in `...` in the table (`-o json` keeps every value whole).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final
from urllib.parse import urlsplit

from ome.framework import label_selector
from ome.kubectl_ome.table import format_table, shorten_end
from ome.resolution.accelerators import quantity

Obj = dict[str, Any]
Rows = list[tuple[str, str]]

FIELD_WIDTH: Final = 18
VALUE_WIDTH: Final = 59
PREVIEW: Final = 4
MODES: Final = ("Single", "All", "Split")
PHASES: Final = ("Pending", "Admitting", "Placed", "Failed")
HOME_PHASES: Final = ("Admitting", "Admitted")
LEGACY: Final = ("ome.io/accelerator-requirements", "ome.io/cluster-selector")
VIEW: Final = ("View", "Bounded cells; use -o json for complete identities")
WLC_READY_REASONS: Final = ("ProbeFailedRetrying", "ConnectionFailed", "ClusterProfileUnsupported")
TM_CONDITIONS: Final = ("OverrideActive", "CapacityFallback", "Routable", "Published")
PUBLISHED_REASONS: Final = frozenset({"Published", "PublishFailed", "PublisherUnavailable", "NotConfigured"})


def origin(url: object) -> str:
    """An address's scheme, host and port; `NotRecorded` or `InvalidEndpoint`."""
    if not url:
        return "NotRecorded"
    try:
        parts = urlsplit(str(url))
        port = parts.port
    except ValueError:
        return "InvalidEndpoint"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "InvalidEndpoint"
    return f"{parts.scheme}://{parts.hostname}" + (f":{port}" if port else "")


def inspection(state: str, kept: int, total: int, truncated: bool = False) -> str:
    return f"{state} {kept}/{total}; truncated={str(truncated).lower()}"


@dataclass(slots=True)
class Inputs:
    """What the InferenceService declares and reports about its placement."""

    name: str
    namespace: str
    generation: int
    mode: str
    placement: Obj | None
    phase: str
    structured: bool
    selectors: str
    requirements: list[label_selector.Requirement] | None
    homes: list[Obj]
    home_state: str
    issues: list[str] = field(default_factory=list)
    spec: Obj = field(default_factory=dict)
    status: Obj = field(default_factory=dict)


def inputs(isvc: Mapping[str, Any]) -> Inputs:
    meta, spec, status = isvc.get("metadata") or {}, isvc.get("spec") or {}, isvc.get("status") or {}
    raw_declared = spec.get("placement")
    structured = isinstance(raw_declared, Mapping)
    declared: Mapping[str, Any] = raw_declared if isinstance(raw_declared, Mapping) else {}
    issues: list[str] = []
    if structured and declared.get("mode"):
        mode_value = str(declared["mode"])
        mode = f"{mode_value if mode_value in MODES else 'Unknown'} (Declared)"
        if mode_value not in MODES:
            issues.append("PlacementMode: UnknownValue (1)")
    else:
        mode = "Single (Defaulted)"
    annotations = meta.get("annotations") or {}
    sources = (
        [declared.get("requirements"), declared.get("clusterSelector")]
        if structured
        else [annotations.get(k) for k in LEGACY]
    )
    texts = [str(t) for t in sources if t]
    requirements: list[label_selector.Requirement] | None = []
    if not texts:
        selectors = "NoRequirements"
    else:
        selectors = "Valid"
        try:
            for text in texts:
                requirements = (requirements or []) + label_selector.parse(text)
        except OverflowError:
            selectors, requirements = "BudgetExceeded", None
        except label_selector.SelectorError:
            selectors, requirements = "InvalidSelector", None
    reported = status.get("placement")
    placement = dict(reported) if isinstance(reported, Mapping) else None
    phase = "NotRecorded"
    homes: list[Obj] = []
    home_state = "NotRecorded"
    if placement is not None:
        raw_phase = placement.get("phase")
        phase = str(raw_phase) if raw_phase in PHASES else "Unknown" if raw_phase else "NotRecorded"
        if raw_phase and raw_phase not in PHASES:
            issues.append("PlacementPhase: UnknownValue (1)")
        candidates = placement.get("candidates")
        if isinstance(candidates, list):
            homes = sorted(
                (c for c in candidates if isinstance(c, dict)), key=lambda c: str(c.get("cluster"))
            )
            names = [c.get("cluster") for c in homes]
            if len(homes) != len(candidates):
                home_state = "MalformedPayload"
            elif len(names) != len(set(names)):
                home_state = "ConflictingDuplicates"
            else:
                home_state = "Validated"
    return Inputs(
        name=str(meta.get("name") or ""),
        namespace=str(meta.get("namespace") or ""),
        generation=int(meta.get("generation") or 0),
        mode=mode,
        placement=placement,
        phase=phase,
        structured=structured,
        selectors=selectors,
        requirements=requirements,
        homes=homes,
        home_state=home_state,
        issues=issues,
        spec=dict(spec),
        status=dict(status),
    )


def _provenance(home: Mapping[str, Any]) -> tuple[bool, int, int]:
    """(recorded, policies, active groups) of one home."""
    policies = ((home.get("autoscaling") or {}).get("policies")) or []
    groups = ((home.get("rollout") or {}).get("activeGroups")) or []
    return bool(policies or groups), len(policies), len(groups)


def base_rows(inp: Inputs) -> Rows:
    placement = inp.placement or {}
    single = inp.mode.startswith("Single")
    rows: Rows = [
        ("Mode", inp.mode),
        ("Placement", f"{inp.phase} (reported)"),
        ("Freshness", "Unverifiable"),
        ("Input source", "Structured" if inp.structured else "LegacyAnnotations"),
        ("Selectors", inp.selectors),
        ("Reported cluster", str(placement.get("cluster") or "") if single else ""),
        ("Endpoint origin", origin(placement.get("endpoint") if single else None)),
        ("Service origin", origin(inp.status.get("url"))),
        ("Home inspection", inspection(inp.home_state, len(inp.homes), len(inp.homes))),
        ("Provenance inspect", inspection(inp.home_state, len(inp.homes), len(inp.homes))),
    ]
    rows += [("Issue", issue) for issue in inp.issues]
    return rows


def _replicas(value: object) -> str:
    return f"{value} (Reported)" if isinstance(value, int) and value > 0 else "Unknown"


def status_rows(inp: Inputs, wide: bool) -> Rows:
    rows = base_rows(inp)
    shown = inp.homes if wide or len(inp.homes) <= PREVIEW else inp.homes[:PREVIEW]
    if len(inp.homes) > PREVIEW and not wide:
        rows.append(("Home preview", f"{PREVIEW}/{len(inp.homes)}; use -o wide or json"))
    for home in shown:
        phase = home.get("phase")
        rows += [
            ("Reported home", f"{home.get('cluster')} ({phase if phase in HOME_PHASES else 'NotRecorded'})"),
            ("Home origin", origin(home.get("endpoint"))),
        ]
        if wide:
            recorded, policies, groups = _provenance(home)
            rows += [
                ("Admitted replicas", _replicas(home.get("admittedReplicas"))),
                ("Ready replicas", _replicas(home.get("readyReplicas"))),
                ("Provenance", f"{'Reported' if recorded else 'NotRecorded'}; freshness unverifiable"),
                (
                    "Policy inspection",
                    inspection("Validated" if policies else "NotRecorded", policies, policies),
                ),
                ("Group inspection", inspection("Validated" if groups else "NotRecorded", groups, groups)),
            ]
    return [*rows, ("Hint", "Placed does not prove replica floor met"), VIEW]


# --- explain --------------------------------------------------------------------------------------


@dataclass(slots=True)
class Fleet:
    items: list[Obj]
    returned: int
    pages: int
    complete: bool
    truncated: bool
    reason: str
    """Why the read was not whole (`Forbidden`, `UnsupportedAPI`, ...), or ``."""

    @property
    def state(self) -> str:
        if self.reason and not self.items:
            return "Unavailable"
        return "Observed" if self.complete and not self.reason else "Partial"


def _setting(value: object) -> str:
    if not isinstance(value, Mapping) or not value:
        return "Inherited"
    return "Disabled" if value.get("disabled") else "Configured"


def routing_rows(inp: Inputs, wide: bool) -> Rows:
    routing = inp.spec.get("routing")
    legacy = (inp.spec.get("placement") or {}).get("capacityFactors") if inp.structured else None
    routing = routing if isinstance(routing, Mapping) else None
    if routing is None and not legacy:
        intent = "Absent"
    else:
        factors = list(((routing or {}).get("capacityFactors") or {}).values()) + list(
            (legacy or {}).values()
        )
        intent = "Invalid" if any((quantity(f) or 0) <= 0 for f in factors) else "Declared"
    enabled = (routing or {}).get("enabled")
    rows: Rows = [
        ("Routing intent", intent),
        ("Routing enablement", "OptIn" if enabled is True else "OptOut" if enabled is False else "Inherited"),
        ("Install routing", "Gate/defaults unobserved"),
    ]
    if intent == "Absent":
        return rows
    own = (routing or {}).get("capacityFactors") or {}
    source = (
        "Conflict" if own and legacy else "Routing" if own else "LegacyPlacement" if legacy else "Inherited"
    )
    probe, capacity = (routing or {}).get("probe"), (routing or {}).get("capacity")
    publisher = ((routing or {}).get("publisher") or {}).get("options") or {}
    rows += [
        ("Capacity factors", f"{source} ({len(own or legacy or {})})"),
        ("Routing probe", _setting(probe)),
        ("Capacity poll", _setting(capacity)),
        ("Publisher options", f"{'Configured' if publisher else 'Inherited'} ({len(publisher)})"),
    ]
    if wide and _setting(probe) == "Configured":
        p = dict(probe or {})
        rows += [
            ("Probe method", f"{p.get('method', '-')} {p.get('path', '-')}"),
            ("Probe statuses", f"accept={p.get('acceptStatuses', '-')} gate={p.get('gateStatuses', '-')}"),
            (
                "Probe thresholds",
                f"failure={p.get('failureThreshold', '-')} success={p.get('successThreshold', '-')}",
            ),
            ("Probe timing", f"period={p.get('period', '-')} timeout={p.get('timeout', '-')}"),
            ("All-failed policy", str(p.get("allFailedPolicy", "-"))),
        ]
    if wide and _setting(capacity) == "Configured":
        c = dict(capacity or {})
        rows += [
            ("Capacity method", f"{c.get('method', '-')} {c.get('path', '-')}"),
            ("Capacity window", f"samples={c.get('samples', '-')} quorum={c.get('quorum', '-')}"),
            ("Capacity timing", f"period={c.get('period', '-')} timeout={c.get('timeout', '-')}"),
        ]
    return rows


def _wlc_ready(cluster: Mapping[str, Any]) -> tuple[str, str, int]:
    """(`<status> (<freshness>)`, reason row, total conditions)."""
    conditions = (cluster.get("status") or {}).get("conditions")
    conditions = conditions if isinstance(conditions, list) else []
    readies = [c for c in conditions if isinstance(c, Mapping) and c.get("type") == "Ready"]
    if not readies:
        return "Unknown (Unverifiable)", "NotRecorded", len(conditions)
    ready = readies[0]
    if len(readies) > 1 or ready.get("status") not in ("True", "False", "Unknown"):
        return "Unknown (Invalid)", "OtherReportedReason", len(conditions)
    generation = int((cluster.get("metadata") or {}).get("generation") or 0)
    observed = ready.get("observedGeneration")
    if not isinstance(observed, int) or observed <= 0:
        fresh = "Unverifiable"
    elif observed > generation:
        fresh = "Invalid"
    else:
        fresh = "Current" if observed == generation else "Stale"
    reason = str(ready.get("reason")) if ready.get("reason") in WLC_READY_REASONS else "OtherReportedReason"
    return f"{ready.get('status')} ({fresh})", reason, len(conditions)


def _connection(cluster: Mapping[str, Any]) -> str:
    source = ((cluster.get("spec") or {}).get("clusterSource")) or {}
    if source.get("kubeConfig"):
        return "KubeConfigReferenceNotResolved"
    if source.get("clusterProfileRef"):
        return "ClusterProfileReferenceNotResolved"
    return "Unknown"


def explain_rows(inp: Inputs, fleet: Fleet, wide: bool) -> Rows:
    rows = base_rows(inp) + routing_rows(inp, wide)
    rows += [
        ("Fleet state", fleet.state),
        ("Fleet reason", fleet.reason),
        ("Fleet Returned", str(fleet.returned)),
        ("Fleet Admitted", str(len(fleet.items))),
        ("Fleet Pages", str(fleet.pages)),
        ("Fleet Complete", str(fleet.complete).lower()),
        ("Fleet Truncated", str(fleet.truncated).lower()),
    ]
    homes = {str(h.get("cluster")) for h in inp.homes}
    clusters = sorted(fleet.items, key=lambda c: str((c.get("metadata") or {}).get("name")))
    if len(clusters) > PREVIEW and not wide:
        rows.append(("Cluster preview", f"{PREVIEW}/{len(clusters)}; use -o wide or json"))
        clusters = clusters[:PREVIEW]
    for cluster in clusters:
        meta = cluster.get("metadata") or {}
        name = str(meta.get("name") or "")
        labels = meta.get("labels")
        if inp.requirements is None or not isinstance(labels, Mapping | None):
            compatible = "Unknown"
        elif not inp.requirements:
            compatible = "NotApplicable"
        else:
            merged = {**(labels or {}), "metadata.name": name}
            compatible = str(label_selector.matches(inp.requirements, merged))
        ready, reason, total = _wlc_ready(cluster)
        rows += [
            ("Cluster", name),
            ("Selector compatible", compatible),
            ("Reported WLC Ready", ready),
            ("Condition inspect", inspection("Validated", 1 if reason != "NotRecorded" else 0, total)),
        ]
        if wide:
            home = "Unknown" if inp.placement is None or inp.home_state != "Validated" else str(name in homes)
            rows += [
                ("Reported home", home),
                ("Connection source", _connection(cluster)),
                ("Ready reason", reason),
            ]
    return [
        *rows,
        ("Hint", "WLC Ready is reachability, not capacity"),
        ("Hint", "Partial fleet: no global eligibility verdict"),
        VIEW,
    ]


# --- endpoint -------------------------------------------------------------------------------------


def _freshness(observed: object, generation: int) -> str:
    if not isinstance(observed, int) or isinstance(observed, bool) or observed <= 0:
        return "Unverifiable"
    if observed > generation:
        return "Invalid"
    return "Current" if observed == generation else "Stale"


def _probe(entry: Mapping[str, Any], now: datetime) -> tuple[str, bool]:
    """(Recorded probe, valid)."""
    probe = entry.get("probe")
    if not probe:
        return "NotRecorded", True
    if not isinstance(probe, Mapping):
        return "Invalid", False
    when = probe.get("lastProbeTime")
    if when:
        try:
            if datetime.fromisoformat(str(when).replace("Z", "+00:00")) > now:
                return "Invalid", False
        except ValueError:
            return "Invalid", False
    result = probe.get("result")
    return (str(result), True) if result in ("Passing", "Failing", "Unknown") else ("Invalid", False)


def endpoint_rows(
    inp: Inputs, traffic_map: Mapping[str, Any] | None, reason: str, now: datetime, wide: bool
) -> Rows:
    rows = base_rows(inp)
    tm = traffic_map or {}
    rows += [
        ("TrafficMap state", "Observed" if traffic_map is not None else "Unavailable"),
        ("TrafficMap reason", reason),
        ("TrafficMap Returned", "1" if traffic_map is not None else "0"),
        ("TrafficMap Admitted", "1" if traffic_map is not None else "0"),
        ("TrafficMap Pages", "1" if traffic_map is not None else "0"),
        ("TrafficMap Complete", str(traffic_map is not None).lower()),
        ("TrafficMap Truncated", "false"),
    ]
    if traffic_map is None:
        return [
            *rows,
            ("Hint", "Routing generation does not date placement"),
            ("Hint", "Recorded probes only; no CLI network probe"),
            VIEW,
        ]
    spec, status = tm.get("spec") or {}, tm.get("status") or {}
    tm_generation = int((tm.get("metadata") or {}).get("generation") or 0)
    entries = sorted(
        (e for e in spec.get("entries") or [] if isinstance(e, Mapping)), key=lambda e: str(e.get("cluster"))
    )
    probes = [_probe(e, now) for e in entries]
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, Mapping)]
    by_type = {c.get("type"): c for c in conditions}
    kept = sum(1 for t in TM_CONDITIONS if t in by_type)
    rows += [
        (
            "Entry inspection",
            inspection("Validated" if entries else "NotRecorded", len(entries), len(entries)),
        ),
        (
            "Probe inspection",
            inspection(
                "Unavailable"
                if not all(ok for _, ok in probes)
                else "Validated"
                if entries
                else "NotRecorded",
                len(entries),
                len(entries),
            ),
        ),
        (
            "Condition inspect",
            inspection("Validated" if conditions else "NotRecorded", kept, len(conditions)),
        ),
        ("Routing freshness", _freshness(spec.get("observedISVCGeneration"), inp.generation)),
    ]

    def cond(type_: str, with_fresh: bool = True) -> str:
        c = by_type.get(type_)
        if c is None:
            return "Unknown: NotRecorded (Unverifiable)" if with_fresh else "Unknown: NotRecorded"
        text = f"{c.get('status')}: {c.get('reason')}"
        return f"{text} ({_freshness(c.get('observedGeneration'), tm_generation)})" if with_fresh else text

    routable = by_type.get("Routable")
    routable_fresh = _freshness((routable or {}).get("observedGeneration"), tm_generation)
    published = by_type.get("Published")
    if published is None:
        publisher = (
            "NoAcknowledgement"
            if status.get("published") is None
            else ("ReportedTrue" if status.get("published") else "ReportedFalse")
        )
    elif published.get("reason") not in PUBLISHED_REASONS or published.get("status") not in ("True", "False"):
        publisher = "Invalid"
    else:
        publisher = "ReportedTrue" if published.get("status") == "True" else "ReportedFalse"
    publisher_fresh = (
        "Invalid"
        if publisher == "Invalid"
        else _freshness(status.get("observedTrafficMapGeneration"), tm_generation)
    )
    published_text = cond("Published")
    if published is not None and published.get("reason") not in PUBLISHED_REASONS:
        published_text = published_text.replace(f": {published.get('reason')} ", ": OtherReportedReason ")
    rows += [
        ("Traffic override", cond("OverrideActive")),
        ("Capacity fallback", cond("CapacityFallback")),
        ("Routable", cond("Routable", with_fresh=False)),
        (
            "Routable freshness",
            f"{routable_fresh}:" if routable_fresh == "Current" else f"{routable_fresh}: StaleGeneration",
        ),
        ("Published", published_text),
        ("Publisher", publisher),
        ("Publisher fresh", publisher_fresh),
    ]
    for entry, (probe, _) in zip(entries, probes, strict=True):
        p = entry.get("probe") or {}
        capacity = entry.get("capacity") or {}
        drains = list(entry.get("drainRefs") or [])
        gate = f"{bool(p.get('gated'))} (Reported)" if p else "NotRecorded"
        fallback = _fallback(capacity.get("fallbackReason"))
        rows += [
            ("Route home", str(entry.get("cluster"))),
            ("Endpoint origin", origin(entry.get("endpoint"))),
            ("Final weight", f"{entry.get('weight', 0)}; healthy={str(bool(entry.get('healthy'))).lower()}"),
            ("Recorded probe", probe),
            (
                "Route evidence",
                f"drains={len(drains)}; gate={'NotRecorded' if not p else str(bool(p.get('gated')))}; "
                f"fallback={fallback}",
            ),
            ("Probe policy", str(p.get("policyDigest") or "NotRecorded") if p else "NotRecorded"),
        ]
        if wide:
            if capacity:
                source = capacity.get("source")
                rows += [
                    (
                        "Capacity provenance",
                        str(source)
                        if source in ("ControlPlane", "Endpoint")
                        else "UnknownOrDefaultedControlPlane",
                    ),
                    ("Allocated count", _replicas(capacity.get("allocated"))),
                    ("Ready count", _replicas(capacity.get("ready"))),
                ]
            rows += [
                ("Probe freshness", "Invalid" if probe == "Invalid" else "Unverifiable"),
                ("Drain refs", ",".join(drains) if drains else "Validated"),
                ("Probe gate", gate),
                ("Home cap fallback", fallback),
            ]
    return [
        *rows,
        ("Hint", "Routing generation does not date placement"),
        ("Hint", "Recorded probes only; no CLI network probe"),
        VIEW,
    ]


def _fallback(reason: object) -> str:
    if not reason:
        return "NotRecorded"
    text = str(reason).lower()
    for code in ("Unreachable", "StaleReport", "Disabled", "Malformed", "Timeout"):
        if code.lower() in text:
            return code
    return "Other"


def table(rows: Sequence[tuple[str, str]]) -> str:
    return format_table(
        ("FIELD", "VALUE"), [(shorten_end(f, FIELD_WIDTH), shorten_end(v, VALUE_WIDTH)) for f, v in rows]
    )
