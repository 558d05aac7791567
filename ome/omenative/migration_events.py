"""Texts of the migration and relocation events and records (pure), as v1.3 words them.

One place for every message the migration controller writes, so the planners, the reconciler and the
tests quote the same strings. Reasons are the documented ones (migration-and-transient-scale.md §Watch
migrations); the message shapes follow the v1.3 controller (`component=<c> instance=<i>` names an
Instance; a refusal reads `OMENative migration uuid=<uuid> rejected: <why>`).

A request OME fails for any cause but its deadline or a wedged surge pod also gets
`MigrationRequestRejected` beside the cause's own reason (FromNodeMismatch, NodeAffinityConflict,
RateLimited), as the docs' event table says.
"""

from __future__ import annotations

from typing import Final

Event = tuple[str, str, str]

NORMAL: Final = "Normal"
WARNING: Final = "Warning"

ACCEPTED: Final = "MigrationRequestAccepted"
COMPLETED: Final = "MigrationCompleted"
REJECTED: Final = "MigrationRequestRejected"
UNSUPPORTED_SCHEMA: Final = "UnsupportedSchemaVersion"
FROM_NODE_MISMATCH: Final = "MigrationFromNodeMismatch"
AFFINITY_CONFLICT: Final = "MigrationNodeAffinityConflict"
RATE_LIMITED: Final = "RateLimited"
UNCONFIGURED: Final = "MigrationPolicyUnconfigured"
CREATE_BLOCKED: Final = "MigrationSurgeCreateBlocked"
WEDGED: Final = "MigrationSurgeWedged"
EXPIRED: Final = "MigrationExpired"
AUTO_TRIGGERED: Final = "AutoMigrationTriggered"
AUTO_CAP: Final = "AutoMigrationCapReached"

NEVER_MESSAGE: Final = "migrations disabled by MigrationPolicy Mode=Never"
UNCONFIGURED_MESSAGE: Final = "waiting for migration capacity policy (no lifecycle.audit configured)"
SOURCE_MISSING: Final = "source InstanceStatus missing"
AUTO_RECOVER: Final = "AutoRecover"
"""The `reason` of a Relocated record."""

EXPIRY_BLOCKERS: Final = {
    "Accepted": "deadline exceeded in phase Accepted: surge never allocated",
    "SurgePending": "deadline exceeded in phase SurgePending: surge pods never became ready",
    "SurgeReady": "deadline exceeded in phase SurgeReady: source drain never started",
    "Draining": "deadline exceeded in phase Draining: source drain incomplete",
}


def instance_key(component: str, index: int) -> str:
    return f"component={component} instance={index}"


def rejected(uuid: str, why: str) -> str:
    return f"OMENative migration uuid={uuid} rejected: {why}"


def rejection(reason: str, uuid: str, why: str) -> list[Event]:
    """The cause's own Warning, then MigrationRequestRejected with the same text."""
    text = rejected(uuid, why)
    if reason == REJECTED:
        return [(WARNING, REJECTED, text)]
    return [(WARNING, reason, text), (WARNING, REJECTED, text)]


def accepted(component: str, index: int, uuid: str, from_node: str, surge: int) -> str:
    return (f"OMENative {instance_key(component, index)} migration accepted (uuid={uuid}, "
            f"source-node={from_node}, surge-index={surge})")


def completed(uuid: str, component: str, index: int, surge: int, revision: str) -> str:
    return (f"OMENative migration uuid={uuid} complete: {instance_key(component, index)} "
            f"-> instance={surge} (revision={revision})")


def held(uuid: str) -> str:
    return f"OMENative migration uuid={uuid} held: {UNCONFIGURED_MESSAGE}"


def create_blocked(uuid: str, pod: str) -> str:
    return f"OMENative migration uuid={uuid} waiting to create surge pod {pod} before its deadline"


def wedged(uuid: str, blocker: str, surge: int) -> str:
    return f"OMENative migration uuid={uuid} failed: {blocker}; tearing down surge instance={surge}"


def expired(uuid: str, blocker: str, surge: int | None) -> str:
    if surge is None:
        return f"OMENative migration uuid={uuid} expired: {blocker}"
    return f"OMENative migration uuid={uuid} expired: {blocker}; tearing down surge instance={surge}"


def affinity_conflict(from_node: str) -> str:
    return (f"source PodSpec NodeAffinity requires kubernetes.io/hostname={from_node}; overlay's "
            f"NotIn[{from_node}] would make scheduling impossible")


def from_node_mismatch(from_node: str, observed: list[str], gang: bool) -> str:
    if gang:
        return f"request.FromNode={from_node} hosts no source pod; gang spans nodes {', '.join(observed)}"
    if len(observed) > 1:
        return f"source pods span multiple nodes ({observed[0]}, {observed[1]})"
    return f"request.FromNode={from_node} does not match observed source node={observed[0]}"


def rate_cap(started: int, cap: int, window: str) -> str:
    return f"migration rate cap reached ({started}/{cap} in the last {window})"


def unknown_component(component: str) -> str:
    return f'component "{component}" does not exist on this InferenceService'


def relocation_record(node: str) -> str:
    return f"relocation directive recorded; rebuild steered off node {node}"


def auto_triggered(component: str, index: int, attempt: int, cap: int, node: str, uuid: str) -> str:
    return (f"OMENative {instance_key(component, index)} relocation directive recorded: "
            f"attempt {attempt}/{cap}, rebuild steered off node {node} (uuid={uuid})")


def auto_cap(component: str, index: int, attempt: int, cap: int) -> str:
    return (f"OMENative {instance_key(component, index)} relocation budget exhausted "
            f"({attempt}/{cap} attempts); further expiries dispose terminal without relocation")
