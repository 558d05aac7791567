"""An in-memory apiserver for the kubectl-ome unit tests: GET, LIST, WATCH and JSON Patch with the
`test` operations and dryRun=All, answering 422 for a failed test as the real apiserver does."""

from __future__ import annotations

import asyncio
import copy
import io
from collections.abc import AsyncGenerator, Mapping
from datetime import UTC, datetime
from typing import Any

from ome.framework import errors
from ome.framework.resources import Resource
from ome.kubectl_ome.connection import Connection
from ome.kubectl_ome.context import Ctx
from ome.kubectl_ome.guarded import Terminal

Obj = dict[str, Any]
NOW = datetime(2026, 9, 28, 14, 5, tzinfo=UTC)


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def apply_patch(obj: Obj, ops: list[Obj]) -> Obj:
    """RFC 6902 for the operations the CLI sends (test, add, replace, remove)."""
    out = copy.deepcopy(obj)
    for op in ops:
        *parents, last = [_unescape(t) for t in op["path"].split("/")[1:]]
        node: Any = out
        for token in parents:
            node = node[int(token)] if isinstance(node, list) else node[token]
        key: Any = int(last) if isinstance(node, list) else _unescape(last)
        if op["op"] == "test":
            if node.get(key) != op["value"]:
                raise errors.Invalid(422, "Invalid", f"testing value {op['path']} failed: test failed")
        elif op["op"] in ("add", "replace"):
            node[key] = op["value"]
        elif op["op"] == "remove":
            del node[key]
    return out


class FakeClient:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str | None, str], Obj] = {}
        self.patches: list[tuple[str, list[Obj], list[tuple[str, str]]]] = []
        self.version = 100
        self.changed = asyncio.Event()
        self.fail_patch: errors.ApiError | None = None
        self.logs: dict[str, bytes] = {}
        self.fail_list: dict[str, errors.ApiError] = {}
        self._transport = self

    def put(self, res: Resource, obj: Obj) -> Obj:
        meta = obj.setdefault("metadata", {})
        self.version += 1
        meta["resourceVersion"] = str(self.version)
        meta.setdefault("uid", f"uid-{meta['name']}")
        meta.setdefault("generation", 1)
        self.objects[(res.plural, meta.get("namespace") if res.namespaced else None, meta["name"])] = obj
        self.changed.set()
        return obj

    async def get(self, res: Resource, name: str, namespace: str | None = None, **_: Any) -> Obj:
        obj = self.objects.get((res.plural, namespace if res.namespaced else None, name))
        if obj is None:
            raise errors.NotFound(404, "NotFound", f'{res.plural} "{name}" not found')
        return copy.deepcopy(obj)

    async def list(self, res: Resource, namespace: str | None = None, **kwargs: Any) -> tuple[list[Obj], str]:
        if res.plural in self.fail_list:
            raise self.fail_list[res.plural]
        selector = kwargs.get("label_selector") or {}
        items = []
        for (plural, ns, _), obj in self.objects.items():
            if plural != res.plural or (namespace and ns != namespace):
                continue
            labels = (obj.get("metadata") or {}).get("labels") or {}
            if isinstance(selector, Mapping) and any(labels.get(k) != v for k, v in selector.items()):
                continue
            items.append(copy.deepcopy(obj))
        return items, str(self.version)

    async def list_page(self, res: Resource, namespace: str | None = None, *, limit: int = 500,
                        continue_token: str | None = None, **kwargs: Any) -> Obj:
        """One page of `list`, sorted by name, with an offset as the continue token."""
        if res.plural in self.fail_list:
            raise self.fail_list[res.plural]
        items, version = await self.list(res, namespace, **kwargs)
        items.sort(key=lambda o: o["metadata"]["name"])
        start = int(continue_token or 0)
        end = start + limit if limit > 0 else len(items)
        meta: Obj = {"resourceVersion": version}
        if end < len(items):
            meta["continue"] = str(end)
        return {"metadata": meta, "items": items[start:end]}

    async def watch(self, res: Resource, namespace: str | None = None, **kwargs: Any) -> AsyncGenerator[tuple[str, Obj], None]:
        """Yields MODIFIED for each change after `resource_version`; waits on an event, never a timer."""
        seen = int(kwargs.get("resource_version") or 0)
        name = str(kwargs.get("field_selector") or "").removeprefix("metadata.name=")
        while True:
            for (plural, ns, obj_name), obj in list(self.objects.items()):
                if plural == res.plural and ns == namespace and obj_name == name:
                    if int(obj["metadata"]["resourceVersion"]) > seen:
                        yield "MODIFIED", copy.deepcopy(obj)
                        seen = int(obj["metadata"]["resourceVersion"])
            self.changed.clear()
            await self.changed.wait()

    async def _call(self, method: str, path: str, *, query: Any = (), body: Any = None, **_: Any) -> Obj:
        assert method == "PATCH"
        self.patches.append((path, list(body), list(query)))
        if self.fail_patch is not None:
            raise self.fail_patch
        parts = path.strip("/").split("/")
        namespace = parts[parts.index("namespaces") + 1] if "namespaces" in parts else None
        sub = None
        if parts[-1] in ("scale", "status"):
            sub = parts.pop()
        plural, name = parts[-2], parts[-1]
        key = (plural, namespace, name)
        current = self.objects.get(key)
        if current is None:
            raise errors.NotFound(404, "NotFound", "not found")
        target = current
        if sub == "scale":
            target = {"metadata": current["metadata"], "spec": {"replicas": current["spec"].get("replicas")}}
        patched = apply_patch(target, list(body))
        if ("dryRun", "All") in list(query):
            return patched
        if sub == "scale":
            current = copy.deepcopy(current)
            current["spec"]["replicas"] = patched["spec"]["replicas"]
            patched = current
        self.version += 1
        patched["metadata"]["resourceVersion"] = str(self.version)
        self.objects[key] = patched
        self.changed.set()
        return patched

    async def close(self) -> None:
        return None

    async def request(self, method: str, path: str, *, query: Any = (), accept: str = "", **_: Any) -> bytes:
        """The transport's raw GET, for pods/log: `logs[pod]`, after `tailLines`."""
        assert method == "GET" and path.endswith("/log")
        text = self.logs[path.split("/")[-2]]
        tail = dict(query).get("tailLines")
        return b"".join(text.splitlines(keepends=True)[-int(tail):]) if tail else text


class TtyInput(io.StringIO):
    def isatty(self) -> bool:
        return True


def make_ctx(client: FakeClient, *, stdin: io.StringIO | None = None, namespace: str = "prod",
             context: str = "prod-cluster") -> tuple[Ctx, io.StringIO, io.StringIO]:
    err, out = io.StringIO(), io.StringIO()
    conn = Connection(client, namespace, context)  # type: ignore[arg-type]
    return Ctx(conn, Terminal(stdin or io.StringIO(), err, lambda: NOW), out), err, out
