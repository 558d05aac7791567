"""Does a model select a node? `storage.nodeSelector` and `storage.nodeAffinity` against the node's labels.

The documented rules, which differ from pod scheduling in one place: `NotIn` does not match a node that
lacks the label. Preferred terms are ignored. With both fields set a node must match both; with neither,
every node running the agent keeps a copy. Pure functions only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Labels = Mapping[str, str]


def node_matches(storage: Mapping[str, Any], node_name: str, labels: Labels) -> bool:
    selector = storage.get("nodeSelector") or {}
    if any(labels.get(key) != value for key, value in selector.items()):
        return False
    required = (storage.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True
    terms = required.get("nodeSelectorTerms") or []
    return any(_term_matches(term, node_name, labels) for term in terms)


def _term_matches(term: Mapping[str, Any], node_name: str, labels: Labels) -> bool:
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False  # an empty term matches nothing, as in the scheduler
    fields_ok = all(
        _requirement_matches(req, {"metadata.name": node_name}) for req in fields if req.get("key")
    )
    return fields_ok and all(_requirement_matches(req, labels) for req in expressions)


def _requirement_matches(req: Mapping[str, Any], labels: Labels) -> bool:
    key, op, values = req.get("key", ""), req.get("operator", ""), req.get("values") or []
    present = key in labels
    value = labels.get(key, "")
    if op == "In":
        return present and value in values
    if op == "NotIn":
        return present and value not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        return present and _compare_int(value, values, op)
    return False


def _compare_int(value: str, values: list[str], op: str) -> bool:
    try:
        have, want = int(value), int(values[0])
    except (ValueError, IndexError):
        return False
    return have > want if op == "Gt" else have < want
