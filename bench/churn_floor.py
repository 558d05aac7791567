"""The churn floor: (d)'s spec changes, answered by a plain client with no limit of its own.

For each change (service i % n, a new engine annotation, at a fixed rate, as in (d)) the client sends what a
controller needs at the least: the rendered objects that the change alters, applied at once, then the
service's status with the new `observedGeneration`. Nothing waits in a queue and nothing is read back, so
the latency from the change to that status write is what the cluster itself allows at that rate, beside
the rollouts the changed Deployments start: (d)'s manager figures are measured against it. RawDeployment
only: an OMENative change rolls an Instance, which takes a controller to drive.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any

import scale_phases as phases

from ome.api import resources
from ome.controllers.inferenceservice.converge import resource_of
from ome.framework.client import Client

Obj = dict[str, Any]
Render = Callable[[int, dict[str, str]], list[Obj]]
"""Service i's objects with these engine annotations."""
FIELD_MANAGER = "ome-bench-floor"
CHURN_KEY = "bench.ome.io/churn"


def _key(obj: Obj) -> tuple[str, str]:
    return obj["kind"], obj["metadata"]["name"]


def changed_objects(before: list[Obj], after: list[Obj]) -> list[Obj]:
    """The objects of `after` that differ from their counterpart in `before` (or have none)."""
    old = {_key(o): o for o in before}
    return [o for o in after if old.get(_key(o)) != o]


async def floor_churn(client: Client, namespace: str, n: int, rate: float, seconds: float,
                      render: Render) -> Obj:
    """Latencies in seconds from each change's response to its status write's response; a change whose
    writes are still out 60 s after the last one was sent is counted as not seen."""
    bases = {i: render(i, {}) for i in range(n)}
    token = f"{time.time():.0f}"
    latencies: list[float] = []
    writes: list[int] = []

    async def change(k: int) -> None:
        i = k % n
        name = f"svc-{i}"
        annotations = {CHURN_KEY: f"{token}-{k}"}
        patch = {"spec": {"engine": {"annotations": annotations}}}
        updated = await phases.retry_transient(
            lambda: client.patch(resources.INFERENCE_SERVICES, name, patch, namespace), f"change {name}")
        sent = time.monotonic()
        generation = int(updated["metadata"]["generation"])
        altered = changed_objects(bases[i], render(i, annotations))

        def applying(obj: Obj) -> Callable[[], Coroutine[Any, Any, Obj]]:
            return lambda: client.apply(resource_of(obj), obj, field_manager=FIELD_MANAGER)

        await asyncio.gather(*(phases.retry_transient(applying(o), f"apply {o['metadata']['name']}")
                               for o in altered))
        status = {"status": {"observedGeneration": generation}}
        await phases.retry_transient(
            lambda: client.patch(resources.INFERENCE_SERVICES, name, status, namespace, subresource="status"),
            f"write {name}'s status")
        latencies.append(time.monotonic() - sent)
        writes.append(len(altered) + 1)

    started = time.monotonic()
    tasks: list[asyncio.Task[None]] = []
    total = int(rate * seconds)
    for k in range(total):
        delay = started + k / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(change(k)))
    issued = time.monotonic() - started
    done, late = await asyncio.wait(tasks, timeout=60) if tasks else (set(), set())
    for task in late:
        task.cancel()
    await asyncio.gather(*late, return_exceptions=True)  # the cancelled ones' CancelledError, not raised
    for task in done:
        if (error := task.exception()) is not None:
            raise SystemExit(f"churn floor: a change failed: {error!r}")
    return {"changes": total, "rate": total / issued if issued else 0.0, "gen": sorted(latencies),
            "missing_gen": total - len(latencies),
            "writes_per_change": sum(writes) / len(writes) if writes else 0.0}
