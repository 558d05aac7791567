"""The apiserver's proxy comes from the environment once per session, not per request (transport.py)."""

from __future__ import annotations

import pytest
from kubernetes_asyncio.client import Configuration
from yarl import URL

from ome.framework.transport import Transport, env_proxy

HOST = "https://10.1.2.3:6443"


@pytest.fixture(autouse=True)
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy",
                 "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


def test_https_proxy_applies_unless_no_proxy_names_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    assert env_proxy(HOST) == (None, None)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    assert env_proxy(HOST)[0] == URL("http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "10.1.2.3")
    assert env_proxy(HOST) == (None, None)


async def test_sessions_carry_the_proxy_and_do_not_read_the_environment_per_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    transport = Transport(Configuration(host=HOST))
    try:
        session = transport._session()
        # trust_env makes aiohttp look up the proxy and ~/.netrc in a worker thread on every request.
        assert session.trust_env is False
        assert session._default_proxy == URL("http://proxy.example:3128")
    finally:
        await transport.close()
