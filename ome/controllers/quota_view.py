"""ResourceQuotas as the OMENative controllers see them: the shared slim informer, what a quota refusal
looks like, and which InferenceReplicas a quota change may unblock.

An operation whose pods a ResourceQuota refused waits with `operation.waiting: QuotaExceeded` (docs:
Instances, Operations). Retrying such a create on the work queue's error backoff would leave a raised
quota unseen for up to its 1000 s cap, so the controllers instead:

- watch ResourceQuotas and reconcile, on any change of a namespace's quotas (a raised `hard`, a `used`
  that dropped as pods went away, a quota deleted), the replicas of that namespace waiting on one;
- retry a refused create at most every `QUOTA_RECHECK` seconds even without an event (a watch can
  drop; a quota controller may lag), instead of backing off.

The shared cache keeps one informer per (kind, namespace, selectors, transform), so every controller
asks through `quota_informer`, with the one transform.
"""

from __future__ import annotations

from typing import Any, Final

from ome.api.resources import INFERENCE_REPLICAS
from ome.framework import errors
from ome.framework.cache import SharedCache
from ome.framework.informer import Informer
from ome.framework.reconcile import Request
from ome.framework.resources import RESOURCE_QUOTAS
from ome.omenative import status

Obj = dict[str, Any]
QUOTA_EXCEEDED: Final = "QuotaExceeded"
QUOTA_RECHECK: Final = 15.0
"""Seconds between tries of a quota-refused create when no quota event comes (bounded, not a backoff)."""
_META: Final = ("name", "namespace", "uid", "resourceVersion", "deletionTimestamp")


def slim_quota(obj: Obj) -> Obj:
    """Only what tells a quota changed (its limits and usage); scopes and selectors are dropped."""
    meta = obj.get("metadata") or {}
    spec, st = obj.get("spec") or {}, obj.get("status") or {}
    return {
        "metadata": {k: meta[k] for k in _META if k in meta},
        "spec": {"hard": spec.get("hard") or {}},
        "status": {"hard": st.get("hard") or {}, "used": st.get("used") or {}},
    }


def quota_informer(cache: SharedCache) -> Informer:
    return cache.informer_for(RESOURCE_QUOTAS, transform=slim_quota)


def is_quota_refusal(exc: BaseException | None) -> bool:
    """The API server's answer to a create that a ResourceQuota refused (403, "exceeded quota")."""
    return isinstance(exc, errors.Forbidden) and "exceeded quota" in (exc.message or "")


def quota_changed(event_type: str, obj: Obj, old: Obj | None) -> bool:
    """A predicate: limits or usage moved (a resync or a metadata-only write unblocks nothing)."""
    if event_type != "MODIFIED" or old is None:
        return True
    return (obj.get("spec"), obj.get("status")) != (old.get("spec"), old.get("status"))


def waiting_on_quota(replica: Obj) -> bool:
    """Whether an Instance of this replica has an operation waiting on a ResourceQuota."""
    return any(
        (row.get("operation") or {}).get("waiting") == QUOTA_EXCEEDED
        for row in status.rows_of(replica.get("status") or {})
    )


def quota_waiters(cache: SharedCache, quota: Obj) -> list[Request]:
    """The InferenceReplicas of the quota's namespace that wait on a ResourceQuota (the mapper of a
    quota watch): a change of any quota there may let their pods in."""
    ns = (quota.get("metadata") or {}).get("namespace") or ""
    if not ns:
        return []
    names = sorted(r["metadata"]["name"] for r in cache.list(INFERENCE_REPLICAS, ns) if waiting_on_quota(r))
    return [Request(ns, name) for name in names]
