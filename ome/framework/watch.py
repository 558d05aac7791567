"""Decoding of one watch stream: a JSON event per line, ERROR events raised as ApiError.

Kept apart from the client so the line loop stays tiny: it runs once per event, and per event
we budget ~50 µs in total (framework.md rule 12). Bookmarks are passed through; deciding what they
mean (resourceVersion, the WatchList end marker) is the reflector's job.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import aiohttp
import orjson

from ome.framework import errors
from ome.framework.transport import read_or_raise

Obj = dict[str, Any]


async def events(content: aiohttp.StreamReader, what: str) -> AsyncGenerator[tuple[str, Obj], None]:
    """Yield `(type, object)` per line until a clean end of stream."""
    while line := await read_or_raise(content.readline(), what):
        if line.strip():
            yield decode_event(line)


def decode_event(line: bytes) -> tuple[str, Obj]:
    """One watch line; an ERROR event (or a bare Status) raises its mapped ApiError (410: Gone)."""
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise errors.TransportError(0, "BadResponse", f"undecodable watch line: {line[:200]!r}") from exc
    kind = event.get("type") if isinstance(event, dict) else None
    obj = event.get("object") if isinstance(event, dict) else None
    if kind == "ERROR" and isinstance(obj, dict):
        raise errors.error_from_status(obj)
    if not isinstance(kind, str) or not isinstance(obj, dict):
        if isinstance(event, dict) and event.get("kind") == "Status":
            raise errors.error_from_status(event)
        raise errors.TransportError(0, "BadResponse", f"malformed watch event: {line[:200]!r}")
    return kind, obj
