"""Scale figures on a fresh local cluster in the `scale` profile, N InferenceServices, printed as one table.

(a) raw floor: a plain asyncio client creates the objects the manager would create for N services (rendered
    by the project's pure renderers, owner references dropped) and waits for them to be Ready: Deployments
    for RawDeployment; for OMENative, the Instance pods the InferenceReplica controller would create.
(b) manager: `ome-manager` as a process under its own user; N InferenceServices applied at once; time to
    Ready per service (p50/p90/p100), its API writes by verb and resource (the apiserver's audit log), its
    CPU seconds and peak RSS.
(c) idle: the manager's writes and CPU over --idle-seconds once everything is Ready.
(d) churn: spec changes at a fixed rate (scale_phases.churn); with the floor, RawDeployment, the same changes
    first answered by a plain client on the floor's objects (churn_floor.py), before the floor is cleared.

    python bench/bench_scale.py --n 200 --mode RawDeployment
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import copy
import dataclasses
import math
import os
import pstats
import re
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

import apiserver_pprof  # noqa: E402
import churn_floor  # noqa: E402
import scale_phases as phases  # noqa: E402

from ome.api import resources  # noqa: E402
from ome.config import inferenceservice_config  # noqa: E402
from ome.controllers.autoscaler import decide as autoscaler_decide  # noqa: E402
from ome.controllers.inferenceservice.converge import resource_of  # noqa: E402
from ome.controllers.serving_gate import set_serving_gate  # noqa: E402
from ome.devcluster.cluster import Cluster  # noqa: E402
from ome.devcluster.crds import install_crds  # noqa: E402
from ome.devcluster.operator_config import chart_pdb_entry, install_config, shipped_configmap  # noqa: E402
from ome.framework import errors  # noqa: E402
from ome.framework.client import Client  # noqa: E402
from ome.models import labels as model_labels  # noqa: E402
from ome.omenative import instance_names, pod_render, revisions  # noqa: E402
from ome.omenative import services as omenative_services  # noqa: E402
from ome.resolution import components, naming, objects, workload_metadata, workloads  # noqa: E402

Obj = dict[str, Any]
MANAGER_USER = "ome-bench-manager"
FLOOR_USER = "ome-bench-floor"
CONFIG_NS = "ome-bench"
# The bench models a chart install: the manifests' inferenceservice-config plus the chart's
# podDisruptionBudget entry (maxUnavailable: 1 for both modes), which the manifests leave out; so every
# service gets its budget, in the floor and from the manager alike.
CONFIG_DATA = chart_pdb_entry()
MODEL, RUNTIME = "llama-bench", "vllm-bench"
FAKE_UID = "00000000-0000-0000-0000-000000000000"
IN_FLIGHT = 64
"""Creates in flight at once, for the floor and the services alike (the client's pool holds 100)."""
SECTIONS = ("floor", "manager", "idle", "churn", "memory", "coldstart", "standby")


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


def isvc_body(i: int, mode: str, engine_annotations: dict[str, str] | None = None) -> Obj:
    engine: Obj = {"minReplicas": 1, "maxReplicas": 1}
    if engine_annotations:
        engine["annotations"] = dict(engine_annotations)
    return {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": {"name": f"svc-{i}"},
            "spec": {"deploymentMode": mode, "model": {"name": MODEL}, "engine": engine}}


# ---- (a) the raw floor: the same objects, rendered by the pure builders ------------------------------
def _replica_objects(replica: Obj) -> list[Obj]:
    """What the InferenceReplica controller creates for `replica`: its ControllerRevision, its headless
    and revision Services, and the pods of every Instance (pod_render, as the controller renders them)."""
    replica["metadata"].setdefault("uid", FAKE_UID)
    data = revisions.from_replica(replica)
    if data is None:
        raise SystemExit(f"{replica['metadata']['name']}: the floor renders no replica without runners")
    digest = revisions.revision_hash(data)
    spec = replica["spec"]
    out = [revisions.controller_revision(replica, data, 1),
           omenative_services.headless_service(replica, data)]
    out += omenative_services.revision_services(replica, digest, data)
    replicas = int(spec.get("replicas") or 1)
    for index in range(replicas):
        ident = pod_render.PodIdentity(instance_names.base_name(replica), spec["component"], index, 0, "", 0,
                                       digest, replicas, spec.get("topologyKey") or None)
        out += pod_render.instance_pods(replica, data, ident)
    return out


def floor_objects(i: int, mode: str, namespace: str, model: Obj, runtime: Obj,
                  engine_annotations: dict[str, str] | None = None) -> list[Obj]:
    """Every object the manager creates for service i: the workload (a Deployment, or an InferenceReplica
    with the count it is created with, then its objects), the Services, and the autoscaler controller's
    HPA and PodDisruptionBudget. The replica has no finalizer: no replica controller runs in the floor
    (it is deleted with the floor's namespace before the manager starts)."""
    isvc = isvc_body(i, mode, engine_annotations)
    isvc["metadata"].update(namespace=namespace, uid=FAKE_UID, generation=1)
    config = inferenceservice_config.parse(shipped_configmap(CONFIG_NS, CONFIG_DATA)["data"])  # the manager's
    source = components.ModelSource.from_object("ClusterBaseModel", model)
    plans = components.build_plans(isvc, runtime, source, config, runtime_name=RUNTIME,
                                   model_facts=workload_metadata.ModelFacts.from_object(model))
    out: list[Obj] = []
    for plan in plans:
        rendered = workloads.render_component(isvc, plan, config, lws_served=False)
        initial = autoscaler_decide.initial_replicas(isvc, plan, runtime["spec"], config)
        for obj in rendered:
            if obj["kind"] == "InferenceReplica" and initial is not None:
                obj["spec"]["replicas"] = initial
        out += rendered
        runtime_component = runtime["spec"].get(components.RUNTIME_CONFIG_KEYS[plan.component]) or {}
        out += autoscaler_decide.desired_objects(isvc, plan, runtime_component, config)
    if (target := workloads.external_target(plans)) is not None:
        out.append(objects.external_service(isvc, target))
    result: list[Obj] = []
    for obj in out:
        result += [obj, *_replica_objects(copy.deepcopy(obj))] if obj["kind"] == "InferenceReplica" else [obj]
    for obj in result:
        obj["metadata"].pop("ownerReferences", None)  # the owner does not exist: GC would delete them
        obj["metadata"].pop("uid", None)
        obj["metadata"]["namespace"] = namespace
    return result


IP_ADDRESSES = resources.Resource("networking.k8s.io", "v1", "IPAddress", "ipaddresses", False, frozenset())


async def _clear_floor(admin: Client, namespace: str, timeout: float = 600) -> float:
    """Once the floor is timed its namespace goes, and the manager starts on a cluster as empty as the
    floor's was. Left in place, the floor's HPAs keep kube-controller-manager busy (a sync every 15 s
    each), and its Services make every later ClusterIP allocation dearer: the apiserver's allocator counts
    the addresses in use on each allocation (`ipallocator.(*Allocator).Used`, linear in them; 13.8% of the
    apiserver's CPU in the manager phase with the 2,000 floor addresses left, 5.2% in the floor's own).
    Returns the seconds the clearing took."""
    started = time.monotonic()
    before, _ = await admin.list(IP_ADDRESSES)
    await admin.delete(resources.NAMESPACES, namespace)
    while True:
        try:
            await admin.get(resources.NAMESPACES, namespace)
        except errors.NotFound:
            break
        if time.monotonic() - started > timeout:
            raise SystemExit(f"the floor's namespace {namespace} was not gone after {timeout:.0f} s")
        await asyncio.sleep(1)
    left, _ = await admin.list(IP_ADDRESSES)
    phases.log(f"(a) floor cleared in {time.monotonic() - started:.1f} s "
               f"(cluster IP addresses {len(before)} -> {len(left)})")
    return time.monotonic() - started


def _deployment_ready(d: Obj) -> bool:
    return int((d.get("status") or {}).get("readyReplicas") or 0) >= int(d["spec"].get("replicas", 1))


def _gate_due(p: Obj) -> bool:
    """A pod with the serving gate whose containers are ready and whose gate is not yet set."""
    gated = any(g.get("conditionType") == instance_names.SERVING_GATE
                for g in (p.get("spec") or {}).get("readinessGates") or [])
    conditions = {c.get("type"): c.get("status") for c in (p.get("status") or {}).get("conditions") or []}
    unset = instance_names.SERVING_GATE not in conditions
    return gated and unset and conditions.get("ContainersReady") == "True"


def _pod_ready(p: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (p.get("status") or {}).get("conditions") or [])


async def create_retrying(
    client: Client, res: Any, obj: Obj, namespace: str, gate: asyncio.Semaphore
) -> None:
    """A create that a loaded apiserver answered late is sent again; an AlreadyExists then means done."""
    async def create() -> None:
        with contextlib.suppress(errors.AlreadyExists):
            await client.create(res, obj, namespace)

    async with gate:
        await phases.retry_transient(create, f"create {obj['metadata']['name']}")


async def _create(client: Client, obj: Obj, gate: asyncio.Semaphore) -> None:
    await create_retrying(client, resource_of(obj), obj, obj["metadata"]["namespace"], gate)


async def raw_floor(client: Client, n: int, mode: str, namespace: str, model: Obj, runtime: Obj) -> Obj:
    per_service = [floor_objects(i, mode, namespace, model, runtime) for i in range(n)]
    owner = {o["metadata"]["name"]: i for i, objs in enumerate(per_service) for o in objs
             if o["kind"] in ("Deployment", "Pod")}
    waiting: dict[int, int] = collections.Counter(owner.values())
    started = time.monotonic()
    gate = asyncio.Semaphore(IN_FLIGHT)
    await asyncio.gather(*(_create(client, o, gate) for objs in per_service for o in objs))
    done: dict[int, float] = {}
    seen: set[str] = set()
    res, ready = (resources.DEPLOYMENTS, _deployment_ready) if mode == "RawDeployment" else \
        (resources.PODS, _pod_ready)
    opened: set[str] = set()
    gates: list[asyncio.Task[bool]] = []

    def on_object(item: Obj, now: float) -> None:
        name = item["metadata"]["name"]
        if name in owner and name not in opened and _gate_due(item):
            # An Instance pod is Ready once its serving gate is open: the controller's write too.
            opened.add(name)
            gates.append(asyncio.create_task(
                set_serving_gate(client, namespace, name, "True", datetime.now(UTC))))
        if name in owner and name not in seen and ready(item):
            seen.add(name)
            i = owner[name]
            waiting[i] -= 1
            if waiting[i] == 0:
                done[i] = now

    await phases.follow(client, res, namespace, on_object, lambda: len(done) >= n, started=started,
                        timeout=1800, what=f"raw floor: not all {n} Ready")
    await asyncio.gather(*gates)
    kinds = collections.Counter(o["kind"] for objs in per_service for o in objs)
    return {"times": sorted(done.values()), "objects": sum(kinds.values()), "kinds": dict(kinds)}


# ---- (b) and (c): the manager as a process -----------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


cpu_seconds = phases.cpu_seconds


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _user_writes(cluster: Cluster, user: str) -> list[Obj]:
    """The user's writes the apiserver carried out (2xx); a refused or timed-out attempt changed nothing."""
    return [e for e in cluster.audit_events()
            if e.get("stage") == "ResponseComplete" and (e.get("user") or {}).get("username") == user
            and int((e.get("responseStatus") or {}).get("code") or 0) < 300]


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
def profiled(pid: int, out: Path | None) -> Any:
    """py-spy (when installed: `pip install py-spy`) samples `pid` while the block runs; the collapsed
    stacks go to `out`, the top functions by own time to stderr."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if out is None or not Path(spy).exists():
        if out is not None:
            print("py-spy not found: no profile", file=sys.stderr)
        yield
        return
    proc = subprocess.Popen([spy, "record", "--pid", str(pid), "--format", "raw", "--rate", "50",
                             "--nonblocking", "--output", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        proc.send_signal(2)  # SIGINT: py-spy writes its output and exits
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(60)
        if out.exists():
            print(top_functions(out), file=sys.stderr)


def top_functions(collapsed: Path, limit: int = 15) -> str:
    """The functions with the most samples at the top of the stack, from py-spy's collapsed output."""
    own: collections.Counter[str] = collections.Counter()
    total = waiting = 0
    for line in collapsed.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frame = re.sub(r":\d+\)$", ")", stack.split(";")[-1])  # by function, not by line
        if frame.startswith(_WAITING):  # the event loop (or an idle pool thread) waiting for I/O
            waiting += int(count)
            continue
        total += int(count)
        own[frame] += int(count)
    rows = [f"{100 * c / max(total, 1):5.1f}%  {frame}" for frame, c in own.most_common(limit)]
    return (f"profile ({total} busy samples, own time; {waiting} more waiting for I/O):\n"
            + "\n".join(rows))


_WAITING = ("EpollSelector.select", "_worker (concurrent/futures/thread.py)")


@dataclasses.dataclass
class Manager:
    proc: subprocess.Popen[bytes]
    ready_url: str
    metrics_url: str
    started: float
    """time.monotonic() at spawn"""


@contextlib.contextmanager
def manager_process(kubeconfig: Path, log: Path, extra: Iterable[str], *, leader_elect: bool = False,
                    wait_ready: bool = True, cprofile: Path | None = None) -> Any:
    """`ome-manager` as the bench user, with /readyz and /metrics on free loopback ports; under cProfile
    (its whole life, main thread, CPU time) when `cprofile` is set, whose top functions go to stderr at
    its end."""
    port, metrics = _free_port(), _free_port()
    started = time.monotonic()
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, *(["-c", _CPROFILED.format(out=str(cprofile))] if cprofile else
                               ["-m", "ome.cmd.manager"]), f"--kubeconfig={kubeconfig}", "--webhook=false",
             f"--leader-elect={str(leader_elect).lower()}", f"--leader-election-namespace={CONFIG_NS}",
             f"--metrics-bind-address=127.0.0.1:{metrics}",
             f"--health-probe-bind-address=127.0.0.1:{port}",
             f"--config-namespace={CONFIG_NS}", "--enable-inferencereplica-controller=true", *extra],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=_manager_env())
    handle = Manager(proc, f"http://127.0.0.1:{port}/readyz", f"http://127.0.0.1:{metrics}/metrics", started)
    try:
        if wait_ready:
            _wait_http(handle.ready_url, 120, proc, log)
        yield handle
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if cprofile is not None and cprofile.exists():
            print_cprofile(cprofile)


