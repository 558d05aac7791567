"""The receive buffer asyncio gives each TLS connection, made smaller.

asyncio's TLS protocol (`asyncio.sslproto.SSLProtocol`) allocates a `max_size` buffer, 256 KiB, for every
connection it wraps, and fills it with zeros, so all of it is resident for the connection's life. The
manager holds one TLS connection per informer's watch and up to its pool size for requests: while 1,000
OMENative services came up it held 57 of them, 14.6 MiB of buffers (found with a heap census by referrer,
not visible in a Python object census). The buffer is only what one socket read may hand over at once:
TLS records are at most 16 KiB, so 64 KiB still takes several per read; a large LIST is read in more,
smaller reads, at the same cost (60 MiB over loopback TLS: 0.32-0.33 CPU s with either size, client and
server in one process).
"""

from __future__ import annotations

import asyncio.sslproto
from typing import Final

RECEIVE_BUFFER: Final = 64 * 1024


def limit_receive_buffer(size: int = RECEIVE_BUFFER) -> None:
    """Connections wrapped from now on get a `size` receive buffer, when this asyncio allocates one the
    way this module expects (a `max_size` class attribute); otherwise nothing changes."""
    protocol = getattr(asyncio.sslproto, "SSLProtocol", None)
    if protocol is not None and isinstance(getattr(protocol, "max_size", None), int):
        protocol.max_size = size
