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
    """Yield `(type, object)` per line until a clean end of stream.

    Reads whatever the socket delivered and splits it into lines here, instead of one `readline()` per
    event: a WatchList of 10,000 Pods is 10,000 lines, and aiohttp's readline costs more per line than
    the split, and refuses a line above its buffer limit (128 KiB: one large object would break the
    watch). A tail without its newline at the end of the stream is decoded as is, so a stream cut
    mid-object raises TransportError, as readline's last partial line did.
    """
    parts: list[bytes] = []  # the start of a line still waiting for its newline
    while chunk := await read_or_raise(content.readany(), what):
        if b"\n" not in chunk:
            parts.append(chunk)
            continue
        if parts:
            parts.append(chunk)
            chunk, parts = b"".join(parts), []
        *lines, rest = chunk.split(b"\n")
        if rest:
            parts.append(rest)
        for line in lines:
            if line.strip():
                yield decode_event(line)
    tail = b"".join(parts)
    if tail.strip():
        yield decode_event(tail)


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
