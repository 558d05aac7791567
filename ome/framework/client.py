"""Typed-error API client over plain dicts: get, list, watch, create, update, patch, apply, delete.

Objects are the JSON dicts the apiserver sends, decoded with orjson; nothing is converted into
models (framework.md §2a: kubernetes-asyncio models cost ~1 ms per Pod). The namespace of a write is
taken from the object's metadata unless given. Every call takes `timeout` in seconds; None means the
client default (`ClientSettings.timeout`). Errors are `errors.ApiError` subclasses.

Writes can be fenced: `fence_writes(check)` makes every write sent from the current task, and from
the tasks it creates afterwards, call `check()` first and again as each attempt goes out (after a wait
for the rate limit or a retry), which raises to refuse it. The manager fences its
leader work with "the Lease is still ours by our own clock", so a leader that was paused past its lease
writes nothing once it wakes, while its standby-safe work (webhook registration) stays unfenced.
"""

# ruff: noqa: ASYNC109  -- a per-call `timeout` is part of the client contract (leader election needs it)
from __future__ import annotations

import asyncio
import builtins
import os
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import aclosing
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final, Literal

import aiohttp
import orjson

from ome.framework import errors, watch
from ome.framework.kubeconfig import ConnectionSettings, incluster, load_kubeconfig
from ome.framework.resources import Resource
from ome.framework.transport import JSON, ClientSettings, Query, Transport
from ome.framework.written import WrittenVersions

if TYPE_CHECKING:
    from kubernetes_asyncio.client import Configuration

Obj = dict[str, Any]
Selector = str | Mapping[str, str]
PatchType = Literal["merge", "json", "strategic"]

META_ACCEPT: Final = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
META_LIST_ACCEPT: Final = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
PATCH_CONTENT_TYPES: Final[dict[str, str]] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}
# The apiserver accepts only the +yaml media type for apply; JSON is valid YAML.
APPLY_CONTENT_TYPE: Final = "application/apply-patch+yaml"
# A watch may outlive timeoutSeconds by the time the server takes to close it; the client gives it a minute.
WATCH_GRACE: Final = 60.0

_write_fence: ContextVar[Callable[[], None] | None] = ContextVar("ome_write_fence", default=None)


def fence_writes(check: Callable[[], None]) -> None:
    """Run `check` before every write of this task and of the tasks it creates from now on."""
    _write_fence.set(check)


def selector_string(selector: Selector | None) -> str | None:
    """Normalise a label selector to its string form; mappings become sorted `k=v` pairs."""
    if selector is None or isinstance(selector, str):
        return selector or None
    return ",".join(f"{key}={value}" for key, value in sorted(selector.items())) or None


