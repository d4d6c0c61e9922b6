"""Command-line front end: argument parsing and error reporting only.

Each subcommand lives in pmpredict/commands/<name>.py with
``register(subparsers)`` (which sets ``func``); algorithms stay in the engines.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from pmpredict import __version__
from pmpredict.commands.stopping import sigterm_as_interrupt
from pmpredict.errors import InputError

# the order of `pmpredict --help`
COMMANDS = ["predict", "simulate", "evaluate", "infer", "measure", "export", "align", "models", "anica", "serve"]


class _Parser(argparse.ArgumentParser):
    """argparse with pmpredict's one-line errors (exit status 2, as argparse's own)."""

    def error(self, message):
        raise InputError("<command line>", f"{message} (see `{self.prog} -h`)")


def build_parser(argv=None) -> argparse.ArgumentParser:
    """The parser of every command; where `argv` names one, of that command alone (the same
    parse: each command's arguments are its own), as registering all of them and importing
    their modules costs a warm call ~30 ms."""
    named = next((a for a in argv or () if not a.startswith("-")), None)
    parser = _Parser(
        prog="pmpredict",
        description="Port-mapping inference (PMEvo) and basic-block throughput prediction.")
    parser.add_argument("--version", action="version", version=f"pmpredict {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in [named] if named in COMMANDS else COMMANDS:
        try:
            module = importlib.import_module(f".commands.{name}", __package__)
        except ModuleNotFoundError as exc:
            if exc.name == f"{__package__}.commands.{name}":
                continue      # a command not built yet is simply absent
            raise
        module.register(sub)
    return parser


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    try:
        args = parser.parse_args(argv)
        args.argv = argv
        # SIGTERM unwinds as Ctrl-C does in every command: temporary directories removed,
        # caches and checkpoints written, outputs left whole
        with sigterm_as_interrupt():
            status = args.func(args)
    except InputError as exc:
        print(f"pmpredict: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pmpredict: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    return int(status or 0)


if __name__ == "__main__":
    sys.exit(main())
