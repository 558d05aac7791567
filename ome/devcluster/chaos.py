"""The chaos harness: three `ome-manager` processes on one Lease, a mix of InferenceServices, and the
invariants checked after a fault (the faults themselves are in chaos_faults.py).

Every manager process talks to the apiserver as its own user (a client certificate from the local
cluster's CA, one user per process, never reused), so the apiserver's audit log says which process made
each write. The Lease's history is read from the same log: the holder at any moment is the user of the
last successful write to the Lease before it, so "no write from a process not holding the Lease" is a
check over one file, independent of the processes' own clocks.

Invariants after a fault (`Harness.observe`):
- every InferenceService Ready for its current generation, with exactly its expected pods live, Ready
  and running the image it asks for;
- no two live pods share an Instance's index, runner, ordinal and incarnation (per service/component);
- no pod or child without an owner (every ownerReference resolves to a live object with that uid);
- no write from a manager that did not hold the Lease when the apiserver received it.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import functools
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from ome.api import resources
from ome.devcluster.cluster import Cluster, free_ports
from ome.devcluster.operator_config import chart_pdb_entry, install_config
from ome.framework import errors
from ome.framework.client import Client
from ome.models import labels as model_labels
from ome.omenative import instance_names as names
from ome.webhooks import registry

Obj = dict[str, Any]
ROOT: Final = Path(__file__).resolve().parents[2]
WRITES: Final = frozenset({"create", "update", "patch", "delete", "deletecollection"})
# Cluster-scoped self-registration runs on every replica by design (not leader work).
NOT_LEADER_WORK: Final = frozenset(
    {"leases", "mutatingwebhookconfigurations", "validatingwebhookconfigurations"}
)
MODEL_NODES: Final = ("gpu-node-0", "gpu-node-1")
IMAGE: Final = "vllm/vllm-openai"
INSTANCE_KEY: Final = (names.ISVC_LABEL, names.COMPONENT_LABEL, names.INSTANCE_INDEX_LABEL,
                       names.RUNNER_LABEL, names.POD_ORDINAL_LABEL, names.INCARNATION_LABEL)
RAW, SINGLE, GANG = "raw", "single", "gang"
PODS_PER_KIND: Final = {RAW: 1, SINGLE: 1, GANG: 3}
OWNED_KINDS: Final = (resources.PODS, resources.REPLICASETS, resources.DEPLOYMENTS, resources.SERVICES,
                      resources.INFERENCE_REPLICAS, resources.CONTROLLER_REVISIONS, resources.HPAS,
                      resources.PDBS)  # fmt: skip


@dataclass(frozen=True, slots=True)
class ChaosConfig:
    services: int = 6
    managers: int = 3
    lease_duration: float = 6.0
    renew_deadline: float = 4.0
    retry_period: float = 1.0
    recover_timeout: float = 180.0


@dataclass(slots=True)
class Service:
    name: str
    kind: str  # RAW, SINGLE or GANG
    tag: int = 1

    @property
    def image(self) -> str:
        return f"{IMAGE}:v0.9.{self.tag}"


def mix(total: int) -> list[Service]:
    """`total` services, a third of each kind (RawDeployment, OMENative single-pod, leader + 2 workers)."""
    kinds = (RAW, SINGLE, GANG)
    return [Service(f"{kinds[i % 3]}-{i}", kinds[i % 3]) for i in range(total)]


def isvc_body(svc: Service, model: str, runtime: str) -> Obj:
    engine: Obj = {"minReplicas": 1, "maxReplicas": 1,
                   "runner": {"name": "ome-container", "image": svc.image}}
    if svc.kind != RAW:
        engine["annotations"] = {"ome.io/deploymentMode": "OMENative"}
    if svc.kind == GANG:
        engine["leader"] = {}
        engine["worker"] = {"size": 2}
    return {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": {"name": svc.name},
            "spec": {"model": {"name": model}, "runtime": {"name": runtime}, "engine": engine}}


def runtime_body(name: str) -> Obj:
    return {"apiVersion": "ome.io/v1beta1", "kind": "ClusterServingRuntime", "metadata": {"name": name},
            "spec": {"supportedModelFormats": [{"modelFormat": {"name": "safetensors"},
                                                "modelFramework": {"name": "transformers"},
                                                "autoSelect": True}],
                     "engineConfig": {"runner": {"name": "ome-container", "image": f"{IMAGE}:v0.9.0",
                                                 "args": ["--model", "$(MODEL_PATH)"],
                                                 "ports": [{"containerPort": 8080, "name": "http1"}]}}}}


def model_body(name: str) -> Obj:
    return {"apiVersion": "ome.io/v1beta1", "kind": "ClusterBaseModel", "metadata": {"name": name},
            "spec": {"modelFormat": {"name": "safetensors"}, "modelFramework": {"name": "transformers"},
                     "storage": {"storageUri": "hf://meta-llama/Llama-3.2-1B-Instruct",
                                 "path": "/raid/models/llama-3-2-1b-instruct"}}}


# ---- the audit log -------------------------------------------------------------------------------
def _ts(value: Any) -> datetime:
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


@dataclass(frozen=True, slots=True)
class Write:
    user: str
    verb: str
    resource: str
    namespace: str
    name: str
    received: datetime
    completed: datetime
    code: int


class AuditTrail:
    """The successful writes of users with `prefix`, read from the audit log as it grows."""

    def __init__(self, path: Path, prefix: str) -> None:
        self.path, self.prefix = path, prefix
        self.writes: list[Write] = []
        self._offset = 0

    def refresh(self) -> list[Write]:
        try:
            with self.path.open("rb") as f:
                f.seek(self._offset)
                data = f.read()
        except OSError:
            return self.writes
        end = data.rfind(b"\n") + 1  # a line being written waits for the next read
        self._offset += end

        for line in data[:end].splitlines():
            try:
                e = json.loads(line)
            except ValueError:
                continue
            user = str((e.get("user") or {}).get("username") or "")
            if not user.startswith(self.prefix) or e.get("verb") not in WRITES:
                continue
            ref = e.get("objectRef") or {}
            self.writes.append(Write(
                user, str(e["verb"]), str(ref.get("resource") or ""), str(ref.get("namespace") or ""),
                str(ref.get("name") or ""), _ts(e["requestReceivedTimestamp"]), _ts(e["stageTimestamp"]),
                int((e.get("responseStatus") or {}).get("code") or 0)))  # fmt: skip
        return self.writes

    def lease_writes(self, lease: str) -> list[Write]:
        ours = (w for w in self.refresh() if w.resource == "leases" and w.name == lease and w.code < 400)
        return sorted(ours, key=lambda w: w.completed)

    def holder(self, lease: str) -> str | None:
        """The user who last wrote the Lease (acquired or renewed it)."""
        writes = self.lease_writes(lease)
        return writes[-1].user if writes else None

    def violations(self, lease: str, since: datetime | None = None) -> list[Write]:
        """Successful writes a manager made while another user (or nobody) held the Lease."""
        timeline = self.lease_writes(lease)
        completed = [t.completed for t in timeline]
        out = []
        for w in self.writes:
            if w.code >= 400 or w.resource in NOT_LEADER_WORK or (since is not None and w.received < since):
                continue
            at = bisect.bisect_right(completed, w.received)  # Lease writes done when this one arrived
            if at == 0 or timeline[at - 1].user != w.user:
                out.append(w)
        return out


# ---- the manager processes -----------------------------------------------------------------------
@dataclass
class ManagerProc:
    user: str
    proc: subprocess.Popen[bytes]
    log: Path
    metrics_port: int
    webhook_port: int

    def alive(self) -> bool:
        return self.proc.poll() is None

    def signal(self, sig: signal.Signals) -> None:
        if self.alive():
            os.kill(self.proc.pid, sig)

    def stop(self) -> None:
        if self.alive():
            self.signal(signal.SIGCONT)
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def metric(self, name: str) -> float:
        """The sum of a metric's samples on this process's /metrics (0 when absent)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=3) as resp:  # noqa: S310
            text = resp.read().decode()
        total = 0.0
        for line in text.splitlines():
            if line.startswith((name + "{", name + " ")):
                total += float(line.rsplit(" ", 1)[1])
        return total


