"""A fake kube-apiserver on 127.0.0.1 for framework tests and benchmarks (aiohttp.web).

It keeps objects per collection (`/api/v1/pods`, `/apis/ome.io/v1beta1/inferenceservices`), one
global resourceVersion counter and an event history, and serves enough of the real protocol to
exercise the client and the reflector: get, paginated list (continue tokens, resourceVersion and
resourceVersionMatch), create, update, merge/json/apply patches, delete with preconditions and
finalizers, status and scale subresources, metadata-only answers, and watches with history replay,
bookmarks, WatchList (`sendInitialEvents`) and 410 Expired.

Tests steer it directly (it runs in the test's event loop): `add`, `modify`, `remove`,
`expire_watches`, `send_bookmark`, `hang_watches`, `fail(...)` to inject error answers, and flags
such as `reject_watch_list`. Every request is recorded in `requests`.

`python -m tests.unit.framework.fake_apiserver` runs it standalone (for bench/bench_cache.py) and
adds `POST /_fake/churn?path=...&n=...`, which generates label changes server-side.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import copy
import itertools
import ssl
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jsonpatch
import orjson
from aiohttp import web

from ome.framework import resources

Obj = dict[str, Any]
_HANG = b"\x00hang"


@dataclass
class Fault:
    """Answer the next `times` requests matching method and path substring with this error."""

    method: str
    path: str
    status: int
    reason: str = "InternalError"
    message: str = "injected fault"
    headers: dict[str, str] = field(default_factory=dict)
    times: int = 1
    query: str = ""
    delay: float = 0.0  # seconds to stall before answering (client timeouts)
    drop: bool = False  # close the connection instead of answering (a dropped connection)


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes


@dataclass(eq=False)
class _Watcher:
    coll: str
    namespace: str | None
    matches: Callable[[Obj], bool]
    metadata_only: bool
    bookmarks: bool
    queue: asyncio.Queue[bytes | None] = field(default_factory=asyncio.Queue)


def status_body(code: int, reason: str, message: str, causes: list[Obj] | None = None) -> Obj:
    body: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
    body.update(message=message, reason=reason, code=code)
    if causes:
        body["details"] = {"causes": causes}
    return body


def _key(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta["name"])


def _partial(obj: Obj) -> Obj:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def label_matcher(selector: str) -> Callable[[Obj], bool]:
    """Equality-based selectors: `a=b`, `a==b`, `a!=b`, `a`, `!a`, comma-separated."""
    terms: list[tuple[str, str, str]] = []  # (operator, key, value)
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "!=" in term:
            key, value = term.split("!=", 1)
            terms.append(("!=", key, value))
        elif "=" in term:
            key, value = term.replace("==", "=").split("=", 1)
            terms.append(("=", key, value))
        elif term.startswith("!"):
            terms.append(("!", term[1:], ""))
        else:
            terms.append(("exists", term, ""))

    def matches(obj: Obj) -> bool:
        labels = obj["metadata"].get("labels") or {}
        for op, key, value in terms:
            ok = {
                "!=": labels.get(key) != value,
                "=": labels.get(key) == value,
                "!": key not in labels,
                "exists": key in labels,
            }[op]
            if not ok:
                return False
        return True

    return matches


def field_matcher(selector: str) -> Callable[[Obj], bool]:
    pairs = [t.split("=", 1) for t in selector.split(",") if "=" in t]
    fields = {"metadata.name": "name", "metadata.namespace": "namespace"}
    return lambda obj: all(str(obj["metadata"].get(fields.get(k, k), "")) == v for k, v in pairs)


class FakeApiServer:
    def __init__(self, *, history_limit: int = 10_000) -> None:
        self.objects: dict[str, dict[str, Obj]] = {}
        self.rv = 100
        self.compacted = 0  # watches and exact lists from an RV at or below this get 410
        self.history: list[tuple[int, str, str, Obj, bytes]] = []  # (rv, collection, type, object, line)
        self.history_limit = history_limit
        self.requests: list[Recorded] = []
        self.faults: list[Fault] = []
        self.reject_watch_list = False
        self.expire_continue_tokens = False
        self.expire_rv_lists = False  # lists at a specific RV answer 410 (forces RV "")
        self.watch_hang = False
        self.watch_list_no_bookmark = False  # WatchList streams end before their initial-events-end
        self.watch_close_immediately = False  # watches from an RV end at once with no events
        self._watchers: set[_Watcher] = set()
        self._kinds = {res.path(): res for res in resources.registered()}
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self, port: int = 0, *, ssl_context: ssl.SSLContext | None = None) -> str:
        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_route("POST", "/_fake/churn", self._churn_endpoint)
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        # handler_cancellation: a watch handler dies with its client, like the real server's.
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port, ssl_context=ssl_context)
        await site.start()
        scheme = "https" if ssl_context else "http"
        self.url = f"{scheme}://127.0.0.1:{self._runner.addresses[0][1]}"
        return self.url

    async def stop(self) -> None:
        for watcher in list(self._watchers):
            watcher.queue.put_nowait(None)
        if self._runner is not None:
            await self._runner.cleanup()

    # Direct manipulation (events flow to open watches exactly as for API writes).

    def add(self, res: resources.Resource, obj: Obj) -> Obj:
        return self._store(res.path(), self._with_defaults(copy.deepcopy(obj)), "ADDED")

    def modify(self, res: resources.Resource, obj: Obj) -> Obj:
        return self._store(res.path(), copy.deepcopy(obj), "MODIFIED")

    def remove(self, res: resources.Resource, key: str) -> Obj:
        obj = self.objects[res.path()].pop(key)
        self._bump(obj)
        self._emit(res.path(), "DELETED", obj)
        return obj

    def get(self, res: resources.Resource, key: str) -> Obj | None:
        return self.objects.get(res.path(), {}).get(key)

    def fail(self, method: str, path: str, status: int, **kw: Any) -> Fault:
        fault = Fault(method, path, status, **kw)
        self.faults.append(fault)
        return fault

    def expire_watches(self) -> None:
        """Every open watch gets ERROR 410 Expired, and the history so far is compacted away."""
        self.compacted = self.rv
        line = _line("ERROR", status_body(410, "Expired", f"too old resource version: {self.rv}"))
        for watcher in list(self._watchers):
            watcher.queue.put_nowait(line)
            watcher.queue.put_nowait(None)

    def close_watches(self) -> None:
        for watcher in list(self._watchers):
            watcher.queue.put_nowait(None)

    def send_bookmark(self) -> None:
        line = _line("BOOKMARK", {"kind": "Bookmark", "metadata": {"resourceVersion": str(self.rv)}})
        for watcher in self._watchers:
            if watcher.bookmarks:
                watcher.queue.put_nowait(line)

    def hang_watches(self) -> None:
        """Open and future watches go silent without closing: a half-open connection."""
        self.watch_hang = True
        for watcher in self._watchers:
            watcher.queue.put_nowait(_HANG)

    @property
    def open_watches(self) -> int:
        return len(self._watchers)

    async def churn(self, res: resources.Resource, n: int, namespace: str | None = None) -> None:
        """`n` label changes round-robin over the stored objects, yielding to the loop now and then."""
        coll = res.path()
        keys = [
            k for k, o in self.objects.get(coll, {}).items() if not namespace or k.startswith(namespace + "/")
        ]
        for i, key in zip(range(n), itertools.cycle(keys), strict=False):
            obj = copy.copy(self.objects[coll][key])
            obj["metadata"] = {
                **obj["metadata"],
                "labels": {**(obj["metadata"].get("labels") or {}), "churn": str(i)},
            }
            self._store(coll, obj, "MODIFIED")
            if i % 200 == 0:
                await asyncio.sleep(0)

    # Storage.

    def _with_defaults(self, obj: Obj) -> Obj:
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", "2026-12-02T00:00:00Z")
        meta.setdefault("generation", 1)
        return obj

    def _bump(self, obj: Obj) -> None:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)

    def _store(self, coll: str, obj: Obj, event: str) -> Obj:
        self._bump(obj)
        self.objects.setdefault(coll, {})[_key(obj)] = obj
        self._emit(coll, event, obj)
        return obj

    def _emit(self, coll: str, event: str, obj: Obj) -> None:
        line = _line(event, obj)
        self.history.append((self.rv, coll, event, obj, line))
        if len(self.history) > self.history_limit:
            dropped = self.history[: len(self.history) - self.history_limit]
            del self.history[: len(dropped)]
            self.compacted = max(self.compacted, dropped[-1][0])
        for watcher in self._watchers:
            if watcher.coll == coll and self._visible(watcher, obj):
                watcher.queue.put_nowait(_line(event, _partial(obj)) if watcher.metadata_only else line)

    @staticmethod
    def _visible(watcher: _Watcher, obj: Obj) -> bool:
        if watcher.namespace and obj["metadata"].get("namespace") != watcher.namespace:
            return False
        return watcher.matches(obj)

    # HTTP.

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.requests.append(
            Recorded(request.method, request.path, dict(request.query), dict(request.headers), body)
        )
        for fault in self.faults:
            if fault.times > 0 and fault.method == request.method and fault.path in request.path:
                if fault.query in request.query_string:
                    fault.times -= 1
                    await asyncio.sleep(fault.delay)
                    if fault.drop and request.transport is not None:
                        request.transport.close()
                    return _status(fault.status, fault.reason, fault.message, headers=fault.headers)
        parts = request.path.strip("/").split("/")
        prefix_len = 2 if parts[0] == "api" else 3
        prefix, rest = "/" + "/".join(parts[:prefix_len]), parts[prefix_len:]
        if not rest:
            return self._discovery(prefix)
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, plural, rest = rest[1], rest[2], rest[3:]
        else:
            namespace, plural, rest = None, rest[0], rest[1:]
        coll = f"{prefix}/{plural}"
        name = rest[0] if rest else None
        sub = rest[1] if len(rest) > 1 else None
        try:
            return await self._route(request, coll, namespace, name, sub, body)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
            return _status(422, "Invalid", f"the JSON patch cannot be applied: {exc}")  # as the apiserver
        except (ValueError, KeyError, orjson.JSONDecodeError) as exc:
            return _status(400, "BadRequest", f"bad request: {exc!r}")

    async def _route(
        self, request: web.Request, coll: str, ns: str | None, name: str | None, sub: str | None, body: bytes
    ) -> web.StreamResponse:
        method, query = request.method, request.query
        meta_only = "as=PartialObjectMetadata" in request.headers.get("Accept", "")
        if name is None:
            if method == "GET" and query.get("watch") in ("1", "true", "True"):
                return await self._watch(request, coll, ns, meta_only)
            if method == "GET":
                return self._list(coll, ns, query, meta_only)
            if method == "POST":
                return self._create(coll, ns, orjson.loads(body), query)
            return _status(405, "MethodNotAllowed", method)
        key = f"{ns}/{name}" if ns else name
        current = self.objects.get(coll, {}).get(key)
        if method == "PATCH" and current is None and "apply-patch" in request.headers.get("Content-Type", ""):
            return self._create(coll, ns, orjson.loads(body), query)
        if current is None:
            return _status(404, "NotFound", f'{coll.rsplit("/", 1)[-1]} "{name}" not found')
        if method == "GET":
            return _json(_scale(current) if sub == "scale" else _partial(current) if meta_only else current)
        if method == "DELETE":
            return self._delete(coll, key, current, orjson.loads(body) if body else {})
        if method == "PUT":
            return self._write(coll, current, orjson.loads(body), sub, replace=True)
        if method == "PATCH":
            content_type = request.headers.get("Content-Type", "")
            patch = orjson.loads(body)
            if sub == "scale":
                patch = {"spec": {"replicas": patch["spec"]["replicas"]}}
                sub = None
            if "json-patch" in content_type:
                return self._write(coll, current, jsonpatch.apply_patch(current, patch), sub, replace=True)
            return self._write(coll, current, merge_patch(current, patch), sub, replace=True)
        return _status(405, "MethodNotAllowed", method)

    def _create(self, coll: str, ns: str | None, obj: Obj, query: Any) -> web.Response:
        obj = self._with_defaults(obj)
        if ns:
            obj["metadata"]["namespace"] = ns
        name = obj["metadata"].get("name", "")
        if not name or name != name.lower():
            cause = {"field": "metadata.name", "reason": "FieldValueInvalid", "message": "must be lowercase"}
            return _status(422, "Invalid", f'"{name}" is invalid: metadata.name', causes=[cause])
        if _key(obj) in self.objects.get(coll, {}):
            return _status(409, "AlreadyExists", f'"{name}" already exists')
        if query.get("dryRun") == "All":
            return _json(obj, 201)
        return _json(self._store(coll, obj, "ADDED"), 201)

    def _write(self, coll: str, current: Obj, new: Obj, sub: str | None, *, replace: bool) -> web.Response:
        sent_rv = new.get("metadata", {}).get("resourceVersion")
        if sent_rv and sent_rv != current["metadata"]["resourceVersion"]:
            return _status(409, "Conflict", "the object has been modified; please apply your changes")
        if sub == "status":
            new = {**current, "status": new.get("status")}
        elif "status" in current:
            new = {**new, "status": current["status"]}  # the main resource ignores status changes
        new["metadata"] = {**new.get("metadata", {}), "uid": current["metadata"]["uid"]}
        new["metadata"]["generation"] = current["metadata"].get("generation", 1) + (
            new.get("spec") != current.get("spec")
        )
        return _json(self._store(coll, new, "MODIFIED"))

    def _delete(self, coll: str, key: str, current: Obj, options: Obj) -> web.Response:
        pre = options.get("preconditions") or {}
        meta = current["metadata"]
        if pre.get("uid") not in (None, meta["uid"]) or pre.get("resourceVersion") not in (
            None,
            meta["resourceVersion"],
        ):
            return _status(409, "Conflict", "Precondition failed: UID or resourceVersion mismatch")
        if meta.get("finalizers"):
            obj = {**current, "metadata": {**meta, "deletionTimestamp": "2026-12-02T00:00:01Z"}}
            return _json(self._store(coll, obj, "MODIFIED"))
        del self.objects[coll][key]
        self._bump(current)
        self._emit(coll, "DELETED", current)
        return _json({"kind": "Status", "apiVersion": "v1", "status": "Success", "details": {"name": key}})

    def _list(self, coll: str, ns: str | None, query: Any, meta_only: bool) -> web.Response:
        rv, token = query.get("resourceVersion", ""), query.get("continue")
        # As the real apiserver: RV "0" is answered from its watch cache in one page, whatever the limit.
        limit = int(query.get("limit") or 0) if rv != "0" else 0
        exact = query.get("resourceVersionMatch") == "Exact" or (
            limit and not query.get("resourceVersionMatch")
        )
        if token:
            list_rv, start = orjson.loads(base64.b64decode(token))
            if self.expire_continue_tokens or list_rv <= self.compacted:
                return _status(410, "Expired", "The provided continue parameter is too old")
        elif rv not in ("", "0") and (self.expire_rv_lists or (exact and int(rv) <= self.compacted)):
            return _status(410, "Expired", f"too old resource version: {rv} ({self.rv})")
        else:
            list_rv, start = self.rv, ""
        match = _matcher(ns, query)
        objs = sorted((k, o) for k, o in self.objects.get(coll, {}).items() if k > start and match(o))
        page = objs[:limit] if limit else objs
        cont = ""
        if limit and len(objs) > limit:
            cont = base64.b64encode(orjson.dumps([list_rv, page[-1][0]])).decode()
        items = [_partial(o) if meta_only else {k: v for k, v in o.items() if k not in ("kind", "apiVersion")}
                 for _, o in page]  # fmt: skip
        res = self._kinds.get(coll)
        kind = "PartialObjectMetadataList" if meta_only else f"{res.kind if res else ''}List"
        metadata = {"resourceVersion": str(list_rv), **({"continue": cont} if cont else {})}
        return _json({"kind": kind, "apiVersion": "v1", "metadata": metadata, "items": items})

    async def _watch(
        self, request: web.Request, coll: str, ns: str | None, meta_only: bool
    ) -> web.StreamResponse:
        query = request.query
        initial_events = query.get("sendInitialEvents") == "true"
        if initial_events and self.reject_watch_list:
            return _status(
                422, "Invalid", "sendInitialEvents is forbidden for watch unless WatchList is enabled"
            )
        watcher = _Watcher(
            coll, ns, _matcher(None, query), meta_only, query.get("allowWatchBookmarks") == "true"
        )
        rv = query.get("resourceVersion", "")
        first: list[bytes] = []
        expired = False
        if initial_events or rv in ("", "0"):
            for obj in self.objects.get(coll, {}).values():
                if self._visible(watcher, obj):
                    first.append(_line("ADDED", _partial(obj) if meta_only else obj))
            if initial_events and not self.watch_list_no_bookmark:
                end = {"resourceVersion": str(self.rv), "annotations": {"k8s.io/initial-events-end": "true"}}
                first.append(_line("BOOKMARK", {"kind": "Bookmark", "metadata": end}))
        elif int(rv) < self.compacted:
            expired = True
            first.append(_line("ERROR", status_body(410, "Expired", f"too old resource version: {rv}")))
        else:
            for erv, ecoll, event, obj, line in self.history:
                if erv > int(rv) and ecoll == coll and self._visible(watcher, obj):
                    first.append(_line(event, _partial(obj)) if meta_only else line)
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        resp.enable_chunked_encoding()
        if not expired:
            self._watchers.add(watcher)
        try:
            await resp.prepare(request)
            if first:
                await resp.write(b"".join(first))
            if self.watch_close_immediately and not initial_events:
                expired = True
            if not expired and not (initial_events and self.watch_list_no_bookmark):
                with contextlib.suppress(TimeoutError):  # timeoutSeconds: the server ends the watch
                    async with asyncio.timeout(int(query.get("timeoutSeconds") or 1800)):
                        await self._pump(resp, watcher)
            await resp.write_eof()
        except ConnectionError:
            pass
        finally:
            self._watchers.discard(watcher)
        return resp

    async def _pump(self, resp: web.StreamResponse, watcher: _Watcher) -> None:
        if self.watch_hang:
            await asyncio.Event().wait()
        while True:
            batch: list[bytes] = []
            item = await watcher.queue.get()
            while item is not None and item != _HANG:
                batch.append(item)
                if len(batch) >= 64 or watcher.queue.empty():
                    break
                item = watcher.queue.get_nowait()
            if batch:
                await resp.write(b"".join(batch))
            if item is None:
                return
            if item == _HANG:
                await asyncio.Event().wait()

    def _discovery(self, prefix: str) -> web.Response:
        found = [
            {"name": res.plural, "kind": res.kind, "namespaced": res.namespaced}
            for path, res in self._kinds.items()
            if path.rsplit("/", 1)[0] == prefix
        ]
        if not found:
            return _status(404, "NotFound", f"{prefix} not found")
        return _json(
            {"kind": "APIResourceList", "groupVersion": prefix.split("/", 2)[-1], "resources": found}
        )

    async def _churn_endpoint(self, request: web.Request) -> web.Response:
        res = self._kinds[request.query["path"]]
        await self.churn(res, int(request.query["n"]), request.query.get("namespace"))
        return _json({"rv": self.rv})


def _matcher(ns: str | None, query: Any) -> Callable[[Obj], bool]:
    labels = label_matcher(query.get("labelSelector", ""))
    fields = field_matcher(query.get("fieldSelector", ""))
    return lambda obj: (not ns or obj["metadata"].get("namespace") == ns) and labels(obj) and fields(obj)


def _scale(obj: Obj) -> Obj:
    meta = {k: obj["metadata"][k] for k in ("name", "namespace", "resourceVersion") if k in obj["metadata"]}
    return {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": meta,
            "spec": {"replicas": obj.get("spec", {}).get("replicas", 0)}}  # fmt: skip


def _line(event: str, obj: Obj) -> bytes:
    return orjson.dumps({"type": event, "object": obj}) + b"\n"


def _json(obj: Obj, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(obj), status=status, content_type="application/json")


def _status(
    code: int,
    reason: str,
    message: str,
    *,
    causes: list[Obj] | None = None,
    headers: dict[str, str] | None = None,
) -> web.Response:
    return web.Response(
        body=orjson.dumps(status_body(code, reason, message, causes)),
        status=code,
        content_type="application/json",
        headers=headers,
    )


async def _serve(port: int) -> None:
    server = FakeApiServer(history_limit=50_000)
    url = await server.start(port)
    print(f"ready {url}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    asyncio.run(_serve(parser.parse_args().port))
