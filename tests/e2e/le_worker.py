"""A manager process for the leader-election e2e test.

It reconciles one ConfigMap, `counter`, and appends every reconcile's [identity, start, end] interval to
it, so the test can prove that no two processes ever reconciled at the same time. A conflict is an
error like any other: the controller retries from a fresh read. After a lost Lease it exits 1, as
ome-manager does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from ome.framework import errors
from ome.framework.client import Client
from ome.framework.controller import Controller
from ome.framework.leaderelection import LeaderElectionConfig
from ome.framework.log_setup import configure_logging
from ome.framework.manager import LeaderElectionLost, Manager, ManagerOptions
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

        cm = await client.get(CONFIGMAPS, "counter", args.namespace)
        data = cm.setdefault("data", {})
        intervals = json.loads(data.get("intervals", "[]"))
        intervals.append([args.identity, start, time.time()])
        data["intervals"] = json.dumps(intervals[-400:])
        data["count"] = str(int(data.get("count", "0")) + 1)
        await client.update(CONFIGMAPS, cm)  # a Conflict is retried by the controller
        return Result(requeue_after=0.2)

    async def heartbeat() -> None:
        """Leader work outside a controller: a merge patch (no resourceVersion) every 0.1 s, so a write is
        always due when the process is paused, and lands unless something stops it."""
        while True:
            await asyncio.sleep(0.1)
            patch = {"data": {"leader": args.identity, "at": str(time.time())}}
            try:
                await client.patch(CONFIGMAPS, "heartbeat", patch, args.namespace)
            except errors.ApiError as exc:  # no heartbeat ConfigMap in this test, or the write was fenced
                print(f"heartbeat not written: {exc}", flush=True)

    informer = manager.cache.informer_for(CONFIGMAPS, namespace=args.namespace)
    manager.add_controller(Controller("le-counter", reconciler_from(reconcile)).for_(informer))
    manager.add_runnable(heartbeat)
    try:
        await manager.run()
    except LeaderElectionLost:
        print("leader election lost", flush=True)
        sys.exit(1)
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
