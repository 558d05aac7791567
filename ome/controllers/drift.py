"""Drift: which fields a controller sets no longer hold its value on the live object (pure).

The desired object names the fields a controller owns; the live object (from the cache) holds what
the apiserver has now. A field drifted when its live value is not the desired one, after the
normalisation the apiserver itself applies:

- fields others add are not compared: defaults (`imagePullPolicy`, `protocol`), metadata the
  apiserver or kube-controller-manager writes (`deployment.kubernetes.io/revision`), and `status`;
- an empty or zero desired value (`""`, `0`, `false`, `{}`, `[]`) matches an absent field, since Go's
  `omitempty` drops it on the way back;
- quantities compare by value (`"0.5"` and `"500m"`, `1` and `"1"`, `"1024Mi"` and `"1Gi"`);
- a list whose items all carry a key (`name`, `mountPath`, `containerPort`, `port`, `uid`) is matched
  item by item on that key, and items others added are left alone (server-side apply keeps them too);
  any other list is compared whole, in order (server-side apply replaces it whole).

Only `metadata.labels`, `metadata.annotations` and `metadata.ownerReferences` of the metadata count;
`apiVersion`, `kind`, the name and the namespace identify the object and `status` is never desired.

`drift()` returns the paths of the fields that differ, so a caller can re-apply and log what changed.

Drift alone cannot see a field the controller stopped setting (a port removed from the desired
Service is just "a field someone else added" on the live one), so a desired object is also stamped
with a hash of itself (`ome.io/desired-hash`): `reasons()` wants an apply when the hash differs or a
field drifted, and server-side apply then drops what is no longer desired. Both the InferenceService
and the InferenceReplica controller decide their applies this way.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any, Final

import orjson

Path = tuple[str | int, ...]

HASH_ANNOTATION: Final = "ome.io/desired-hash"

_METADATA_FIELDS: Final = ("labels", "annotations", "ownerReferences")
_SKIPPED_TOP: Final = frozenset({"apiVersion", "kind", "metadata", "status"})
_LIST_KEYS: Final = ("name", "mountPath", "containerPort", "port", "uid", "devicePath")
_QUANTITY_PARENTS: Final = frozenset({"limits", "requests", "capacity", "hard"})
_QUANTITY_FIELDS: Final = frozenset({"sizeLimit", "averageValue"})
_QUANTITY: Final = re.compile(
    r"^([+-]?(?:\d+\.?\d*|\.\d+))([eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?$"
)
_SUFFIX: Final[dict[str, Decimal]] = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    **{s: Decimal(1024) ** (i + 1) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))},
}


def digest(obj: Mapping[str, Any]) -> str:
    return hashlib.sha256(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def stamp(desired: dict[str, Any]) -> dict[str, Any]:
    """`desired` with its hash annotation (computed before the annotation is added)."""
    value = digest(desired)
    meta = desired.setdefault("metadata", {})
    meta.setdefault("annotations", {})[HASH_ANNOTATION] = value
    return desired


def desired_hash(obj: Mapping[str, Any]) -> str:
    return str(((obj.get("metadata") or {}).get("annotations") or {}).get(HASH_ANNOTATION) or "")


def reasons(
    stamped: Mapping[str, Any], live: Mapping[str, Any] | None, *, ignore: Collection[Path] = ()
) -> list[str]:
    """Why `live` needs an apply of `stamped`: [] when it does not, else "created", "deleting",
    "changed" (another hash) or the drifted fields (leaving out `ignore`)."""
    if live is None:
        return ["created"]
    meta = live.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return ["deleting"]
    want = desired_hash(stamped)
    if not want or desired_hash(live) != want:
        return ["changed"]
    return [render(p) for p in drift(stamped, live) if p not in ignore]


def drift(desired: Mapping[str, Any], live: Mapping[str, Any] | None) -> list[Path]:
    """Paths of the fields `desired` sets whose value on `live` differs; [] when none does.
    A missing live object has drifted as a whole: [()]."""
    if live is None:
        return [()]
    out: list[Path] = []
    want_meta = desired.get("metadata") or {}
    have_meta = live.get("metadata") or {}
    for name in _METADATA_FIELDS:
        if name in want_meta:
            _compare(want_meta[name], have_meta.get(name), ("metadata", name), out)
    for key, value in desired.items():
        if key not in _SKIPPED_TOP:
            _compare(value, live.get(key), (key,), out)
    return out


def drifted(
    desired: Mapping[str, Any], live: Mapping[str, Any] | None, *, ignore: Iterable[Path] = ()
) -> bool:
    """Whether any field drifted, leaving out `ignore` (paths the apiserver never keeps as sent)."""
    skip = set(ignore)
    return any(path not in skip for path in drift(desired, live))


def render(path: Path) -> str:
    """`spec.template.spec.containers[name=engine].image` for a log line."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.startswith("[") or not out:
            out += part
        else:
            out += f".{part}"
    return out or "<object>"


def _compare(want: Any, have: Any, path: Path, out: list[Path]) -> None:
    # JSON decodes to dict and list: exact type checks keep this walk cheap (it runs per child and
    # reconcile), where isinstance against the Mapping ABC would dominate it.
    kind = type(want)
    if kind is dict:
        if not want:
            return  # no claim: applying an empty map removes nothing another manager set
        if type(have) is not dict:
            out.append(path)
            return
        for key, value in want.items():
            _compare(value, have.get(key), (*path, key), out)
    elif kind is list:
        if want:
            _compare_list(want, have, path, out)
    elif want is None:
        return
    elif _empty(want):
        if not _empty(have) and not _same_scalar(want, have, path):
            out.append(path)  # we set it empty (e.g. false), someone set a value
    elif want != have or type(have) is bool or kind is bool:
        if not _same_scalar(want, have, path):
            out.append(path)


def _compare_list(want: list[Any], have: Any, path: Path, out: list[Path]) -> None:
    if type(have) is not list:
        out.append(path)
        return
    key = _list_key(want)
    if key is None:
        if len(want) != len(have):
            out.append(path)
            return
        for i, (w, h) in enumerate(zip(want, have, strict=True)):
            _compare(w, h, (*path, i), out)
        return
    by_key = {item.get(key): item for item in have if type(item) is dict}
    for item in want:
        _compare(item, by_key.get(item[key]), (*path, f"[{key}={item[key]}]"), out)


def _list_key(items: Sequence[Any]) -> str | None:
    """The field that identifies every item (unique and present in each), if any."""
    if type(items[0]) is not dict or not all(type(i) is dict for i in items):
        return None
    for key in _LIST_KEYS:
        values = [i.get(key) for i in items]
        if None not in values and len(set(map(str, values))) == len(values):
            return key
    return None


def _empty(value: Any) -> bool:
    """What Go's omitempty leaves out: None, false, zero, "" and empty maps and lists."""
    if value is None or value is False:
        return True
    kind = type(value)
    if kind is int or kind is float:
        return bool(value == 0)
    return (kind is str or kind is dict or kind is list) and not value


def _same_scalar(want: Any, have: Any, path: Path) -> bool:
    if isinstance(want, bool) or isinstance(have, bool):
        return want is have
    if want == have:
        return True
    if _quantity_field(path):
        a, b = quantity(want), quantity(have)
        return a is not None and a == b
    return False


def _quantity_field(path: Path) -> bool:
    last = path[-1] if path else ""
    parent = path[-2] if len(path) > 1 else ""
    return parent in _QUANTITY_PARENTS or last in _QUANTITY_FIELDS or (parent == "target" and last == "value")


def quantity(value: Any) -> Decimal | None:
    """A Kubernetes quantity's value (`"1500m"` -> 1.5), or None when `value` is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return Decimal(str(value))
    if not isinstance(value, str):
        return None
    match = _QUANTITY.match(value.strip())
    if match is None:
        return None
    number, suffix = match.group(1), match.group(2) or ""
    try:
        if suffix[:1] in ("e", "E"):
            return Decimal(number) * Decimal(10) ** int(suffix[1:])
        return Decimal(number) * _SUFFIX[suffix]
    except (InvalidOperation, KeyError):
        return None
