"""Free what a failed pass's frames hold once its error is handled.

An exception's traceback holds every frame it passed through, and each frame its locals: for a reconcile,
the cached objects it read, the objects it rendered, the revisions it compared. When any of those frames
also refers to the exception (a `gather(..., return_exceptions=True)` result list that it then raised
from, an error kept in a local to raise later), exception, traceback and frames form a cycle that only the
cyclic collector frees, and only at its next full collection, which at this process's object count runs
minutes apart. Under churn, optimistic-concurrency conflicts are routine (the OMENative soak: ~40 a
minute at N=20), and those cycles were most of the garbage between full collections and the RSS that
grew to hold it. Clearing the finished frames' locals breaks every such cycle at once.
"""

from __future__ import annotations

import traceback


def clear_failed_frames(exc: BaseException) -> None:
    """Clear the locals of the finished frames in `exc`'s traceback and in those of its causes and
    contexts. Frames still running (the handler's own, its callers') are left alone; the tracebacks keep
    their code and line numbers, so the error can still be formatted."""
    pending: list[BaseException] = [exc]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        traceback.clear_frames(current.__traceback__)
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
