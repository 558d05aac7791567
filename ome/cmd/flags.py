"""Command-line flags with the semantics of Go's flag package, which controller-runtime's names promise.

Go takes a boolean as a bare `--flag` or as `--flag=<bool>` (strconv.ParseBool: 1 t T TRUE true True, 0 f F
FALSE false False), and never as `--flag false`: a boolean's value is never a separate argument. argparse's
store_true refuses `--flag=false`, and an optional value alone (nargs="?") would swallow the argument after
a bare flag. So a `BoolFlag` takes an optional value, and `parse_args` first turns every bare `--flag` into
`--flag=true`: a value can then only come after `=`, and `--flag false` fails as an unexpected argument.

`HelpFormatter` shows each flag's default, except Go's zero values (unset, false, 0, ""), as Go's help does.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Iterable, Sequence
from typing import Any, Final

TRUE: Final = frozenset({"1", "t", "T", "TRUE", "true", "True"})
FALSE: Final = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def parse_bool(value: str) -> bool:
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean value {value!r} (want true or false)")


class BoolFlag(argparse.Action):
    """`--flag` or `--flag=true|false`; the default is false unless given."""

    def __init__(self, option_strings: Sequence[str], dest: str, default: bool = False,
                 required: bool = False, help: str | None = None) -> None:  # noqa: A002 - argparse's name
        super().__init__(option_strings, dest, nargs="?", const=True, default=default, type=parse_bool,
                         required=required, help=help, metavar="true|false")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)


class HelpFormatter(argparse.HelpFormatter):
    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if "%(default)" in text or not action.option_strings or _go_zero(default):
            return text
        return f"{text} (default: %(default)s)" if text else "(default: %(default)s)"

    def _split_lines(self, text: str, width: int) -> list[str]:
        # Flag and resource names are hyphenated: never break a line inside one.
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


def _go_zero(default: Any) -> bool:
    """Go's help leaves out a flag's default when it is its type's zero value: false, 0, "" (or unset)."""
    if default is None or default is argparse.SUPPRESS or isinstance(default, bool):
        return default is not True
    return default == "" or (isinstance(default, int | float) and default == 0)


class GoArgumentParser(argparse.ArgumentParser):
    """Errors in the words of Go's flag package, which the docs' troubleshooting greps for:
    `flag provided but not defined: -name`, `invalid value "v" for flag -name: parse error` and
    `invalid boolean value "v" for -name: parse error`; the line comes first, then the usage (exit 2)."""

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        try:
            return super()._get_value(action, arg_string)
        except argparse.ArgumentError as exc:
            name = _flag_name(action)
            if name is None:
                raise
            if isinstance(action, BoolFlag):
                message = f'invalid boolean value "{arg_string}" for -{name}: parse error'
            else:
                message = f'invalid value "{arg_string}" for flag -{name}: parse error'
            raise argparse.ArgumentError(None, message) from exc

    def error(self, message: str) -> Any:
        prefix = "unrecognized arguments: "
        if message.startswith(prefix):
            first = message[len(prefix):].split()[0]
            if first.startswith("-") and first != "-":
                message = f"flag provided but not defined: -{first.lstrip('-').split('=', 1)[0]}"
        self.exit(2, f"{message}\n{self.format_usage()}")


def _flag_name(action: argparse.Action) -> str | None:
    longs = [o for o in action.option_strings if o.startswith("--")] or list(action.option_strings)
    return longs[0].lstrip("-") if longs else None


def parser(prog: str, description: str | None = None) -> argparse.ArgumentParser:
    """An ArgumentParser with Go-style help and errors and no prefix abbreviations (Go has none)."""
    return GoArgumentParser(prog=prog, description=description, formatter_class=HelpFormatter,
                            allow_abbrev=False)


def parse_args(p: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> argparse.Namespace:
    args = list(sys.argv[1:] if argv is None else argv)
    return p.parse_args(normalize(args, bool_options(p)))


def normalize(argv: Iterable[str], bools: frozenset[str]) -> list[str]:
    """Bare boolean flags get an explicit `=true`; arguments after `--` are left alone."""
    out: list[str] = []
    passthrough = False
    for arg in argv:
        if arg == "--":
            passthrough = True
        out.append(f"{arg}=true" if not passthrough and arg in bools else arg)
    return out


def bool_options(p: argparse.ArgumentParser) -> frozenset[str]:
    """The option strings of every BoolFlag in `p` and its subcommands, minus any name that some
    subcommand uses for a flag of another kind (rewriting that one would break it)."""
    bools: set[str] = set()
    others: set[str] = set()
    pending = [p]
    while pending:
        current = pending.pop()
        for action in current._actions:  # argparse keeps no public list of a parser's actions
            if isinstance(action, BoolFlag):
                bools.update(action.option_strings)
            else:
                others.update(action.option_strings)
            if isinstance(action, argparse._SubParsersAction):
                pending.extend(action.choices.values())
    return frozenset(bools - others)
