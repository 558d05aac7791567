"""A loopback TCP proxy a test can cut (drop connections, refuse new ones) or pause (hold all traffic)."""

from __future__ import annotations

import asyncio
import contextlib


class TcpProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._server: asyncio.Server | None = None
        self._conns: set[asyncio.StreamWriter] = set()
        self.blocked = False
        self._flowing = asyncio.Event()
        self._flowing.set()

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)

    async def stop(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def cut(self) -> None:
        for writer in list(self._conns):
            writer.transport.abort()
        self._conns.clear()

    def block(self) -> None:
        self.blocked = True
        self.cut()

    def unblock(self) -> None:
        self.blocked = False

    def pause(self) -> None:
        """Stops relaying: peers see a silent, still-open connection. `cut()` then drops what was held."""
        self._flowing.clear()

    def resume(self) -> None:
        self._flowing.set()
        self._flowing = asyncio.Event()
        self._flowing.set()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.blocked:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.transport.abort()
            return
        self._conns.update((writer, up_writer))
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while True:
                await self._flowing.wait()  # paused: read nothing, so nothing reaches the peer
                if not (data := await reader.read(65536)):
                    break
                writer.write(data)
                await writer.drain()
        writer.transport.abort()
        self._conns.discard(writer)
