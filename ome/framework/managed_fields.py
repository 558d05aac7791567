"""A field manager's `Update` entry turned into its `Apply` entry (pure).

An object created by POST has its fields in the creator's `Update` entry of `metadata.managedFields`
(every field of the request, and the defaults the apiserver filled in while decoding it). Later
server-side applies by the same manager go to a separate `Apply` entry, so a field dropped from the
desired object would stay, still owned by the `Update` entry. client-go's csaupgrade moves such an
entry into the `Apply` entry once; `upgraded` computes that list here, so the next apply drops what it
no longer sends (a dropped default is defaulted again by the apiserver).

`drop` takes fields out of the moved set: a field the apiserver defaulted at create that another
writer changes later through a subresource, without changing the value first (a Deployment's
`spec.replicas`, scaled by an HPA), must not be owned by the `Apply` entry, or the next apply, which does
not send it, would reset it.

Field sets are the `FieldsV1` trees of the managed fields: `f:<name>` a field, `k:<json>` a list item by
its keys, `v:<json>` a set member, `i:<n>` a list index, `.` the node itself; a key with an empty tree
is a leaf of the set.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Final

FieldSet = dict[str, Any]
Path = tuple[str, ...]

REPLICAS: Final[Path] = ("f:spec", "f:replicas")


def union(a: Mapping[str, Any], b: Mapping[str, Any]) -> FieldSet:
    """The fields in either set (new dicts along the merged paths; the inputs are left as they are)."""
    out: FieldSet = dict(a)
    for key, sub in b.items():
        out[key] = union(out[key], sub) if key in out else sub
    return out


def without(fields: Mapping[str, Any], path: Path) -> FieldSet:
    """`fields` less the field at `path` and everything under it. A parent left with no member is
    removed too: an empty tree would mean the parent itself is a leaf of the set."""
    out: FieldSet = dict(fields)
    if not path or path[0] not in out:
        return out
    rest = without(out[path[0]], path[1:]) if len(path) > 1 else {}
    if rest:
        out[path[0]] = rest
    else:
        del out[path[0]]
    return out


def is_update_of(entry: Mapping[str, Any], managers: Collection[str]) -> bool:
    """An `Update` entry of the object itself (not of a subresource) by one of `managers`."""
    return (entry.get("operation") == "Update" and entry.get("manager") in managers
            and not entry.get("subresource"))


def upgraded(
    entries: Sequence[Mapping[str, Any]], manager: str, *, also: Iterable[str] = (), drop: Iterable[Path] = ()
) -> list[dict[str, Any]] | None:
    """`entries` with the `Update` entries of `manager` (and of the names in `also`, the same writer's
    earlier identities) merged into `manager`'s `Apply` entry, minus the `drop` paths. None when there is
    no such `Update` entry: nothing to move."""
    movers = {manager, *also}
    moved = [e for e in entries if is_update_of(e, movers)]
    if not moved:
        return None
    fields: FieldSet = {}
    for found in moved:
        fields = union(fields, found.get("fieldsV1") or {})
    applied = next((e for e in entries if e.get("manager") == manager and e.get("operation") == "Apply"
                    and not e.get("subresource")), None)
    if applied is not None:
        fields = union(fields, applied.get("fieldsV1") or {})
    for path in drop:
        fields = without(fields, path)
    gone = {id(e) for e in moved} | {id(applied)}
    out = [dict(e) for e in entries if id(e) not in gone]
    if fields:
        base = applied if applied is not None else moved[0]
        entry: dict[str, Any] = {
            "manager": manager,
            "operation": "Apply",
            "apiVersion": base.get("apiVersion"),
            "fieldsType": "FieldsV1",
            "fieldsV1": fields,
        }
        if base.get("time"):
            entry["time"] = base["time"]
        out.append(entry)
    return out
