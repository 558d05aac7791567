"""OMENative scale-up pod batching (configure-pod-batching.md): which missing Instances get their pods in
this pass. Pure.

`lifecycle.scaleUpPodBatchSize` caps the missing pods selected for creation in one pass over a component.
An Instance's missing pods are selected together: Instances are taken in index order while they fit, and
once the next one does not fit the later ones wait too; the first one proceeds alone when it alone is
larger than the budget (a 16-pod Instance still progresses with a budget of 8). No budget: every
Instance. The Instances left out get their pods in a later pass, which the admitted pods' events bring.
"""

from __future__ import annotations

from collections.abc import Sequence

from ome.omenative.instances import PodCreate

Batch = tuple[list[PodCreate], list[PodCreate]]


def admit_scale_up(creates: Sequence[PodCreate], budget: int | None) -> Batch:
    """(admitted, deferred) Instances for this pass; each costs its missing pods."""
    ordered = sorted(creates, key=lambda c: c.index)
    if budget is None:
        return list(ordered), []
    admitted: list[PodCreate] = []
    cost = 0
    for position, create in enumerate(ordered):
        size = len(create.names)
        if admitted and cost + size > budget:
            return admitted, list(ordered[position:])
        admitted.append(create)
        cost += size
    return admitted, []


__all__ = ["admit_scale_up"]
