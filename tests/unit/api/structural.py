"""Checks that a CRD schema is structural and acceptable to apiextensions.k8s.io/v1."""

from __future__ import annotations

from typing import Any

# JSONSchemaProps fields a CRD may carry (apiextensions.k8s.io/v1).
ALLOWED_KEYS = {
    "type",
    "format",
    "enum",
    "default",
    "nullable",
    "properties",
    "additionalProperties",
    "items",
    "required",
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
    "anyOf",
    "description",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-int-or-string",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
}
TYPES = {"object", "array", "string", "integer", "number", "boolean"}


def structural_problems(node: dict[str, Any], path: str = "") -> list[str]:
    """Every reason ``node`` (and its subtree) is not a valid structural schema node."""
    problems: list[str] = []
    unknown = set(node) - ALLOWED_KEYS
    if unknown:
        problems.append(f"{path}: keys not allowed in a CRD: {sorted(unknown)}")
    typed = node.get("type") in TYPES
    if not (
        typed or node.get("x-kubernetes-int-or-string") or node.get("x-kubernetes-preserve-unknown-fields")
    ):
        problems.append(f"{path}: no type")
    if "anyOf" in node and not node.get("x-kubernetes-int-or-string"):
        problems.append(f"{path}: anyOf outside int-or-string")
    if "properties" in node and "additionalProperties" in node:
        problems.append(f"{path}: both properties and additionalProperties")
    if node.get("type") == "array" and "items" not in node:
        problems.append(f"{path}: array without items")
    if "x-kubernetes-list-type" in node and node.get("type") != "array":
        problems.append(f"{path}: list-type on a non-array")
    problems += _list_map_problems(node, path)
    for key, sub in node.get("properties", {}).items():
        problems += structural_problems(sub, f"{path}.{key}")
    if isinstance(node.get("additionalProperties"), dict):
        problems += structural_problems(node["additionalProperties"], f"{path}{{*}}")
    if isinstance(node.get("items"), dict):
        problems += structural_problems(node["items"], f"{path}[*]")
    for rule in node.get("x-kubernetes-validations", []):
        if set(rule) - {"rule", "message", "messageExpression", "reason", "fieldPath", "optionalOldSelf"}:
            problems.append(f"{path}: bad validation rule {rule}")
    return problems


def _list_map_problems(node: dict[str, Any], path: str) -> list[str]:
    if node.get("x-kubernetes-list-type") != "map":
        return []
    items = node.get("items", {})
    props = items.get("properties", {})
    required = set(items.get("required", ()))
    problems = []
    for key in node.get("x-kubernetes-list-map-keys", ()):
        if key not in props:
            problems.append(f"{path}: list-map key {key} is not a property")
        elif key not in required and "default" not in props[key]:
            problems.append(f"{path}: list-map key {key} is neither required nor defaulted")
    return problems


def walk(node: dict[str, Any]) -> list[dict[str, Any]]:
    """Every schema node under ``node``, itself included."""
    out = [node]
    for sub in node.get("properties", {}).values():
        out += walk(sub)
    if isinstance(node.get("additionalProperties"), dict):
        out += walk(node["additionalProperties"])
    if isinstance(node.get("items"), dict):
        out += walk(node["items"])
    return out
