"""The faults of the chaos suite, each injected while an image change is in flight (see chaos.py).

A fault's `inject` returns when the fault is lifted (a process killed and replaced, a quota raised, the
apiserver back) with a line saying what was done; recovery is timed from then. `run` checks the
invariants and makes one table row.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final

from ome.api import resources
from ome.devcluster import nodes
from ome.devcluster.chaos import GANG, RAW, SINGLE, Harness, ManagerProc, Obj, Write, live_pod
from ome.devcluster.cluster import free_ports
from ome.framework import errors
from ome.webhooks import registry

RESOURCE_QUOTAS: Final = resources.Resource("", "v1", "ResourceQuota", "resourcequotas", True)
QUOTA: Final = "chaos-pods"


@dataclass(frozen=True, slots=True)
class Fault:
    name: str
    inject: Callable[[Harness], Awaitable[str]]


@dataclass
class Row:
    fault: str
    injected: str
    held_s: float  # from the injection to the fault lifted
    recovered_s: float  # from the fault lifted to every invariant holding
    recovered: bool
    duplicates: int
    lost: int
    orphans: list[str] = field(default_factory=list)
    violations: list[Write] = field(default_factory=list)
    unconverged: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.recovered and not (self.duplicates or self.lost or self.orphans or self.violations)


async def run(h: Harness, fault: Fault) -> Row:
    since = datetime.now(UTC)
    await h.bump_images()
    started = time.monotonic()
    injected = await fault.inject(h)
    held = time.monotonic() - started
    h.fleet.replace_dead()
    obs, took, worst = await h.wait_converged(h.config.recover_timeout)
    while h.after:  # undo what the fault left behind (a deleted node comes back), untimed
        await h.after.pop()()
    violations = h.fleet.audit.violations(h.fleet.lease, since)
    lost = obs.missing_pods + sum(1 for why in obs.unconverged.values() if why == "missing")
    return Row(fault.name, injected, held, took, obs.converged, worst, lost, obs.orphans, violations,
               dict(obs.unconverged))


# ---- manager processes ---------------------------------------------------------------------------
async def sigkill_leader(h: Harness) -> str:
    leader = await h.fleet.wait_leader()
    leader.signal(signal.SIGKILL)
    await asyncio.to_thread(leader.proc.wait)
    h.fleet.replace_dead()
    return f"SIGKILL leader {leader.user}"


async def sigstop_leader(h: Harness) -> str:
    c = h.config
    leader = await h.fleet.wait_leader()
    leader.signal(signal.SIGSTOP)
    try:
        successor = await h.fleet.wait_leader(c.lease_duration * 4 + 30, not_user=leader.user)
        await asyncio.sleep(c.retry_period)  # the new leader is at work when the old one wakes
    finally:
        leader.signal(signal.SIGCONT)
    code = await asyncio.to_thread(leader.proc.wait, c.renew_deadline + 20)
    h.fleet.replace_dead()
    return f"SIGSTOP leader {leader.user} past the lease, {successor.user} took over; SIGCONT: exit {code}"


# ---- out-of-band edits and deletes ---------------------------------------------------------------
async def out_of_band(h: Harness) -> str:
    c, ns = h.client, h.namespace
    done: list[str] = []
    raw = [s for s in h.services if s.kind == RAW]
    native = [s for s in h.services if s.kind != RAW]

    async def attempt(what: str, write: Awaitable[object]) -> None:
        try:
            await write
            done.append(what)
        except errors.ApiError as exc:
            done.append(f"{what} refused {exc.status}")

    if raw:
        await attempt("deploy image edit", c.patch(
            resources.DEPLOYMENTS, f"{raw[0].name}-engine",
            {"spec": {"template": {"spec": {"containers": [{"name": "ome-container", "image": "evil:1"}]}}}},
            ns, patch_type="strategic"))
        await attempt("svc selector edit", c.patch(resources.SERVICES, f"{raw[0].name}-engine",
                                                   {"spec": {"selector": {"app": "nothing"}}}, ns))
        await attempt("deploy delete", c.delete(resources.DEPLOYMENTS, f"{raw[-1].name}-engine", ns))
        await attempt("svc delete", c.delete(resources.SERVICES, f"{raw[-1].name}-engine", ns))
    if native:
        first, last = native[0], native[-1]
        irep = await c.get(resources.INFERENCE_REPLICAS, f"{first.name}-engine", ns)
        runners = copy.deepcopy(irep["spec"]["runners"])
        for r in runners:
            r["template"]["spec"]["containers"][0]["image"] = "evil:1"
        await attempt("IR edit", c.patch(resources.INFERENCE_REPLICAS, f"{first.name}-engine",
                                         {"spec": {"runners": runners}}, ns))
        await attempt("IR delete", c.delete(resources.INFERENCE_REPLICAS, f"{last.name}-engine", ns))
        await attempt("svc delete", c.delete(resources.SERVICES, f"{first.name}-engine", ns))
    deleted = 0
    for pod in await h.pods():
        if live_pod(pod) and deleted < max(2, len(h.services) // 3):
            try:
                await c.delete(resources.PODS, pod["metadata"]["name"], ns, grace_period_seconds=0)
            except errors.NotFound:
                continue  # its Deployment or replica deleted above took it first: take another
            except errors.ApiError as exc:
                done.append(f"pod delete refused {exc.status}")
            else:
                done.append("pod delete")
            deleted += 1
    counts: dict[str, int] = {}
    for what in done:
        counts[what] = counts.get(what, 0) + 1
    return ", ".join(f"{n}x {w}" if n > 1 else w for w, n in counts.items())


# ---- a ResourceQuota rejecting pod creates -------------------------------------------------------
async def resource_quota(h: Harness) -> str:
    c, ns = h.client, h.namespace
    pods = [p for p in await h.pods() if live_pod(p)]
    # A quota below what runs already admits no new pod (the running ones stay).
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": QUOTA},
             "spec": {"hard": {"pods": "0"}}}
    await c.create(RESOURCE_QUOTAS, quota, ns)

    async def counted() -> bool:
        q = await c.get(RESOURCE_QUOTAS, QUOTA, ns)
        return bool((q.get("status") or {}).get("used"))

    await until(counted, 30)
    # Every service changes image now and loses one pod: every create must wait for the quota.
    await h.bump_images([s for s in h.services if s.tag == min(x.tag for x in h.services)] or None)
    victims = [p for p in pods if (p["metadata"].get("labels") or {}).get("component") == "engine"]
    for pod in victims[: max(2, len(h.services) // 3)]:
        with contextlib.suppress(errors.NotFound):
            await c.delete(resources.PODS, pod["metadata"]["name"], ns, grace_period_seconds=0)
    started = time.monotonic()

    def rejected() -> list[Write]:
        return [w for w in h.fleet.audit.refresh() if w.resource == "pods" and w.verb == "create"
                and w.code == 403 and w.namespace == ns]

    await until(lambda: _true(len(rejected()) >= 1), 30)
    await asyncio.sleep(max(0.0, 5 - (time.monotonic() - started)))
    await c.patch(RESOURCE_QUOTAS, QUOTA, {"spec": {"hard": {"pods": "1000"}}}, ns)
    n = len(rejected())
    await c.delete(RESOURCE_QUOTAS, QUOTA, ns)
    return f"quota pods=0 under {len(pods)} pods: {n} pod creates rejected, then raised"


# ---- the control plane ---------------------------------------------------------------------------
async def apiserver_restart(h: Harness) -> str:
    started = time.monotonic()
    await asyncio.to_thread(h.cluster.restart_component, "kube-apiserver")
    return f"kube-apiserver restarted (down {time.monotonic() - started:.1f}s)"


async def etcd_compaction(h: Harness) -> str:
    """Every manager is frozen (SIGSTOP) while pods are deleted, etcd is compacted past the informers'
    resourceVersions and the apiserver restarts (its watch cache forgets the history); on SIGCONT each
    re-watch from an old resourceVersion answers 410 Gone and the informers relist (the deletes reach
    the handlers as tombstones). The leader's Lease ran out meanwhile: it stops on its own clock and a
    standby takes over."""
    frozen = [m for m in h.fleet.procs if m.alive()]
    before = await asyncio.to_thread(_relists, frozen)
    for m in frozen:
        m.signal(signal.SIGSTOP)
    try:
        victims = [p for p in await h.pods() if live_pod(p)][:: max(1, len(h.services) // 2)]
        for pod in victims:  # changes no informer sees (pods are not admission-guarded)
            with contextlib.suppress(errors.NotFound):
                await h.client.delete(resources.PODS, pod["metadata"]["name"], h.namespace,
                                      grace_period_seconds=0)
        revision = await asyncio.to_thread(h.cluster.compact_etcd)
        await asyncio.to_thread(h.cluster.restart_component, "kube-apiserver")
    finally:
        for m in frozen:
            m.signal(signal.SIGCONT)
    relists = await _wait_relists(frozen, before)
    return (f"managers frozen, {len(victims)} pods deleted, etcd compacted at revision {revision}, apiserver "
            f"restarted: {relists:.0f} watches answered 410")


async def _wait_relists(procs: list[ManagerProc], before: dict[str, float], timeout: float = 30.0) -> float:
    deadline = time.monotonic() + timeout
    seen = 0.0
    while time.monotonic() < deadline:
        now = await asyncio.to_thread(_relists, procs)
        seen = sum(max(0.0, n - before.get(user, 0.0)) for user, n in now.items())
        if seen > 0:
            return seen
        await asyncio.sleep(0.5)
    return seen


def _relists(procs: list[ManagerProc]) -> dict[str, float]:
    """ome_informer_watch_expired_total of each live process."""
    out = {}
    for m in procs:
        with contextlib.suppress(OSError, ValueError):
            out[m.user] = m.metric("ome_informer_watch_expired_total")
    return out


async def webhook_down(h: Harness) -> str:
    """The webhook endpoint refuses connections (its server is gone) for a while: failurePolicy Fail
    denies the admission-guarded writes; then it is back."""
    c = h.client
    saved: list[tuple[resources.Resource, Obj]] = []
    [dead] = free_ports(1)
    for res in (resources.MUTATING_WEBHOOK_CONFIGURATIONS, resources.VALIDATING_WEBHOOK_CONFIGURATIONS):
        obj = await c.get(res, registry.CONFIGURATION_NAME)
        saved.append((res, copy.deepcopy(obj)))
        for hook in obj["webhooks"]:
            url = hook["clientConfig"]["url"]
            host, _, rest = url.removeprefix("https://").partition("/")
            hook["clientConfig"]["url"] = f"https://{host.rsplit(':', 1)[0]}:{dead}/{rest}"
        await c.update(res, obj)
    denied = 0
    try:
        # The apiserver picks up the edited configurations from its own watch, which lags under load:
        # probe until the dead endpoint is what answers (or the window ends), not once after a fixed wait.
        probe = {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": {"name": "probe"},
                 "spec": {"model": {"name": h.model}, "engine": {}}}
        window_end = time.monotonic() + 7.0
        await asyncio.sleep(0.5)
        while not denied and time.monotonic() < window_end - 0.5:
            try:
                await c.create(resources.INFERENCE_SERVICES, probe, h.namespace, dry_run=True)
            except errors.ApiError as exc:
                denied = exc.status
            else:
                await asyncio.sleep(0.5)
        await asyncio.sleep(max(0.0, window_end - time.monotonic()))
    finally:
        for res, obj in saved:
            await _restore(h, res, obj, dead)
    return f"webhook endpoint refused for 7s (failurePolicy Fail: a create answered {denied or 'admitted'})"


async def _restore(h: Harness, res: resources.Resource, saved: Obj, dead: int) -> None:
    """Puts back the URLs pointing at the dead port (a manager may have re-registered meanwhile: its own
    URLs stay); retried on conflicts, so no later test meets a webhook that refuses every write."""
    urls = {hook["name"]: hook["clientConfig"]["url"] for hook in saved["webhooks"]}
    for _ in range(20):
        current = await h.client.get(res, registry.CONFIGURATION_NAME)
        for hook in current.get("webhooks") or []:
            if f":{dead}/" in hook["clientConfig"].get("url", "") and hook["name"] in urls:
                hook["clientConfig"]["url"] = urls[hook["name"]]
        try:
            await h.client.update(res, current)
            return
        except errors.Conflict:
            await asyncio.sleep(0.2)
    raise AssertionError(f"could not restore {res.kind} {registry.CONFIGURATION_NAME}")


async def node_deleted(h: Harness) -> str:
    """The model node running most of the services' pods is deleted; it comes back (empty) afterwards."""
    pods = [p for p in await h.pods() if live_pod(p)]
    per_node: dict[str, int] = {}
    for p in pods:
        node = p["spec"].get("nodeName")
        if node in ("gpu-node-0", "gpu-node-1"):
            per_node[node] = per_node.get(node, 0) + 1
    victim = max(per_node, key=lambda n: per_node[n]) if per_node else "gpu-node-1"
    await h.client.delete(resources.NODES, victim)
    h.after.append(lambda: _recreate_node(h, victim))
    return f"node {victim} deleted under {per_node.get(victim, 0)} pods"


async def _recreate_node(h: Harness, name: str) -> None:
    body = nodes.gpu_node(int(name.rsplit("-", 1)[1]))
    with contextlib.suppress(errors.Conflict, errors.AlreadyExists):
        await h.client.create(resources.NODES, body)
    await h.label_node(name)


# ---- helpers -------------------------------------------------------------------------------------
async def _true(value: bool) -> bool:
    return value


async def until(check: Callable[[], Awaitable[bool]], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(errors.ApiError):
            if await check():
                return
        await asyncio.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s")


FAULTS: Final = (
    Fault("sigkill-leader", sigkill_leader),
    Fault("sigstop-leader", sigstop_leader),
    Fault("out-of-band", out_of_band),
    Fault("resource-quota", resource_quota),
    Fault("apiserver-restart", apiserver_restart),
    Fault("etcd-compaction", etcd_compaction),
    Fault("webhook-down", webhook_down),
    Fault("node-deleted", node_deleted),
)
__all__ = ["FAULTS", "GANG", "RAW", "SINGLE", "Fault", "Row", "run", "until"]
