"""`make run`: from a fresh clone to a served model in a local simulated GPU cluster, in one command.

Steps: start the local control plane with fake GPU nodes (or use --kubeconfig), install the CRDs, the
`ome` namespace and its `inferenceservice-config`, write a small Llama-shaped model to local disk and
publish it as the sample ClusterBaseModel (storage `local://`) selected onto gpu-node-0, apply the sample
vLLM ClusterServingRuntime, run the model agent for gpu-node-0 and `ome-manager` (webhooks
self-registered, leader election on), apply the seed's minimal InferenceService, and print progress
until it is Ready. Then it keeps running; Ctrl-C stops the processes and the cluster.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Final

import yaml

from ome.api import resources
from ome.devcluster import paths
from ome.devcluster.cluster import Cluster, free_ports
from ome.devcluster.crds import install_crds
from ome.framework import errors
from ome.framework.client import Client
from ome.webhooks import registry

Obj = dict[str, Any]

REPO: Final = Path(__file__).resolve().parents[2]
SAMPLES: Final = REPO / "config" / "samples"
CONFIGMAP: Final = REPO / "config" / "configmap" / "inferenceservice-config.yaml"
FIELD_MANAGER: Final = "ome-demo"
CONFIG_NAMESPACE: Final = "ome"
MODEL_NODE: Final = "gpu-node-0"
MODEL_SAMPLE: Final = "clusterbasemodel_llama-3-2-1b-instruct.yaml"
RUNTIME_SAMPLE: Final = "clusterservingruntime_vllm-llama-3-2-1b-instruct.yaml"
ISVC_SAMPLE: Final = "inferenceservice_minimal.yaml"

# Llama 3.2 1B's published shape: the agent reads architecture, size (~1.24B) and context from it.
LLAMA_3_2_1B_CONFIG: Final[Obj] = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
    "intermediate_size": 8192, "num_attention_heads": 32, "num_key_value_heads": 8,
    "num_hidden_layers": 16, "vocab_size": 128256, "max_position_embeddings": 131072,
    "tie_word_embeddings": True, "torch_dtype": "bfloat16", "transformers_version": "4.45.0",
}


class DemoError(Exception):
    """A step failed; the message says which and where its log is."""


class Progress:
    def __init__(self, out: IO[str] = sys.stdout) -> None:
        self._t0 = time.monotonic()
        self._out = out

    def __call__(self, message: str) -> None:
        print(f"[demo {time.monotonic() - self._t0:6.1f}s] {message}", file=self._out, flush=True)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self._t0


def load_sample(name: str) -> Obj:
    doc: Obj = yaml.safe_load((SAMPLES / name).read_text())
    return doc


def write_local_model(directory: Path) -> None:
    """config.json and tokenizer config of a Llama-3.2-1B-shaped model (no weights: nothing runs them)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(LLAMA_3_2_1B_CONFIG, indent=2))
    (directory / "tokenizer_config.json").write_text('{"model_max_length": 131072}')


def local_model(directory: Path) -> Obj:
    """The sample ClusterBaseModel, its weights already on gpu-node-0's disk (`local://`)."""
    model = load_sample(MODEL_SAMPLE)
    storage = model["spec"]["storage"]
    storage.pop("key", None)
    storage["storageUri"] = f"local://{directory}"
    storage["path"] = str(directory)
    storage["nodeSelector"] = {"kubernetes.io/hostname": MODEL_NODE}
    return model


async def apply(client: Client, res: resources.Resource, obj: Obj) -> Obj:
    return await client.apply(res, obj, field_manager=FIELD_MANAGER, force=True)


async def ensure_namespace(client: Client, name: str) -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    await apply(client, resources.NAMESPACES, namespace)


