"""A tiny synchronous JSON client for bootstrapping the dev cluster (before any controller runs).

The operator itself uses ome.framework.client; this exists so `ome-dev` works from a plain CLI without an
event loop and without depending on the framework it is used to test. Kubeconfigs are read by
kubernetes-asyncio's loader, as the framework's client reads them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client import Configuration

from ome.devcluster.pki import Pki


class KubeApiError(Exception):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:500]}")
        self.status = status


class KubeApi:
    def __init__(
        self,
        server: str,
        pki: Pki | None = None,
        *,
        timeout: float = 10.0,
        context: ssl.SSLContext | None = None,
    ) -> None:
        """Admin access with the dev cluster's Pki, or with a ready TLS `context` (from_kubeconfig)."""
        self.server = server.rstrip("/")
        self.timeout = timeout
        if context is None:
            if pki is None:
                raise ValueError("KubeApi needs a Pki or a TLS context")
            context = ssl.create_default_context(cafile=str(pki.ca_crt))
            context.load_cert_chain(str(pki.admin_crt), str(pki.admin_key))
        self._ssl = context
        self._token: str | None = None

    @classmethod
    def from_kubeconfig(cls, path: Path, *, timeout: float = 10.0) -> KubeApi:
        """The current context of a kubeconfig, read by kubernetes-asyncio's loader (the one kubeconfig
        parser of the project); client certificates and bearer tokens are supported."""
        configuration = Configuration()

        def load() -> None:  # the loader is async: run it on a loop of its own, in a thread of its own,
            # so this works from plain code and from inside a running event loop alike
            asyncio.run(k8s_config.load_kube_config(
                config_file=str(path), client_configuration=configuration, persist_config=False))

        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            pool.submit(load).result()
        context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
        if configuration.cert_file:
            context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
        api = cls(str(configuration.host), timeout=timeout, context=context)
        api._token = (configuration.api_key or {}).get("BearerToken")  # "Bearer <token>"
        return api

    def text(self, path: str) -> str:
        """A GET of a non-JSON path (the apiserver's /metrics)."""
        return self.data(path).decode()

    def data(self, path: str, *, timeout: float | None = None) -> bytes:
        """A GET of a path's bytes as served (a /debug/pprof profile); `timeout` overrides the client's."""
        req = urllib.request.Request(self.server + path, method="GET")
        if self._token:
            req.add_header("Authorization", self._token)
        wait = self.timeout if timeout is None else timeout
        try:
            with urllib.request.urlopen(req, context=self._ssl, timeout=wait) as resp:  # noqa: S310
                return bytes(resp.read())
        except urllib.error.HTTPError as exc:
            raise KubeApiError(exc.code, exc.read().decode(errors="replace")) from exc

    def request(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if self._token:
            req.add_header("Authorization", self._token)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, context=self._ssl, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raise KubeApiError(exc.code, exc.read().decode(errors="replace")) from exc
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode(errors="replace")

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def create(self, path: str, obj: dict[str, Any]) -> Any:
        return self.request("POST", path, obj)
