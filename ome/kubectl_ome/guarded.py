"""The guarded-action contract every writing command follows (kubectl-ome "Guarded actions").

Sequence, stopping at the first step that fails:
  1. checks and reads (the command's own module), refusing when the change is not safe now;
  2. the preview of the exact change on stderr;
  3. `Confirm this exact action? [y/N]` on stderr unless --yes (a terminal on stdin is required);
  4. the command's second read, for the actions that revalidate (a change exits 3);
  5. one JSON Patch that first tests the target's UID and resourceVersion; a client dry run stops
     before it, a server dry run sends it with dryRun=All (the apiserver runs the tests and
     admission, stores nothing); a failed test or a 409 exits 3;
  6. the ActionResult (`cli.ome.io/v1alpha1`) on stdout, as a table or with -o json|yaml.
The whole action has 45 seconds, the prompt included; each request at most 10 of them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Any, Final

from ome.framework import errors
from ome.framework.client import Client
from ome.framework.resources import Resource
from ome.kubectl_ome.failures import NOT_CONFIRMED, READ_FAILED, CliError, Conflict, Refused
from ome.kubectl_ome.output import API_VERSION, FULL_VALUES_HINT, dash, field_table, render, rfc3339, yes_no
from ome.kubectl_ome.table import shorten_end

Obj = dict[str, Any]

DRY_RUN_MODES: Final = ("none", "client", "server")
ACTION_OUTPUTS: Final = ("table", "wide", "json", "yaml")
ACTION_DEADLINE: Final = 45.0
REQUEST_TIMEOUT: Final = 10.0
RESULT_WIDTH: Final = 56
"""The ActionResult table cuts values at 56 characters."""
MAX_TARGET_BYTES: Final = 1_500_000
JSON_PATCH: Final = "application/json-patch+json"
PROMPT: Final = "Confirm this exact action? [y/N] "
PREVIEW_TITLE: Final = "ALPHA guarded action preview (not controller convergence)"

CLIENT_MESSAGE: Final = "Validated locally; no patch sent."
SERVER_MESSAGE: Final = "API dry-run accepted; no changes persisted."
APPLIED_MESSAGE: Final = "API accepted annotation request; convergence not observed."


@dataclass(frozen=True, slots=True)
class Target:
    kind: str
    namespace: str
    name: str
    uid: str
    resource_version: str

    @property
    def ref(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"

    def as_document(self) -> Obj:
        return {
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
            "resourceVersion": self.resource_version,
        }


def target_of(obj: Mapping[str, Any], kind: str) -> Target:
    """The identity the patch will test, after the target checks every action shares."""
    meta = obj.get("metadata") or {}
    fields = [meta.get(k) for k in ("name", "namespace", "uid", "resourceVersion")]
    generation = meta.get("generation")
    if not all(isinstance(v, str) and v for v in fields) or not isinstance(generation, int) or generation < 1:
        raise Refused("target identity is missing or unsafe")
    if meta.get("deletionTimestamp"):
        raise Refused("target is being deleted")
    if len(json.dumps(obj, default=str)) > MAX_TARGET_BYTES:
        raise Refused("safety inputs exceed inspection bounds")
    name, namespace, uid, rv = (str(v) for v in fields)
    return Target(kind, namespace, name, uid, rv)


def check_service(isvc: Mapping[str, Any]) -> Target:
    """Target checks on the InferenceService, including the alpha multi-cluster placement refusal."""
    target = target_of(isvc, "InferenceService")
    spec = isvc.get("spec") or {}
    annotations = (isvc.get("metadata") or {}).get("annotations") or {}
    if spec.get("placement") or any(k.startswith("ome.io/placement-") for k in annotations):
        raise Refused("placement sources and derived services cannot be mutated")
    return target


def identity_tests(target: Target) -> list[Obj]:
    return [
        {"op": "test", "path": "/metadata/uid", "value": target.uid},
        {"op": "test", "path": "/metadata/resourceVersion", "value": target.resource_version},
    ]


def annotation_path(key: str) -> str:
    """A JSON Pointer to metadata.annotations[key] (RFC 6901 escapes ~ and /)."""
    return "/metadata/annotations/" + key.replace("~", "~0").replace("/", "~1")


def set_annotation(obj: Mapping[str, Any], key: str, value: str) -> list[Obj]:
    """Operations that set one annotation, creating the map when the object has none."""
    annotations = (obj.get("metadata") or {}).get("annotations")
    if annotations is None:
        return [{"op": "add", "path": "/metadata/annotations", "value": {key: value}}]
    op = "replace" if key in annotations else "add"
    return [{"op": op, "path": annotation_path(key), "value": value}]


def remove_annotation(obj: Mapping[str, Any], key: str) -> list[Obj]:
    """Test the value the preview showed, then remove it: a concurrent edit fails the patch."""
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(key)
    if value is None:
        return []
    return [
        {"op": "test", "path": annotation_path(key), "value": value},
        {"op": "remove", "path": annotation_path(key)},
    ]


@dataclass(slots=True)
class Action:
    """One guarded change, as a command module prepares it after its reads and checks."""

    name: str
    resource: Resource
    target: Target
    operations: list[Obj]
    follow_up: str
    preview: list[tuple[str, str]]
    warnings: list[str] = field(default_factory=list)
    preview_title: str = PREVIEW_TITLE
    applied_message: str = APPLIED_MESSAGE
    client_message: str = CLIENT_MESSAGE
    server_message: str = SERVER_MESSAGE
    conflict_message: str = "guarded patch rejected; the target changed after it was read; inspect and retry"
    unknown_message: str | None = None
    """The `outcome unknown` text for a patch failure other than a conflict (None: the fixed read text)."""
    denied_message: str = READ_FAILED
    request_id: str | None = None
    revision_hash: str | None = None
    result_rows: list[tuple[str, str]] | None = None
    """Rows replacing request-id/revision-hash in the result table (repin, scale)."""
    wide_rows: list[tuple[str, str]] = field(default_factory=list)
    extra: Obj = field(default_factory=dict)
    """Fields the ActionResult adds (`rollout`, `scale`)."""
    subresource: str | None = None
    revalidate: Callable[[], Awaitable[None]] | None = None
    """The second read; raises Conflict (or CliError) when an input changed since the preview."""


@dataclass(frozen=True, slots=True)
class Outcome:
    dry_run: str
    accepted: bool
    applied: bool
    message: str


@dataclass(slots=True)
class Terminal:
    """Where the preview and prompt go, and where the answer comes from."""

    stdin: IO[str]
    stderr: IO[str]
    clock: Callable[[], datetime]


def preview_text(action: Action, context: str, ome_namespace: str | None, dry_run: str) -> str:
    """The preview: the title, a FIELD/VALUE table of every value in full, then the warnings."""
    rows = [("Action", action.name), ("Context", context or "-"), ("Workload NS", action.target.namespace)]
    if ome_namespace is not None:
        rows.append(("OME NS", ome_namespace))
    rows += [
        ("Target", f"{action.target.kind}/{action.target.name}"),
        ("UID", action.target.uid),
        ("ResourceVersion", action.target.resource_version),
        ("Dry-run", dry_run),
        *action.preview,
    ]
    text = action.preview_title + "\n" + field_table(rows)
    return text + "".join(f"{w}\n" for w in action.warnings)


async def confirm(terminal: Terminal, yes: bool) -> None:
    """Step 3: --yes, or `y`/`yes` typed at a terminal; anything else stops the action."""
    if yes:
        return
    if not terminal.stdin.isatty():
        raise CliError(NOT_CONFIRMED)
    terminal.stderr.write(PROMPT)
    terminal.stderr.flush()
    answer = await asyncio.to_thread(terminal.stdin.readline)
    if answer.strip().lower() not in ("y", "yes"):
        raise CliError(NOT_CONFIRMED)


def _is_conflict(exc: errors.ApiError) -> bool:
    """A 409, or the 422 the apiserver answers when a JSON Patch `test` operation fails.

    The apiserver puts the jsonpatch error ("testing value ... failed") in details.causes and a generic
    message on top; an admission or schema denial names its fields instead."""
    if isinstance(exc, errors.Conflict):
        return True
    if exc.status != 422:
        return False
    texts = [exc.message, *(c.message for c in exc.causes)]
    if any("test" in t.lower() and "fail" in t.lower() for t in texts):
        return True
    return not any(c.field for c in exc.causes) and exc.message.startswith("the server rejected our request")


async def send(client: Client, action: Action, dry_run: str) -> Outcome:
    """Step 5: one JSON Patch with the identity tests first; a conflict exits 3."""
    if dry_run == "client":
        return Outcome("client", False, False, action.client_message)
    ops = identity_tests(action.target) + action.operations
    path = action.resource.path(action.target.namespace, action.target.name, action.subresource)
    query = [("dryRun", "All")] if dry_run == "server" else []
    try:
        # Client.patch has no dryRun; the JSON Patch goes through the client's request path directly.
        await client._call(
            "PATCH", path, query=query, body=ops, content_type=JSON_PATCH, timeout=REQUEST_TIMEOUT
        )
    except errors.ApiError as exc:
        if _is_conflict(exc):
            raise Conflict(action.conflict_message) from exc
        if isinstance(exc, errors.Forbidden | errors.Unauthorized | errors.NotFound):
            raise CliError(action.denied_message) from exc
        if isinstance(exc, errors.Invalid | errors.BadRequest):  # admission or validation said no
            raise CliError(f"{action.name} rejected by the API server: {exc.message or exc}") from exc
        raise CliError(action.unknown_message or f"{action.name} request outcome unknown: {exc}") from exc
    if dry_run == "server":
        return Outcome("server", True, False, action.server_message)
    return Outcome("none", True, True, action.applied_message)


async def execute(
    client: Client,
    action: Action,
    terminal: Terminal,
    *,
    context: str,
    ome_namespace: str | None,
    dry_run: str,
    yes: bool,
) -> Outcome:
    """Steps 2-5 for a prepared action."""
    terminal.stderr.write(preview_text(action, context, ome_namespace, dry_run))
    terminal.stderr.flush()
    await confirm(terminal, yes)
    if action.revalidate is not None:
        await action.revalidate()
    return await send(client, action, dry_run)


def result_document(action: Action, outcome: Outcome, collected_at: datetime) -> Obj:
    """The ActionResult; empty fields are left out."""
    doc: Obj = {
        "apiVersion": API_VERSION,
        "kind": "ActionResult",
        "collectedAt": rfc3339(collected_at),
        "action": action.name,
        "target": action.target.as_document(),
        "dryRun": outcome.dry_run,
    }
    if action.request_id:
        doc["requestID"] = action.request_id
    if action.revision_hash:
        doc["revisionHash"] = action.revision_hash
    doc.update({"accepted": outcome.accepted, "applied": outcome.applied, "message": outcome.message})
    doc["followUp"] = action.follow_up
    doc.update(action.extra)
    return doc


def result_rows(action: Action, outcome: Outcome, wide: bool = False) -> list[tuple[str, str]]:
    rows = [
        ("action", action.name),
        ("target", action.target.ref),
        ("dry-run", outcome.dry_run),
        ("accepted", yes_no(outcome.accepted)),
        ("applied", yes_no(outcome.applied)),
    ]
    if action.result_rows is not None:
        rows += action.result_rows
    else:
        rows += [("request-id", dash(action.request_id)), ("revision-hash", dash(action.revision_hash))]
    if wide:
        rows += [("uid", action.target.uid), ("resource-version", action.target.resource_version)]
        rows += action.wide_rows
    rows += [("message", outcome.message), ("follow-up", action.follow_up), ("hint", FULL_VALUES_HINT)]
    return rows


def format_result(action: Action, outcome: Outcome, output: str, collected_at: datetime) -> str:
    if output in ("json", "yaml"):
        return render(result_document(action, outcome, collected_at), output)
    rows = result_rows(action, outcome, wide=output == "wide")
    return field_table([(f, shorten_end(v, RESULT_WIDTH)) for f, v in rows])


async def run_guarded(
    client: Client,
    prepare: Callable[[], Awaitable[Action]],
    terminal: Terminal,
    *,
    context: str,
    ome_namespace: str | None,
    dry_run: str,
    yes: bool,
    output: str,
) -> str:
    """The whole sequence within its 45 seconds; returns the result text for stdout."""

    async def sequence() -> str:
        action = await prepare()
        outcome = await execute(
            client, action, terminal, context=context, ome_namespace=ome_namespace, dry_run=dry_run, yes=yes
        )
        return format_result(action, outcome, output, terminal.clock())

    try:
        return await asyncio.wait_for(sequence(), ACTION_DEADLINE)
    except TimeoutError:
        raise CliError("context deadline exceeded") from None


def check_flags(dry_run: str, output: str) -> None:
    if dry_run not in DRY_RUN_MODES:
        raise CliError(f'invalid --dry-run "{dry_run}"; use none, client or server')
    if output not in ACTION_OUTPUTS:
        raise CliError(f'invalid output "{output}"; use table, wide, json or yaml')


def follow_up(command: str, name: str, namespace: str, context: str, *extra: str) -> str:
    parts = ["kubectl ome", command, name, *extra, "-n", namespace]
    if context:
        parts.append(f"--context={context}")
    return " ".join(parts)


def read_failed(exc: BaseException) -> CliError:
    """Any failed read an action needs refuses with the fixed text."""
    return CliError(READ_FAILED)


def annotations_of(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("annotations") or {})


def mailbox_present(annotations: Mapping[str, str], keys: Sequence[str]) -> bool:
    return any(k in annotations for k in keys)