class Fleet:
    """`size` manager processes on one Lease; a process that died is replaced by a new user."""

    def __init__(self, cluster: Cluster, namespace: str, workdir: Path, config: ChaosConfig) -> None:
        self.cluster, self.namespace, self.workdir, self.config = cluster, namespace, workdir, config
        self.tag = namespace[-6:]
        self.lease = f"chaos-{self.tag}"
        self.prefix = f"chaos-{self.tag}-mgr-"
        self.audit = AuditTrail(cluster.audit_log, self.prefix)
        self.procs: list[ManagerProc] = []
        self.retired: list[ManagerProc] = []
        self._serial = 0

    def start_one(self) -> ManagerProc:
        user = f"{self.prefix}{self._serial}"
        self._serial += 1
        kubeconfig = self.cluster.user_kubeconfig(user, self.workdir / f"{user}.kubeconfig")
        metrics_port, webhook_port = free_ports(2)
        log = self.workdir / f"{user}.log"
        c = self.config
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "ome.cmd.manager", "--kubeconfig", str(kubeconfig),
                 "--leader-elect", "--leader-election-id", self.lease,
                 "--leader-election-namespace", self.namespace, "--config-namespace", self.namespace,
                 f"--leader-elect-lease-duration={c.lease_duration}s",
                 f"--leader-elect-renew-deadline={c.renew_deadline}s",
                 f"--leader-elect-retry-period={c.retry_period}s",
                 "--webhook-self-register", f"--webhook-port={webhook_port}",
                 f"--metrics-bind-address=127.0.0.1:{metrics_port}", "--health-probe-bind-address=0",
                 "--inferenceservice-max-concurrent-reconciles=4", "--zap-encoder=json"],
                cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )  # fmt: skip
        m = ManagerProc(user, proc, log, metrics_port, webhook_port)
        self.procs.append(m)
        return m

    def start(self) -> None:
        for _ in range(self.config.managers):
            self.start_one()

    def replace_dead(self) -> list[ManagerProc]:
        """Starts a new process (a new user) for each one that exited, as a Deployment would."""
        dead = [m for m in self.procs if not m.alive()]
        for m in dead:
            self.procs.remove(m)
            self.retired.append(m)
        return [self.start_one() for _ in dead]

    def leader(self) -> ManagerProc | None:
        user = self.audit.holder(self.lease)
        return next((m for m in self.procs if m.user == user and m.alive()), None)

    async def wait_leader(self, timeout: float = 90.0, *, not_user: str | None = None) -> ManagerProc:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = self.leader()
            if m is not None and m.user != not_user:
                return m
            await asyncio.sleep(0.2)
        raise AssertionError(f"no manager led within {timeout}s; logs in {self.workdir}")

    def leader_log(self, word: str, count: int = 12) -> list[str]:
        """The leader's last `count` log lines that mention `word` (a CI failure keeps only the output)."""
        m = self.leader()
        if m is None:
            return []
        return [line for line in m.log.read_text(errors="replace").splitlines() if word in line][-count:]

    def stop(self) -> None:
        for m in self.procs:
            m.stop()

    def tracebacks(self) -> list[str]:
        return [m.user for m in self.procs + self.retired if "Traceback" in m.log.read_text(errors="replace")]


