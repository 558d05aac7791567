"""The cluster profiles: `scale` lifts the controller-manager's and scheduler's client limits; `default` keeps
the components' own."""

from __future__ import annotations

from pathlib import Path

import pytest

from ome.devcluster import cli, components
from ome.devcluster.pki import Pki

PORTS = components.Ports(2379, 2380, 6443, 10257, 10259, 10247)
KC = Path("/s/kubeconfig")
BIN = Path("/b")


def _flags(argv: list[str]) -> dict[str, str]:
    return dict(a.split("=", 1) for a in argv if a.startswith("--") and "=" in a)


def test_default_profile_leaves_client_limits_and_workers_at_the_components_defaults() -> None:
    kcm = components.kube_controller_manager(BIN, KC, Pki(Path("/s/pki")), PORTS)
    sched = components.kube_scheduler(BIN, KC, PORTS)
    for comp in (kcm, sched):
        flags = _flags(comp.argv)
        for name in ("--kube-api-qps", "--kube-api-burst", "--concurrent-deployment-syncs",
                     "--concurrent-replicaset-syncs"):
            assert name not in flags, (comp.name, name)


def test_scale_profile_raises_client_limits_and_kcm_workers() -> None:
    kcm = _flags(components.kube_controller_manager(BIN, KC, Pki(Path("/s/pki")), PORTS, profile="scale").argv)
    sched = _flags(components.kube_scheduler(BIN, KC, PORTS, profile="scale").argv)
    for flags in (kcm, sched):
        assert float(flags["--kube-api-qps"]) >= 500
        assert int(flags["--kube-api-burst"]) >= 1000
    assert int(kcm["--concurrent-deployment-syncs"]) > 5  # KCM's default is 5
    assert int(kcm["--concurrent-replicaset-syncs"]) > 5
    assert "--concurrent-deployment-syncs" not in sched
    # Everything else is the default profile's command line.
    base = components.kube_controller_manager(BIN, KC, Pki(Path("/s/pki")), PORTS).argv
    scaled = components.kube_controller_manager(BIN, KC, Pki(Path("/s/pki")), PORTS, profile="scale").argv
    assert scaled[: len(base)] == base


def test_unknown_profile_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown cluster profile 'huge'"):
        components.kube_scheduler(BIN, KC, PORTS, profile="huge")


def test_cli_up_takes_profile_and_defaults_to_default() -> None:
    parser = cli._parser()  # noqa: SLF001
    assert parser.parse_args(["cluster", "up"]).profile == "default"
    assert parser.parse_args(["cluster", "up", "--profile", "scale"]).profile == "scale"
    with pytest.raises(SystemExit):
        parser.parse_args(["cluster", "up", "--profile", "huge"])
