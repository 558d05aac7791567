"""Flag errors in Go's words, as guides/operate-ome/configure-the-controller.md's troubleshooting greps for
them: `-e 'flag provided but not defined|invalid (boolean )?value ".*" for (flag )?-'` - "A patched argument
is misspelled, isn't in your OME version, or has a bad value, such as `3d` for a duration."."""

from __future__ import annotations

import re

import pytest

from ome.cmd import manager
from ome.devcluster import cli as dev_cli
from ome.modelagent import main as agent_main

DOCUMENTED = re.compile(r'flag provided but not defined|invalid (boolean )?value ".*" for (flag )?-')


@pytest.mark.parametrize(("argv", "line"), [
    (["--bogus-flag=1"], "flag provided but not defined: -bogus-flag"),
    (["--leader-elect-lease-duration=3d"], 'invalid value "3d" for flag -leader-elect-lease-duration: parse error'),
    (["--kube-api-qps=fast"], 'invalid value "fast" for flag -kube-api-qps: parse error'),
    (["--webhook-port=http"], 'invalid value "http" for flag -webhook-port: parse error'),
    (["--leader-elect=maybe"], 'invalid boolean value "maybe" for -leader-elect: parse error'),
])
def test_manager_flag_errors_use_gos_words(argv: list[str], line: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        manager.parse_args(argv)
    assert exit_info.value.code == 2  # Go's flag.ExitOnError
    err = capsys.readouterr().err
    assert err.splitlines()[0] == line  # the error first, then the usage
    assert DOCUMENTED.search(err)
    assert "usage: ome-manager" in err


def test_the_other_binaries_answer_the_same_way(capsys: pytest.CaptureFixture[str]) -> None:
    for entry, argv in ((agent_main.parse_args, []), (dev_cli.main, ["cluster", "status"])):
        with pytest.raises(SystemExit):
            entry([*argv, "--no-such-flag"])
        assert capsys.readouterr().err.splitlines()[0] == "flag provided but not defined: -no-such-flag"
