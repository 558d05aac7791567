"""A tiny synchronous JSON client for bootstrapping the dev cluster (before any controller runs).

The operator itself uses ome.framework.client; this exists so `ome-dev` works from a plain CLI without an
event loop and without depending on the framework it is used to test.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

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

    @classmethod
    def from_kubeconfig(cls, path: Path, *, timeout: float = 10.0) -> KubeApi:
        """The current context of a kubeconfig with embedded certificates (kind's, or ours)."""
        config = yaml.safe_load(path.read_text())
        current = config.get("current-context")
        context = next(c["context"] for c in config["contexts"] if c["name"] == current)
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
        user = next(u["user"] for u in config["users"] if u["name"] == context["user"])
        ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
        context = ssl.create_default_context(cadata=ca)
        with tempfile.TemporaryDirectory() as tmp:  # load_cert_chain reads files only
            crt, key = Path(tmp, "client.crt"), Path(tmp, "client.key")
            crt.write_bytes(base64.b64decode(user["client-certificate-data"]))
            fd = os.open(key, os.O_WRONLY | os.O_CREAT, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(base64.b64decode(user["client-key-data"]))
            context.load_cert_chain(str(crt), str(key))
        return cls(cluster["server"], timeout=timeout, context=context)

    def request(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Accept", "application/json")
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
