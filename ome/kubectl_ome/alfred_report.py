"""`admin recommendations` (pure): the moves Alfred (alpha) recommended in its latest decision pass,
from its configuration (`config.yaml` in `alfred-config`) and its record (`last-cycle.json` in the
recommendations ConfigMap). A pass older than twice `decisionLoopInterval` is Stale.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

import yaml

from ome.kubectl_ome.connection import parse_duration
from ome.kubectl_ome.failures import CliError
from ome.kubectl_ome.output import rfc3339

Obj = dict[str, Any]

CONFIG_LIMIT: Final = 64 * 1024
RECORD_LIMIT: Final = 256 * 1024
SHOWN_LIMIT: Final = 200
SCAN_LIMIT: Final = 800
RECORD_KEY: Final = "last-cycle.json"
DEFAULT_RECORD_MAP: Final = "alfred-recommendations"
DEFAULT_INTERVAL: Final = 300.0
MODES: Final = ("recommend-only", "execute")
OUTCOMES: Final = (
    "advisory",
    "rejected",
    "withheld",
    "submitted",
    "acknowledged",
    "completed",
    "failed",
    "stalled",
)
TRAILER: Final = (
    ("Advisory evidence", "Not authorization", "Convergence unverified"),
    ("Executability", "Unverifiable", "Not persisted in cycle"),
    ("Scope", "Latest cycle only", "Node/scheduling data omitted"),
)


@dataclass(slots=True)
class Config:
    state: str
    mode: str = ""
    record_map: str = DEFAULT_RECORD_MAP
    enabled: bool = True
    interval: float = DEFAULT_INTERVAL


def parse_config(raw: str | None, state: str = "Available") -> Config:
    """`state` is the read's outcome; a read that worked still needs a valid document."""
    if state != "Available" or raw is None:
        return Config(state)
    if len(raw.encode()) > CONFIG_LIMIT:
        return Config("Oversized")
    try:
        doc = yaml.safe_load(raw)
    except yaml.YAMLError:
        return Config("Malformed")
    if not isinstance(doc, Mapping):
        return Config("Malformed")
    if doc.get("schemaVersion") != 1:
        return Config("UnsupportedSchema")
    mode = doc.get("mode", "recommend-only")
    if mode not in MODES:
        return Config("Malformed")
    try:
        interval = parse_duration(str(doc.get("decisionLoopInterval", "5m")))
    except CliError:
        return Config("Malformed")
    enabled = doc.get("recommendationsConfigMapEnabled", True) is not False
    record_map = str(doc.get("recommendationsConfigMapName") or DEFAULT_RECORD_MAP)
    return Config("Available", str(mode), record_map, enabled, interval)


@dataclass(slots=True)
class Record:
    state: str
    mode: str = ""
    timestamp: datetime | None = None
    rows: list[Obj] = field(default_factory=list)
    scanned: int = 0
    invalid: int = 0
    omitted: int = 0
    issues: list[str] = field(default_factory=list)


def _valid(rec: object) -> bool:
    return (
        isinstance(rec, Mapping)
        and isinstance(rec.get("workload"), str)
        and rec["workload"].count("/") == 1
        and rec.get("component") in ("engine", "decoder", "router")
        and isinstance(rec.get("instance"), int)
        and rec["instance"] >= 0  # whole-component moves (-1) count as invalid: a known bug kept
        and rec.get("outcome") in OUTCOMES
        and isinstance(rec.get("policy"), str)
        and isinstance(rec.get("reason"), str)
    )


def parse_record(raw: str | None, state: str = "Available") -> Record:
    if state != "Available" or raw is None:
        return Record(state)
    if len(raw.encode()) > RECORD_LIMIT:
        return Record("Oversized")
    try:
        doc = json.loads(raw)
        when = datetime.fromisoformat(str(doc["timestamp"]).replace("Z", "+00:00"))
    except (ValueError, KeyError, TypeError):
        return Record("Malformed")
    items = doc.get("recommendations")
    if not isinstance(items, list) or doc.get("mode") not in MODES:
        return Record("Malformed")
    if len(items) > SCAN_LIMIT:
        return Record("ScanLimitExceeded", str(doc["mode"]), when, scanned=len(items))
    out = Record("Available", str(doc["mode"]), when, scanned=len(items))
    keys = [
        (r.get("workload"), r.get("component"), r.get("instance")) for r in items if isinstance(r, Mapping)
    ]
    duplicates = {k for k in keys if keys.count(k) > 1}
    valid = []
    for rec in items:
        if not _valid(rec):
            out.invalid += 1
        elif (rec["workload"], rec["component"], rec["instance"]) in duplicates:
            out.invalid += 1
        else:
            valid.append(dict(rec))
    if duplicates:
        out.issues.append("DuplicateCandidates")
    if out.invalid > (len([k for k in keys if k in duplicates])):
        out.issues.append("InvalidRows")
    out.omitted = max(len(valid) - SHOWN_LIMIT, 0)
    out.rows = valid[:SHOWN_LIMIT]
    return out


