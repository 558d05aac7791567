"""Scale figures on a fresh local cluster in the `scale` profile, N InferenceServices, printed as one table.

(a) raw floor: a plain asyncio client creates the objects the manager would create for N services (rendered
    by the project's pure renderers, owner references dropped) and waits for them to be Ready: Deployments
    for RawDeployment; for OMENative, the Instance pods the InferenceReplica controller would create.
(b) manager: `ome-manager` as a process under its own user; N InferenceServices applied at once; time to
    Ready per service (p50/p90/p100), its API writes by verb and resource (the apiserver's audit log), its
    CPU seconds and peak RSS.
(c) idle: the manager's writes and CPU over --idle-seconds once everything is Ready.

    python bench/bench_scale.py --n 200 --mode RawDeployment
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ome.api import resources  # noqa: E402
from ome.config.inferenceservice_config import InferenceServiceConfig  # noqa: E402
from ome.controllers.inferenceservice.converge import resource_of  # noqa: E402
from ome.devcluster.cluster import Cluster  # noqa: E402
from ome.devcluster.crds import install_crds  # noqa: E402
from ome.framework import errors  # noqa: E402
from ome.framework.client import Client  # noqa: E402
from ome.models import labels as model_labels  # noqa: E402
from ome.resolution import components, objects, workload_metadata, workloads  # noqa: E402

Obj = dict[str, Any]
MANAGER_USER = "ome-bench-manager"
FLOOR_USER = "ome-bench-floor"
CONFIG_NS = "ome-bench"
MODEL, RUNTIME = "llama-bench", "vllm-bench"
FAKE_UID = "00000000-0000-0000-0000-000000000000"


def model_body() -> Obj:
    return {"apiVersion": "ome.io/v1beta1", "kind": "ClusterBaseModel", "metadata": {"name": MODEL},
            "spec": {"modelFormat": {"name": "safetensors"}, "modelFramework": {"name": "transformers"},
                     "storage": {"storageUri": "hf://meta-llama/Llama-3.2-1B-Instruct",
                                 "path": "/raid/models/llama-3-2-1b-instruct"}}}


def runtime_body() -> Obj:
    return {"apiVersion": "ome.io/v1beta1", "kind": "ClusterServingRuntime", "metadata": {"name": RUNTIME},
            "spec": {"supportedModelFormats": [{"modelFormat": {"name": "safetensors"},
                                                "modelFramework": {"name": "transformers"},
                                                "autoSelect": True}],
                     "engineConfig": {"runner": {"name": "ome-container", "image": "vllm/vllm-openai:v0.9.0",
                                                 "args": ["--model", "$(MODEL_PATH)"],
                                                 "ports": [{"containerPort": 8080, "name": "http1"}]}}}}


def isvc_body(i: int, mode: str) -> Obj:
    return {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": {"name": f"svc-{i}"},
            "spec": {"deploymentMode": mode, "model": {"name": MODEL},
                     "engine": {"minReplicas": 1, "maxReplicas": 1}}}


# ---- (a) the raw floor: the same objects, rendered by the pure builders ------------------------------
def _instance_pods(replica: Obj) -> list[Obj]:
    """The pods the InferenceReplica controller would run for `replica` (one per runner slot)."""
    pods = []
    name = replica["metadata"]["name"]
    for r in range(int(replica["spec"].get("replicas", 1))):
        for runner in replica["spec"]["runners"]:
            template = runner.get("template") or {}
            for k in range(int(runner.get("size", 1))):
                meta = template.get("metadata") or {}
                pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": {
                    "name": f"{name}-{r}-{runner['name']}-{k}", "labels": dict(meta.get("labels") or {}),
                    "annotations": dict(meta.get("annotations") or {})}, "spec": template.get("spec") or {}})
    return pods


def floor_objects(i: int, mode: str, namespace: str, model: Obj, runtime: Obj) -> list[Obj]:
    isvc = isvc_body(i, mode)
    isvc["metadata"].update(namespace=namespace, uid=FAKE_UID, generation=1)
    config = InferenceServiceConfig()
    source = components.ModelSource.from_object("ClusterBaseModel", model)
    plans = components.build_plans(isvc, runtime, source, config, runtime_name=RUNTIME,
                                   model_facts=workload_metadata.ModelFacts.from_object(model))
    out: list[Obj] = []
    for plan in plans:
        out += workloads.render_component(isvc, plan, config, lws_served=False)
    if (target := workloads.external_target(plans)) is not None:
        out.append(objects.external_service(isvc, target))
    result: list[Obj] = []
    for obj in out:
        obj["metadata"].pop("ownerReferences", None)  # the owner does not exist: GC would delete them
        result += _instance_pods(obj) if obj["kind"] == "InferenceReplica" else [obj]
    for obj in result:
        obj["metadata"]["namespace"] = namespace
    return result


def _deployment_ready(d: Obj) -> bool:
    return int((d.get("status") or {}).get("readyReplicas") or 0) >= int(d["spec"].get("replicas", 1))


def _pod_ready(p: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (p.get("status") or {}).get("conditions") or [])


async def _create(client: Client, obj: Obj) -> None:
    await client.create(resource_of(obj), obj, obj["metadata"]["namespace"])


async def raw_floor(client: Client, n: int, mode: str, namespace: str, model: Obj, runtime: Obj) -> Obj:
    per_service = [floor_objects(i, mode, namespace, model, runtime) for i in range(n)]
    owner = {o["metadata"]["name"]: i for i, objs in enumerate(per_service) for o in objs
             if o["kind"] in ("Deployment", "Pod")}
    waiting: dict[int, int] = collections.Counter(owner.values())
    started = time.monotonic()
    await asyncio.gather(*(_create(client, o) for objs in per_service for o in objs))
    done: dict[int, float] = {}
    seen: set[str] = set()
    res, ready = (resources.DEPLOYMENTS, _deployment_ready) if mode == "RawDeployment" else \
        (resources.PODS, _pod_ready)
    while len(done) < n:
        if time.monotonic() - started > 1800:
            raise SystemExit(f"raw floor: only {len(done)}/{n} Ready after 1800 s")
        items, _ = await client.list(res, namespace)
        now = time.monotonic() - started
        for item in items:
            name = item["metadata"]["name"]
            if name in owner and name not in seen and ready(item):
                seen.add(name)
                i = owner[name]
                waiting[i] -= 1
                if waiting[i] == 0:
                    done[i] = now
        await asyncio.sleep(0.25)
    kinds = collections.Counter(o["kind"] for objs in per_service for o in objs)
    return {"times": sorted(done.values()), "objects": sum(kinds.values()), "kinds": dict(kinds)}


# ---- (b) and (c): the manager as a process -----------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _user_writes(cluster: Cluster, user: str) -> list[Obj]:
    return [e for e in cluster.audit_events()
            if e.get("stage") == "ResponseComplete" and (e.get("user") or {}).get("username") == user]


def writes_by(cluster: Cluster, user: str) -> collections.Counter[str]:
    """The user's audited writes so far, by `verb resource[/subresource]`."""
    counts: collections.Counter[str] = collections.Counter()
    for e in _user_writes(cluster, user):
        ref = e.get("objectRef") or {}
        sub = f"/{ref['subresource']}" if ref.get("subresource") else ""
        counts[f"{e.get('verb')} {ref.get('resource', '?')}{sub}"] += 1
    return counts


