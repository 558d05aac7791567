"""The local control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok on
127.0.0.1, with fake GPU nodes. State (certs, logs, data, pids) lives in one directory."""

from __future__ import annotations

import base64
import json
import shutil
import socket
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from ome.devcluster import components, kwok_stages, nodes, paths, pki, processes
from ome.devcluster.kubeapi import KubeApi, KubeApiError

STATE_FILE = "cluster.json"


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    state_dir: Path
    kubeconfig: Path
    server: str


@dataclass(frozen=True, slots=True)
class ComponentStatus:
    name: str
    pid: int
    running: bool
    healthy: bool
    log: str


def free_ports(count: int) -> list[int]:
    """`count` distinct free loopback ports (all held open while picked, so none repeats)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write_kubeconfig(
    path: Path, server: str, keys: pki.Pki, *, client: tuple[bytes, bytes] | None = None,
    user: str = "ome-dev-admin",
) -> None:
    """The admin kubeconfig, or with `client` (certificate and key PEM) one for that client's `user`."""
    crt, key = client or (keys.admin_crt.read_bytes(), keys.admin_key.read_bytes())
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "ome-dev", "cluster": {
            "server": server, "certificate-authority-data": _b64(keys.ca_crt)}}],
        "users": [{"name": user, "user": {
            "client-certificate-data": base64.b64encode(crt).decode(),
            "client-key-data": base64.b64encode(key).decode()}}],
        "contexts": [{"name": "ome-dev", "context": {"cluster": "ome-dev", "user": user}}],
        "current-context": "ome-dev",
    }
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)


def _wait(what: str, check: Callable[[], bool], timeout: float, on_fail: Callable[[], str]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}; {on_fail()}")


def _load_state(state_dir: Path) -> dict[str, Any] | None:
    try:
        return dict(json.loads((state_dir / STATE_FILE).read_text()))
    except (OSError, ValueError):
        return None


def _save_state(state_dir: Path, state: dict[str, Any]) -> None:
    tmp = state_dir / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(state, indent=2))
    tmp.replace(state_dir / STATE_FILE)


def supervised(component: components.Component) -> components.Component:
    """The component under `ome.devcluster.supervise`, which starts it again when it exits on its own
    (kube-scheduler exits by design on a corrupted cache and expects its kubelet to restart it)."""
    argv = [sys.executable, "-m", "ome.devcluster.supervise", "--", *component.argv]
    return components.Component(component.name, argv, component.health_url)


