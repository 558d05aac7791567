"""Command lines: Go flag-package booleans (`--flag`, `--flag=true|false`, never `--flag false`) on every
boolean flag of ome-manager, ome-model-agent and ome-dev; help texts with defaults."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable, Iterator

import pytest

from ome.cmd import flags, manager
from ome.devcluster import cli as devcli
from ome.modelagent import main as agent

GO_TRUE = ["1", "t", "T", "TRUE", "true", "True"]
GO_FALSE = ["0", "f", "F", "FALSE", "false", "False"]


def _parser_of(monkeypatch: pytest.MonkeyPatch, entry: Callable[[list[str]], object]) -> argparse.ArgumentParser:
    """The parser an entry point builds, caught on its way into flags.parse_args."""
    seen: list[argparse.ArgumentParser] = []
    real = flags.parse_args

    def spy(p: argparse.ArgumentParser, argv: list[str] | None = None) -> argparse.Namespace:
        seen.append(p)
        return real(p, argv)

    monkeypatch.setattr(flags, "parse_args", spy)
    entry([])
    return seen[0]


def _all_actions(p: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    for action in p._actions:
        yield action
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _all_actions(sub)


def _entries() -> dict[str, Callable[[list[str]], object]]:
    return {
        "ome-manager": manager.parse_args,
        "ome-model-agent": agent.parse_args,
        "ome-dev": lambda argv: flags.parse_args(devcli._parser(), ["cluster", "status", *argv]),
    }


@pytest.mark.parametrize("value", GO_TRUE + GO_FALSE)
def test_parse_bool_takes_gos_spellings(value: str) -> None:
    assert flags.parse_bool(value) is (value in GO_TRUE)


@pytest.mark.parametrize("value", ["yes", "on", "", "tRUE", "2"])
def test_parse_bool_refuses_others(value: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="invalid boolean value"):
        flags.parse_bool(value)


@pytest.mark.parametrize("program", sorted(_entries()))
def test_no_boolean_flag_bypasses_go_semantics(program: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """store_true and friends refuse `--flag=false`: every boolean must be a BoolFlag."""
    p = _parser_of(monkeypatch, _entries()[program])
    legacy = (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse.BooleanOptionalAction)
    offenders = [a.option_strings for a in _all_actions(p) if isinstance(a, legacy)]
    assert offenders == []


# The flags, by name; test_every_boolean_flag_found_takes_every_go_form covers every other BoolFlag
# (so the list stays valid whichever flags the manager gains).
MANAGER_BOOLS = ["--leader-elect", "--webhook-self-register", "--webhook-cert-bootstrap"]


@pytest.mark.parametrize("flag", MANAGER_BOOLS)
def test_manager_booleans_take_every_go_form(flag: str) -> None:
    dest = flag[2:].replace("-", "_")
    assert getattr(manager.parse_args([]), dest) is False
    assert getattr(manager.parse_args([flag]), dest) is True
    assert getattr(manager.parse_args([f"{flag}=true"]), dest) is True
    assert getattr(manager.parse_args([f"{flag}=false"]), dest) is False
    assert getattr(manager.parse_args([f"{flag}=0", "--webhook-port=0"]), dest) is False


@pytest.mark.parametrize("program", sorted(_entries()))
def test_every_boolean_flag_found_takes_every_go_form(program: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each BoolFlag of the program's parser (a subcommand's too), whatever flags are added later."""
    p = _parser_of(monkeypatch, _entries()[program])
    found = [a for a in _all_actions(p) if isinstance(a, flags.BoolFlag)]
    if program == "ome-manager":
        assert set(MANAGER_BOOLS) <= {s for a in found for s in a.option_strings}
    for action in found:
        flag = action.option_strings[-1]
        owner = _owning_parser(p, action)
        assert getattr(flags.parse_args(owner, [flag]), action.dest) is True
        assert getattr(flags.parse_args(owner, [f"{flag}=True"]), action.dest) is True
        assert getattr(flags.parse_args(owner, [f"{flag}=false"]), action.dest) is False
        assert getattr(flags.parse_args(owner, [f"{flag}=f"]), action.dest) is False


def _owning_parser(p: argparse.ArgumentParser, wanted: argparse.Action) -> argparse.ArgumentParser:
    """The (sub)parser that declares `wanted`, so it can be parsed on its own."""
    if wanted in p._actions:
        return p
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                with contextlib.suppress(LookupError):
                    return _owning_parser(sub, wanted)
    raise LookupError(wanted.dest)


def test_leader_elect_false_is_no_longer_an_error() -> None:
    """The issue's case: the manifest-style `--leader-elect=false` turns leader election off."""
    args = manager.parse_args(["--leader-elect=false", "--leader-elect-lease-duration=60s"])
    assert args.leader_elect is False and args.leader_elect_lease_duration == 60


