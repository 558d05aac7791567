"""OpenAPI v3 structural schemas from the ome.io pydantic models.

The walk follows python annotations: ``str``/``int``/``bool``/``float``, ``Literal`` (an
enum), ``list``, ``dict[str, T]``, nested :class:`OMEModel` types, and the markers of
:mod:`ome.api.v1beta1.base` (embedded Kubernetes types, IntOrString, Quantity, formats,
preserved JSON). Per-field facts come from ``json_schema_extra["crd"]`` (see ``base.f``).
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic.fields import FieldInfo

from ome.api.k8s_openapi import BUILTIN, QUANTITY_PATTERN, K8sSchemas, Schema
from ome.api.v1beta1.base import Fmt, InlineK8s, IntOrStr, K8sRef, OMEModel, Preserve, QuantityMark, Rule

# crd keyword (python) -> JSON schema key
_KEYWORDS = {
    "minimum": "minimum",
    "maximum": "maximum",
    "pattern": "pattern",
    "min_length": "minLength",
    "max_length": "maxLength",
    "min_items": "minItems",
    "max_items": "maxItems",
    "max_properties": "maxProperties",
    "crd_default": "default",
    "list_type": "x-kubernetes-list-type",
    "map_type": "x-kubernetes-map-type",
    "nullable": "nullable",
    "format": "format",
    "enum": "enum",
}
_HANDLED = {*_KEYWORDS, "list_map_keys", "rules", "items", "inline", "preserve"}


class SchemaError(TypeError):
    """A model uses a type the generator cannot express."""


def crd_extra(info: FieldInfo) -> dict[str, Any]:
    extra = info.json_schema_extra
    if isinstance(extra, dict):
        crd = extra.get("crd")
        if isinstance(crd, dict):
            return crd
    return {}


def _rules(rules: tuple[Rule, ...]) -> list[dict[str, str]]:
    return [{"rule": r.rule, "message": r.message} for r in rules]


def _split_annotated(tp: Any) -> tuple[Any, list[Any]]:
    meta: list[Any] = []
    while get_origin(tp) is Annotated:
        args = get_args(tp)
        tp, meta = args[0], [*meta, *args[1:]]
    return tp, meta


def _strip_none(tp: Any) -> Any:
    origin = get_origin(tp)
    if origin is Union or origin is types.UnionType:
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
        return Union[tuple(args)]  # noqa: UP007 - rebuilt from a runtime tuple
    return tp


class SchemaBuilder:
    """Builds the schema of a model class, resolving embedded types through ``k8s``."""

    def __init__(self, k8s: K8sSchemas) -> None:
        self.k8s = k8s

    # --- models --------------------------------------------------------------------------

    def model_schema(self, cls: type[OMEModel]) -> Schema:
        props: dict[str, Schema] = {}
        for inline in _inlines(cls):
            props.update(self._inline_props(inline))
        required: list[str] = []
        for name, info in cls.model_fields.items():
            alias = info.alias or name
            crd = crd_extra(info)
            if crd.get("inline") and alias in props:
                continue
            props[alias] = self.field_schema(info)
            if info.is_required():
                required.append(alias)
        out: Schema = {"type": "object", "properties": dict(sorted(props.items()))}
        if required:
            out["required"] = sorted(required)
        if cls.crd_rules:
            out["x-kubernetes-validations"] = _rules(cls.crd_rules)
        if cls.crd_preserve_unknown:
            out["x-kubernetes-preserve-unknown-fields"] = True
        return out

    def _inline_props(self, inline: InlineK8s) -> dict[str, Schema]:
        return self.k8s.properties_of(inline.name, inline.drop)

    # --- fields --------------------------------------------------------------------------

    def field_schema(self, info: FieldInfo) -> Schema:
        schema = self.type_schema(info.annotation, list(info.metadata))
        crd = crd_extra(info)
        unknown = set(crd) - _HANDLED
        if unknown:
            raise SchemaError(f"unknown crd keywords {sorted(unknown)} on {info.alias}")
        for key, json_key in _KEYWORDS.items():
            if key in crd:
                value = crd[key]
                schema[json_key] = list(value) if isinstance(value, tuple) else value
        if "list_map_keys" in crd:
            schema["x-kubernetes-list-map-keys"] = list(crd["list_map_keys"])
        if "items" in crd:
            schema.setdefault("items", {}).update(crd["items"])
        if crd.get("preserve"):
            schema["x-kubernetes-preserve-unknown-fields"] = True
        if "rules" in crd:
            schema.setdefault("x-kubernetes-validations", []).extend(_rules(tuple(crd["rules"])))
        return schema

    def type_schema(self, tp: Any, meta: list[Any] | None = None) -> Schema:
        tp, inner = _split_annotated(_strip_none(tp))
        tp = _strip_none(tp)
        markers = [*(meta or []), *inner]
        marked = self._marker_schema(markers)
        if marked is not None:
            return marked
        fmt = next((m.format for m in markers if isinstance(m, Fmt)), None)
        schema = self._plain_schema(tp)
        if fmt is not None:
            schema["format"] = fmt
        return schema

    def _marker_schema(self, markers: list[Any]) -> Schema | None:
        for marker in markers:
            if isinstance(marker, K8sRef):
                return self.k8s.resolve(marker.name)
            if isinstance(marker, IntOrStr):
                return dict(BUILTIN["io.k8s.apimachinery.pkg.util.intstr.IntOrString"])
            if isinstance(marker, QuantityMark):
                return {
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                    "pattern": QUANTITY_PATTERN,
                    "x-kubernetes-int-or-string": True,
                }
            if isinstance(marker, Preserve):
                return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        return None

    def _plain_schema(self, tp: Any) -> Schema:
        if tp is str:
            return {"type": "string"}
        if tp is bool:
            return {"type": "boolean"}
        if tp is int:
            return {"type": "integer"}
        if tp is float:
            return {"type": "number"}
        if tp is Any:
            return {"x-kubernetes-preserve-unknown-fields": True}
        origin = get_origin(tp)
        if origin is Literal:
            return _literal_schema(get_args(tp))
        if origin is list:
            (item,) = get_args(tp)
            return {"type": "array", "items": self.type_schema(item)}
        if origin is dict:
            _, value = get_args(tp)
            value_tp, value_meta = _split_annotated(value)
            if value_tp is Any and not value_meta:
                return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            return {"type": "object", "additionalProperties": self.type_schema(value)}
        if isinstance(tp, type) and issubclass(tp, OMEModel):
            return self.model_schema(tp)
        raise SchemaError(f"cannot express {tp!r} as a CRD schema")


def _literal_schema(values: tuple[Any, ...]) -> Schema:
    if all(isinstance(v, str) for v in values):
        return {"type": "string", "enum": list(values)}
    if all(isinstance(v, bool) for v in values):
        return {"type": "boolean", "enum": list(values)}
    if all(isinstance(v, int) for v in values):
        return {"type": "integer", "enum": list(values)}
    raise SchemaError(f"mixed Literal {values!r}")


def _inlines(cls: type[OMEModel]) -> Iterator[InlineK8s]:
    seen: set[str] = set()
    for klass in cls.__mro__:
        for inline in vars(klass).get("crd_inline", ()):
            if inline.name not in seen:
                seen.add(inline.name)
                yield inline


def embedded_refs(models: list[type[OMEModel]]) -> set[str]:
    """Every Kubernetes type the models embed (the roots the OpenAPI data file must hold)."""
    names: set[str] = set()
    seen: set[type[OMEModel]] = set()

    def visit_type(tp: Any) -> None:
        tp, meta = _split_annotated(_strip_none(tp))
        tp = _strip_none(tp)
        names.update(m.name for m in meta if isinstance(m, K8sRef))
        for arg in get_args(tp):
            visit_type(arg)
        if isinstance(tp, type) and issubclass(tp, OMEModel):
            visit_model(tp)

    def visit_model(cls: type[OMEModel]) -> None:
        if cls in seen:
            return
        seen.add(cls)
        names.update(i.name for i in _inlines(cls))
        for info in cls.model_fields.values():
            names.update(m.name for m in info.metadata if isinstance(m, K8sRef))
            visit_type(info.annotation)

    for model in models:
        visit_model(model)
    return names
