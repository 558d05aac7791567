"""`ome-dev`: the local simulated GPU cluster used by `make run` and the e2e tests."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ome.cmd import flags
from ome.devcluster import components, kwok_stages, nodes, paths
from ome.devcluster.cluster import Cluster
from ome.devcluster.kubeapi import KubeApi, KubeApiError
from ome.devcluster.processes import ComponentError

VERBS = (
    ("up", "start it and return once ready",
     "Start etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok on 127.0.0.1 (building "
     "the binaries on first use; a healthy cluster already in --state-dir is reused), create the fake GPU "
     "nodes and print the kubeconfig's path once every component is healthy."),
    ("down", "stop every process", "Stop every process of the cluster in --state-dir; its files stay."),
    ("status", "report each component",
     "Print each component's pid, health and log file; exit 1 unless all are healthy."),
)


def _parser() -> argparse.ArgumentParser:
    parser = flags.parser("ome-dev", __doc__)
    sub = parser.add_subparsers(dest="group", required=True)
    cluster = sub.add_parser("cluster", help="a local control plane with fake GPU nodes",
                             formatter_class=flags.HelpFormatter, allow_abbrev=False)
    verbs = cluster.add_subparsers(dest="verb", required=True)
    for verb, text, description in VERBS:
        p = verbs.add_parser(verb, help=text, description=description,
                             formatter_class=flags.HelpFormatter, allow_abbrev=False)
        p.add_argument("--state-dir", type=Path, default=paths.default_state_dir(),
                       help="the cluster's directory: certificates, etcd data, kubeconfig, pid files and "
                            "logs/<component>.log")
        if verb == "up":
            p.add_argument("--gpu-nodes", type=int, default=4,
                           help="fake GPU nodes to create, gpu-node-0..N-1 (kwok, 8 nvidia.com/gpu each)")
            p.add_argument("--timeout", type=float, default=180.0,
                           help="seconds each component may take to become healthy before `up` fails")
            p.add_argument("--profile", choices=components.PROFILES, default="default",
                           help="`scale` raises kube-controller-manager's and kube-scheduler's client "
                                "limits (--kube-api-qps/--kube-api-burst 500/1000) and KCM's Deployment "
                                "and ReplicaSet workers, so the apiserver and etcd set the pace; a running "
                                "cluster in another profile is restarted")
    sub.add_parser("build", help="build (or verify) the control-plane binaries and print their directory",
                   formatter_class=flags.HelpFormatter, allow_abbrev=False)
    fake = sub.add_parser("fake-gpu-nodes", help="for any cluster running kwok (e.g. kind): create the fake "
                          "GPU nodes; print the kwok Stages with --stages",
                          formatter_class=flags.HelpFormatter, allow_abbrev=False)
    fake.add_argument("--kubeconfig", type=Path, help="the cluster to create the nodes in")
    fake.add_argument("--gpu-nodes", type=int, default=4, help="fake GPU nodes to create")
    fake.add_argument("--stages", action=flags.BoolFlag,
                      help="print the Stage objects (kubectl apply -f -) instead of creating nodes")
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
    args = flags.parse_args(_parser(), argv)
    if args.group == "fake-gpu-nodes":
        return _fake_gpu_nodes(args)
    if args.group == "build":
        print(paths.ensure_binaries())
        return 0
    cluster = Cluster(args.state_dir)
    if args.verb == "up":
        try:
            info = cluster.up(gpu_nodes=args.gpu_nodes, timeout=args.timeout, profile=args.profile,
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
