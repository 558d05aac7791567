"""argparse as kubectl-ome uses it: `error: <message>` and exit 1 on a usage error, an example in
every command's --help, and the flag groups several commands share."""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

from ome.kubectl_ome.connection import add_connection_flags, add_ome_namespace
from ome.resolution.modes import COMPONENTS

OUTPUTS_ALL = ("table", "wide", "json", "yaml")
OUTPUTS_NO_WIDE = ("table", "json", "yaml")


class UsageError(Exception):
    """argparse found a bad argument; main prints `error: <message>` and exits 1."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def connection_parent() -> Parser:
    parent = Parser(add_help=False)
    add_connection_flags(parent)
    return parent


def add_command(
    subparsers: Any,
    name: str,
    *,
    help: str,
    example: str,
    parents: list[argparse.ArgumentParser],
    usage_args: str = "",
) -> Parser:
    """A subcommand whose --help ends with its example."""
    parser: Parser = subparsers.add_parser(
        name,
        help=help,
        description=help,
        parents=parents,
        epilog="Example:\n  " + example.replace("\n", "\n  "),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def add_group(subparsers: Any, name: str, *, help: str, example: str) -> Any:
    """A command group (`rollout`, `instance`, ...) with its own subcommands."""
    group: Parser = subparsers.add_parser(
        name,
        help=help,
        description=help,
        epilog="Example:\n  " + example,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return group.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND", parser_class=Parser)


def add_name(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", metavar="INFERENCESERVICE")


def add_output(parser: argparse.ArgumentParser, choices: tuple[str, ...] = OUTPUTS_ALL) -> None:
    parser.add_argument(
        "-o", "--output", choices=choices, default="table", help=f"Output format: {', '.join(choices)}"
    )


def add_component(parser: argparse.ArgumentParser, required: bool = True) -> None:
    parser.add_argument(
        "--component",
        choices=COMPONENTS,
        required=required,
        help="Component: engine, decoder or router" + (" (required)" if required else ""),
    )


def add_guarded(parser: argparse.ArgumentParser, ome_namespace: bool = True) -> None:
    """The flags every guarded action takes."""
    parser.add_argument(
        "--dry-run",
        default="none",
        choices=("none", "client", "server"),
        help="Dry-run mode: none, client or server",
    )
    parser.add_argument(
        "--yes", action="store_true", help="Confirm the exact preview without an interactive prompt"
    )
    add_output(parser)
    if ome_namespace:
        add_ome_namespace(parser)


def print_usage_error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