class Cluster:
    """Owns the processes of one dev cluster. `up()` returns once it is ready and leaves it running."""

    def __init__(self, state_dir: Path | None = None) -> None:
        self.state_dir = (state_dir or paths.default_state_dir()).resolve()
        self.kubeconfig = self.state_dir / "kubeconfig"
        self.logs = self.state_dir / "logs"

    # ---- lifecycle -------------------------------------------------------------------------------
    def up(
        self, *, gpu_nodes: int = 4, timeout: float = 180.0, log: Callable[[str], None] = print,
        profile: str = "default",
    ) -> ClusterInfo:
        """`profile` is one of components.PROFILES; a healthy cluster is reused only in the same profile."""
        if profile not in components.PROFILES:
            raise ValueError(f"unknown cluster profile {profile!r}; expected one of {components.PROFILES}")
        if self.healthy() and self.profile() == profile:
            log(f"cluster already running in {self.state_dir}")
            return self.info()
        self.down(quiet=True)
        bin_dir = paths.ensure_binaries()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self.state_dir / "etcd", ignore_errors=True)  # every `up` starts from an empty store
        keys = pki.generate(self.state_dir / "pki")
        ports = components.Ports(*free_ports(6))
        server = f"https://127.0.0.1:{ports.apiserver}"
        write_kubeconfig(self.kubeconfig, server, keys)
        kwok_config = self.state_dir / "kwok.yaml"
        kwok_config.write_text(kwok_stages.kwok_config_yaml())
        state: dict[str, Any] = {"server": server, "ports": asdict(ports), "profile": profile,
                                 "components": []}
        _save_state(self.state_dir, state)
        started = time.monotonic()
        try:
            api = KubeApi(server, keys)
            self._start(state, components.etcd(bin_dir, self.state_dir, ports), timeout, log)
            self.logs.mkdir(parents=True, exist_ok=True)
            audit_policy = self.state_dir / "audit-policy.yaml"
            audit_policy.write_text(components.AUDIT_POLICY)
            apiserver = components.kube_apiserver(bin_dir, self.state_dir, keys, ports,
                                                  audit_policy=audit_policy, audit_log=self.audit_log,
                                                  profile=profile)
            self._start(state, apiserver, timeout, log, ready=lambda: _api_ready(api))
            kcm = components.kube_controller_manager(bin_dir, self.kubeconfig, keys, ports, profile=profile)
            self._start(state, supervised(kcm), timeout, log)
            scheduler = components.kube_scheduler(bin_dir, self.kubeconfig, ports, profile=profile)
            self._start(state, supervised(scheduler), timeout, log)
            kwok = components.kwok(bin_dir, self.kubeconfig, kwok_config, ports)
            self._start(state, supervised(kwok), timeout, log)
            for i in range(gpu_nodes):
                api.create("/api/v1/nodes", nodes.gpu_node(i))
            default_sa = "/api/v1/namespaces/default/serviceaccounts/default"
            _wait("the default ServiceAccount", lambda: _exists(api, default_sa), timeout,
                  lambda: "is kube-controller-manager running?")
            _wait(f"{gpu_nodes} Ready nodes", lambda: _ready_nodes(api) >= gpu_nodes, timeout,
                  lambda: "kwok log:\n" + processes.tail(self.logs / "kwok.log"))
        except BaseException:
            self.down(quiet=True)
            raise
        log(f"cluster ready in {time.monotonic() - started:.1f}s; kubeconfig: {self.kubeconfig}")
        return self.info()

    def _start(self, state: dict[str, Any], component: components.Component, timeout: float,
               log: Callable[[str], None], ready: Callable[[], bool] | None = None) -> None:
        logfile = self.logs / f"{component.name}.log"
        pid = processes.start(component, logfile)
        state["components"].append({"name": component.name, "argv": component.argv,
                                    "health_url": component.health_url, "pid": pid, "log": str(logfile)})
        _save_state(self.state_dir, state)
        t0 = time.monotonic()
        processes.wait_healthy(component, pid, logfile, timeout)
        if ready is not None:
            deadline = time.monotonic() + timeout
            while not ready():
                if not processes.is_running(pid, component.argv[0]):
                    raise processes.ComponentError(component.name, "exited during startup", logfile)
                if time.monotonic() > deadline:
                    raise processes.ComponentError(component.name, f"not ready after {timeout:.0f}s", logfile)
                time.sleep(0.1)
        log(f"  {component.name} up ({time.monotonic() - t0:.1f}s, pid {pid})")

    def down(self, *, quiet: bool = False) -> None:
        state = _load_state(self.state_dir)
        if not state:
            return
        for comp in reversed(state.get("components", [])):  # reverse start order: kwok first, etcd last
            processes.stop(comp["pid"], comp["argv"][0])
            if not quiet:
                print(f"  stopped {comp['name']}")
        (self.state_dir / STATE_FILE).unlink(missing_ok=True)

    def restart_component(self, name: str, timeout: float = 120.0) -> None:
        """Stops and starts one component with the same flags (tests use it to break watches)."""
        state = _load_state(self.state_dir)
        if not state:
            raise RuntimeError(f"no cluster in {self.state_dir}")
        comp = next(c for c in state["components"] if c["name"] == name)
        processes.stop(comp["pid"], comp["argv"][0])
        component = components.Component(name, comp["argv"], comp["health_url"])
        logfile = Path(comp["log"])
        comp["pid"] = processes.start(component, logfile)
        _save_state(self.state_dir, state)
        processes.wait_healthy(component, comp["pid"], logfile, timeout)
        if name == "kube-apiserver":
            api = self.admin_api()
            _wait("kube-apiserver /readyz", lambda: _api_ready(api), timeout,
                  lambda: processes.tail(logfile))

    def compact_etcd(self) -> int:
        """Compacts etcd's history up to its current revision (what the apiserver does every 5 minutes);
        older resourceVersions then answer 410 Gone. Returns the revision."""
        state = _load_state(self.state_dir)
        if not state:
            raise RuntimeError(f"no cluster in {self.state_dir}")
        base = f"http://127.0.0.1:{state['ports']['etcd_client']}"
        status = _post_json(f"{base}/v3/kv/range", {"key": base64.b64encode(b"/").decode()})
        revision = int(status["header"]["revision"])
        _post_json(f"{base}/v3/kv/compaction", {"revision": str(revision), "physical": True})
        return revision

    # ---- inspection ------------------------------------------------------------------------------
    @property
    def audit_log(self) -> Path:
        """The apiserver's audit log: one JSON line per write (see components.AUDIT_POLICY)."""
        return self.logs / "audit.log"

    def audit_events(self) -> list[dict[str, Any]]:
        """The audited writes so far, oldest first (a line being written is skipped)."""
        try:
            lines = self.audit_log.read_text().splitlines()
        except OSError:
            return []
        events = []
        for line in lines:
            try:
                events.append(dict(json.loads(line)))
            except ValueError:
                continue
        return events

    def user_kubeconfig(
        self, user: str, path: Path, *, groups: tuple[str, ...] = ("system:masters",)
    ) -> Path:
        """A kubeconfig for `user` (a client certificate from the cluster CA), so the audit log tells
        processes apart by user name."""
        state = _load_state(self.state_dir)
        if not state:
            raise RuntimeError(f"no cluster in {self.state_dir}")
        keys = pki.Pki(self.state_dir / "pki")
        crt, key = pki.client_cert(keys, user, groups)
        write_kubeconfig(path, state["server"], keys, client=(crt, key), user=user)
        return path

    def profile(self) -> str | None:
        """The profile the cluster in state_dir was started with (None when there is none)."""
        state = _load_state(self.state_dir)
        return None if state is None else str(state.get("profile", "default"))

    def info(self) -> ClusterInfo:
        state = _load_state(self.state_dir) or {}
        return ClusterInfo(self.state_dir, self.kubeconfig, state.get("server", ""))

    def admin_api(self, timeout: float = 10.0) -> KubeApi:
        """The running cluster's apiserver as its admin (the bench's /metrics and /debug/pprof reads)."""
        return KubeApi(self.info().server, pki.Pki(self.state_dir / "pki"), timeout=timeout)

    def pids(self) -> dict[str, int]:
        """The process id of each running component, by name (empty when there is no cluster)."""
        state = _load_state(self.state_dir) or {}
        return {comp["name"]: int(comp["pid"]) for comp in state.get("components", [])}

    def status(self) -> list[ComponentStatus]:
        state = _load_state(self.state_dir)
        if not state:
            return []
        out = []
        keys = pki.Pki(self.state_dir / "pki")
        for comp in state["components"]:
            running = processes.is_running(comp["pid"], comp["argv"][0])
            if not running:
                healthy = False
            elif comp["name"] == "kube-apiserver":
                healthy = _api_ready(KubeApi(state["server"], keys, timeout=3))
            else:
                healthy = comp["health_url"] is None or processes.probe(comp["health_url"])
            out.append(ComponentStatus(comp["name"], comp["pid"], running, healthy, comp["log"]))
        return out

    def healthy(self) -> bool:
        statuses = self.status()
        return len(statuses) == 5 and all(s.healthy for s in statuses)


def _post_json(url: str, body: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:  # noqa: S310 - loopback etcd
        return dict(json.loads(resp.read()))


def _api_ready(api: KubeApi) -> bool:
    try:
        return bool(api.get("/readyz") == "ok")
    except (KubeApiError, OSError):
        return False


def _exists(api: KubeApi, path: str) -> bool:
    try:
        api.get(path)
        return True
    except KubeApiError as exc:
        if exc.status == 404:
            return False
        raise
    except OSError:
        return False


def _ready_nodes(api: KubeApi) -> int:
    try:
        items = api.get("/api/v1/nodes?labelSelector=type%3Dkwok")["items"]
    except (KubeApiError, OSError):
        return 0
    return sum(1 for n in items if nodes.is_ready(n))