class Client:
    """The apiserver, as seen by controllers; use `async with` or call `close()`."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport
        self.written = WrittenVersions()
        """Our own writes' resourceVersions, for reconcilers that must not act on an older cache."""

    @classmethod
    def from_configuration(
        cls, configuration: ConnectionSettings | Configuration, settings: ClientSettings | None = None
    ) -> Client:
        return cls(Transport(configuration, settings))

    @classmethod
    async def from_kubeconfig(
        cls, path: str | None = None, *, context: str | None = None, settings: ClientSettings | None = None
    ) -> Client:
        """Load `path`, else $KUBECONFIG, else ~/.kube/config; exec and GCP tokens are refreshed.

        A bad kubeconfig raises `kubeconfig.ConfigError` (a ValueError) naming what is wrong.
        """
        connection = await load_kubeconfig(path, context=context)
        transport = Transport(connection, settings)
        if connection.refresh is not None:
            transport.own_task(asyncio.create_task(connection.refresh()))
        return cls(transport)

    @classmethod
    def from_incluster(cls, settings: ClientSettings | None = None) -> Client:
        """The pod's service account; the token file is re-read every minute (bound tokens rotate)."""
        return cls(Transport(incluster(), settings))

    @classmethod
    async def from_environment(
        cls, kubeconfig: str | None = None, settings: ClientSettings | None = None
    ) -> Client:
        """controller-runtime's order: the flag, $KUBECONFIG, in-cluster, then ~/.kube/config."""
        if kubeconfig or os.environ.get("KUBECONFIG"):
            return await cls.from_kubeconfig(kubeconfig, settings=settings)
        if os.environ.get("KUBERNETES_SERVICE_HOST"):
            return cls.from_incluster(settings)
        return await cls.from_kubeconfig(settings=settings)

    @property
    def host(self) -> str:
        return self._transport.host

    @property
    def warning_handler(self) -> Callable[[str], None]:
        """Receives each warning the apiserver returns (admission webhooks' among them); logs by default."""
        return self._transport.warning_handler

    @warning_handler.setter
    def warning_handler(self, handler: Callable[[str], None]) -> None:
        self._transport.warning_handler = handler

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._transport.close()

    # Reads.

    async def get(
        self,
        res: Resource,
        name: str,
        namespace: str | None = None,
        *,
        metadata_only: bool = False,
        timeout: float | None = None,
    ) -> Obj:
        accept = META_ACCEPT if metadata_only else JSON
        return await self._call("GET", res.path(namespace, name), res, accept=accept, timeout=timeout)

    async def list_page(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: Selector | None = None,
        field_selector: str | None = None,
        limit: int = 500,
        continue_token: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
        metadata_only: bool = False,
        timeout: float | None = None,
    ) -> Obj:
        """One raw page: the List object with `items` and `metadata.continue`."""
        query: list[tuple[str, str]] = []
        _add(query, "labelSelector", selector_string(label_selector))
        _add(query, "fieldSelector", field_selector)
        _add(query, "limit", str(limit) if limit > 0 else None)
        _add(query, "continue", continue_token)
        _add(query, "resourceVersion", resource_version)
        _add(query, "resourceVersionMatch", resource_version_match if resource_version else None)
        accept = META_LIST_ACCEPT if metadata_only else JSON
        return await self._call("GET", res.path(namespace), res, query=query, accept=accept, timeout=timeout)

    async def list(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: Selector | None = None,
        field_selector: str | None = None,
        limit: int = 500,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
        metadata_only: bool = False,
        transform: Callable[[Obj], Obj] | None = None,
        timeout: float | None = None,
    ) -> tuple[builtins.list[Obj], str]:
        """All items and the list resourceVersion, fetched page by page.

        `transform` runs on each item as its page arrives, so a 10k-Pod list never sits in memory
        whole (framework.md §2b). An expired continue token restarts as one unpaginated list, as
        client-go's pager does. Items get `apiVersion` and `kind`, which the apiserver omits.
        """
        kwargs: dict[str, Any] = dict(
            label_selector=label_selector,
            field_selector=field_selector,
            metadata_only=metadata_only,
            resource_version=resource_version,
            resource_version_match=resource_version_match,
            timeout=timeout,
        )
        items: builtins.list[Obj] = []
        token: str | None = None
        while True:
            try:
                page = await self.list_page(res, namespace, limit=limit, continue_token=token, **kwargs)
            except errors.Gone:
                if token is None:
                    raise
                page, token = await self.list_page(res, namespace, limit=0, **kwargs), None
                items.clear()
            items.extend(_fill_items(page, res, transform))
            token = (page.get("metadata") or {}).get("continue") or None
            if token is None:
                return items, str((page.get("metadata") or {}).get("resourceVersion") or "")

    async def watch(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        resource_version: str,
        timeout_seconds: int,
        label_selector: Selector | None = None,
        field_selector: str | None = None,
        send_initial_events: bool = False,
        allow_bookmarks: bool = True,
        metadata_only: bool = False,
    ) -> AsyncGenerator[tuple[str, Obj], None]:
        """Yield `(type, object)` per event until the server ends the watch.

        ERROR events raise their mapped ApiError (an expired resourceVersion raises Gone). A dead
        socket raises ServerTimeout after `ClientSettings.watch_sock_read` seconds of silence, and a
        truncated stream raises TransportError; a clean end of stream just stops the iteration.
        """
        query: list[tuple[str, str]] = [("watch", "1"), ("timeoutSeconds", str(timeout_seconds))]
        _add(query, "resourceVersion", resource_version)
        _add(query, "allowWatchBookmarks", "true" if allow_bookmarks else None)
        _add(query, "labelSelector", selector_string(label_selector))
        _add(query, "fieldSelector", field_selector)
        if send_initial_events:
            query += [("sendInitialEvents", "true"), ("resourceVersionMatch", "NotOlderThan")]
        settings = self._transport.settings
        client_timeout = aiohttp.ClientTimeout(
            total=timeout_seconds + WATCH_GRACE,
            sock_connect=settings.connect_timeout,
            sock_read=settings.watch_sock_read,
        )
        path = res.path(namespace)
        accept = META_ACCEPT if metadata_only else JSON
        async with self._transport.stream(
            path, query=query, accept=accept, timeout=client_timeout
        ) as content:
            async with aclosing(watch.events(content, f"watch {path}")) as events:
                async for event in events:
                    yield event

    # Writes.

    async def create(
        self,
        res: Resource,
        obj: Obj,
        namespace: str | None = None,
        *,
        field_manager: str | None = None,
        dry_run: bool = False,
        timeout: float | None = None,
    ) -> Obj:
        query = _write_query(field_manager, dry_run)
        path = res.path(_namespace(res, namespace, obj))
        created = await self._call(
            "POST", path, res, query=query, body=obj, content_type=JSON, timeout=timeout
        )
        if not dry_run:
            self.written.record(res, created)
        return created

    async def update(
        self, res: Resource, obj: Obj, *, field_manager: str | None = None, timeout: float | None = None
    ) -> Obj:
        """PUT the whole object; its metadata.resourceVersion makes a stale write fail with Conflict."""
        return await self._put(res, obj, None, field_manager, timeout)

    async def update_status(
        self, res: Resource, obj: Obj, *, field_manager: str | None = None, timeout: float | None = None
    ) -> Obj:
        return await self._put(res, obj, "status", field_manager, timeout)

    async def patch(
        self,
        res: Resource,
        name: str,
        patch: Obj | builtins.list[Obj],
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        timeout: float | None = None,
        idempotent: bool = False,
    ) -> Obj:
        """`idempotent=True` says applying `patch` twice equals applying it once (it only sets values),
        so a dropped connection may be retried as a GET would be."""
        path = res.path(namespace, name, subresource)
        content_type = PATCH_CONTENT_TYPES[patch_type]
        query = _write_query(field_manager, False)
        patched = await self._call(
            "PATCH", path, res, query=query, body=patch, content_type=content_type, timeout=timeout,
            idempotent=idempotent or None,
        )
        self.written.record(res, patched)
        return patched

    async def apply(
        self,
        res: Resource,
        obj: Obj,
        *,
        field_manager: str,
        force: bool = True,
        subresource: str | None = None,
        timeout: float | None = None,
    ) -> Obj:
        """Server-side apply: `obj` must hold every field this manager has an opinion about."""
        if not field_manager:
            raise ValueError("server-side apply needs a field manager")
        if "apiVersion" not in obj or "kind" not in obj:
            obj = {"apiVersion": res.api_version, "kind": res.kind, **obj}
        path = res.path(_namespace(res, None, obj), _name(obj), subresource)
        query = [("fieldManager", field_manager)] + ([("force", "true")] if force else [])
        applied = await self._call(
            "PATCH", path, res, query=query, body=obj, content_type=APPLY_CONTENT_TYPE, timeout=timeout
        )
        self.written.record(res, applied)
        return applied

    async def delete(
        self,
        res: Resource,
        name: str,
        namespace: str | None = None,
        *,
        uid: str | None = None,
        resource_version: str | None = None,
        propagation_policy: Literal["Foreground", "Background", "Orphan"] | None = None,
        grace_period_seconds: int | None = None,
        timeout: float | None = None,
    ) -> Obj | None:
        """Delete with optional preconditions; 404 raises NotFound, a stale uid/RV raises Conflict.

        Returns the apiserver's answer: the object (with deletionTimestamp set while finalizers hold
        it), or None when the server answers with a bare Status.
        """
        options: Obj = {}
        preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
        if preconditions:
            options["preconditions"] = preconditions
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        body = {"apiVersion": "v1", "kind": "DeleteOptions", **options} if options else None
        result = await self._call(
            "DELETE",
            res.path(namespace, name),
            res,
            body=body,
            content_type=JSON if body else None,
            timeout=timeout,
        )
        return None if result.get("kind") == "Status" else result

    async def update_scale(
        self, res: Resource, name: str, namespace: str | None, replicas: int, *, timeout: float | None = None
    ) -> Obj:
        """Set spec.replicas through the scale subresource (a merge patch: no resourceVersion race)."""
        return await self.patch(
            res, name, {"spec": {"replicas": replicas}}, namespace, subresource="scale", timeout=timeout
        )

    async def is_served(self, res: Resource, *, timeout: float | None = None) -> bool:
        """Whether the apiserver serves `res` (optional CRDs such as KEDA or LeaderWorkerSet)."""
        prefix = f"/apis/{res.group}/{res.version}" if res.group else f"/api/{res.version}"
        try:
            listing = await self._call("GET", prefix, None, timeout=timeout)
        except errors.NotFound:
            return False
        return any(r.get("name") == res.plural for r in listing.get("resources", ()))

    async def _put(
        self,
        res: Resource,
        obj: Obj,
        subresource: str | None,
        field_manager: str | None,
        timeout: float | None,
    ) -> Obj:
        path = res.path(_namespace(res, None, obj), _name(obj), subresource)
        query = _write_query(field_manager, False)
        updated = await self._call(
            "PUT", path, res, query=query, body=obj, content_type=JSON, timeout=timeout
        )
        self.written.record(res, updated)
        return updated

    async def _call(
        self,
        method: str,
        path: str,
        res: Resource | None = None,
        *,
        query: Query = (),
        body: object = None,
        content_type: str | None = None,
        accept: str = JSON,
        timeout: float | None = None,
        idempotent: bool | None = None,
    ) -> Obj:
        fence = _write_fence.get() if method != "GET" else None
        if fence is not None:
            fence()  # refused before the body is encoded; the transport asks again as the request goes out
        data = orjson.dumps(body) if body is not None else None
        raw = await self._transport.request(
            method, path, query=query, body=data, content_type=content_type, accept=accept, timeout=timeout,
            idempotent=idempotent, fence=fence, resource=res.name if res is not None else "",
        )
        try:
            decoded = orjson.loads(raw) if raw else {}
        except orjson.JSONDecodeError as exc:
            raise errors.TransportError(0, "BadResponse", f"{method} {path}: answer is not JSON") from exc
        if not isinstance(decoded, dict):
            raise errors.TransportError(0, "BadResponse", f"{method} {path}: answer is not an object")
        return decoded


def _fill_items(page: Obj, res: Resource, transform: Callable[[Obj], Obj] | None) -> list[Obj]:
    items: list[Obj] = page.get("items") or []
    for item in items:
        item.setdefault("apiVersion", res.api_version)
        item.setdefault("kind", res.kind)
    return [transform(item) for item in items] if transform is not None else items


def _add(query: list[tuple[str, str]], key: str, value: str | None) -> None:
    if value:
        query.append((key, value))


def _write_query(field_manager: str | None, dry_run: bool) -> list[tuple[str, str]]:
    query: list[tuple[str, str]] = []
    _add(query, "fieldManager", field_manager)
    _add(query, "dryRun", "All" if dry_run else None)
    return query


def _name(obj: Obj) -> str:
    name = (obj.get("metadata") or {}).get("name")
    if not name:
        raise ValueError("object has no metadata.name")
    return str(name)


def _namespace(res: Resource, namespace: str | None, obj: Obj) -> str | None:
    if not res.namespaced:
        return None
    found = namespace or (obj.get("metadata") or {}).get("namespace")
    if not found:
        raise ValueError(f"{res.kind} is namespaced: pass a namespace or set metadata.namespace")
    return str(found)