# The manager's main under cProfile with a CPU-time clock: on a loaded machine wall time would charge
# whatever function was running when the scheduler took the core away.
_CPROFILED = """
import cProfile, runpy, sys, time
sys.argv[0] = "ome-manager"
profile = cProfile.Profile(time.process_time)
try:
    profile.runcall(runpy.run_module, "ome.cmd.manager", run_name="__main__", alter_sys=True)
finally:
    profile.dump_stats({out!r})
"""


def _manager_env() -> dict[str, str]:
    """The manager imports from compiled bytecode, as it would in an image: a cold start that compiled
    every module from source (PYTHONDONTWRITEBYTECODE in a dev shell) would measure the compiler. The
    bytecode goes to a temporary prefix, not into the checkout."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "ome-bench-pycache")
    return env


def print_cprofile(path: Path, limit: int = 25) -> None:
    stats = pstats.Stats(str(path), stream=sys.stderr)
    stats.sort_stats("tottime").print_stats(limit)
    stats.sort_stats("cumulative").print_stats(limit)


async def create_services(client: Client, n: int, mode: str, namespace: str) -> None:
    gate = asyncio.Semaphore(IN_FLIGHT)
    res = resources.INFERENCE_SERVICES
    await asyncio.gather(*(create_retrying(client, res, isvc_body(i, mode), namespace, gate)
                           for i in range(n)))


async def managed(client: Client, cluster: Cluster, proc: subprocess.Popen[bytes], n: int, mode: str,
                  namespace: str) -> Obj:
    writes0, cpu0 = writes_by(cluster, MANAGER_USER), cpu_seconds(proc.pid)
    cluster0, api0 = phases.cluster_cpu(cluster), phases.apiserver_counts(cluster)
    started = time.monotonic()
    await create_services(client, n, mode, namespace)
    done: dict[str, float] = {}

    def on_object(item: Obj, now: float) -> None:
        if item["metadata"]["name"] not in done and _ready(item):
            done[item["metadata"]["name"]] = now

    def alive() -> None:
        if proc.poll() is not None:
            raise SystemExit(f"manager exited ({proc.returncode})")

    await phases.follow(client, resources.INFERENCE_SERVICES, namespace, on_object, lambda: len(done) >= n,
                        started=started, timeout=1800, what=f"manager: not all {n} Ready", check=alive)
    cpu_ready = cpu_seconds(proc.pid) - cpu0
    cluster_ready = phases.cpu_delta(phases.cluster_cpu(cluster), cluster0)
    api_ready = phases.apiserver_counts(cluster) - api0
    await asyncio.sleep(5)  # trailing status events settle before the writes are counted
    return {"times": sorted(done.values()), "writes": writes_by(cluster, MANAGER_USER) - writes0,
            "cpu": cpu_ready, "cluster_cpu": cluster_ready, "apiserver": api_ready,
            "rss": peak_rss_mib(proc.pid)}


async def idle(cluster: Cluster, proc: subprocess.Popen[bytes], seconds: float) -> Obj:
    writes1 = writes_by(cluster, MANAGER_USER)
    cpu1, idle_from = cpu_seconds(proc.pid), datetime.now(UTC)
    await asyncio.sleep(seconds)
    writes2 = writes_by(cluster, MANAGER_USER)
    # When in the window the idle writes came (seconds after it opened): a burst right at the start is a
    # trailing write; a spread points at a periodic one.
    mine = _user_writes(cluster, MANAGER_USER)
    received = (datetime.fromisoformat(e["requestReceivedTimestamp"]) for e in mine)
    at = sorted(t for r in received if (t := (r - idle_from).total_seconds()) >= 0)
    return {"writes": writes2 - writes1, "cpu": cpu_seconds(proc.pid) - cpu1, "at": at}


def service_writes(counts: collections.Counter[str]) -> int:
    """Writes other than the Lease renewals and Events (which leader election and recorders make)."""
    return sum(v for k, v in counts.items() if not k.endswith((" leases", " events")))


# ---- the run -------------------------------------------------------------------------------------------
def pct(times: list[float], q: float) -> float:
    return times[min(len(times) - 1, max(0, math.ceil(q * len(times)) - 1))]


async def setup(client: Client, gpu_nodes: int) -> tuple[Obj, Obj]:
    await install_crds(client)
    await client.create(resources.NAMESPACES, {"metadata": {"name": CONFIG_NS}})
    await install_config(client, CONFIG_NS, CONFIG_DATA)  # the manager refuses to start without it
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


async def _engine_pod_template(client: Client, namespace: str) -> Obj:
    """The engine pod of svc-0 as the manager made it: the model for the extra pods."""
    items, _ = await client.list(resources.PODS, namespace, label_selector={naming.ISVC_LABEL: "svc-0"})
    if not items:
        raise SystemExit("no engine pod of svc-0 to copy")
    return items[0]


async def run(args: argparse.Namespace, cluster: Cluster) -> Obj:
    sections = set(args.sections)
    gpu_nodes = max(4, math.ceil(args.n / 300))
    info = cluster.up(profile="scale", gpu_nodes=gpu_nodes, log=lambda m: print(m, file=sys.stderr))
    floor_kc = cluster.user_kubeconfig(FLOOR_USER, cluster.state_dir / "floor.kubeconfig")
    manager_kc = cluster.user_kubeconfig(MANAGER_USER, cluster.state_dir / "manager.kubeconfig")
    out: Obj = {"load": os.getloadavg()}
    mlog = cluster.logs / "ome-manager.log"
    async with await Client.from_kubeconfig(str(info.kubeconfig)) as admin, \
            await Client.from_kubeconfig(str(floor_kc)) as floor_client:
        model, runtime = await setup(admin, gpu_nodes)
        if "floor" in sections:
            await _namespace(admin, "bench-floor")
            phases.log(f"(a) raw floor: creating the objects of {args.n} services")
            floor0 = writes_by(cluster, FLOOR_USER)  # the audit log outlives `cluster down` in --state-dir
            floor_cpu0, floor_api0 = phases.cluster_cpu(cluster), phases.apiserver_counts(cluster)
            async with apiserver_pprof.phase(cluster, args.apiserver_profile, "floor") as pprof:
                out["floor"] = await raw_floor(floor_client, args.n, args.mode, "bench-floor", model, runtime)
            out["floor"]["pprof"] = _pprof_line(pprof, out["floor"]["times"][-1])
            out["floor"]["cluster_cpu"] = phases.cpu_delta(phases.cluster_cpu(cluster), floor_cpu0)
            out["floor"]["apiserver"] = phases.apiserver_counts(cluster) - floor_api0
            out["floor_writes"] = sum((writes_by(cluster, FLOOR_USER) - floor0).values())
            if "churn" in sections and args.mode == "RawDeployment":
                await create_services(floor_client, args.n, args.mode, "bench-floor")
                phases.log(f"(d) churn floor: {args.churn_rate:g} changes/s for {args.churn_seconds:g} s")
                out["churn_floor"] = await churn_floor.floor_churn(
                    floor_client, "bench-floor", args.n, args.churn_rate, args.churn_seconds,
                    lambda i, notes: floor_objects(i, args.mode, "bench-floor", model, runtime, notes))
            out["floor_cleared"] = await _clear_floor(admin, "bench-floor")
        await _namespace(admin, "bench-manager")
        phases.log(f"(b) manager: {args.n} InferenceServices")
        with manager_process(manager_kc, mlog, args.manager_arg) as mgr:
            with profiled(mgr.proc.pid, args.profile):
                async with apiserver_pprof.phase(cluster, args.apiserver_profile, "manager") as pprof:
                    out["manager"] = await managed(admin, cluster, mgr.proc, args.n, args.mode,
                                                   "bench-manager")
            out["manager"]["pprof"] = _pprof_line(pprof, out["manager"]["times"][-1])
            out["manager"]["queue"] = phases.queue_figures(mgr.metrics_url)
            if "idle" in sections:
                phases.log(f"(c) idle {args.idle_seconds:.0f} s")
                out["idle"] = await idle(cluster, mgr.proc, args.idle_seconds)
            if "churn" in sections:
                phases.log(f"(d) churn: {args.churn_rate:g} changes/s for {args.churn_seconds:g} s")
                writes0, cpu0 = writes_by(cluster, MANAGER_USER), cpu_seconds(mgr.proc.pid)
                queue0 = phases.queue_figures(mgr.metrics_url)
                with profiled(mgr.proc.pid, args.profile_churn):
                    out["churn"] = await phases.churn(admin, "bench-manager", args.n, args.churn_rate,
                                                      args.churn_seconds)
                out["churn"].update(writes=writes_by(cluster, MANAGER_USER) - writes0,
                                    cpu=cpu_seconds(mgr.proc.pid) - cpu0,
                                    queue=phases.queue_figures(mgr.metrics_url) - queue0)
            if "memory" in sections:
                await _namespace(admin, phases.EXTRA_NS)
                template = await _engine_pod_template(admin, "bench-manager")
                before = await phases.settled_rss(mgr.proc.pid)
                phases.log(f"(e) memory: {args.extra_pods} extra pods")
                took = await phases.create_extra_pods(floor_client, args.extra_pods, template)
                waited = await phases.wait_cached(mgr.metrics_url, "pods", args.extra_pods, 600)
                after = await phases.settled_rss(mgr.proc.pid, 30)
                out["memory"] = {"before": before, "after": after, "pods": args.extra_pods, "create_s": took,
                                 "cache_s": waited, "peak": peak_rss_mib(mgr.proc.pid)}
        if "coldstart" in sections and "memory" not in sections and args.extra_pods:
            # The cold start is measured over the extra pods too; (e) creates them when it runs.
            await _namespace(admin, phases.EXTRA_NS)
            template = await _engine_pod_template(admin, "bench-manager")
            phases.log(f"cold start: creating {args.extra_pods} extra pods")
            await phases.create_extra_pods(floor_client, args.extra_pods, template)
        for run_index in range(max(0, args.coldstart_runs - 1) if "coldstart" in sections else 0):
            # Earlier runs only: figures of each, the last one (below) goes into the table.
            with manager_process(manager_kc, mlog, args.manager_arg, leader_elect=True,
                                 wait_ready=False) as mgr:
                c = await phases.cold_start(mgr.proc, mgr.started, mgr.ready_url, mgr.metrics_url, args.n)
                phases.log(f"cold start run {run_index + 1}: caches synced {c['synced']:.2f} s, first "
                           f"reconcile {c['first']:.2f} s, all {c['all']:.2f} s, "
                           f"RSS {phases.rss_mib(mgr.proc.pid):.0f} MiB")
        if "coldstart" in sections or "standby" in sections:
            phases.log("cold start: a fresh manager over the converged services")
            writes0 = writes_by(cluster, MANAGER_USER)
            with manager_process(manager_kc, mlog, args.manager_arg, leader_elect=True,
                                 wait_ready=False, cprofile=args.profile_coldstart) as mgr:
                out["coldstart"] = await phases.cold_start(mgr.proc, mgr.started, mgr.ready_url,
                                                           mgr.metrics_url, args.n)
                await asyncio.sleep(args.settle_seconds)
                out["coldstart"]["writes"] = writes_by(cluster, MANAGER_USER) - writes0
                out["coldstart"]["rss"] = rss = await phases.settled_rss(mgr.proc.pid)
                out["coldstart"]["peak"] = peak_rss_mib(mgr.proc.pid)
                if "standby" in sections:
                    out["standby"] = await _handovers(args, manager_kc, mlog, mgr, rss)
    return out


def _pprof_line(recording: apiserver_pprof.Recording | None, seconds: float) -> str | None:
    if recording is None:
        return None
    return apiserver_pprof.format_summary(recording, seconds, *apiserver_pprof.summarize(recording.files))


async def _handovers(args: argparse.Namespace, kubeconfig: Path, mlog: Path, leader: Any,
                     leader_rss: float) -> Obj:
    """A standby next to `leader`, then SIGKILL of the leader; `--handovers` times, each new leader
    getting a fresh standby. The first standby's settled RSS and each handover's times."""
    times: list[tuple[float, float]] = []
    standby_rss = math.nan
    with contextlib.ExitStack() as stack:
        for index in range(max(1, args.handovers)):
            phases.log(f"standby {index + 1}: a second manager, then SIGKILL of the leader")
            standby = stack.enter_context(
                manager_process(kubeconfig, mlog, args.manager_arg, leader_elect=True))
            rss = await phases.settled_rss(standby.proc.pid)
            standby_rss = rss if index == 0 else standby_rss
            times.append(await phases.handover(leader.proc, standby.metrics_url))
            phases.log(f"handover {index + 1}: Lease held {times[-1][0]:.2f} s, first reconcile "
                       f"{times[-1][1]:.2f} s after the SIGKILL")
            leader = standby
    return {"rss": standby_rss, "leader_rss": leader_rss, "handovers": times}


def _row(label: str, times: list[float] | None, writes: int | None, n: int, cpu: str, rss: str) -> str:
    t = (f"{pct(times, .5):>8.1f}{pct(times, .9):>8.1f}{times[-1]:>8.1f}" if times
         else f"{'-':>8}{'-':>8}{'-':>8}")
    w = f"{writes:>8}{writes / n:>7.2f}" if writes is not None else f"{'-':>8}{'-':>7}"
    return f"{label:<24}{t}{w}{cpu:>8}{rss:>16}"


def print_table(args: argparse.Namespace, out: Obj) -> None:
    n = args.n
    mgr = out["manager"]
    load = "/".join(f"{x:.1f}" for x in out["load"])
    print(f"\nbench_scale: N={n} {args.mode}, cluster profile scale, {os.cpu_count()} cores "
          f"(load average at start {load}), manager flags: {' '.join(args.manager_arg) or 'defaults'}")
    head = (f"{'phase':<24}{'p50 s':>8}{'p90 s':>8}{'p100 s':>8}{'writes':>8}{'/svc':>7}{'CPU s':>8}"
            f"{'RSS':>16}")
    print(head)
    print("-" * len(head))
    if "floor" in out:
        floor = out["floor"]
        kinds = ", ".join(f"{v} {k}" for k, v in sorted(floor["kinds"].items()))
        print(_row("(a) raw floor", floor["times"], out["floor_writes"], n, "-", "-") + f"  ({kinds})")
    m_writes = sum(mgr["writes"].values())
    print(_row("(b) manager", mgr["times"], m_writes, n, f"{mgr['cpu']:.1f}", f"{mgr['rss']:.1f} MiB peak"))
    if "idle" in out:
        i = out["idle"]
        share = 100 * i["cpu"] / args.idle_seconds
        print(_row(f"(c) idle {args.idle_seconds:.0f} s", None, sum(i["writes"].values()), n,
                   f"{i['cpu']:.2f}", f"{share:.2f}% core"))
    if "churn" in out:
        c = out["churn"]
        gen, ready = c["gen"], c["ready"]

        def p99(seen: list[float], missing: int) -> str:
            # A change never seen is slower than any that was: past 1% of them the p99 is not known.
            return f"{phases.pct(seen, .99):.2f} s" if missing <= 0.01 * c["changes"] else "> the 60 s wait"

        print(f"(d) churn: {c['changes']} of {c['asked']} changes accepted ({c['rate']:.1f}/s): change -> "
              f"observedGeneration p50 {phases.pct(gen, .5):.2f} s p99 {p99(gen, c['missing_gen'])}; "
              f"-> Ready p50 {phases.pct(ready, .5):.2f} s p99 {p99(ready, c['missing_ready'])}"
              f" (not seen within 60 s: {c['missing_gen']} / {c['missing_ready']})")
        if "writes" in c:
            per = max(c["changes"], 1)
            print(f"    in churn: manager CPU {c['cpu']:.1f} s ({1000 * c['cpu'] / per:.0f} ms a change), "
                  f"writes per change {service_writes(c['writes']) / per:.2f} "
                  f"({', '.join(f'{k} {v}' for k, v in sorted(c['writes'].items()))}); {c['queue']}")
    if "churn_floor" in out:
        f = out["churn_floor"]
        seen = f"p99 {phases.pct(f['gen'], .99):.2f} s" if f["missing_gen"] <= 0.01 * f["changes"] \
            else "p99 > the 60 s wait"
        print(f"(d) churn floor: {f['changes']} changes ({f['rate']:.1f}/s), a plain client writing "
              f"{f['writes_per_change']:.2f} objects and statuses per change: change -> its status write "
              f"p50 {phases.pct(f['gen'], .5):.2f} s {seen} (not done within 60 s: {f['missing_gen']})")
    if "memory" in out:
        e = out["memory"]
        per = (e["after"] - e["before"]) * 1024 / max(e["pods"], 1)
        print(f"(e) memory: {e['pods']} extra pods cached in {e['cache_s']:.1f} s: RSS {e['before']:.0f} -> "
              f"{e['after']:.0f} MiB ({per:.2f} KiB per pod), peak {e['peak']:.0f} MiB")
    if "coldstart" in out:
        c = out["coldstart"]
        cpu = c["cpu"]
        print(f"cold start: probes up {c['up']:.1f} s, caches synced {c['synced']:.1f} s, first reconcile "
              f"{c['first']:.1f} s, all {n} reconciled {c['all']:.1f} s after spawn (manager CPU "
              + " / ".join(f"{cpu.get(k, math.nan):.1f}" for k in ("up", "synced", "first", "all")) + " s); "
              f"writes {service_writes(c['writes'])} "
              f"(+{sum(c['writes'].values()) - service_writes(c['writes'])} lease/event); "
              f"RSS {c['rss']:.0f} MiB (peak {c['peak']:.0f})")
    if "standby" in out:
        s = out["standby"]
        held = ", ".join(f"{a:.1f}" for a, _ in s["handovers"])
        first = ", ".join(f"{f:.1f}" for _, f in s["handovers"])
        print(f"standby: RSS {s['rss']:.0f} MiB (leader {s['leader_rss']:.0f}); leader SIGKILL -> the new "
              f"leader holds the Lease {held} s, its first reconcile {first} s (lease duration 15 s)")
    if "floor" in out:
        print(f"manager / floor, all Ready: {mgr['times'][-1] / out['floor']['times'][-1]:.2f}x")
        floor = out["floor"]
        print(f"cluster CPU s, (a) floor until all Ready: "
              f"{phases.format_cpu(floor['cluster_cpu'], floor['times'][-1])}")
        print(f"    apiserver {phases.format_counts(floor['apiserver'])}")
        if floor.get("pprof"):
            print(f"    {floor['pprof']}")
    spent = {**mgr["cluster_cpu"], "ome-manager": mgr["cpu"]}
    print(f"cluster CPU s, (b) manager until all Ready: {phases.format_cpu(spent, mgr['times'][-1])}")
    print(f"    apiserver {phases.format_counts(mgr['apiserver'])}")
    if mgr.get("pprof"):
        print(f"    {mgr['pprof']}")
    print("manager writes: " + ", ".join(f"{k} {v}" for k, v in sorted(mgr["writes"].items())))
    print(f"manager work queues until all Ready: {mgr['queue']}")
    if "idle" in out and out["idle"]["writes"]:
        i = out["idle"]
        print("idle writes: " + ", ".join(f"{k} {v}" for k, v in sorted(i["writes"].items()))
              + f" (from +{i['at'][0]:.1f} s to +{i['at'][-1]:.1f} s into the window)")
    if "coldstart" in out and service_writes(out["coldstart"]["writes"]):
        found = sorted(out["coldstart"]["writes"].items())
        print("cold start writes: " + ", ".join(f"{k} {v}" for k, v in found))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=200, help="InferenceServices (and their objects' worth)")
    parser.add_argument("--mode", choices=("RawDeployment", "OMENative"), default="RawDeployment")
    parser.add_argument("--sections", type=lambda v: [x for x in v.split(",") if x], default=list(SECTIONS),
                        help=f"comma-separated subset of {','.join(SECTIONS)} (the manager always runs)")
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--churn-rate", type=float, default=50.0, help="spec changes per second")
    parser.add_argument("--churn-seconds", type=float, default=60.0)
    parser.add_argument("--extra-pods", type=int, default=10_000, help="(e): pods the manager caches")
    parser.add_argument("--settle-seconds", type=float, default=20.0,
                        help="cold start: how long the restarted manager's writes are counted")
    parser.add_argument("--state-dir", type=Path, help="the cluster's directory (default: temporary)")
    parser.add_argument("--keep", action="store_true", help="leave the cluster running afterwards")
    parser.add_argument("--profile", type=Path, help="py-spy's collapsed stacks of the manager during (b)")
    parser.add_argument("--apiserver-profile", type=Path,
                        help="a directory for the apiserver's CPU profiles during (a) and (b), summarized")
    parser.add_argument("--manager-arg", action="append", default=[], help="extra ome-manager flag (repeat)")
    parser.add_argument("--profile-churn", type=Path, help="py-spy's collapsed stacks of the manager in (d)")
    parser.add_argument("--profile-coldstart", type=Path,
                        help="run the cold-start manager under cProfile (CPU time, inflated) into this file")
    parser.add_argument("--handovers", type=int, default=1,
                        help="leader SIGKILLs in a row in the standby section, each to a fresh standby")
    parser.add_argument("--coldstart-runs", type=int, default=1,
                        help="cold starts in a row (each a fresh process); the last one is in the table")
    args = parser.parse_args()
    if unknown := set(args.sections) - set(SECTIONS):
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")
    results = phases.on_fresh_cluster(args.state_dir, "ome-bench-scale-", args.keep,
                                      lambda cluster: run(args, cluster))
    print_table(args, results)


if __name__ == "__main__":
    main()
