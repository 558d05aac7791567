"""ome-manager's flags as reference/operate-ome/controller-manager-flags.md lists them (coverage rows S4-S8).

Each test quotes the row of the docs it checks.
"""

from __future__ import annotations

import argparse
import asyncio
import logging

import pytest

from ome.cmd import manager, wiring
from ome.config import inferenceservice_config as cfg
from ome.framework import log_setup


def test_health_probe_addr_is_the_documented_name_and_the_old_name_an_alias() -> None:
    """S4: "`--health-probe-addr` | `:8081` | ... The address of the `/healthz` and `/readyz` endpoints." """
    assert manager.parse_args([]).health_probe_bind_address == ":8081"
    assert manager.parse_args(["--health-probe-addr=127.0.0.1:9000"]).health_probe_bind_address == "127.0.0.1:9000"
    assert manager.parse_args(["--health-probe-bind-address", ":7000"]).health_probe_bind_address == ":7000"
    # Go's flag package: the last occurrence wins, whichever name it uses.
    both = ["--health-probe-bind-address=:7000", "--health-probe-addr=:7001"]
    assert manager.parse_args(both).health_probe_bind_address == ":7001"


def test_webhook_server_runs_only_with_webhook() -> None:
    """S5: "`--webhook` | `false` | None. The chart always passes it. | Runs the admission webhook server." """
    assert manager._webhook_server(manager.parse_args([])) is None
    assert manager._webhook_server(manager.parse_args(["--webhook=false"])) is None
    served = manager._webhook_server(manager.parse_args(["--webhook"]))
    assert served is not None
    assert manager._webhook_server(manager.parse_args(["--webhook", "--webhook-port=0"])) is None


def test_self_registration_and_bootstrap_imply_the_webhook_server() -> None:
    """Both certificate sources exist only to serve webhooks, so they turn the server on by themselves."""
    assert manager.parse_args(["--webhook-self-register"]).webhook is True
    assert manager.parse_args(["--webhook-cert-bootstrap"]).webhook is True


def test_enable_http2_and_metrics_secure_default_false() -> None:
    """S5: "`--enable-http2` | `false`", "`--metrics-secure` | `false` ... Serves the metrics endpoint over
    HTTPS." """
    args = manager.parse_args([])
    assert (args.enable_http2, args.metrics_secure) == (False, False)
    on = manager.parse_args(["--enable-http2", "--metrics-secure=true"])
    assert (on.enable_http2, on.metrics_secure) == (True, True)


def test_metrics_secure_context_serves_a_certificate() -> None:
    context = manager._metrics_tls()
    assert context.minimum_version >= __import__("ssl").TLSVersion.TLSv1_2
    assert context.cert_store_stats() is not None


def test_enable_inferencereplica_controller_defaults_true() -> None:
    """S5: "`--enable-inferencereplica-controller` | `true` | None | Since v1.3. Runs the InferenceReplica
    controller" """
    assert manager.parse_args([]).enable_inferencereplica_controller is True
    assert manager.parse_args(["--enable-inferencereplica-controller=false"]).enable_inferencereplica_controller \
        is False


class _RecordingManager:
    """Only what add_controllers reads itself; each controller's add_to_manager is replaced."""

    def __init__(self) -> None:
        self.client = object()


