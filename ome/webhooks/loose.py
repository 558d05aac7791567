"""Reading admission objects that may hold anything: every accessor answers with a safe default.

The apiserver validates OME objects against their CRD schemas before our validating webhooks run, but
the mutating webhook runs first, tests and the fuzzer send anything, and a schema may be looser than
a rule assumes. Rules read through these helpers so an unexpected type is "not set", never a crash.
"""

from __future__ import annotations

from typing import Any, Final

COMPONENTS: Final = ("engine", "decoder", "router")


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def is_int(value: Any) -> bool:
    """A JSON integer: bool is an int subclass in Python but not in JSON."""
    return isinstance(value, int) and not isinstance(value, bool)


def dig(obj: Any, *path: str) -> Any:
    """obj[path[0]][path[1]]..., or None as soon as a step is missing or not an object."""
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def declared_components(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The components the spec declares (present as objects), in reconcile order."""
    return {c: spec[c] for c in COMPONENTS if isinstance(spec.get(c), dict)}
