"""InferenceService controller figures on a real (kwok) cluster: N RawDeployment services applied at once.

Reports the time until every InferenceService is Ready, the API writes per service the controller made to
get there, and the writes during a forced no-op resync of all of them (target: 0). The controller runs
in-process with the manager; the model is made Ready on gpu-node-0 as the node agent would.

    python bench/bench_isvc.py --kubeconfig /tmp/omedev/kubeconfig --services 200
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
import uuid
from pathlib import Path

import structlog

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ome.api import resources  # noqa: E402
from ome.devcluster.crds import install_crds  # noqa: E402
from ome.framework.client import Client  # noqa: E402
from ome.framework.reconcile import Request  # noqa: E402
from tests.e2e.isvc_support import catalog, condition, running_manager  # noqa: E402


async def _all_ready(client: Client, namespace: str, n: int) -> int:
    items, _ = await client.list(resources.INFERENCE_SERVICES, namespace)
    return sum(1 for i in items if (c := condition(i, "Ready")) is not None and c["status"] == "True")


async def run(args: argparse.Namespace) -> None:
    async with await Client.from_kubeconfig(args.kubeconfig) as client:
        await install_crds(client)
        namespace = f"bench-isvc-{uuid.uuid4().hex[:6]}"
        await client.create(resources.NAMESPACES, {"metadata": {"name": namespace}})
        try:
            await _measure(client, namespace, args.services)
        finally:
            await client.delete(resources.NAMESPACES, namespace)


async def _measure(client: Client, namespace: str, n: int) -> None:
    async with catalog(client, namespace) as cat, running_manager(client) as (ctrl, writer):
        started = time.monotonic()
        body = {"model": {"name": cat.model}, "engine": {}}
        await asyncio.gather(
            *(
                client.create(
                    resources.INFERENCE_SERVICES,
                    {
                        "apiVersion": "ome.io/v1beta1",
                        "kind": "InferenceService",
                        "metadata": {"name": f"svc-{i}"},
                        "spec": body,
                    },
                    namespace,
                )
                for i in range(n)
            )
        )
        while (ready := await _all_ready(client, namespace, n)) < n:
            if time.monotonic() - started > 900:
                raise SystemExit(f"only {ready}/{n} Ready after 900 s")
            await asyncio.sleep(1)
        elapsed = time.monotonic() - started
        await asyncio.sleep(3)  # let trailing status events settle
        to_ready = len(writer.writes)
        for i in range(n):
            ctrl.queue.add(Request(namespace, f"svc-{i}"))
        while len(ctrl.queue) > 0:  # noqa: ASYNC110  -- the queue exposes only its length
            await asyncio.sleep(0.2)
        await asyncio.sleep(2)
        resync = len(writer.writes) - to_ready
    print(f"services                      {n}")
    print(f"time until all Ready          {elapsed:.1f} s")
    print(f"API writes per service        {to_ready / n:.2f}")
    print(f"writes during no-op resync    {resync}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--services", type=int, default=200)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
