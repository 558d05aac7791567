"""ome-manager's flags: controller-runtime names, durations as Go writes them, bad values rejected early."""

from __future__ import annotations

import pytest

from ome.cmd import manager


def test_defaults_follow_controller_runtime() -> None:
    args = manager.parse_args([])
    assert (args.metrics_bind_address, args.health_probe_bind_address, args.webhook_port) == (
        ":8080", ":8081", 9443)
    assert (args.leader_elect_lease_duration, args.leader_elect_renew_deadline,
            args.leader_elect_retry_period) == (15, 10, 2)
    assert args.runtime_revision_retention == 10 and args.runtime_revision_grace_period == 86400


def test_durations_and_counts_parse() -> None:
    args = manager.parse_args(["--leader-elect-lease-duration=60s", "--leader-elect-renew-deadline=40s",
                               "--leader-elect-retry-period=8s", "--runtime-revision-grace-period=72h",
                               "--inferencereplica-max-concurrent-reconciles=8"])
    assert (args.leader_elect_lease_duration, args.leader_elect_renew_deadline) == (60, 40)
    assert args.runtime_revision_grace_period == 72 * 3600
    assert args.inferencereplica_max_concurrent_reconciles == 8


@pytest.mark.parametrize("argv", [
    ["--leader-elect-lease-duration=10s"],  # not longer than the 10 s renew deadline
    ["--leader-elect-renew-deadline=2s"],  # not longer than 1.2 x the 2 s retry period
])
def test_invalid_leader_election_timing_exits_with_the_documented_message(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        manager.parse_args(argv)
    assert exit_info.value.code == 2
    assert "Invalid leader election timing" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--runtime-revision-grace-period=3d"], ["--runtime-revision-retention=0"],
                                  ["--inferenceservice-max-concurrent-reconciles=-1"]])
def test_bad_values_are_rejected(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        manager.parse_args(argv)


def test_webhook_cert_secret_defaults_to_the_secret_name_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Deployment sets SECRET_NAME; unset or empty, the name the generated Role grants."""
    from ome.webhooks import cert_bootstrap

    monkeypatch.setenv("SECRET_NAME", "team-webhook-cert")
    assert manager.parse_args([]).webhook_cert_secret == "team-webhook-cert"
    assert manager.parse_args(["--webhook-cert-secret=other"]).webhook_cert_secret == "other"
    monkeypatch.setenv("SECRET_NAME", "")
    assert manager.parse_args([]).webhook_cert_secret == cert_bootstrap.DEFAULT_SECRET_NAME
    monkeypatch.delenv("SECRET_NAME")
    assert manager.parse_args([]).webhook_cert_secret == cert_bootstrap.DEFAULT_SECRET_NAME
