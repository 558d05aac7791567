"""Independent writes made at once, each let to finish (a write is never left half-way because another
failed): one round trip for all of them instead of one each."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any


async def all_settled(*aws: Awaitable[Any]) -> list[Any]:
    """Await every one together; the results in order, or the first failure in argument order raised."""
    results = await asyncio.gather(*aws, return_exceptions=True)
    failed = failures(results)
    if failed:
        raise failed[0]
    return results


def failures(results: list[Any]) -> list[BaseException]:
    """The failures among `asyncio.gather(..., return_exceptions=True)` results."""
    return [r for r in results if isinstance(r, BaseException)]
