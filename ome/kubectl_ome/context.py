"""What every command handler gets, and the reads several command groups share.

A handler is `async (Ctx, argparse.Namespace) -> str`: the text for stdout. Failures raise
`failures.CliError` (exit 1, or 3 for a Conflict) or `failures.Unmet` (exit 2 after the report).
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import IO, Any

from ome.api.resources import CONTROLLER_REVISIONS, INFERENCE_SERVICES
from ome.framework import errors
from ome.framework.client import Client
from ome.kubectl_ome import effective, fetch
from ome.kubectl_ome.connection import Connection
from ome.kubectl_ome.effective import RuntimeRead
from ome.kubectl_ome.failures import READ_FAILED, CliError, Refused
from ome.kubectl_ome.guarded import Terminal
from ome.resolution.modes import OMENATIVE

Obj = dict[str, Any]

PAUSED: str = "ome.io/rollout-paused"
PROMOTE: str = "ome.io/rollout-promote"
ROLLBACK: str = "ome.io/rollout-rollback"
REPIN: str = "ome.io/rollout-repin"
RELEASE_HELD: str = "ome.io/release-held-revision"
RUNTIME_SYNC: str = "ome.io/runtime-sync"
MIGRATION_PREFIX: str = "ome.io/migration-request-v1-"
RUNTIME_UNBOUND: str = "active runtime is unavailable, inconsistent or unbound"


@dataclass(slots=True)
class Ctx:
    conn: Connection
    terminal: Terminal
    stdout: IO[str]

    @property
    def client(self) -> Client:
        return self.conn.client

    @property
    def namespace(self) -> str:
        return self.conn.namespace

    @property
    def context(self) -> str:
        return self.conn.context

    def now(self) -> datetime:
        return self.terminal.clock()


Handler = Callable[[Ctx, argparse.Namespace], Awaitable[str]]


async def read_isvc(client: Client, name: str, namespace: str, missing: str | None = None) -> Obj:
    try:
        return await fetch.read_isvc(client, name, namespace)
    except errors.NotFound:
        raise CliError(missing or f'InferenceService "{name}" not found in namespace "{namespace}"') from None


async def read_for_action(client: Client, name: str, namespace: str) -> Obj:
    """The target of an action: any failed read refuses with the fixed text."""
    try:
        return await client.get(INFERENCE_SERVICES, name, namespace)
    except errors.ApiError:
        raise CliError(READ_FAILED) from None


@dataclass(frozen=True, slots=True)
class ActiveRuntime:
    runtime: RuntimeRead
    omenative: list[str]
    """The components that run on OMENative."""


async def resolve_active_runtime(
    client: Client, isvc: Mapping[str, Any], ome_namespace: str
) -> ActiveRuntime:
    """The runtime checks `pause`, `resume`, `promote`, `rollback`, `scale`, `release-held` and
    `migration start` share: the runtime and any revision the service names must read, at least one
    component must run on OMENative, and the controller must report the runtime the spec names."""
    spec, status = isvc.get("spec") or {}, isvc.get("status") or {}
    runtime = await fetch.read_runtime(client, isvc)
    ref = spec.get("runtime") or {}
    if ref.get("name") and runtime.obj is None:
        raise CliError(READ_FAILED)
    for revision in (ref.get("revision"), status.get("pinnedRevisionName")):
        if ref.get("name") and revision:
            try:
                await client.get(CONTROLLER_REVISIONS, str(revision), ome_namespace)
            except errors.ApiError:
                raise CliError(READ_FAILED) from None
    modes = effective.component_modes(isvc, runtime.obj)
    omenative = [m.component for m in modes if m.mode == OMENATIVE]
    if not omenative:
        raise Refused(RUNTIME_UNBOUND)
    reported = fetch.runtime_name_reported(isvc)
    if ref.get("name") and reported and reported != ref["name"]:
        raise Refused(RUNTIME_UNBOUND)
    return ActiveRuntime(runtime, omenative)


def annotations_of(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("annotations") or {})
