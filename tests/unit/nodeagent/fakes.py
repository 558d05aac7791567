"""In-memory reader and recording writer for the model status reconciler."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ome.framework import errors
from ome.framework.resources import Resource

Obj = dict[str, Any]


class FakeReader:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str | None, str], Obj] = {}

    def add(self, res: Resource, obj: Obj) -> Obj:
        meta = obj["metadata"]
        self.objects[(res.kind, meta.get("namespace"), meta["name"])] = obj
        return obj

    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None:
        return self.objects.get((res.kind, namespace, name))

    def list(self, res: Resource, namespace: str | None = None, *, label_selector: Mapping[str, str] | None = None,
             index: tuple[str, str] | None = None) -> list[Obj]:
        return [o for (kind, ns, _), o in self.objects.items()
                if kind == res.kind and (namespace is None or ns == namespace)]


class RecordingWriter:
    """Records patches and applies merge patches to the reader's objects, like the apiserver would."""

    def __init__(self, reader: FakeReader) -> None:
        self.reader = reader
        self.patches: list[tuple[str, str, Obj, str | None]] = []

    async def patch(self, res: Resource, name: str, patch: Obj, namespace: str | None = None, *,
                    subresource: str | None = None) -> Obj:
        self.patches.append((res.kind, name, patch, subresource))
        obj = self.reader.get_or_none(res, name, namespace)
        if obj is None:
            raise errors.NotFound(404, "NotFound", name)
        new = copy.deepcopy(obj)
        for key, value in patch.items():
            if isinstance(value, dict) and isinstance(new.get(key), dict):
                new[key].update({k: v for k, v in value.items() if k != "resourceVersion"})
            else:
                new[key] = value
        return self.reader.add(res, new)
