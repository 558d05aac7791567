"""Kubernetes OpenAPI v3 component schemas, turned into structural CRD schemas.

The data file (``ome/api/openapi/k8s-openapi-v3.json``) holds the apiserver's own schemas,
``{"components": {"schemas": {"io.k8s.api.core.v1.PodSpec": ...}}}``. :class:`K8sSchemas`
inlines their ``$ref``s and keeps only what a CRD accepts:

* descriptions, patch-strategy and union extensions, and ``x-kubernetes-validations`` of
  the core types are dropped (the last to keep CEL cost estimates inside the budget);
* ``default: {}`` and ``default: []`` are dropped, so an absent block stays absent; scalar
  defaults such as ``protocol: TCP`` stay, and zero-value ones (``""``, ``0``, ``false``)
  stay only where a list-map key needs one (see :func:`finalize_defaults`);
* IntOrString, Quantity, Time and RawExtension become the shapes controller-gen emits, and
  embedded ObjectMeta (a pod template's ``metadata``) becomes an object that keeps its fields.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

DATA_FILE = Path(__file__).parent / "openapi" / "k8s-openapi-v3.json"

Schema = dict[str, Any]

QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_INT_OR_STRING: Schema = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "x-kubernetes-int-or-string": True,
}
_PRESERVED_OBJECT: Schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}

# Types whose CRD shape is fixed rather than read from the apiserver's document.
BUILTIN: dict[str, Schema] = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": _INT_OR_STRING,
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {**_INT_OR_STRING, "pattern": QUANTITY_PATTERN},
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": {"type": "string", "format": "date-time"},
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": {"type": "string", "format": "date-time"},
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": _PRESERVED_OBJECT,
    "io.k8s.apimachinery.pkg.runtime.RawExtension": _PRESERVED_OBJECT,
}

# Keys copied from an OpenAPI node; anything else is dropped.
_SCALAR_KEYS = (
    "type",
    "enum",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "nullable",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-int-or-string",
    "x-kubernetes-embedded-resource",
)
_FORMATS = {"int32", "int64", "float", "double", "byte", "date", "date-time", "binary", "password"}


class MissingSchemaError(KeyError):
    """A referenced Kubernetes type is not in the OpenAPI data file."""


class K8sSchemas:
    """Structural CRD schemas for the Kubernetes types in an OpenAPI v3 document."""

    def __init__(self, schemas: dict[str, Any], *, lenient: bool = False) -> None:
        self._raw = schemas
        self._lenient = lenient
        self._cache: dict[str, Schema] = {}
        self.missing: set[str] = set()

    @classmethod
    def load(cls, path: Path = DATA_FILE, *, lenient: bool = False) -> K8sSchemas:
        doc = json.loads(path.read_text())
        return cls(doc.get("components", {}).get("schemas", {}), lenient=lenient)

    def has(self, name: str) -> bool:
        return name in BUILTIN or name in self._raw

    def resolve(self, name: str) -> Schema:
        """The structural schema of ``name``, every ``$ref`` inlined (a fresh copy)."""
        return copy.deepcopy(self._resolve(name, ()))

    def properties_of(self, name: str, drop: Iterable[str] = ()) -> dict[str, Schema]:
        """The properties of an object type, for a Go struct that inlines it."""
        props = dict(self.resolve(name).get("properties", {}))
        for key in drop:
            props.pop(key, None)
        return props

    def _resolve(self, name: str, stack: tuple[str, ...]) -> Schema:
        if name in BUILTIN:
            return BUILTIN[name]
        if name in self._cache:
            return self._cache[name]
        if name in stack:  # a recursive type: stop with an open object
            return _PRESERVED_OBJECT
        raw = self._raw.get(name)
        if raw is None:
            if not self._lenient:
                raise MissingSchemaError(f"{name} is not in the Kubernetes OpenAPI data file")
            self.missing.add(name)
            return _PRESERVED_OBJECT
        result = self._convert(raw, (*stack, name))
        self._cache[name] = result
        return result

    def _convert(self, node: Schema, stack: tuple[str, ...]) -> Schema:
        ref = _single_ref(node)
        if ref is not None:
            base = copy.deepcopy(self._resolve(ref, stack))
            _copy_default(node, base)
            if node.get("nullable"):
                base["nullable"] = True
            return base
        out: Schema = {key: copy.deepcopy(node[key]) for key in _SCALAR_KEYS if key in node}
        fmt = node.get("format")
        if fmt in _FORMATS:
            out["format"] = fmt
        _copy_default(node, out)
        if "required" in node:
            out["required"] = list(node["required"])
        if "properties" in node:
            out["properties"] = {
                key: self._convert(value, stack) for key, value in sorted(node["properties"].items())
            }
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            out["additionalProperties"] = self._convert(extra, stack)
        elif extra is True and "properties" not in node:
            out["x-kubernetes-preserve-unknown-fields"] = True
        if "items" in node:
            out["items"] = self._convert(node["items"], stack)
        return _ensure_typed(out)


def _single_ref(node: Schema) -> str | None:
    if "$ref" in node:
        return str(node["$ref"]).rsplit("/", 1)[-1]
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
        return str(all_of[0]["$ref"]).rsplit("/", 1)[-1]
    return None


def _copy_default(src: Schema, dst: Schema) -> None:
    if "default" not in src or src["default"] in ({}, [], None):
        return
    value = copy.deepcopy(src["default"])
    if _is_zero(value):
        dst[ZERO_DEFAULT_KEY] = value
    else:
        dst["default"] = value


def _ensure_typed(out: Schema) -> Schema:
    if "type" in out or out.get("x-kubernetes-int-or-string") or "anyOf" in out:
        return out
    if out.get("x-kubernetes-preserve-unknown-fields"):
        return out
    if "properties" in out or "additionalProperties" in out:
        out["type"] = "object"
        return out
    out["x-kubernetes-preserve-unknown-fields"] = True
    return out


ZERO_DEFAULTS: tuple[Any, ...] = ("", 0, False)
# A zero-value default of an apiserver type, held aside until finalize_defaults decides.
ZERO_DEFAULT_KEY = "x-ome-zero-default"


def _is_zero(value: Any) -> bool:
    return any(value == zero and type(value) is type(zero) for zero in ZERO_DEFAULTS)


def finalize_defaults(schema: Schema, *, keep: bool = False, protect: frozenset[str] = frozenset()) -> None:
    """Drop the apiserver's ``""``/``0``/``false`` defaults, except on list-map keys.

    The core types carry zero-value defaults for many required scalars; applied by a CRD
    they would add empty keys to objects. A list-map key that is not required must keep
    its default, or the apiserver rejects the CRD.
    """
    if ZERO_DEFAULT_KEY in schema:
        value = schema.pop(ZERO_DEFAULT_KEY)
        if keep and "default" not in schema:
            schema["default"] = value
    props = schema.get("properties")
    if isinstance(props, dict):
        for key, sub in props.items():
            finalize_defaults(sub, keep=key in protect)
    items = schema.get("items")
    if isinstance(items, dict):
        keys = frozenset(schema.get("x-kubernetes-list-map-keys") or ())
        finalize_defaults(items, protect=keys - set(items.get("required", ())))
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        finalize_defaults(extra)


def ref_closure(schemas: dict[str, Any], roots: Iterable[str]) -> dict[str, Any]:
    """The schemas reachable from ``roots`` through ``$ref`` (for a small data file)."""
    keep: dict[str, Any] = {}
    todo = [r for r in roots if r in schemas]
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep[name] = schemas[name]
        for ref in _refs_in(schemas[name]):
            if ref in schemas and ref not in keep:
                todo.append(ref)
    return {name: keep[name] for name in sorted(keep)}


def _refs_in(node: Any) -> Iterable[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value.rsplit("/", 1)[-1]
            else:
                yield from _refs_in(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs_in(value)
