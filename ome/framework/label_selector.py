"""Label selectors written as strings (`pool=gpu,tier in (a,b),!spot`), as `spec.placement.requirements`
and `clusterSelector` hold them (pure): parse, and match a label set."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

MAX_LENGTH: Final = 4096
_KEY: Final = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]"
    r"([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
_VALUE: Final = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_SET: Final = re.compile(r"^(\S+)\s+(in|notin)\s*\((.*)\)$")


class SelectorError(ValueError):
    """The selector does not parse."""


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str
    """`=`, `!=`, `in`, `notin`, `exists` or `!exists`."""
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        if self.op == "exists":
            return self.key in labels
        if self.op == "!exists":
            return self.key not in labels
        if self.op in ("=", "in"):
            return value is not None and value in self.values
        return value is None or value not in self.values  # != and notin


def _split(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return [p.strip() for p in parts]


def _key(key: str) -> str:
    if not _KEY.match(key) or len(key.rsplit("/", 1)[-1]) > 63:
        raise SelectorError(f"invalid label key {key!r}")
    return key


def _values(raw: list[str]) -> tuple[str, ...]:
    values = tuple(v.strip() for v in raw)
    if any(len(v) > 63 or not _VALUE.match(v) for v in values):
        raise SelectorError("invalid label value")
    return values


def parse(text: str) -> list[Requirement]:
    if len(text) > MAX_LENGTH:
        raise OverflowError("selector too long")
    if not text.strip():
        return []
    out = []
    for part in _split(text):
        if not part:
            raise SelectorError("empty requirement")
        if m := _SET.match(part):
            out.append(Requirement(_key(m.group(1)), m.group(2), _values(m.group(3).split(","))))
        elif "!=" in part:
            key, value = part.split("!=", 1)
            out.append(Requirement(_key(key.strip()), "!=", _values([value])))
        elif "=" in part:
            key, value = part.split("==", 1) if "==" in part else part.split("=", 1)
            out.append(Requirement(_key(key.strip()), "=", _values([value])))
        elif part.startswith("!"):
            out.append(Requirement(_key(part[1:].strip()), "!exists"))
        else:
            out.append(Requirement(_key(part), "exists"))
    return out


def matches(requirements: list[Requirement], labels: Mapping[str, str]) -> bool:
    return all(r.matches(labels) for r in requirements)