class Processes:
    """The demo's child processes; stopped in reverse order, each given a few seconds to exit."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self._children: list[tuple[str, subprocess.Popen[bytes], Path]] = []

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> Path:
        self.logs.mkdir(parents=True, exist_ok=True)
        log = self.logs / f"{name}.log"
        with log.open("ab") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                    env={**os.environ, **(env or {})})
        self._children.append((name, proc, log))
        return log

    def check(self) -> None:
        for name, proc, log in self._children:
            if proc.poll() is not None:
                raise DemoError(f"{name} exited with code {proc.returncode}; see {log}")

    def stop(self) -> None:
        for _, proc, _ in reversed(self._children):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for _, proc, _ in reversed(self._children):
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._children.clear()


def _conditions(obj: Obj) -> Iterator[str]:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        text = f"{cond.get('type')}={cond.get('status')}"
        if cond.get("status") != "True" and cond.get("reason"):
            text += f" ({cond['reason']})"
        yield text


def isvc_ready(obj: Obj | None) -> bool:
    conds = ((obj or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


async def wait_http_ok(url: str, timeout: float, procs: Processes) -> None:
    import aiohttp  # noqa: PLC0415

    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
        while time.monotonic() < deadline:
            procs.check()
            with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                async with session.get(url) as resp:
                    if resp.status == 200:
                        return
            await asyncio.sleep(0.2)
    raise DemoError(f"{url} did not answer 200 within {timeout:.0f}s")


async def wait_webhooks(client: Client, timeout: float, procs: Processes) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        procs.check()
        try:
            await client.get(resources.VALIDATING_WEBHOOK_CONFIGURATIONS, registry.CONFIGURATION_NAME)
            return
        except errors.NotFound:
            await asyncio.sleep(0.2)
    raise DemoError(f"the manager registered no webhook configuration within {timeout:.0f}s")


async def wait_model_ready(client: Client, name: str, progress: Progress, procs: Processes,
                           timeout: float) -> None:
    deadline = time.monotonic() + timeout
    state = ""
    while time.monotonic() < deadline:
        procs.check()
        obj = await client.get(resources.CLUSTER_BASE_MODELS, name)
        now = (obj.get("status") or {}).get("state") or "(no status yet)"
        if now != state:
            progress(f"ClusterBaseModel {name}: {now}")
            state = now
        if now == "Ready" and ((obj.get("spec") or {}).get("modelFormat") or {}).get("name"):
            return
        if now == "Failed":
            raise DemoError(f"ClusterBaseModel {name} failed on {MODEL_NODE}; see the model agent's log")
        await asyncio.sleep(0.3)
    raise DemoError(f"ClusterBaseModel {name} was not Ready within {timeout:.0f}s")


async def create_isvc(client: Client, isvc: Obj, timeout: float) -> None:
    """Apply the InferenceService; right after registration the webhook may need a moment."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            await apply(client, resources.INFERENCE_SERVICES, isvc)
            return
        except errors.ApiError as exc:
            if exc.status < 500 or time.monotonic() > deadline:
                raise DemoError(f"applying the InferenceService failed: {exc}") from exc
            await asyncio.sleep(0.5)


async def follow(client: Client, name: str, namespace: str, progress: Progress, procs: Processes,
                 timeout: float) -> Obj:
    """Print each change of the InferenceService's conditions until it is Ready."""
    deadline = time.monotonic() + timeout
    seen: tuple[str, ...] = ()
    while time.monotonic() < deadline:
        procs.check()
        try:
            isvc = await client.get(resources.INFERENCE_SERVICES, name, namespace)
        except errors.NotFound:
            isvc = None
        if isvc is not None:
            now = tuple(_conditions(isvc))
            if now and now != seen:
                progress(f"InferenceService {namespace}/{name}: " + ", ".join(now))
                seen = now
            if isvc_ready(isvc):
                return isvc
        await asyncio.sleep(0.5)
    raise DemoError(f"InferenceService {namespace}/{name} was not Ready within {timeout:.0f}s")


