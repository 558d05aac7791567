"""A manager process for the leader-election e2e test.

It reconciles one ConfigMap, `counter`, and appends every reconcile's [identity, start, end] interval to
it, so the test can prove that no two processes ever reconciled at the same time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from ome.framework.client import Client
from ome.framework.conflict import retry_on_conflict
from ome.framework.controller import Controller
from ome.framework.leaderelection import LeaderElectionConfig
from ome.framework.log_setup import configure_logging
from ome.framework.manager import Manager, ManagerOptions
from ome.framework.reconcile import Request, Result, reconciler_from
from ome.framework.resources import CONFIGMAPS


async def main(args: argparse.Namespace) -> None:
    configure_logging("console", "info")
    client = await Client.from_kubeconfig(args.kubeconfig)
    election = LeaderElectionConfig(
        lease_name="le-e2e", lease_namespace=args.namespace, identity=args.identity,
        lease_duration=args.lease_duration, renew_deadline=args.renew_deadline, retry_period=args.retry_period,
    )
    manager = Manager(client, ManagerOptions(
        metrics_bind_address="0", health_probe_bind_address="0", leader_election=election))

    async def reconcile(req: Request) -> Result:
        if req.name != "counter":
            return Result()
        start = time.time()
        await asyncio.sleep(0.05)  # a reconcile that takes a while widens any overlap window

        async def record() -> None:
            cm = await client.get(CONFIGMAPS, "counter", args.namespace)
            data = cm.setdefault("data", {})
            intervals = json.loads(data.get("intervals", "[]"))
            intervals.append([args.identity, start, time.time()])
            data["intervals"] = json.dumps(intervals[-400:])
            data["count"] = str(int(data.get("count", "0")) + 1)
            await client.update(CONFIGMAPS, cm)

        await retry_on_conflict(record)
        return Result(requeue_after=0.2)

    informer = manager.cache.informer_for(CONFIGMAPS, namespace=args.namespace)
    manager.add_controller(Controller("le-counter", reconciler_from(reconcile)).for_(informer))
    try:
        await manager.run()
    finally:
        await client.close()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--kubeconfig", required=True)
    p.add_argument("--namespace", required=True)
    p.add_argument("--identity", required=True)
    p.add_argument("--lease-duration", type=float, default=4.0)
    p.add_argument("--renew-deadline", type=float, default=3.0)
    p.add_argument("--retry-period", type=float, default=1.0)
    asyncio.run(main(p.parse_args()))
