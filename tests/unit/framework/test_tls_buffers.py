"""A TLS connection's receive buffer is 64 KiB, not asyncio's 256 KiB, and data larger than it still
arrives whole."""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes_asyncio.client import Configuration

from ome.framework import certs, pem_files, tls_buffers
from ome.framework.transport import Transport


@pytest.fixture
def restored() -> Iterator[None]:
    before = asyncio.sslproto.SSLProtocol.max_size
    yield
    asyncio.sslproto.SSLProtocol.max_size = before


@pytest.fixture
def contexts(tmp_path: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    ca_crt, ca_key = certs.generate_ca("test-ca")
    crt, key = certs.generate_serving_cert(ca_crt, ca_key, "localhost", ip_addresses=("127.0.0.1",))
    pem_files.write_cert_pair(tmp_path, crt, key, cert_name="tls.crt", key_name="tls.key")
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    client = ssl.create_default_context(cadata=ca_crt.decode())
    return server, client


async def test_a_connection_made_after_the_limit_gets_the_smaller_buffer_and_reads_large_data_whole(
    restored: None, contexts: tuple[ssl.SSLContext, ssl.SSLContext]
) -> None:
    server_ctx, client_ctx = contexts
    payload = bytes(range(256)) * 4096  # 1 MiB: many reads of the smaller buffer

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(payload)
        await writer.drain()
        writer.close()

    tls_buffers.limit_receive_buffer()
    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=server_ctx)
    port = server.sockets[0].getsockname()[1]
    async with server:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_ctx,
                                                       server_hostname="localhost")
        ssl_protocol = getattr(writer.transport, "_ssl_protocol", None)
        assert isinstance(ssl_protocol, asyncio.sslproto.SSLProtocol)
        assert len(ssl_protocol._ssl_buffer) == tls_buffers.RECEIVE_BUFFER  # noqa: SLF001
        assert await reader.readexactly(len(payload)) == payload
        writer.close()
        await writer.wait_closed()


async def test_the_apiserver_transport_limits_the_buffer_before_its_first_connection(restored: None) -> None:
    asyncio.sslproto.SSLProtocol.max_size = 256 * 1024
    transport = Transport(Configuration(host="https://127.0.0.1:9"))
    try:
        transport._session()  # noqa: SLF001 - the sessions are made on first use
        assert asyncio.sslproto.SSLProtocol.max_size == tls_buffers.RECEIVE_BUFFER
    finally:
        await transport.close()
