"""Informer cache figures: events/s applied to the cache, and KiB per cached Pod.

Against a real cluster (`--kubeconfig PATH`): creates N Pods in a fresh namespace (kwok runs
them; nodes are fake), measures memory per cached Pod with tracemalloc for the default transform
(managedFields stripped) and for a metadata-only informer, then patches a label on the Pods
`--churn` times and reports events/s seen by the informer (bounded by the apiserver's write rate:
the patches come from this process).

With `--fake`: the same against tests/unit/framework/fake_apiserver.py in a child process; the
churn is generated server-side, so events/s is the informer's own capacity (framework.md §2c
measured 15k-20k Pod events/s on one core).

    python bench/bench_cache.py --fake --pods 2000 --churn 30000
    python bench/bench_cache.py --kubeconfig ~/.kube/config --pods 1000 --churn 5000
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import os
import sys
import time
import tracemalloc
import uuid
from pathlib import Path
from typing import Any

import orjson
import structlog
from kubernetes_asyncio.client import Configuration

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ome.framework import errors, resources  # noqa: E402
from ome.framework.client import Client  # noqa: E402
from ome.framework.informer import Informer  # noqa: E402
from ome.framework.manager import apply_gc_policy  # noqa: E402
from ome.framework.transforms import slim_pod  # noqa: E402
from ome.framework.transport import ClientSettings  # noqa: E402

Obj = dict[str, Any]
PODS = resources.PODS
_TIME = "2026-11-02T10:11:12Z"


def pod_body(namespace: str, i: int, node_selector: dict[str, str], fake: bool) -> Obj:
    """A Pod shaped like an OME engine replica (~3 KB as sent, ~6 KB once the server fills it in)."""
    name = f"bench-engine-{i:05d}"
    body: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app": "bench", "component": "engine", "ome.io/inferenceservice": "bench",
                       "app.kubernetes.io/managed-by": "ome", "pod-template-hash": "7c9f8d6b5"},
            "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "8080"},
        },
        "spec": {
            "containers": [{
                "name": "ome-container",
                "image": "registry.example.com/vllm/vllm-openai:v0.9.2",
                "args": ["--model", "/mnt/models", "--port", "8080", "--tensor-parallel-size", "1"],
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": "MODEL_PATH", "value": "/mnt/models"},
                        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                "resources": {"limits": {"cpu": "100m", "memory": "64Mi"},
                              "requests": {"cpu": "10m", "memory": "16Mi"}},
                "readinessProbe": {"httpGet": {"path": "/health", "port": 8080}, "periodSeconds": 10},
            }],
            "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
            "terminationGracePeriodSeconds": 0,
        },
    }  # fmt: skip
    if node_selector:
        body["spec"]["nodeSelector"] = node_selector
    if fake:
        # The fake stores what it gets; add what a real apiserver and kubelet would have written.
        body["metadata"]["managedFields"] = [
            {
                "manager": m,
                "operation": "Update",
                "apiVersion": "v1",
                "time": _TIME,
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:metadata": {"f:labels": {f"f:{k}": {} for k in body["metadata"]["labels"]}},
                    "f:spec": {
                        "f:containers": {
                            'k:{"name":"ome-container"}': {
                                f"f:{k}": {}
                                for k in (
                                    "args",
                                    "env",
                                    "image",
                                    "name",
                                    "ports",
                                    "readinessProbe",
                                    "resources",
                                )
                            }
                        }
                    },
                    "f:status": {
                        "f:conditions": {
                            f'k:{{"type":"{t}"}}': {"f:status": {}, "f:type": {}}
                            for t in ("Ready", "Initialized", "PodScheduled")
                        }
                    },
                },
            }
            for m in ("ome-manager", "kubelet")
        ]
        body["status"] = {
            "phase": "Running", "podIP": f"10.244.{i // 250}.{i % 250}", "startTime": _TIME,
            "qosClass": "Burstable",
            "conditions": [{"type": t, "status": "True", "lastTransitionTime": _TIME}
                           for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
            "containerStatuses": [{"name": "ome-container", "ready": True, "restartCount": 0, "started": True,
                                   "state": {"running": {"startedAt": _TIME}},
                                   "image": "registry.example.com/vllm/vllm-openai:v0.9.2",
                                   "imageID": "sha256:" + "ab" * 32,
                                   "containerID": "containerd://" + "cd" * 32}],
        }  # fmt: skip
    return body


async def bounded(n: int, concurrency: int, work: Any) -> float:
    """Run work(i) for i in range(n) with `concurrency` in flight; returns seconds taken."""
    started = time.perf_counter()
    indexes = iter(range(n))

    async def worker() -> None:
        for i in indexes:
            await work(i)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started


async def memory_per_pod(
    client: Client, namespace: str, n: int, metadata_only: bool, transform: Any = None
) -> tuple[float, float]:
    """KiB per cached Pod (tracemalloc) and seconds to sync, for one informer."""
    gc.collect()
    tracemalloc.start()
    baseline = tracemalloc.get_traced_memory()[0]
    informer = Informer(client, PODS, namespace=namespace, metadata_only=metadata_only, transform=transform)
    started = time.perf_counter()
    informer.start()
    await informer.wait_for_sync(300)
    synced = time.perf_counter() - started
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - baseline
    tracemalloc.stop()
    cached = len(informer.store)
    await informer.stop()
    if cached != n:
        print(f"  (note: {cached} Pods cached, {n} created)")
    return used / max(cached, 1) / 1024, synced


def _churn_label(obj: Obj | None) -> str | None:
    return ((obj or {}).get("metadata", {}).get("labels") or {}).get("churn")


async def churn_rate(
    client: Client, namespace: str, n_pods: int, churn: int, args: argparse.Namespace
) -> None:
    """Events/s applied to the cache. With --watchers K, K informers watch the same Pods, so every
    apiserver write becomes K cache events: that loads this process's event path past what one watch
    of a 2-core apiserver can deliver."""
    informers = [Informer(client, PODS, namespace=namespace) for _ in range(args.watchers)]
    target = churn * len(informers)
    seen = 0
    done = asyncio.Event()
    queue: set[str] = set()  # stands in for the work queue's dedupe set

    def handler(event_type: str, obj: Obj, old: Obj | None) -> None:
        nonlocal seen
        if _churn_label(obj) != _churn_label(old):  # kwok's status writes are not ours
            seen += 1
            if seen >= target:
                done.set()
        queue.add(f"{obj['metadata']['namespace']}/{obj['metadata']['name']}")

    started = time.perf_counter()
    for informer in informers:
        informer.add_handler(handler)
        informer.start()
    await asyncio.gather(*(i.wait_for_sync(300) for i in informers))
    took = time.perf_counter() - started
    synced = sum(len(i.store) for i in informers)
    print(f"initial sync of {synced} Pods into {len(informers)} informer(s): {took:.2f} s"
          f" ({synced / took:,.0f} objects/s)")  # fmt: skip
    seen = 0
    started, cpu = time.perf_counter(), time.process_time()
    if args.fake:
        query = {"path": PODS.path(), "n": str(churn), "namespace": namespace}
        await client._transport.request("POST", "/_fake/churn", query=list(query.items()), timeout=600)  # noqa: SLF001
    else:
        # Patches come from a child process, so this process's CPU time is the informers' alone.
        child = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "--patch-only", "--kubeconfig", args.kubeconfig,
            "--namespace", namespace, "--pods", str(n_pods), "--churn", str(churn),
            "--concurrency", str(args.concurrency), stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, _ = await child.communicate()
        print(out.decode().strip())
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(done.wait(), 600)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    await asyncio.gather(*(i.stop() for i in informers))
    print(f"events applied to the cache: {seen} in {wall:.2f} s = {seen / wall:,.0f} events/s")
    per_event = cpu / max(seen, 1)
    print(f"  informer CPU {cpu / wall * 100:.0f}% of one core, {per_event * 1e6:.1f} µs per event"
          f" (capacity on one core: ~{1 / per_event:,.0f} events/s)")  # fmt: skip


async def patch_labels(client: Client, args: argparse.Namespace) -> None:
    async def patch(i: int) -> None:
        name = f"bench-engine-{i % args.pods:05d}"
        await client.patch(PODS, name, {"metadata": {"labels": {"churn": str(i)}}}, args.namespace)

    took = await bounded(args.churn, args.concurrency, patch)
    rate = args.churn / took
    print(f"patched {args.churn} labels in {took:.2f} s ({rate:,.0f}/s, {args.concurrency} in flight)")


async def run(args: argparse.Namespace, client: Client) -> None:
    namespace = args.namespace or f"ome-bench-{uuid.uuid4().hex[:6]}"
    node_selector = dict(kv.split("=", 1) for kv in args.node_selector) if args.node_selector else {}
    await client.create(
        resources.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    )
    print(f"namespace {namespace} on {client.host}")
    try:

        async def create(i: int) -> None:
            await client.create(PODS, pod_body(namespace, i, node_selector, args.fake))

        took = await bounded(args.pods, args.concurrency, create)
        print(f"created {args.pods} Pods in {took:.1f} s ({args.pods / took:,.0f}/s)")
        items, _ = await client.list(PODS, namespace, limit=500)
        sizes = [len(orjson.dumps(item)) for item in items]
        print(f"average Pod JSON as served: {sum(sizes) / max(len(sizes), 1) / 1024:.1f} KiB")
        for label, metadata_only, transform in (
            ("default transform (managedFields stripped)", False, None),
            ("slim_pod transform (what controllers read)", False, slim_pod),
            ("metadata-only", True, None),
        ):
            kib, synced = await memory_per_pod(client, namespace, args.pods, metadata_only, transform)
            print(f"KiB per cached Pod, {label}: {kib:.1f}  (sync under tracemalloc: {synced:.2f} s)")
        if args.churn:
            await churn_rate(client, namespace, args.pods, args.churn, args)
    finally:
        if not args.keep:
            try:
                await client.delete(resources.NAMESPACES, namespace)
            except errors.ApiError as exc:
                print(f"could not delete namespace {namespace}: {exc}")


async def main() -> None:
    apply_gc_policy()  # the manager's GC policy, set once at start
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--kubeconfig", help="kubeconfig of a real (kwok) cluster")
    target.add_argument(
        "--fake", action="store_true", help="use the in-repo fake apiserver in a child process"
    )
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--churn", type=int, default=20000, help="label changes to apply (0: skip)")
    parser.add_argument("--concurrency", type=int, default=32, help="requests in flight for create/patch")
    parser.add_argument("--namespace", help="namespace to create (default: a random ome-bench-*)")
    parser.add_argument("--node-selector", nargs="*", metavar="KEY=VALUE", help="e.g. type=kwok")
    parser.add_argument("--keep", action="store_true", help="leave the namespace in place")
    parser.add_argument("--watchers", type=int, default=1, help="informers on the same Pods (fan-out)")
    parser.add_argument("--patch-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    settings = ClientSettings(pool_size=max(args.concurrency, 10))
    if args.patch_only:
        async with await Client.from_kubeconfig(args.kubeconfig, settings=settings) as client:
            await patch_labels(client, args)
        return
    if not args.fake:
        async with await Client.from_kubeconfig(args.kubeconfig, settings=settings) as client:
            await run(args, client)
        return
    server = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.unit.framework.fake_apiserver",
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    try:
        assert server.stdout is not None
        ready = (await server.stdout.readline()).decode().split()
        if ready[:1] != ["ready"]:
            raise SystemExit(f"fake apiserver did not start: {ready}")
        async with Client.from_configuration(Configuration(host=ready[1]), settings) as client:
            await run(args, client)
    finally:
        server.terminate()
        await server.wait()


if __name__ == "__main__":
    asyncio.run(main())
