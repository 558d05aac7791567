#!/usr/bin/env python3
"""Capture the Kubernetes OpenAPI v3 schemas the ome.io CRDs embed.

    python hack/capture_openapi.py --kubeconfig PATH [--out FILE]
    python hack/capture_openapi.py --spec-dir KUBERNETES_SRC/api/openapi-spec/v3 [--out FILE]

Reads the apiserver's ``/openapi/v3/api/v1``, ``/openapi/v3/apis/apps/v1`` and
``/openapi/v3/apis/autoscaling/v2`` documents (from a live apiserver with the kubeconfig's
credentials, or from the same files in a Kubernetes source tree), merges their
``components.schemas``, keeps the transitive closure of the types the models embed, strips
descriptions, and writes ``ome/api/openapi/k8s-openapi-v3.json``. Then run
``python -m ome.api.crdgen``.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import ssl
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from ome.api.k8s_openapi import BUILTIN, DATA_FILE, ref_closure  # noqa: E402
from ome.api.schema import embedded_refs  # noqa: E402
from ome.api.v1beta1 import KINDS  # noqa: E402

DOCUMENTS = ("api/v1", "apis/apps/v1", "apis/autoscaling/v2")


def roots() -> list[str]:
    return sorted(embedded_refs(list(KINDS)) - set(BUILTIN))


def strip_descriptions(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: strip_descriptions(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [strip_descriptions(v) for v in node]
    return node


# --- reading the documents -------------------------------------------------------------------


def read_spec_dir(spec_dir: Path) -> dict[str, Any]:
    schemas: dict[str, Any] = {}
    for doc in DOCUMENTS:
        path = spec_dir / (doc.replace("/", "__") + "_openapi.json")
        schemas.update(json.loads(path.read_text())["components"]["schemas"])
    return schemas


def _data_or_file(entry: dict[str, Any], key: str, base: Path) -> bytes | None:
    if entry.get(f"{key}-data"):
        return base64.b64decode(entry[f"{key}-data"])
    if entry.get(key):
        path = Path(entry[key])
        return (path if path.is_absolute() else base / path).read_bytes()
    return None


@contextmanager
def _client(kubeconfig: Path) -> Iterator[tuple[str, ssl.SSLContext, dict[str, str]]]:
    config = yaml.safe_load(kubeconfig.read_text())
    base = kubeconfig.parent
    ctx_name = config["current-context"]
    ctx = next(c["context"] for c in config["contexts"] if c["name"] == ctx_name)
    cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == ctx["cluster"])
    user = next(u["user"] for u in config["users"] if u["name"] == ctx["user"])

    ssl_ctx = ssl.create_default_context()
    ca = _data_or_file(cluster, "certificate-authority", base)
    if ca is not None:
        ssl_ctx.load_verify_locations(cadata=ca.decode())
    if cluster.get("insecure-skip-tls-verify"):
        ssl_ctx.check_hostname = False
        ssl_ctx.verify_mode = ssl.CERT_NONE
    headers = {"Accept": "application/json"}
    if user.get("token"):
        headers["Authorization"] = f"Bearer {user['token']}"
    cert = _data_or_file(user, "client-certificate", base)
    key = _data_or_file(user, "client-key", base)
    with tempfile.TemporaryDirectory() as tmp:
        if cert is not None and key is not None:
            cert_path, key_path = Path(tmp, "client.crt"), Path(tmp, "client.key")
            cert_path.write_bytes(cert)
            key_path.write_bytes(key)
            os.chmod(key_path, 0o600)
            ssl_ctx.load_cert_chain(cert_path, key_path)
        yield cluster["server"].rstrip("/"), ssl_ctx, headers


def read_apiserver(kubeconfig: Path) -> dict[str, Any]:
    schemas: dict[str, Any] = {}
    with _client(kubeconfig) as (server, ssl_ctx, headers):
        for doc in DOCUMENTS:
            request = urllib.request.Request(f"{server}/openapi/v3/{doc}", headers=headers)
            with urllib.request.urlopen(request, context=ssl_ctx, timeout=60) as resp:
                schemas.update(json.loads(resp.read())["components"]["schemas"])
    return schemas


# --- main ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--kubeconfig", type=Path, help="read from the apiserver this kubeconfig names")
    source.add_argument("--spec-dir", type=Path, help="read api/openapi-spec/v3 of a Kubernetes source tree")
    parser.add_argument("--out", type=Path, default=DATA_FILE)
    args = parser.parse_args(argv)

    schemas = read_apiserver(args.kubeconfig) if args.kubeconfig else read_spec_dir(args.spec_dir)
    wanted = roots()
    missing = [name for name in wanted if name not in schemas]
    if missing:
        print(f"error: the documents lack {missing}", file=sys.stderr)
        return 1
    kept = strip_descriptions(ref_closure(schemas, wanted))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    body = {"components": {"schemas": kept}}
    args.out.write_text(json.dumps(body, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(kept)} schemas ({len(wanted)} roots) to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
