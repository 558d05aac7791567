"""What a create and a server-side apply of the same new object cost the apiserver and etcd.

On a fresh local cluster in the `scale` profile, N Deployments and then N ClusterIP Services are
written 64 at a time, alternately by POST and by server-side apply (each twice), and each round prints
its wall time and the CPU seconds kube-apiserver and etcd spent on it (from /proc).

    python bench/bench_write_cost.py [N]
"""

from __future__ import annotations

import asyncio
import copy
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import scale_phases as phases  # noqa: E402

from ome.devcluster.cluster import Cluster  # noqa: E402
from ome.framework import resources  # noqa: E402
from ome.framework.client import Client  # noqa: E402

Obj = dict[str, Any]
IN_FLIGHT = 64
NAMESPACE = "write-cost"
COMPONENTS = ("kube-apiserver", "etcd")


def deployment(name: str) -> Obj:
    container = {"name": "c", "image": "x:1", "resources": {"requests": {"cpu": "1"}},
                 "env": [{"name": f"E{i}", "value": str(i)} for i in range(20)]}
    labels = {"app": name}
    template = {"metadata": {"labels": labels}, "spec": {"containers": [container]}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": 0, "selector": {"matchLabels": labels}, "template": template}}


def service(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100


async def run(cluster: Cluster, n: int) -> None:
    info = cluster.up(profile="scale", gpu_nodes=4, log=lambda m: print(m, file=sys.stderr))
    state = json.loads((cluster.state_dir / "cluster.json").read_text())
    pids = {c["name"]: c["pid"] for c in state["components"] if c["name"] in COMPONENTS}
    async with await Client.from_kubeconfig(str(info.kubeconfig)) as client:
        await client.create(resources.NAMESPACES, {"metadata": {"name": NAMESPACE}})
        gate = asyncio.Semaphore(IN_FLIGHT)

        async def write(how: str, res: Any, obj: Obj) -> None:
            async with gate:
                if how == "create":
                    await client.create(res, obj, NAMESPACE)
                else:
                    body = copy.deepcopy(obj)
                    body["metadata"]["namespace"] = NAMESPACE
                    await client.apply(res, body, field_manager="bench-write-cost")

        print(f"{'kind':10} {'write':6} {'n':>5} {'wall s':>7} {'per s':>7}  " +
              "  ".join(f"{c} CPU ms each" for c in COMPONENTS))
        for kind, res, make in (("Deployment", resources.DEPLOYMENTS, deployment),
                                ("Service", resources.SERVICES, service)):
            for round_index, how in enumerate(("create", "apply", "create", "apply")):
                before = {c: cpu_seconds(p) for c, p in pids.items()}
                started = time.monotonic()
                await asyncio.gather(*(write(how, res, make(f"{how}-{round_index}-{i}")) for i in range(n)))
                wall = time.monotonic() - started
                each = {c: (cpu_seconds(p) - before[c]) / n * 1000 for c, p in pids.items()}
                print(f"{kind:10} {how:6} {n:5} {wall:7.1f} {n / wall:7.1f}  " +
                      "  ".join(f"{each[c]:{len(c) + 12}.1f}" for c in COMPONENTS), flush=True)
                await asyncio.sleep(3)  # let the controllers' reactions to this round settle


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    phases.on_fresh_cluster(None, "ome-bench-write-cost-", False, lambda cluster: run(cluster, n))


if __name__ == "__main__":
    main()
