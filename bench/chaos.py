"""The fault suite as a table: three `ome-manager` processes on one Lease serve N InferenceServices
(a third each RawDeployment, OMENative single-pod, OMENative leader + 2 workers) on the local control
plane; each fault is injected while an image change is in flight, and one row says how long recovery
took and whether anything was duplicated or lost (see ome/devcluster/chaos.py for the invariants).

Usage: chaos.py [--services 20] [--state-dir DIR] [--faults a,b,...]
The cluster in DIR (default: OME_DEV_STATE_DIR or ~/.cache/ome/devcluster) is started when not running;
this bench restarts its kube-apiserver and deletes and recreates a node.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

from ome.api import resources
from ome.devcluster import chaos_faults as faults
from ome.devcluster import paths
from ome.devcluster.chaos import ChaosConfig, Harness
from ome.devcluster.cluster import Cluster
from ome.devcluster.crds import install_crds
from ome.framework import errors
from ome.framework.client import Client


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--services", type=int, default=20, help="InferenceServices in the mix (default 20)")
    p.add_argument("--state-dir", type=Path,
                   default=Path(os.environ.get("OME_DEV_STATE_DIR") or paths.default_state_dir()))
    p.add_argument("--faults", default=",".join(f.name for f in faults.FAULTS),
                   help="comma-separated fault names, in order (default: all)")
    p.add_argument("--recover-timeout", type=float, default=300.0)
    return p.parse_args()


def _table(rows: list[faults.Row]) -> str:
    head = ("fault", "injected", "held", "recovered in", "duplicates", "lost", "orphans", "foreign writes")
    body = [(r.fault, r.injected, f"{r.held_s:.1f} s",
             f"{r.recovered_s:.1f} s" if r.recovered else f"NOT after {r.recovered_s:.0f} s",
             str(r.duplicates), str(r.lost), str(len(r.orphans)), str(len(r.violations))) for r in rows]
    widths = [max(len(x[i]) for x in (head, *body)) for i in range(len(head))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in (head, *body)]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


async def main() -> int:
    args = _args()
    chosen = [next(f for f in faults.FAULTS if f.name == name) for name in args.faults.split(",")]
    cluster = Cluster(args.state_dir)
    cluster.up(log=lambda m: print(m, file=sys.stderr))
    namespace = f"chaos-{uuid.uuid4().hex[:6]}"
    async with await Client.from_kubeconfig(str(cluster.kubeconfig)) as client:
        await install_crds(client)
        await client.create(resources.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                                   "metadata": {"name": namespace}})
        for _ in range(300):  # pods are admitted once the default ServiceAccount exists
            try:
                await client.get(resources.SERVICE_ACCOUNTS, "default", namespace)
                break
            except errors.NotFound:
                await asyncio.sleep(0.1)
        config = ChaosConfig(services=args.services, recover_timeout=args.recover_timeout)
        rows: list[faults.Row] = []
        workdir = Path(tempfile.mkdtemp(prefix="ome-chaos-"))
        try:
            started = time.monotonic()
            async with Harness(cluster, client, namespace, workdir, config) as h:
                if not cluster.audit_log.exists():
                    print(f"no audit log at {cluster.audit_log}: restart the cluster with this version "
                          "(ome-dev cluster down; up)", file=sys.stderr)
                    return 2
                print(f"{config.managers} managers, {args.services} InferenceServices served in "
                      f"{time.monotonic() - started:.1f} s; manager logs in {workdir}", file=sys.stderr)
                for fault in chosen:
                    row = await faults.run(h, fault)
                    rows.append(row)
                    verdict = "ok" if row.ok else f"FAILED {row.unconverged or ''}"
                    print(f"  {row.fault}: {verdict}", file=sys.stderr)
        finally:
            await client.delete(resources.NAMESPACES, namespace)
    print(_table(rows))
    return 0 if rows and all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
