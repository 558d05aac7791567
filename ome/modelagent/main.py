"""`ome-model-agent`: runs on every node (a DaemonSet) and keeps the models that select the node there.

Watches its own Node (so a label change that makes a model select, or stop selecting, the node takes
effect without a restart), BaseModels and ClusterBaseModels, and reports each model on the node through
the node label and the node's status ConfigMap. Once the caches are synced it also drops reports of models
that no longer exist. A SIGTERM before then ends it cleanly (exit 0), as for ome-manager.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import structlog

from ome.api import resources
from ome.cmd import flags
from ome.framework import errors, predicates
from ome.framework.client import Client
from ome.framework.controller import Controller
from ome.framework.log_setup import configure_logging
from ome.framework.manager import Manager, ManagerOptions
from ome.framework.reconcile import Request
from ome.modelagent.agent import Keys, ModelAgent, eligible
from ome.modelagent.prepare import PrepareSettings, SecretReader
from ome.modelagent.reporter import NodeReporter
from ome.models import labels

log = structlog.get_logger("modelagent")


@dataclass(frozen=True, kw_only=True)
class AgentOptions:
    node_name: str
    namespace: str = "ome"
    """Where the node status ConfigMaps (and ClusterBaseModels' token Secrets) live."""
    workers: int = 2
    """Models prepared at once; the others wait their turn, labelled Updating."""
    prepare: PrepareSettings = PrepareSettings()
    metrics_bind_address: str = "0"
    health_probe_bind_address: str = ":8080"
    install_signal_handlers: bool = True


MODEL_KINDS = (resources.BASE_MODELS, resources.CLUSTER_BASE_MODELS)


def build(client: Client, options: AgentOptions) -> tuple[Manager, ModelAgent]:
    """The agent's manager (one controller, one start-up sweep) and its reconciler; no I/O until run."""
    reporter = NodeReporter(client, options.node_name, options.namespace)
    manager = Manager(client, ManagerOptions(
        metrics_bind_address=options.metrics_bind_address,
        health_probe_bind_address=options.health_probe_bind_address,
        leader_election=None, install_signal_handlers=options.install_signal_handlers))
    agent = ModelAgent(manager.cache, reporter, SecretReader(client), settings=options.prepare,
                       workers=options.workers)
    controller = Controller(f"modelagent-{options.node_name}", agent, max_concurrent_reconciles=4)
    for res in MODEL_KINDS:
        controller.for_(manager.cache.informer_for(res))
    node = manager.cache.informer_for(resources.NODES, field_selector=f"metadata.name={options.node_name}")

    def every_model(_node: object) -> list[Request]:
        return [Request(m["metadata"].get("namespace") or "", m["metadata"]["name"])
                for res in MODEL_KINDS for m in manager.cache.list(res)]

    controller.watches(node, every_model, predicates.labels_changed)
    manager.add_controller(controller)

    async def sweep() -> None:
        await sweep_orphans(client, manager, agent, reporter, options.namespace)

    manager.add_runnable(sweep)
    return manager, agent


async def sweep_orphans(client: Client, manager: Manager, agent: ModelAgent, reporter: NodeReporter,
                        namespace: str) -> None:
    """Reports (labels, entries) on this node for models that are gone or no longer select it."""
    wanted_labels, wanted_entries = set(), set()
    node_labels = agent.node_labels()  # from the synced cache; also seeds the reporter's known labels
    for res in MODEL_KINDS:
        for model in manager.cache.list(res):
            if eligible(model, reporter.node, node_labels):
                keys = Keys.of(Request(model["metadata"].get("namespace") or "", model["metadata"]["name"]))
                wanted_labels.add(keys.label)
                wanted_entries.add(keys.entry)
    for key in set(reporter.model_labels) - wanted_labels:
        await reporter.set_label(key, None)
    try:
        cm = await client.get(resources.CONFIGMAPS, reporter.node, namespace)
    except errors.NotFound:
        return
    for key in set(cm.get("data") or {}) - wanted_entries:
        await reporter.set_entry(key, None)
    log.info("start-up sweep done", node=reporter.node, label_prefix=labels.DOMAIN)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = flags.parser("ome-model-agent", __doc__)
    p.add_argument("--kubeconfig", help="path to a kubeconfig; in-cluster config when unset")
    p.add_argument("--node-name", default=os.environ.get("NODE_NAME"),
                   help="the node this agent serves (env NODE_NAME; required)")
    p.add_argument("--namespace", default=os.environ.get("POD_NAMESPACE", "ome"),
                   help="the agent's namespace (env POD_NAMESPACE): it holds the per-node status ConfigMaps "
                        "(named after the node), and the Secret named in a ClusterBaseModel's storage.key")
    p.add_argument("--models-root-dir", default="/mnt/models",
                   help="root directory for models on the node: an hf:// or oci:// model without "
                        "storage.path downloads to <dir>/<storageUri without its scheme>")
    p.add_argument("--num-download-worker", type=int, default=2, help="models prepared at once")
    p.add_argument("--hf-endpoint", default=os.environ.get("HF_ENDPOINT") or os.environ.get("ENDPOINT")
                   or "https://huggingface.co", help="Hugging Face endpoint (env HF_ENDPOINT or ENDPOINT)")
    p.add_argument("--progress-interval", type=float, default=30.0, help="seconds between progress reports")
    p.add_argument("--health-probe-bind-address", default=":8080",
                   help='address of /healthz and /readyz; "0" disables them')
    p.add_argument("--metrics-bind-address", default="0", help='address of /metrics; "0" disables it')
    p.add_argument("--log-format", choices=("auto", "json", "console"), default="auto",
                   help="auto: console on a terminal, else JSON")
    p.add_argument("--log-level", default=os.environ.get("LOG_LEVEL", "info"),
                   help="debug, info, warning or error (env LOG_LEVEL)")
    return flags.parse_args(p, argv)


def options_from(args: argparse.Namespace) -> AgentOptions:
    prep = PrepareSettings(models_root=args.models_root_dir, hf_endpoint=args.hf_endpoint,
                           config_namespace=args.namespace, progress_interval=args.progress_interval)
    return AgentOptions(node_name=args.node_name, namespace=args.namespace, workers=args.num_download_worker,
                        prepare=prep, metrics_bind_address=args.metrics_bind_address,
                        health_probe_bind_address=args.health_probe_bind_address)


async def run(args: argparse.Namespace) -> int:
    async with await Client.from_environment(args.kubeconfig) as client:
        manager, agent = build(client, options_from(args))
        try:
            await manager.run()
        finally:
            await agent.aclose()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.node_name:
        print("ome-model-agent: --node-name or NODE_NAME is required", file=sys.stderr)
        return 2
    configure_logging(args.log_format, args.log_level)
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
