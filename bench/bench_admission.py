"""Admission latency of the InferenceService validating webhook over TLS, at a fixed request rate.

One process sends AdmissionReviews at 200 requests/s (open loop: requests start on schedule whether or
not earlier ones finished, as the apiserver's would) to a local WebhookServer, and prints p50/p99/max.
The handler does real work: it resolves the model and auto-selects among 60 runtimes in the cache
(the most expensive admission path), then answers with the auto-selection warning. Target: p99 < 10 ms.

    .venv/bin/python bench/bench_admission.py [--rate 200] [--seconds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import statistics
import tempfile
import time
from typing import Any

import aiohttp
import orjson

from ome.api import resources
from ome.framework.webhook_server import WebhookServer
from ome.webhooks import registry, self_register

Obj = dict[str, Any]
PATH = "/validate-ome-io-v1beta1-inferenceservice"


class MemoryReader:
    """The cache's read interface over dicts, so the bench measures the webhook, not an informer."""

    def __init__(self) -> None:
        self.by_kind: dict[str, dict[tuple[str, str], Obj]] = {}

    def put(self, res: resources.Resource, obj: Obj) -> None:
        meta = obj["metadata"]
        self.by_kind.setdefault(res.name, {})[(meta.get("namespace") or "", meta["name"])] = obj

    def get_or_none(self, res: resources.Resource, name: str, namespace: str | None = None) -> Obj | None:
        return self.by_kind.get(res.name, {}).get((namespace or "" if res.namespaced else "", name))

    def list(self, res: resources.Resource, namespace: str | None = None) -> list[Obj]:
        return [
            o for (ns, _), o in self.by_kind.get(res.name, {}).items() if not namespace or ns == namespace
        ]


def world() -> MemoryReader:
    reader = MemoryReader()
    fmt = {"name": "safetensors", "version": "1.0.0"}
    fw = {"name": "transformers", "version": "4.45.0"}
    reader.put(
        resources.CLUSTER_BASE_MODELS,
        {
            "metadata": {"name": "llama"},
            "spec": {
                "modelFormat": fmt,
                "modelFramework": fw,
                "modelArchitecture": "LlamaForCausalLM",
                "modelParameterSize": "8B",
            },
            "status": {"state": "Ready"},
        },
    )
    for i in range(60):  # a catalog-sized cluster: most runtimes serve other architectures
        arch = "LlamaForCausalLM" if i % 6 == 0 else f"Arch{i}ForCausalLM"
        reader.put(
            resources.CLUSTER_SERVING_RUNTIMES,
            {
                "metadata": {"name": f"rt-{i:02d}"},
                "spec": {
                    "supportedModelFormats": [
                        {
                            "modelFormat": fmt,
                            "modelFramework": fw,
                            "modelArchitecture": arch,
                            "autoSelect": True,
                            "priority": 1 + i % 3,
                        }
                    ],
                    "modelSizeRange": {"min": "1B", "max": f"{10 + i}B"},
                },
            },
        )
    return reader


def review(i: int) -> bytes:
    obj = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": f"svc-{i}", "namespace": "bench"},
        "spec": {"model": {"name": "llama"}, "engine": {"minReplicas": 1, "maxReplicas": 3}},
    }
    return orjson.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": f"uid-{i}",
                "kind": {"group": "ome.io", "version": "v1beta1", "kind": "InferenceService"},
                "operation": "CREATE",
                "namespace": "bench",
                "name": f"svc-{i}",
                "object": obj,
                "userInfo": {"username": "bench"},
            },
        }
    )


async def main(rate: float, seconds: float) -> None:
    with tempfile.TemporaryDirectory() as cert_dir:
        ca = self_register.write_serving_certificate(cert_dir)
        server = WebhookServer(host="127.0.0.1", port=0, cert_dir=cert_dir)
        for path, handler in registry.handlers(world()).items():
            server.register(path, handler)
        await server.start()
        url = f"https://127.0.0.1:{server.port}{PATH}"
        context = ssl.create_default_context(cadata=ca.decode())
        latencies: list[float] = []
        try:
            async with aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=context, limit=64)
            ) as session:
                await _send(session, url, review(-1), [])  # warm the connection and the code paths
                tasks = []
                start = time.perf_counter()
                for i in range(int(rate * seconds)):
                    await asyncio.sleep(max(0.0, start + i / rate - time.perf_counter()))
                    tasks.append(asyncio.create_task(_send(session, url, review(i), latencies)))
                await asyncio.gather(*tasks)
                elapsed = time.perf_counter() - start
        finally:
            await server.stop()
    ms = sorted(x * 1000 for x in latencies)
    p99 = ms[int(len(ms) * 0.99) - 1]
    print(
        "admission latency, InferenceService validation with auto-selection over 60 runtimes, TLS keep-alive"
    )
    print(f"requests={len(ms)} achieved_rate={len(ms) / elapsed:.0f}/s target_rate={rate:.0f}/s")
    print(
        f"p50={statistics.median(ms):.2f} ms p90={ms[int(len(ms) * 0.9) - 1]:.2f} ms p99={p99:.2f} ms "
        f"max={ms[-1]:.2f} ms  target p99 < 10 ms: {'met' if p99 < 10 else 'MISSED'}"
    )


async def _send(session: aiohttp.ClientSession, url: str, body: bytes, latencies: list[float]) -> None:
    started = time.perf_counter()
    async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as resp:
        answer = orjson.loads(await resp.read())
    latencies.append(time.perf_counter() - started)
    assert answer["response"]["allowed"], answer


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    asyncio.run(main(args.rate, args.seconds))