def test_disabled_inferencereplica_controller_is_not_added(monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    from ome.controllers import nodeagent

    added: list[str] = []
    # Every controller module wiring registers (found, not listed, so a new controller needs no edit here).
    modules = {name: value for name, value in vars(wiring).items()
               if isinstance(value, types.ModuleType) and hasattr(value, "add_to_manager")}
    modules["nodeagent"] = nodeagent
    for name, module in modules.items():
        monkeypatch.setattr(module, "add_to_manager", lambda *a, _n=name, **k: added.append(_n))
    monkeypatch.setattr(wiring, "ConfigSource", lambda *a, **k: None)
    settings = wiring.Settings(cfg.parse({}), lws_served=False, config_namespace="ome")
    wiring.add_controllers(_RecordingManager(), settings)  # type: ignore[arg-type]
    assert "inferencereplica" in added and "instancerollout" in added
    added.clear()
    settings.inferencereplica_controller = False
    wiring.add_controllers(_RecordingManager(), settings)  # type: ignore[arg-type]
    assert "inferencereplica" not in added and "instancerollout" not in added
    assert "inferenceservice" in added


def test_reconcile_concurrency_defaults_to_one() -> None:
    """S6: "`--inferenceservice-max-concurrent-reconciles` | `1`", "`--inferencereplica-max-concurrent-reconciles`
    | `1`" (the chart sets 4)."""
    args = manager.parse_args([])
    assert (args.inferenceservice_max_concurrent_reconciles, args.inferencereplica_max_concurrent_reconciles) == (1, 1)
    settings = wiring.Settings(cfg.parse({}), lws_served=False, config_namespace="ome")
    assert (settings.inferenceservice_workers, settings.inferencereplica_workers) == (1, 1)


def test_api_rate_limit_defaults_to_no_limit() -> None:
    """S7: "`--kube-api-qps` | No limit", "`--kube-api-burst` | `0` | ... Required with `--kube-api-qps`, and has
    no effect without it." """
    args = manager.parse_args([])
    assert (args.kube_api_qps, args.kube_api_burst) == (None, 0)
    assert manager.client_settings(args).qps == 0  # the transport's "no limiter"
    burst_only = manager.client_settings(manager.parse_args(["--kube-api-burst=50"]))
    assert (burst_only.qps, burst_only.burst) == (0, 0)
    both = manager.client_settings(manager.parse_args(["--kube-api-qps=200", "--kube-api-burst=400"]))
    assert (both.qps, both.burst) == (200, 400)


def test_qps_without_burst_exits_with_the_documented_error(capsys: pytest.CaptureFixture[str]) -> None:
    """S7: "`Failed to create Kubernetes client set`, with `burst is required to be greater than 0` |
    `kubeAPIQPS` is set without `kubeAPIBurst`." The manager exits (code 1) before it talks to the cluster."""
    args = manager.parse_args(["--kube-api-qps=100", "--kubeconfig=/nonexistent"])
    assert asyncio.run(manager.run(args)) == 1
    err = capsys.readouterr().err
    assert "Failed to create Kubernetes client set" in err
    assert "burst is required to be greater than 0" in err


def test_zap_defaults_are_the_documented_ones() -> None:
    """S8: "`--zap-encoder` | `json`", "`--zap-log-level` | `info`", "`--zap-stacktrace-level` | `error`",
    "`--zap-time-encoding` | `rfc3339`", "`--zap-devel` | `false`". """
    options = log_setup.zap_options(manager.parse_args([]))
    assert options == log_setup.ZapOptions(encoder="json", level=logging.INFO, stacktrace_level=logging.ERROR,
                                           time_encoding="rfc3339")


def test_zap_devel_uses_development_defaults_and_explicit_flags_win() -> None:
    """S8: "`--zap-devel` ... Uses development defaults: the `console` format, the `debug` level, and stack
    traces from the `warn` level." """
    devel = log_setup.zap_options(manager.parse_args(["--zap-devel"]))
    assert (devel.encoder, devel.level, devel.stacktrace_level) == ("console", logging.DEBUG, logging.WARNING)
    mixed = log_setup.zap_options(manager.parse_args(["--zap-devel", "--zap-encoder=json", "--zap-log-level=error"]))
    assert (mixed.encoder, mixed.level) == ("json", logging.ERROR)


@pytest.mark.parametrize(("value", "level"), [("debug", logging.DEBUG), ("info", logging.INFO),
                                              ("error", logging.ERROR), ("panic", logging.CRITICAL),
                                              ("2", logging.DEBUG)])
def test_zap_log_level_takes_the_documented_values(value: str, level: int) -> None:
    """S8: "`debug`, `info`, `error`, `panic`, or an integer above 0 for more verbose levels." """
    assert log_setup.zap_options(manager.parse_args([f"--zap-log-level={value}"])).level == level


@pytest.mark.parametrize("argv", [["--zap-log-level=loud"], ["--zap-log-level=0"], ["--zap-encoder=text"],
                                  ["--zap-stacktrace-level=debug"], ["--zap-time-encoding=unix"]])
def test_bad_zap_values_are_rejected(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        manager.parse_args(argv)
    assert exit_info.value.code == 2


@pytest.mark.parametrize(("encoding", "expected"), [
    ("epoch", 1796299200.123456),
    ("millis", 1796299200123.456),
    ("nanos", 1796299200123456000),
    ("iso8601", "2026-12-03T12:00:00.123Z"),
    ("rfc3339", "2026-12-03T12:00:00Z"),
    ("rfc3339nano", "2026-12-03T12:00:00.123456Z"),
])
def test_zap_time_encodings(encoding: str, expected: object) -> None:
    """S8: "`--zap-time-encoding` ... `epoch`, `millis`, `nanos`, `iso8601`, `rfc3339` or `rfc3339nano`." """
    got = log_setup.format_time(1796299200123456000, encoding)
    assert got == pytest.approx(expected) if isinstance(expected, float) else got == expected


def test_stacktrace_level_adds_stacks_from_that_level(capsys: pytest.CaptureFixture[str]) -> None:
    """S8: "`--zap-stacktrace-level` | `error` | ... The lowest level that logs a stack trace" """
    import orjson
    import structlog

    log_setup.configure_logging("json", "info", time_encoding="nanos", stacktrace_level=logging.ERROR,
                                now_ns=lambda: 42)
    structlog.reset_defaults()
    log_setup.configure_logging("json", "info", time_encoding="nanos", stacktrace_level=logging.ERROR,
                                now_ns=lambda: 42)
    logger = structlog.get_logger("t")
    logger.info("calm")
    logger.error("broken")
    lines = [orjson.loads(line) for line in capsys.readouterr().err.splitlines()]
    calm, broken = lines[-2], lines[-1]
    assert calm["timestamp"] == 42 and "stack" not in calm
    assert "stack" in broken


def test_log_format_stays_an_alias_of_zap_encoder() -> None:
    args = manager.parse_args(["--log-format=console"])
    assert isinstance(args, argparse.Namespace) and args.zap_encoder == "console"


def test_shipped_manifest_passes_the_charts_flags() -> None:
    """configure-the-controller.md, Step 2: the chart runs the manager with `--webhook`, `--zap-encoder=console`,
    4 workers each and `--kube-api-qps=100` / `--kube-api-burst=200`."""
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[3]
    docs = list(yaml.safe_load_all((root / "config" / "manager" / "manager.yaml").read_text()))
    deployment = next(d for d in docs if d and d["kind"] == "Deployment")
    argv = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    args = manager.parse_args(argv)
    assert args.webhook is True and args.zap_encoder == "console"
    assert (args.inferenceservice_max_concurrent_reconciles, args.inferencereplica_max_concurrent_reconciles) == (4, 4)
    assert (args.kube_api_qps, args.kube_api_burst) == (100, 200)
    assert (args.leader_elect_lease_duration, args.leader_elect_renew_deadline,
            args.leader_elect_retry_period) == (60, 40, 8)