def test_a_separate_value_is_not_taken(capsys: pytest.CaptureFixture[str]) -> None:
    """As in Go, `--flag false` leaves `false` as a stray argument instead of reading it as the value."""
    with pytest.raises(SystemExit) as exit_info:
        manager.parse_args(["--leader-elect", "false"])
    assert exit_info.value.code == 2
    assert "unrecognized arguments: false" in capsys.readouterr().err


def test_a_bad_value_names_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        manager.parse_args(["--leader-elect=maybe"])
    assert 'invalid boolean value "maybe" for -leader-elect: parse error' in capsys.readouterr().err


def test_bare_flag_before_another_flag_stays_true() -> None:
    args = manager.parse_args(["--leader-elect", "--webhook-port", "0"])
    assert args.leader_elect is True and args.webhook_port == 0


def test_self_register_and_bootstrap_exclude_each_other_only_when_both_true(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = manager.parse_args(["--webhook-self-register=false", "--webhook-cert-bootstrap"])
    assert (args.webhook_self_register, args.webhook_cert_bootstrap) == (False, True)
    with pytest.raises(SystemExit) as exit_info:
        manager.parse_args(["--webhook-self-register=true", "--webhook-cert-bootstrap=1"])
    assert exit_info.value.code == 2
    assert "not allowed with" in capsys.readouterr().err


def test_arguments_after_double_dash_are_not_rewritten() -> None:
    assert flags.normalize(["--a", "--", "--a"], frozenset({"--a"})) == ["--a=true", "--", "--a"]


def test_prefix_abbreviations_are_refused() -> None:
    """Go has none; an abbreviated boolean would otherwise swallow the next argument."""
    with pytest.raises(SystemExit):
        manager.parse_args(["--leader", "--webhook-port=0"])


def _help(entry: Callable[[list[str]], object], capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit):
        entry([*argv, "--help"])
    return " ".join(capsys.readouterr().out.split())  # unwrap the formatter's line breaks


def test_manager_help_shows_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(manager.parse_args, capsys)
    for expected in ["(default: ome)", "(default: :8080)", "(default: :8081)", "(default: 9443)",
                     "(default: 15s)", "(default: 10s)", "(default: 2s)", "(default: 30s)", "(default: 24h)",
                     "(default: ome-controller-manager-leader-lock)", "--leader-elect [true|false]"]:
        assert expected in text, expected
    assert "(default: None)" not in text and "(default: False)" not in text  # Go shows no zero values


def test_manager_help_says_what_self_registration_needs(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(manager.parse_args, capsys)
    assert "Needs create, get, patch and delete on both kinds" in text


def test_duration_defaults_still_parse_to_seconds() -> None:
    args = manager.parse_args([])
    assert (args.leader_elect_lease_duration, args.config_cache_ttl, args.runtime_revision_grace_period) == (
        15, 30, 86400)


def test_dev_cluster_up_help_documents_each_flag(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(lambda argv: flags.parse_args(devcli._parser(), argv), capsys, "cluster", "up")
    assert "--state-dir STATE_DIR the cluster's directory" in text
    assert "--gpu-nodes GPU_NODES fake GPU nodes to create" in text and "(default: 4)" in text
    assert "--timeout TIMEOUT seconds each component may take" in text and "(default: 180.0)" in text
    assert "print the kubeconfig's path" in text


def test_dev_stages_takes_go_booleans() -> None:
    p = devcli._parser()
    assert flags.parse_args(p, ["fake-gpu-nodes", "--stages"]).stages is True
    assert flags.parse_args(p, ["fake-gpu-nodes", "--stages=false"]).stages is False
    assert flags.parse_args(p, ["fake-gpu-nodes"]).stages is False


def test_model_agent_help_documents_namespace_and_models_root(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(agent.parse_args, capsys)
    assert "--namespace NAMESPACE the agent's namespace (env POD_NAMESPACE)" in text
    assert "status ConfigMaps" in text
    assert "--models-root-dir MODELS_ROOT_DIR root directory for models on the node" in text
    assert "(default: /mnt/models)" in text


def test_help_leaves_out_gos_zero_values_only() -> None:
    p = flags.parser("demo")
    p.add_argument("--count", type=int, default=0, help="an int")
    p.add_argument("--address", default="0", help="a string")
    p.add_argument("--on", action=flags.BoolFlag, default=True, help="a true bool")
    p.add_argument("--off", action=flags.BoolFlag, help="a false bool")
    p.add_argument("--ratio", type=float, default=0.0, help="a float")
    text = " ".join(p.format_help().split())
    assert "an int --address" in text  # no default for the int zero
    assert 'a string (default: 0)' in text  # a string "0" is not a zero value
    assert "a true bool (default: True)" in text and "a false bool --ratio" in text
    assert text.endswith("a float")