@dataclass(slots=True)
class Recommendations:
    namespace: str
    config_name: str
    config_key: str
    config: Config
    record: Record
    now: datetime

    @property
    def freshness(self) -> str:
        when = self.record.timestamp
        if self.record.state != "Available" or when is None:
            return "Unavailable"
        if when > self.now:
            return "Future"
        return "Recent" if self.now - when <= timedelta(seconds=2 * self.config.interval) else "Stale"

    @property
    def state(self) -> str:
        if self.config.state == "Available" and not self.config.enabled:
            return "Disabled"
        if self.record.state != "Available":
            return "Unavailable"
        if self.record.invalid or self.record.omitted:
            return "Partial"
        return "Reported" if self.record.rows else "Empty"

    def issues(self) -> list[str]:
        out = []
        if self.record.state == "Available" and self.record.mode != self.config.mode:
            out.append("ConfigRecordModeMismatch")
        return out + list(self.record.issues)

    def warnings(self) -> list[Obj]:
        codes = []
        if self.state == "Unavailable":
            codes.append("SourceUnavailable")
        if self.state == "Partial":
            codes.append("PartialData")
        if self.freshness in ("Stale", "Future"):
            codes.append("StaleEvidence")
        if (
            self.record.omitted
            or "Oversized" in (self.config.state, self.record.state)
            or (self.record.state == "ScanLimitExceeded")
        ):
            codes.append("Truncated")
        return [{"code": c} for c in codes]


def subject(rec: Mapping[str, Any]) -> str:
    return f"{rec['workload']}/{rec['component']}#{rec['instance']}"


def rows(r: Recommendations, wide: bool) -> list[tuple[str, str, str]]:
    out = [
        ("Alfred recommendations", r.state, r.freshness),
        ("Source namespace", r.namespace, "Config and cycle sources"),
        ("Config source", r.config_name, r.config_key),
    ]
    if r.config.state == "Available":
        out.append(("Record source", RECORD_KEY, r.config.record_map))
    out += [
        ("ConfigMap config", r.config.state, r.config.mode),
        ("Latest cycle", r.record.state, r.record.mode),
        (
            "Rows",
            f"{len(r.record.rows)} shown/{r.record.scanned} scanned",
            f"{r.record.invalid} invalid; {r.record.omitted} omitted",
        ),
    ]
    for rec in r.record.rows:
        out.append((subject(rec), str(rec["outcome"]), f"{rec['policy']}/{rec['reason']}"))
        if wide:
            codes = rec.get("reasonCodes") or ([rec["advisoryReason"]] if rec.get("advisoryReason") else [])
            out += [(subject(rec), "Reason code", str(code)) for code in codes]
    out += [("Issue", issue, "") for issue in r.issues()]
    out += list(TRAILER)
    if wide:
        out += [
            ("Config authority", "SelectedConfigMap", "Alfred may retain last-known-good config"),
            ("Cycle authority", "AlfredReportedCycle", "Does not prove policy loop health"),
            ("Freshness window", f"{int(2 * r.config.interval)}s", "2 x declared decision loop interval"),
            ("Cycle timestamp", rfc3339(r.record.timestamp) if r.record.timestamp else "-", ""),
        ]
    return out


def content(r: Recommendations) -> Obj:
    recs = []
    for rec in r.record.rows:
        entry: Obj = {k: rec[k] for k in ("workload", "component", "instance", "policy", "reason", "outcome")}
        entry["classification"] = "Advisory" if rec["outcome"] == "advisory" else "Reported"
        entry["executability"] = "Unverifiable"
        if rec.get("advisoryReason"):
            entry["advisoryReason"] = rec["advisoryReason"]
        recs.append(entry)
    return {
        "state": r.state,
        "freshness": r.freshness,
        "namespace": r.namespace,
        "config": {
            "name": r.config_name,
            "key": r.config_key,
            "state": r.config.state,
            "mode": r.config.mode,
        },
        "cycle": {
            "state": r.record.state,
            "mode": r.record.mode,
            "timestamp": rfc3339(r.record.timestamp) if r.record.timestamp else None,
            "scanned": r.record.scanned,
            "invalid": r.record.invalid,
            "omitted": r.record.omitted,
        },
        "recommendations": recs,
        "issues": r.issues(),
    }
