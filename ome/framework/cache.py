"""SharedCache: informers shared by every controller, and synchronous reads over their stores.

One informer exists per (resource, namespace, label selector, metadata-only); asking again for
the same key returns the same informer, so two controllers watching Pods cost one watch.

Reads never start a watch: reading a resource with no informer raises `NoInformerError`, so a
forgotten `informer_for()` fails in the first test rather than as a silent cluster-wide watch
(framework.md rule 10). Reading before the informer's first sync raises `NotSyncedError`, since an
empty answer would look like "nothing exists" and make reconcilers create duplicates.

Returned objects are the stored dicts, shared with every other reader: treat them as immutable
and mutate a `deepcopy_obj()` instead (an orjson round trip: ~15 µs against ~130 µs for
copy.deepcopy, §2b).
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Mapping
from typing import Any

import orjson

from ome.framework import errors
from ome.framework.client import Client, selector_string
from ome.framework.informer import Informer
from ome.framework.reflector import ReflectorSettings, Transform
from ome.framework.resources import Resource
from ome.framework.store import NAMESPACE_INDEX

Obj = dict[str, Any]
_Key = tuple[Resource, str | None, str | None, bool]


class CacheError(Exception):
    """A read the cache cannot answer correctly."""


class NoInformerError(CacheError, LookupError):
    """No informer covers the resource and namespace read: register one with `informer_for()`."""


class NotSyncedError(CacheError):
    """The informer has not completed its first list yet."""


def deepcopy_obj(obj: Obj) -> Obj:
    """A private, mutable copy of a cached object."""
    copied: Obj = orjson.loads(orjson.dumps(obj))
    return copied


def matches_labels(obj: Obj, selector: Mapping[str, str]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(labels.get(key) == value for key, value in selector.items())


class SharedCache:
    """Informers by key, started together; `get` and `list` read their stores without I/O."""

    def __init__(self, client: Client, *, settings: ReflectorSettings | None = None) -> None:
        self._client = client
        self._settings = settings
        self._informers: dict[_Key, Informer] = {}
        self._transforms: dict[_Key, Transform | None] = {}
        self._started = False

    async def __aenter__(self) -> SharedCache:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    def informer_for(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        label_selector: Mapping[str, str] | str | None = None,
        metadata_only: bool = False,
        transform: Transform | None = None,
    ) -> Informer:
        """The shared informer for this key, created (and started, if the cache runs) on first use."""
        if namespace and not res.namespaced:
            raise ValueError(f"{res.kind} is cluster-scoped; it has no namespace {namespace!r}")
        key: _Key = (res, namespace or None, selector_string(label_selector), metadata_only)
        informer = self._informers.get(key)
        if informer is not None:
            if self._transforms[key] is not transform:
                raise ValueError(f"informer for {res.name} {key[1:]} already exists with another transform")
            return informer
        informer = Informer(
            self._client,
            res,
            namespace=key[1],
            label_selector=key[2],
            metadata_only=metadata_only,
            transform=transform,
            settings=self._settings,
        )
        self._informers[key] = informer
        self._transforms[key] = transform
        if self._started:
            informer.start()
        return informer

    @property
    def informers(self) -> builtins.list[Informer]:
        return list(self._informers.values())

    async def start(self) -> None:
        self._started = True
        for informer in self._informers.values():
            informer.start()

    async def wait_for_sync(self, timeout: float | None = None) -> None:  # noqa: ASYNC109
        """Wait until every informer has synced."""
        async with asyncio.timeout(timeout):
            await asyncio.gather(*(i.wait_for_sync() for i in self._informers.values()))

    @property
    def has_synced(self) -> bool:
        return all(informer.has_synced for informer in self._informers.values())

    async def stop(self) -> None:
        self._started = False
        await asyncio.gather(*(informer.stop() for informer in self._informers.values()))

    def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj:
        """The cached object; raises errors.NotFound when absent, like an uncached GET."""
        if res.namespaced and not namespace:
            raise ValueError(f"{res.kind} {name!r} is namespaced; a namespace is required")
        key = f"{namespace}/{name}" if res.namespaced else name
        for informer in self._readers(res, namespace if res.namespaced else None):
            obj = informer.store.get(key)
            if obj is not None:
                return obj
        raise errors.NotFound(404, "NotFound", f'{res.name} "{name}" not found in the cache')

    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None:
        try:
            return self.get(res, name, namespace)
        except errors.NotFound:
            return None

    def list(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: Mapping[str, str] | None = None,
        index: tuple[str, str] | None = None,
    ) -> builtins.list[Obj]:
        """Cached objects, optionally in one namespace, matching labels, and/or from an index."""
        if namespace and not res.namespaced:
            raise ValueError(f"{res.kind} is cluster-scoped; it has no namespace {namespace!r}")
        result: dict[str, Obj] = {}  # keyed, since informers with different selectors may overlap
        for informer in self._readers(res, namespace):
            store = informer.store
            if index is not None:
                candidates = store.by_index(*index)
            elif namespace and informer.namespace is None:
                candidates = store.by_index(NAMESPACE_INDEX, namespace)
            else:
                candidates = store.list()
            for obj in candidates:
                meta = obj.get("metadata") or {}
                if namespace and meta.get("namespace") != namespace:
                    continue
                if label_selector and not matches_labels(obj, label_selector):
                    continue
                result.setdefault(f"{meta.get('namespace')}/{meta.get('name')}", obj)
        return [*result.values()]

    def _readers(self, res: Resource, namespace: str | None) -> builtins.list[Informer]:
        """Informers that can answer for `res` in `namespace` (None: all namespaces, or cluster scope)."""
        found = [
            informer
            for (kind, ns, _, _), informer in self._informers.items()
            if kind == res and (ns is None or namespace is None or ns == namespace)
        ]
        if not found:
            where = f" in namespace {namespace!r}" if namespace else ""
            raise NoInformerError(
                f"no informer for {res.name}{where}: call informer_for({res.kind}) before reading"
            )
        full = [informer for informer in found if not informer.metadata_only]
        readers = full or found
        for informer in readers:
            if not informer.has_synced:
                raise NotSyncedError(f"informer for {res.name} has not synced yet")
        return readers
