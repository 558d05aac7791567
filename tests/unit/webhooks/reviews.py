"""AdmissionReview builders for webhook unit tests."""

from __future__ import annotations

import asyncio
from typing import Any

from ome.webhooks.handler import Handler

Obj = dict[str, Any]


def review(
    kind: str,
    obj: Obj | None,
    *,
    old: Obj | None = None,
    operation: str = "CREATE",
    username: str = "alice",
    uid: str = "uid-1",
) -> Obj:
    meta = (obj or old or {}).get("metadata") or {}
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "ome.io", "version": "v1beta1", "kind": kind},
            "resource": {"group": "ome.io", "version": "v1beta1", "resource": kind.lower() + "s"},
            "operation": operation,
            "namespace": meta.get("namespace"),
            "name": meta.get("name"),
            "userInfo": {"username": username},
            "object": obj,
            "oldObject": old,
        },
    }


def call(handler: Handler, body: Obj) -> Obj:
    answer: Obj = asyncio.run(handler(body))["response"]
    return answer