def _ready(isvc: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (isvc.get("status") or {}).get("conditions") or [])


def _wait_http(url: str, timeout: float, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"manager exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(url, timeout=2) as resp:  # noqa: S310 - loopback
                if resp.status == 200:
                    return
        time.sleep(0.2)
    raise SystemExit(f"manager not ready at {url} after {timeout:.0f} s")


@contextlib.contextmanager
def manager_process(kubeconfig: Path, log: Path, extra: Iterable[str]) -> Any:
    port = _free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ome.cmd.manager", f"--kubeconfig={kubeconfig}", "--webhook=false",
             "--leader-elect=false", "--metrics-bind-address=0",
             f"--health-probe-bind-address=127.0.0.1:{port}",
             f"--config-namespace={CONFIG_NS}", "--enable-inferencereplica-controller=true", *extra],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_http(f"http://127.0.0.1:{port}/readyz", 120, proc, log)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def managed(client: Client, cluster: Cluster, proc: subprocess.Popen[bytes], n: int, mode: str,
                  namespace: str, idle_seconds: float) -> Obj:
    writes0, cpu0 = writes_by(cluster, MANAGER_USER), cpu_seconds(proc.pid)
    started = time.monotonic()
    await asyncio.gather(*(client.create(resources.INFERENCE_SERVICES, isvc_body(i, mode), namespace)
                           for i in range(n)))
    done: dict[str, float] = {}
    while len(done) < n:
        if time.monotonic() - started > 1800:
            raise SystemExit(f"manager: only {len(done)}/{n} Ready after 1800 s")
        if proc.poll() is not None:
            raise SystemExit(f"manager exited ({proc.returncode})")
        items, _ = await client.list(resources.INFERENCE_SERVICES, namespace)
        now = time.monotonic() - started
        for item in items:
            if item["metadata"]["name"] not in done and _ready(item):
                done[item["metadata"]["name"]] = now
        await asyncio.sleep(0.25)
    cpu_ready = cpu_seconds(proc.pid) - cpu0
    await asyncio.sleep(5)  # trailing status events settle before the idle window opens
    writes1 = writes_by(cluster, MANAGER_USER)
    cpu1, idle_from = cpu_seconds(proc.pid), datetime.now(UTC)
    await asyncio.sleep(idle_seconds)
    writes2 = writes_by(cluster, MANAGER_USER)
    # When in the window the idle writes came (seconds after it opened): a burst right at the start is a
    # trailing write; a spread points at a periodic one.
    mine = _user_writes(cluster, MANAGER_USER)
    received = (datetime.fromisoformat(e["requestReceivedTimestamp"]) for e in mine)
    at = sorted(t for r in received if (t := (r - idle_from).total_seconds()) >= 0)
    return {"times": sorted(done.values()), "writes": writes1 - writes0, "cpu": cpu_ready,
            "rss": peak_rss_mib(proc.pid), "idle_writes": writes2 - writes1,
            "idle_cpu": cpu_seconds(proc.pid) - cpu1, "idle_at": at}


