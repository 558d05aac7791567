"""Bounded reads the fleet-wide reports share (`cluster status`, `quota`, `placement explain`):
a list read page by page under a page and request budget, and the reason a read failed, as the
reports spell it. The budgets keep a report's cost fixed however many objects the cluster holds."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final

from ome.framework import errors
from ome.framework.client import Client
from ome.framework.resources import Resource

Obj = dict[str, Any]

_DNS_SUBDOMAIN: Final = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


def valid_name(name: object) -> bool:
    """A Kubernetes object name (DNS-1123 subdomain, at most 253 characters)."""
    return isinstance(name, str) and 0 < len(name) <= 253 and bool(_DNS_SUBDOMAIN.match(name))


def failure_reason(exc: BaseException) -> str:
    """`Forbidden`, `NotFound`, `TimedOut` or `Unreadable`, for a failed read."""
    if isinstance(exc, errors.Forbidden | errors.Unauthorized):
        return "Forbidden"
    if isinstance(exc, errors.NotFound):
        return "NotFound"
    if isinstance(exc, errors.ServerTimeout | TimeoutError):
        return "TimedOut"
    return "Unreadable"


@dataclass(slots=True)
class PagedRead:
    """What a bounded list read returned: the items kept, and how the read went."""

    items: list[Obj] = field(default_factory=list)
    returned: int = 0
    pages: int = 0
    calls: int = 0
    truncated: bool = False
    failure: str | None = None
    """Why a request failed (`failure_reason`), or None."""


async def paged_list(
    client: Client,
    res: Resource,
    namespace: str | None = None,
    *,
    page_size: int,
    page_limit: int,
    request_limit: int,
    keep: int,
) -> PagedRead:
    """Up to `page_limit` pages of `page_size` items; stops with `truncated` when more remain, the
    request budget runs out, or more than `keep` items came back."""
    out = PagedRead()
    token: str | None = None
    while True:
        if out.pages >= page_limit or out.calls >= request_limit:
            out.truncated = True
            return out
        out.calls += 1
        try:
            page = await client.list_page(res, namespace, limit=page_size, continue_token=token)
        except (errors.ApiError, TimeoutError) as exc:
            out.failure = failure_reason(exc)
            return out
        out.pages += 1
        items = [i for i in page.get("items") or [] if isinstance(i, dict)]
        out.returned += len(items)
        room = keep - len(out.items)
        out.items.extend(items[: max(room, 0)])
        token = (page.get("metadata") or {}).get("continue") or None
        if len(items) > room:
            out.truncated = True
            return out
        if token is None:
            return out
