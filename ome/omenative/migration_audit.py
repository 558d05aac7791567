"""Where a migration is remembered (pure): the audit ConfigMap `{isvc}-ome-migration-audit` and the
InferenceService's `status.migrationHistory`.

The ConfigMap's `history.json` is `{"entries": [...]}`, oldest first, bounded to the last 200 entries:
one entry per request, written `Started` when OME takes the request and replaced by its outcome when it
ends (`Completed` with `migrated`, or `Failed` with the failure message), and one per force-deleted pod
(reason `ForceDelete`, outcome `force-delete-unreachable`). `kubectl ome migration history`
reads it. The history on the InferenceService keeps the same bound.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

MAX_ENTRIES: Final = 200
DATA_KEY: Final = "history.json"
STARTED: Final = "Started"

Entry = dict[str, Any]


def configmap_name(isvc: str) -> str:
    return f"{isvc}-ome-migration-audit"


def entries_of(configmap: Mapping[str, Any] | None) -> list[Entry]:
    raw = ((configmap or {}).get("data") or {}).get(DATA_KEY) or "[]"
    try:
        parsed = json.loads(raw)
    except ValueError:
        return []
    if isinstance(parsed, dict):
        parsed = parsed.get("entries") or []
    return [e for e in parsed if isinstance(e, dict)] if isinstance(parsed, list) else []


def started_entry(component: str, record: Mapping[str, Any], requested_by: str | None) -> Entry:
    entry: Entry = {
        "requestUUID": record["requestUUID"],
        "component": component,
        "sourceInstance": record["sourceInstance"],
        "fromNode": record.get("fromNode"),
        "phase": STARTED,
        "startedAt": record["startedAt"],
        "message": "accepted",
    }
    if record.get("reason"):
        entry["reason"] = record["reason"]
    if requested_by:
        entry["requestedBy"] = requested_by
    return entry


def finished_entry(component: str, record: Mapping[str, Any]) -> Entry:
    completed = record.get("phase") == "Completed"
    entry: Entry = {
        "requestUUID": record["requestUUID"],
        "component": component,
        "sourceInstance": record["sourceInstance"],
        "fromNode": record.get("fromNode"),
        "phase": record.get("phase"),
        "startedAt": record.get("startedAt"),
        "completedAt": record.get("completedAt"),
        "outcome": "migrated" if completed else record.get("message") or "",
        "message": "migrated" if completed else record.get("message") or "",
    }
    if record.get("surgeInstance") is not None:
        entry["replacementInstance"] = record["surgeInstance"]
    if record.get("reason"):
        entry["reason"] = record["reason"]
    return entry


def merge(entries: Sequence[Entry], new: Sequence[Entry]) -> list[Entry]:
    """Entries with each new one replacing its request's earlier entry, the last MAX_ENTRIES kept."""
    out = list(entries)
    for entry in new:
        uuid = entry.get("requestUUID")
        previous = next((e for e in out if e.get("requestUUID") == uuid), None)
        if previous is not None:
            kept = {k: v for k, v in previous.items() if k in ("requestedBy",)}
            out.remove(previous)
            entry = {**kept, **entry}
        out.append(entry)
    return out[-MAX_ENTRIES:]


def configmap_data(entries: Sequence[Entry]) -> dict[str, str]:
    return {DATA_KEY: json.dumps({"entries": list(entries)}, separators=(",", ":"), sort_keys=True)}


def configmap_body(isvc: Mapping[str, Any], data: Mapping[str, str]) -> dict[str, Any]:
    """A new audit ConfigMap, owned by the InferenceService (it goes when the service does)."""
    meta = isvc["metadata"]
    return {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {
            "name": configmap_name(meta["name"]), "namespace": meta["namespace"],
            "ownerReferences": [{"apiVersion": isvc.get("apiVersion", "ome.io/v1beta1"),
                                 "kind": "InferenceService", "name": meta["name"], "uid": meta["uid"]}],
        },
        "data": dict(data),
    }


def history_entry(component: str, record: Mapping[str, Any], requested_by: str | None = None) -> Entry:
    """status.migrationHistory's entry for a request (MigrationHistoryEntry)."""
    entry: Entry = {
        "id": record["requestUUID"],
        "component": component,
        "instance": record["sourceInstance"],
        "mode": "Surge",
        "phase": record["phase"],
        "requestedAt": record["startedAt"],
    }
    for key, out_key in (("allocatedAt", "startedAt"), ("completedAt", "completedAt"),
                         ("reason", "reason"), ("surgeInstance", "replacementInstance")):
        if record.get(key) is not None:
            entry[out_key] = record[key]
    if requested_by:
        entry["requestedBy"] = requested_by
    if record.get("message"):
        entry["outcomeReason"] = record["message"]
    return entry


def merge_history(history: Sequence[Entry], new: Sequence[Entry]) -> list[Entry]:
    out = [e for e in history if e.get("id") not in {n["id"] for n in new}]
    return (out + list(new))[-MAX_ENTRIES:]