# ---- the run -------------------------------------------------------------------------------------------
def pct(times: list[float], q: float) -> float:
    return times[min(len(times) - 1, max(0, math.ceil(q * len(times)) - 1))]


async def setup(client: Client, gpu_nodes: int) -> tuple[Obj, Obj]:
    await install_crds(client)
    await client.create(resources.NAMESPACES, {"metadata": {"name": CONFIG_NS}})
    for _ in range(100):  # a freshly installed CRD may not be served yet
        try:
            model = await client.create(resources.CLUSTER_BASE_MODELS, model_body())
            runtime = await client.create(resources.CLUSTER_SERVING_RUNTIMES, runtime_body())
            break
        except errors.NotFound:
            await asyncio.sleep(0.2)
    else:
        raise SystemExit("the OME CRDs were never served")
    node_names = [f"gpu-node-{i}" for i in range(gpu_nodes)]
    model = await client.patch(resources.CLUSTER_BASE_MODELS, MODEL,
                               {"status": {"state": "Ready", "nodesReady": node_names}}, subresource="status")
    label = model_labels.model_label_key("ClusterBaseModel", MODEL)
    for node in node_names:  # the model is Ready everywhere, so the pods spread over every node
        await client.patch(resources.NODES, node, {"metadata": {"labels": {label: "Ready"}}})
    return model, runtime


async def _namespace(client: Client, name: str) -> None:
    await client.create(resources.NAMESPACES, {"metadata": {"name": name}})
    for _ in range(150):  # KCM's ServiceAccount controller; pods are refused until `default` exists
        with contextlib.suppress(errors.NotFound):
            await client.get(resources.SERVICE_ACCOUNTS, "default", name)
            return
        await asyncio.sleep(0.2)


