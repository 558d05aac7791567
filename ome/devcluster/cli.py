"""`ome-dev`: the local simulated GPU cluster used by `make run` and the e2e tests."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ome.devcluster import kwok_stages, nodes, paths
from ome.devcluster.cluster import Cluster
from ome.devcluster.kubeapi import KubeApi, KubeApiError
from ome.devcluster.processes import ComponentError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ome-dev", description=__doc__)
    sub = parser.add_subparsers(dest="group", required=True)
    cluster = sub.add_parser("cluster", help="a local control plane with fake GPU nodes")
    verbs = cluster.add_subparsers(dest="verb", required=True)
    for verb, text in (("up", "start it and return once ready"), ("down", "stop every process"),
                       ("status", "report each component")):
        p = verbs.add_parser(verb, help=text)
        p.add_argument("--state-dir", type=Path, default=paths.default_state_dir())
        if verb == "up":
            p.add_argument("--gpu-nodes", type=int, default=4)
            p.add_argument("--timeout", type=float, default=180.0)
    sub.add_parser("build", help="build (or verify) the control-plane binaries and print their directory")
    fake = sub.add_parser("fake-gpu-nodes", help="for any cluster running kwok (e.g. kind): create the fake "
                          "GPU nodes; print the kwok Stages with --stages")
    fake.add_argument("--kubeconfig", type=Path)
    fake.add_argument("--gpu-nodes", type=int, default=4)
    fake.add_argument("--stages", action="store_true", help="print the Stage objects (kubectl apply -f -)")
    return parser


def _fake_gpu_nodes(args: argparse.Namespace) -> int:
    if args.stages:
        print(kwok_stages.kwok_config_yaml())
        return 0
    if args.kubeconfig is None:
        print("ome-dev: --kubeconfig is required to create nodes", file=sys.stderr)
        return 2
    api = KubeApi.from_kubeconfig(args.kubeconfig)
    for i in range(args.gpu_nodes):
        node = nodes.gpu_node(i)
        try:
            api.create("/api/v1/nodes", node)
            print(f"created node {node['metadata']['name']}")
        except KubeApiError as exc:
            if exc.status != 409:
                raise
            print(f"node {node['metadata']['name']} exists")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.group == "fake-gpu-nodes":
        return _fake_gpu_nodes(args)
    if args.group == "build":
        print(paths.ensure_binaries())
        return 0
    cluster = Cluster(args.state_dir)
    if args.verb == "up":
        try:
            info = cluster.up(gpu_nodes=args.gpu_nodes, timeout=args.timeout,
                              log=lambda m: print(m, file=sys.stderr))
        except (ComponentError, TimeoutError) as exc:
            print(f"ome-dev: cluster failed to start: {exc}", file=sys.stderr)
            return 1
        print(info.kubeconfig)
        return 0
    if args.verb == "down":
        cluster.down()
        return 0
    statuses = cluster.status()
    if not statuses:
        print(f"no cluster in {cluster.state_dir}")
        return 1
    for s in statuses:
        state = "healthy" if s.healthy else ("running, unhealthy" if s.running else "stopped")
        print(f"{s.name:<24} pid {s.pid:<8} {state:<20} log {s.log}")
    return 0 if all(s.healthy for s in statuses) else 1


if __name__ == "__main__":
    sys.exit(main())
