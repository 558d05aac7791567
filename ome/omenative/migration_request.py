"""Migration request annotations on an InferenceService (pure): parse and check them.

The key is `ome.io/migration-request-v1-<uuid>`; the value a JSON object with `schemaVersion: v1`,
`component`, `instance`, `from_node` and the optional `hint_target_nodes`, `reason`, `requested_at`,
`requested_by` (migration-and-transient-scale.md). The webhook denies a malformed request with one of the
messages below, each starting with `migration request`; the migration controller parses the same way, so
a request that slipped past admission is rejected with the same text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

PREFIX: Final = "ome.io/migration-request-v1-"
SCHEMA_VERSION: Final = "v1"
COMPONENTS: Final = ("engine", "decoder", "router")
MAX_HINTS: Final = 8
MAX_REASON: Final = 1024
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_NODE = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_FIELDS: Final = frozenset(
    {"schemaVersion", "component", "instance", "from_node", "hint_target_nodes", "reason", "requested_at",
     "requested_by"}
)


@dataclass(frozen=True, slots=True)
class MigrationRequest:
    uuid: str
    component: str
    instance: int
    from_node: str
    hint_target_nodes: tuple[str, ...] = ()
    reason: str = ""
    requested_at: str | None = None
    requested_by: str | None = None


class RequestError(ValueError):
    """A malformed request; str() is the webhook's message (starts with `migration request <uuid>:`),
    `detail` what follows it (the controller's rejection event quotes that), `schema` whether the
    schemaVersion is the fault (its own event reason, UnsupportedSchemaVersion)."""

    def __init__(self, subject: str, detail: str, *, schema: bool = False) -> None:
        super().__init__(f"migration request {subject}: {detail}")
        self.detail = detail
        self.schema = schema


def request_keys(annotations: Mapping[str, str] | None) -> list[str]:
    return sorted(k for k in (annotations or {}) if k.startswith(PREFIX))


def parse(key: str, value: str) -> MigrationRequest:
    """The request under one annotation, or RequestError saying what is wrong."""
    uuid = key.removeprefix(PREFIX)
    if not _UUID.match(uuid):
        raise RequestError(key, f"the key must end in a lowercase UUID, got {uuid!r}")
    try:
        body: Any = json.loads(value)
    except json.JSONDecodeError as exc:
        raise RequestError(uuid, f"value is not valid JSON: {exc.msg}") from None
    if not isinstance(body, dict):
        raise RequestError(uuid, "value must be a JSON object")
    unknown = sorted(set(body) - _FIELDS)
    if unknown:
        raise RequestError(uuid, f"unknown field(s) {', '.join(unknown)}")
    if body.get("schemaVersion") != SCHEMA_VERSION:
        got = body.get("schemaVersion")
        raise RequestError(uuid, f"schemaVersion must be {SCHEMA_VERSION!r}, got {got!r}", schema=True)
    component = body.get("component")
    if component not in COMPONENTS:
        raise RequestError(uuid, f"component must be one of engine, decoder, router, got {component!r}")
    instance = body.get("instance")
    if isinstance(instance, bool) or not isinstance(instance, int) or instance < 0:
        raise RequestError(uuid, f"instance must be a non-negative integer, got {instance!r}")
    from_node = body.get("from_node")
    if not isinstance(from_node, str) or not from_node:
        raise RequestError(uuid, "from_node is required")
    if not _NODE.match(from_node):
        raise RequestError(uuid, f"from_node {from_node!r} is not a valid node name")
    hints = body.get("hint_target_nodes") or []
    if not isinstance(hints, list) or not all(isinstance(h, str) and _NODE.match(h) for h in hints):
        raise RequestError(uuid, "hint_target_nodes must be a list of node names")
    if len(hints) > MAX_HINTS:
        raise RequestError(uuid, f"hint_target_nodes allows at most {MAX_HINTS} nodes")
    if from_node in hints:
        raise RequestError(uuid, f"hint_target_nodes must not name from_node {from_node}")
    reason = body.get("reason") or ""
    if not isinstance(reason, str) or len(reason) > MAX_REASON:
        raise RequestError(uuid, f"reason must be text of at most {MAX_REASON} characters")
    for name in ("requested_at", "requested_by"):
        if body.get(name) is not None and not isinstance(body.get(name), str):
            raise RequestError(uuid, f"{name} must be a string")
    return MigrationRequest(
        uuid, component, int(instance), from_node, tuple(hints), reason,
        body.get("requested_at"), body.get("requested_by"),
    )


def admission_error(isvc: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> str | None:
    """The webhook's check: each request annotation new or changed in this write parses, and names a
    component the InferenceService has."""
    annotations = ((isvc.get("metadata") or {}).get("annotations")) or {}
    before = (((old or {}).get("metadata") or {}).get("annotations")) or {}
    spec = isvc.get("spec") or {}
    for key in request_keys(annotations):
        if before.get(key) == annotations[key]:
            continue  # already admitted; the controller takes it from here
        try:
            request = parse(key, str(annotations[key]))
        except RequestError as exc:
            return str(exc)
        if not isinstance(spec.get(request.component), dict):
            return (
                f"migration request {request.uuid}: the InferenceService has no {request.component} component"
            )
    return None