# ---- observation ---------------------------------------------------------------------------------
@dataclass
class Observation:
    unconverged: dict[str, str] = field(default_factory=dict)  # service -> why
    duplicates: int = 0
    orphans: list[str] = field(default_factory=list)
    missing_pods: int = 0

    @property
    def converged(self) -> bool:
        return not self.unconverged and not self.duplicates and not self.orphans


def live(obj: Obj) -> bool:
    return not obj["metadata"].get("deletionTimestamp")


def live_pod(pod: Obj) -> bool:
    return live(pod) and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def _ready(obj: Obj) -> bool:
    conds = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


def duplicates(pods: Iterable[Obj]) -> int:
    """Live pods beyond the first per (service, component, index, runner, ordinal, incarnation)."""
    keys: Counter[tuple[str | None, ...]] = Counter()
    for pod in pods:
        labels = pod["metadata"].get("labels") or {}
        if not live_pod(pod) or labels.get(names.MANAGED_BY_LABEL) != names.MANAGED_BY:
            continue
        keys[tuple(labels.get(k) for k in INSTANCE_KEY)] += 1
    return sum(n - 1 for n in keys.values() if n > 1)


def orphans(objects: dict[str, list[Obj]]) -> list[str]:
    """Live objects with no owner, or an ownerReference to an object (uid) that does not exist."""
    uids = {o["metadata"]["uid"] for items in objects.values() for o in items if live(o)}
    out = []
    for kind, items in objects.items():
        if kind == "InferenceService":
            continue
        for o in items:
            if not live(o):
                continue
            refs = o["metadata"].get("ownerReferences") or []
            if not refs or any(r["uid"] not in uids for r in refs):
                out.append(f"{kind}/{o['metadata']['name']}")
    return sorted(out)