async def run(args: argparse.Namespace, cluster: Cluster) -> None:
    gpu_nodes = max(4, math.ceil(args.n / 300))
    info = cluster.up(profile="scale", gpu_nodes=gpu_nodes, log=lambda m: print(m, file=sys.stderr))
    floor_kc = cluster.user_kubeconfig(FLOOR_USER, cluster.state_dir / "floor.kubeconfig")
    manager_kc = cluster.user_kubeconfig(MANAGER_USER, cluster.state_dir / "manager.kubeconfig")
    async with await Client.from_kubeconfig(str(info.kubeconfig)) as admin, \
            await Client.from_kubeconfig(str(floor_kc)) as floor_client:
        model, runtime = await setup(admin, gpu_nodes)
        await _namespace(admin, "bench-floor")
        print(f"(a) raw floor: creating the objects of {args.n} services", file=sys.stderr)
        floor = await raw_floor(floor_client, args.n, args.mode, "bench-floor", model, runtime)
        floor_writes = sum(writes_by(cluster, FLOOR_USER).values())
        await _namespace(admin, "bench-manager")
        print(f"(b) manager: {args.n} InferenceServices", file=sys.stderr)
        with manager_process(manager_kc, cluster.logs / "ome-manager.log", args.manager_arg) as proc:
            mgr = await managed(admin, cluster, proc, args.n, args.mode, "bench-manager", args.idle_seconds)
    print_table(args, floor, floor_writes, mgr)


def print_table(args: argparse.Namespace, floor: Obj, floor_writes: int, mgr: Obj) -> None:
    n = args.n
    kinds = ", ".join(f"{v} {k}" for k, v in sorted(floor["kinds"].items()))
    f_t, m_t = floor["times"], mgr["times"]
    m_writes = sum(mgr["writes"].values())
    print(f"\nbench_scale: N={n} {args.mode}, cluster profile scale ({kinds} per run)")
    head = (f"{'phase':<22}{'p50 s':>8}{'p90 s':>8}{'p100 s':>8}{'writes':>8}{'/svc':>7}{'CPU s':>8}"
            f"{'peak RSS':>14}")
    print(head)
    print("-" * len(head))
    print(f"{'(a) raw floor':<22}{pct(f_t, .5):>8.1f}{pct(f_t, .9):>8.1f}{f_t[-1]:>8.1f}"
          f"{floor_writes:>8}{floor_writes / n:>7.2f}{'-':>8}{'-':>14}")
    print(f"{'(b) manager':<22}{pct(m_t, .5):>8.1f}{pct(m_t, .9):>8.1f}{m_t[-1]:>8.1f}"
          f"{m_writes:>8}{m_writes / n:>7.2f}{mgr['cpu']:>8.1f}{mgr['rss']:>10.0f} MiB")
    idle_w = sum(mgr["idle_writes"].values())
    label = f"(c) idle {args.idle_seconds:.0f} s"
    share = 100 * mgr["idle_cpu"] / args.idle_seconds
    print(f"{label:<22}{'-':>8}{'-':>8}{'-':>8}{idle_w:>8}{idle_w / n:>7.2f}{mgr['idle_cpu']:>8.2f}"
          f"{f'{share:.2f}% core':>14}")
    print(f"manager / floor, all Ready: {m_t[-1] / f_t[-1]:.2f}x")
    print("manager writes: " + ", ".join(f"{k} {v}" for k, v in sorted(mgr["writes"].items())))
    if idle_w:
        print("idle writes: " + ", ".join(f"{k} {v}" for k, v in sorted(mgr["idle_writes"].items()))
              + f" (from +{mgr['idle_at'][0]:.1f} s to +{mgr['idle_at'][-1]:.1f} s into the window)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=200, help="InferenceServices (and their objects' worth)")
    parser.add_argument("--mode", choices=("RawDeployment", "OMENative"), default="RawDeployment")
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--state-dir", type=Path, help="the cluster's directory (default: temporary)")
    parser.add_argument("--keep", action="store_true", help="leave the cluster running afterwards")
    parser.add_argument("--manager-arg", action="append", default=[], help="extra ome-manager flag (repeat)")
    args = parser.parse_args()
    state = args.state_dir or Path(tempfile.mkdtemp(prefix="ome-bench-scale-"))
    cluster = Cluster(state)
    cluster.down(quiet=True)  # fresh: `up` then starts from an empty store
    try:
        asyncio.run(run(args, cluster))
    finally:
        if not args.keep:
            cluster.down(quiet=True)
            if args.state_dir is None:
                shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main()