async def run_demo(args: argparse.Namespace, procs: Processes, progress: Progress) -> Obj:
    state_dir: Path = args.state_dir
    kubeconfig: Path
    if args.kubeconfig:
        kubeconfig = Path(args.kubeconfig)
        progress(f"using the cluster of {kubeconfig}")
    else:
        progress(f"starting the local control plane with {args.gpu_nodes} fake GPU nodes "
                 "(the first run builds it from source: several minutes)")
        info = await asyncio.to_thread(Cluster(state_dir).up, gpu_nodes=args.gpu_nodes, log=progress)
        kubeconfig = info.kubeconfig
    bin_dir = Path(sys.executable).parent
    async with await Client.from_kubeconfig(str(kubeconfig)) as client:
        crds = await install_crds(client)
        progress(f"installed {len(crds)} CRDs")
        await ensure_namespace(client, CONFIG_NAMESPACE)
        # The manifests' ConfigMap as shipped (a manifest install, not the chart's): so no default
        # PodDisruptionBudgets, and the sample InferenceService, which sets no budget, gets none.
        config = yaml.safe_load(CONFIGMAP.read_text())
        config["metadata"]["namespace"] = CONFIG_NAMESPACE
        await apply(client, resources.CONFIGMAPS, config)
        model_dir = state_dir / "models" / "meta" / "llama-3-2-1b-instruct"
        write_local_model(model_dir)
        model = await apply(client, resources.CLUSTER_BASE_MODELS, local_model(model_dir))
        runtime = await apply(client, resources.CLUSTER_SERVING_RUNTIMES, load_sample(RUNTIME_SAMPLE))
        progress(f"applied ClusterBaseModel {model['metadata']['name']} (local://{model_dir}) and "
                 f"ClusterServingRuntime {runtime['metadata']['name']}")

        agent_log = procs.start("ome-model-agent", [
            str(bin_dir / "ome-model-agent"), "--kubeconfig", str(kubeconfig), "--node-name", MODEL_NODE,
            "--namespace", CONFIG_NAMESPACE, "--models-root-dir", str(state_dir / "models"),
            "--health-probe-bind-address", "0", "--log-format", "json"])
        progress(f"model agent running for {MODEL_NODE} (log: {agent_log})")
        probe_port, metrics_port, webhook_port = free_ports(3)
        manager_log = procs.start("ome-manager", [
            str(bin_dir / "ome-manager"), "--kubeconfig", str(kubeconfig), "--leader-elect",
            "--webhook-self-register", "--webhook-port", str(webhook_port),
            "--webhook-cert-dir", str(state_dir / "webhook-certs"),
            "--metrics-bind-address", f"127.0.0.1:{metrics_port}",
            "--health-probe-bind-address", f"127.0.0.1:{probe_port}", "--log-format", "json"])
        progress(f"ome-manager starting (log: {manager_log}; metrics http://127.0.0.1:{metrics_port}/metrics)")
        await wait_http_ok(f"http://127.0.0.1:{probe_port}/readyz", 60, procs)
        await wait_webhooks(client, 30, procs)
        progress("ome-manager ready; admission webhooks registered with the apiserver")
        # As the docs say: wait for the model before serving it (runtime matching needs the format the
        # agent reads from the model's files).
        await wait_model_ready(client, model["metadata"]["name"], progress, procs, 120)

        isvc = load_sample(ISVC_SAMPLE)
        name, namespace = isvc["metadata"]["name"], isvc["metadata"]["namespace"]
        await ensure_namespace(client, namespace)
        await create_isvc(client, isvc, 30)
        progress(f"applied InferenceService {namespace}/{name} (spec: model {name}, engine {{}})")
        ready = await follow(client, name, namespace, progress, procs, args.timeout)
        url = (ready.get("status") or {}).get("url", "")
        progress(f"InferenceService {namespace}/{name} is Ready after {progress.elapsed:.1f}s; url {url}")
        return {"kubeconfig": str(kubeconfig), "name": name, "namespace": namespace}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="ome-demo", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--state-dir", type=Path, default=paths.default_state_dir(),
                   help="the local cluster's files, the model and the logs")
    p.add_argument("--kubeconfig", help="use this cluster instead of starting the local one")
    p.add_argument("--gpu-nodes", type=int, default=4)
    p.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for Ready")
    p.add_argument("--exit-when-ready", action="store_true",
                   help="stop everything once the service is Ready (for scripts and tests)")
    p.add_argument("--keep-cluster", action="store_true", help="on exit, leave the local cluster running")
    return p.parse_args(argv)


def _wait_for_interrupt() -> None:
    stop = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    while not stop:
        time.sleep(0.5)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    progress = Progress()
    procs = Processes(args.state_dir / "logs")
    code = 0
    try:
        result = asyncio.run(run_demo(args, procs, progress))
        kc, ns, name = result["kubeconfig"], result["namespace"], result["name"]
        tools = f"{Path(sys.executable).parent}:{paths.bin_dir()}"  # kubectl-ome, and a kubectl >= 1.35
        print(f"\nOME is serving {ns}/{name} on the local cluster. In another shell:\n"
              f"  export KUBECONFIG={kc} PATH={tools}:$PATH\n"
              f"  kubectl get inferenceservices,deployments,pods -n {ns}\n"
              f"  kubectl ome status {name} -n {ns}\n"
              f"  kubectl ome runtime effective {name} -n {ns}\n"
              f"Logs: {procs.logs}\n", flush=True)
        if not args.exit_when_ready:
            print("Press Ctrl-C to stop the manager, the agent and the cluster.", flush=True)
            _wait_for_interrupt()
    except KeyboardInterrupt:
        code = 130
    except (DemoError, errors.ApiError, OSError, TimeoutError, RuntimeError) as exc:
        progress(f"FAILED: {exc}")
        code = 1
    finally:
        progress("stopping")
        procs.stop()
        if not args.kubeconfig and not args.keep_cluster:
            Cluster(args.state_dir).down(quiet=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
