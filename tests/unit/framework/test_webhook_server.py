"""The admission webhook server over real TLS on loopback, with certificates from certs.py."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from cryptography import x509
from prometheus_client import REGISTRY

from ome.framework import admission, certs, pem_files
from ome.framework.webhook_server import WebhookServer


class Pki:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.ca_cert, self.ca_key = certs.generate_ca("webhook-test-ca")

    def issue(self) -> int:
        """Write a fresh serving pair for 127.0.0.1 and return its serial number."""
        cert, key = certs.generate_serving_cert(
            self.ca_cert, self.ca_key, "webhook", dns_names=["localhost"], ip_addresses=["127.0.0.1"]
        )
        pem_files.write_cert_pair(self.directory, cert, key)
        return certs.serial_number(cert)

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cadata=self.ca_cert.decode())


async def echo_allow(review: dict[str, Any]) -> dict[str, Any]:
    return admission.allowed(review["request"]["uid"], warnings=["looked at it"])


async def bare_allow(review: dict[str, Any]) -> dict[str, Any]:
    return {"allowed": True}  # no uid: the server copies it in


async def crash(review: dict[str, Any]) -> dict[str, Any]:
    raise RuntimeError("boom")


async def hang(review: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(30)
    raise AssertionError("not reached")


@pytest.fixture
async def pki(tmp_path: Path) -> Pki:
    pki = Pki(tmp_path)
    pki.issue()
    return pki


@pytest.fixture
async def server(pki: Pki) -> AsyncIterator[WebhookServer]:
    srv = WebhookServer(
        host="127.0.0.1", port=0, cert_dir=str(pki.directory), request_timeout=0.3, reload_interval=0.05
    )
    for path, handler in [("/allow", echo_allow), ("/bare", bare_allow), ("/crash", crash), ("/hang", hang)]:
        srv.register(path, handler)
    assert not srv.ready
    await srv.start()
    assert srv.ready
    yield srv
    await srv.stop()


def review_request(uid: str = "abc-123") -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": uid, "operation": "CREATE", "object": {"metadata": {"name": "x"}}},
    }


async def post(server: WebhookServer, pki: Pki, path: str, body: Any) -> tuple[int, Any]:
    url = f"https://127.0.0.1:{server.port}{path}"
    kwargs: dict[str, Any] = {"data": body} if isinstance(body, bytes) else {"json": body}
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, ssl=pki.client_context(), **kwargs) as resp,
    ):
        if resp.content_type == "application/json":
            return resp.status, await resp.json()
        return resp.status, await resp.text()


async def peer_serial(server: WebhookServer, pki: Pki) -> int:
    _, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=pki.client_context())
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        return x509.load_der_x509_certificate(der).serial_number
    finally:
        writer.close()
        await writer.wait_closed()


async def test_allowed_response_carries_request_uid(server: WebhookServer, pki: Pki) -> None:
    status, body = await post(server, pki, "/allow", review_request("uid-1"))
    assert status == 200
    assert body["apiVersion"] == "admission.k8s.io/v1" and body["kind"] == "AdmissionReview"
    assert body["response"] == {"uid": "uid-1", "allowed": True, "warnings": ["looked at it"]}


async def test_server_copies_uid_into_a_bare_response(server: WebhookServer, pki: Pki) -> None:
    _, body = await post(server, pki, "/bare", review_request("uid-2"))
    assert body["response"] == {"uid": "uid-2", "allowed": True}


async def test_handler_exception_denies_without_traceback(server: WebhookServer, pki: Pki) -> None:
    status, body = await post(server, pki, "/crash", review_request())
    assert status == 200
    response = body["response"]
    assert response["allowed"] is False and response["uid"] == "abc-123"
    assert response["status"]["code"] == 500
    assert response["status"]["message"] == "internal error in the admission webhook; see the ome-manager log"
    assert "boom" not in str(body)


def requests_counted(path: str, code: str) -> float:
    return REGISTRY.get_sample_value(
        "controller_runtime_webhook_requests_total", {"webhook": path, "code": code}
    ) or 0.0


async def test_requests_are_counted_by_code_and_a_crash_as_500(server: WebhookServer, pki: Pki) -> None:
    before = {key: requests_counted(*key) for key in (("/crash", "500"), ("/allow", "200"), ("/allow", "400"))}
    await post(server, pki, "/crash", review_request())
    await post(server, pki, "/allow", review_request())
    await post(server, pki, "/allow", b"{not json")
    assert requests_counted("/crash", "500") == before["/crash", "500"] + 1
    assert requests_counted("/allow", "200") == before["/allow", "200"] + 1
    assert requests_counted("/allow", "400") == before["/allow", "400"] + 1
    assert REGISTRY.get_sample_value("controller_runtime_webhook_requests_in_flight", {"webhook": "/allow"}) == 0


async def test_handler_timeout_denies(server: WebhookServer, pki: Pki) -> None:
    _, body = await post(server, pki, "/hang", review_request())
    assert body["response"]["allowed"] is False
    assert "timed out after 0.3s" in body["response"]["status"]["message"]


@pytest.mark.parametrize(
    ("path", "body", "status", "text"),
    [
        ("/allow", b"{not json", 400, "not valid JSON"),
        ("/allow", {"request": {}}, 400, "request.uid"),
        ("/allow", [1, 2], 400, "request.uid"),
        ("/nowhere", review_request(), 404, "no webhook registered at /nowhere"),
    ],
    ids=["bad-json", "no-uid", "not-an-object", "unknown-path"],
)
async def test_bad_requests_get_a_clear_error(
    server: WebhookServer, pki: Pki, path: str, body: Any, status: int, text: str
) -> None:
    got_status, got_body = await post(server, pki, path, body)
    assert got_status == status and text in got_body


async def test_rotated_certificate_is_served_to_new_connections(server: WebhookServer, pki: Pki) -> None:
    first = await peer_serial(server, pki)
    rotated = pki.issue()
    assert rotated != first
    for _ in range(100):
        if await peer_serial(server, pki) == rotated:
            break
        await asyncio.sleep(0.02)
    else:
        pytest.fail("rotated certificate was never served")
    status, _ = await post(server, pki, "/allow", review_request())
    assert status == 200


async def test_mismatched_pair_keeps_serving_the_old_certificate(server: WebhookServer, pki: Pki) -> None:
    first = await peer_serial(server, pki)
    other_cert, _ = certs.generate_serving_cert(pki.ca_cert, pki.ca_key, "other", ip_addresses=["127.0.0.1"])
    pem_files.write_pem(pki.directory / "tls.crt", other_cert)  # key not rotated yet
    await asyncio.sleep(0.2)
    assert await peer_serial(server, pki) == first


def test_register_rejects_duplicates_and_relative_paths(tmp_path: Path) -> None:
    srv = WebhookServer(cert_dir=str(tmp_path))
    srv.register("/a", echo_allow)
    with pytest.raises(ValueError, match="already registered"):
        srv.register("/a", echo_allow)
    with pytest.raises(ValueError, match="must start with"):
        srv.register("a", echo_allow)
    with pytest.raises(ValueError, match="request_timeout"):
        WebhookServer(cert_dir=str(tmp_path), request_timeout=10)


async def test_start_fails_without_certificates(tmp_path: Path) -> None:
    srv = WebhookServer(host="127.0.0.1", port=0, cert_dir=str(tmp_path))
    with pytest.raises(FileNotFoundError):
        await srv.start()
    assert not srv.ready