def service_state(svc: Service, isvc: Obj | None, pods: list[Obj]) -> str | None:
    """Why `svc` has not converged, or None when Ready for its generation with exactly its pods, all
    Ready on its image."""
    if isvc is None:
        return "missing"
    status = isvc.get("status") or {}
    if status.get("observedGeneration") != isvc["metadata"].get("generation"):
        return "generation not observed"
    if not _ready(isvc):
        return "not Ready"
    mine = [p for p in pods if (p["metadata"].get("labels") or {}).get(names.ISVC_LABEL) == svc.name]
    alive = [p for p in mine if live_pod(p)]
    if len(alive) != PODS_PER_KIND[svc.kind] or len(mine) != len(alive):
        return f"{len(alive)} live of {len(mine)} pods, want {PODS_PER_KIND[svc.kind]}"
    if not all(_ready(p) for p in alive):
        return "pods not Ready"
    images = {c["image"] for p in alive for c in p["spec"]["containers"]}
    if images != {svc.image}:
        return f"images {sorted(images)}, want {svc.image}"
    return None


# ---- the harness ---------------------------------------------------------------------------------
class Harness:
    """Model, runtime, managers and services in `namespace`; `observe()` checks the invariants."""

    def __init__(self, cluster: Cluster, client: Client, namespace: str, workdir: Path,
                 config: ChaosConfig | None = None) -> None:
        self.cluster, self.client, self.namespace = cluster, client, namespace
        self.config = config or ChaosConfig()
        self.fleet = Fleet(cluster, namespace, workdir, self.config)
        self.services = mix(self.config.services)
        self.model, self.runtime = f"chaos-llama-{self.fleet.tag}", f"chaos-vllm-{self.fleet.tag}"
        self.model_label = model_labels.model_label_key("ClusterBaseModel", self.model)
        self.after: list[Callable[[], Awaitable[None]]] = []  # a fault's undo, run after recovery

    async def __aenter__(self) -> Harness:
        c = self.client
        await _create_when_served(c, resources.CLUSTER_BASE_MODELS, model_body(self.model))
        await c.patch(resources.CLUSTER_BASE_MODELS, self.model,
                      {"status": {"state": "Ready", "nodesReady": list(MODEL_NODES)}}, subresource="status")
        await _create_when_served(c, resources.CLUSTER_SERVING_RUNTIMES, runtime_body(self.runtime))
        for node in MODEL_NODES:
            await self.label_node(node)
        # A manager refuses to start without it. With the chart's default budgets, so the services keep
        # their PodDisruptionBudgets and the orphan check keeps covering them.
        await install_config(c, self.namespace, chart_pdb_entry())
        self.fleet.start()
        try:
            await self.fleet.wait_leader()
            await self.wait_webhook()
            for svc in self.services:
                body = isvc_body(svc, self.model, self.runtime)
                await admitted(functools.partial(c.create, resources.INFERENCE_SERVICES, body,
                                                 self.namespace))
            await self.wait_converged(self.config.recover_timeout)
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        c = self.client
        while self.after:
            with contextlib.suppress(errors.ApiError):
                await self.after.pop()()
        with contextlib.suppress(errors.ApiError):
            for svc in self.services:
                with contextlib.suppress(errors.NotFound):
                    await c.delete(resources.INFERENCE_SERVICES, svc.name, self.namespace)
        await asyncio.to_thread(self.fleet.stop)
        for res in (resources.MUTATING_WEBHOOK_CONFIGURATIONS, resources.VALIDATING_WEBHOOK_CONFIGURATIONS):
            with contextlib.suppress(errors.NotFound):
                await c.delete(res, registry.CONFIGURATION_NAME)
        for node in MODEL_NODES:
            with contextlib.suppress(errors.NotFound):
                await c.patch(resources.NODES, node, {"metadata": {"labels": {self.model_label: None}}})
        for res, name in ((resources.CLUSTER_SERVING_RUNTIMES, self.runtime),
                          (resources.CLUSTER_BASE_MODELS, self.model)):  # fmt: skip
            with contextlib.suppress(errors.NotFound):
                await c.delete(res, name)

    async def label_node(self, node: str) -> None:
        await self.client.patch(resources.NODES, node, {"metadata": {"labels": {self.model_label: "Ready"}}})

    async def wait_webhook(self, timeout: float = 60.0) -> None:
        """Until a manager's webhooks are registered (a projected-looking replica is denied on a dry run)."""
        deadline = time.monotonic() + timeout
        probe = {"apiVersion": "ome.io/v1beta1", "kind": "InferenceReplica",
                 "metadata": {"name": "probe-engine", "ownerReferences": [
                     {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "name": "probe",
                      "uid": "00000000-0000-0000-0000-000000000000", "controller": True}]},
                 "spec": {"component": "engine", "parentRef": {"name": "probe"}, "replicas": 1,
                          "runners": [{"name": "default", "size": 1, "template": {"spec": {"containers": [
                              {"name": "ome-container", "image": f"{IMAGE}:v0.9.0"}]}}}]}}
        while time.monotonic() < deadline:
            try:
                await self.client.create(resources.INFERENCE_REPLICAS, probe, self.namespace, dry_run=True)
            except errors.ApiError as exc:
                if exc.status == 403:
                    return
            await asyncio.sleep(0.5)
        raise AssertionError(f"no manager registered its webhooks within {timeout}s")

    async def bump_images(self, services: Iterable[Service] | None = None) -> list[Service]:
        """An image change on `services` (default: every other one), left in flight."""
        chosen = list(services) if services is not None else self.services[::2]
        for svc in chosen:
            svc.tag += 1
            runner = {"name": "ome-container", "image": svc.image}
            patch = {"spec": {"engine": {"runner": runner}}}
            await admitted(functools.partial(self.client.patch, resources.INFERENCE_SERVICES, svc.name, patch,
                                             self.namespace))
        return chosen

    async def pods(self) -> list[Obj]:
        items, _ = await self.client.list(resources.PODS, self.namespace)
        return items

    async def observe(self) -> Observation:
        ns = self.namespace
        objects: dict[str, list[Obj]] = {}
        for res in (resources.INFERENCE_SERVICES, *OWNED_KINDS):
            objects[res.kind], _ = await self.client.list(res, ns)
        isvcs = {o["metadata"]["name"]: o for o in objects["InferenceService"]}
        pods = objects["Pod"]
        obs = Observation(duplicates=duplicates(pods), orphans=orphans(objects))
        for svc in self.services:
            why = service_state(svc, isvcs.get(svc.name), pods)
            if why is not None:
                obs.unconverged[svc.name] = why
                mine = [p for p in pods if live_pod(p) and _ready(p)
                        and (p["metadata"].get("labels") or {}).get(names.ISVC_LABEL) == svc.name]
                obs.missing_pods += max(0, PODS_PER_KIND[svc.kind] - len(mine))
        return obs

    async def diagnose(self, services: Iterable[str]) -> str:
        """The InferenceReplicas' conditions and the latest warning events of `services`, for a failure."""
        lines = []
        events, _ = await self.client.list(resources.EVENTS, self.namespace)
        for name in services:
            with contextlib.suppress(errors.NotFound):
                ir = await self.client.get(resources.INFERENCE_REPLICAS, f"{name}-engine", self.namespace)
                conds = [(c.get("type"), c.get("status"), c.get("reason"), c.get("message"))
                         for c in (ir.get("status") or {}).get("conditions") or []]
                lines.append(f"{name}-engine: {conds}")
                st = ir.get("status") or {}
                lines.append(f"  status (rv {ir['metadata'].get('resourceVersion')}): "
                             f"{json.dumps({k: v for k, v in st.items() if k != 'conditions'})[:1500]}")
            mine = [e for e in events
                    if str((e.get("involvedObject") or {}).get("name", "")).startswith(name)]
            for e in mine[-5:]:
                lines.append(f"  {e.get('type')} {e.get('reason')}: {str(e.get('message'))[:300]}")
            lines += [f"  log: {line[:400]}" for line in self.fleet.leader_log(name)]
        return "\n".join(lines)

    async def wait_converged(self, timeout: float) -> tuple[Observation, float, int]:
        """Polls until converged: (last observation, seconds taken, most duplicates seen meanwhile).
        A manager that exits meanwhile (a lost Lease) is replaced, as its Deployment would."""
        started = time.monotonic()
        worst = 0
        obs = Observation()
        while True:
            self.fleet.replace_dead()
            with contextlib.suppress(errors.ApiError, OSError):  # an apiserver restarting
                obs = await self.observe()
                worst = max(worst, obs.duplicates)
                if obs.converged:
                    return obs, time.monotonic() - started, worst
            if time.monotonic() - started > timeout:
                return obs, time.monotonic() - started, worst
            await asyncio.sleep(0.5)


async def admitted(write: Callable[[], Awaitable[Obj]], timeout: float = 60.0) -> Obj:
    """A user's write, retried while admission is unavailable: a manager that just registered its
    webhooks answers 503 until its informers have synced (and the apiserver may be restarting)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await write()
        except (errors.ServerError, errors.TransportError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


async def _create_when_served(client: Client, res: resources.Resource, body: Obj) -> Obj:
    for _ in range(100):  # discovery of freshly installed CRDs can lag a moment
        try:
            return await client.create(res, body)
        except errors.NotFound:
            await asyncio.sleep(0.1)
    raise AssertionError(f"{res.kind} never served")
