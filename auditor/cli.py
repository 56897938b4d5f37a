"""Command-line entry point: a table of subcommands, each a module in auditor.commands.

Each command module has `add_arguments(parser)` and `run(args) -> int`; modules are imported
only when their command runs, so `p2paudit sites` never imports torch.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

from auditor import __version__, reads
from auditor.errors import EXIT_INPUT, InputError, no_room
from auditor.terminal import Visible, visible

COMMANDS: dict[str, tuple[str, str]] = {
    "sites": ("auditor.commands.sites", "list every P2P call site in the given targets"),
    "scan": ("auditor.commands.scan", "which P2P sites can fire under a launch script's config"),
    "record": ("auditor.commands.record", "run a command with every rank recording its P2P ops"),
    "simulate": ("auditor.commands.simulate",
                 "run the real pipeline schedule on CPU and predict whether its order hangs"),
    "report": ("auditor.commands.report", "join a scan with recorded traces into a report"),
    "export": ("auditor.commands.export", "convert a recorded trace to Parquet tables (ops, groups)"),
    "fix": ("auditor.commands.fix", "the verified patch that removes a launch script's findings"),
    "gate": ("auditor.commands.gate", "CI gate: fail when a target adds a contradiction"),
    "diff": ("auditor.commands.diff", "what changed between two scan documents"),
    "repro": ("auditor.commands.repro", "minimal torchrun reproducers of P2P failure modes"),
    "doctor": ("auditor.commands.doctor", "check this cluster's torch/NCCL P2P behaviour"),
}


class Parser(argparse.ArgumentParser):
    """A usage error is one line, as every other error is (`p2paudit scan: error: ...`), not
    the usage block followed by the error."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_INPUT, visible(f"{self.prog}: error: {message} (see `{self.prog} --help`)") + "\n")


class Terminated(BaseException):
    """SIGTERM, raised where the command is, so that it unwinds as from Ctrl-C: its temporary
    files removed (the default action would end the process with them left behind)."""


def _terminated(signum: int, frame: object) -> NoReturn:
    raise Terminated


@contextmanager
def _command_scope() -> Iterator[None]:
    """What holds while one command runs: its inputs watched (reads), SIGTERM unwinding, and
    stderr showing control characters instead of obeying them."""
    reads.watch()
    stderr = sys.stderr
    sys.stderr = Visible(stderr)
    previous = signal.getsignal(signal.SIGTERM)
    main_thread = previous is signal.SIG_DFL and threading.current_thread() is threading.main_thread()
    if main_thread:
        signal.signal(signal.SIGTERM, _terminated)
    try:
        yield
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
        sys.stderr = stderr


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = Parser(prog="p2paudit", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"p2paudit {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="on an internal error, print the traceback instead of one line")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == only:
            importlib.import_module(module).add_arguments(p)
            parser.set_defaults(command_parser=p)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    if command not in COMMANDS:
        command = None
    parser = build_parser(only=command)
    args, extra = parser.parse_known_args(argv)
    if extra:  # said by the command's parser, so the line names the command
        getattr(args, "command_parser", parser).error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command is None:
        parser.print_help()
        return EXIT_INPUT
    with _command_scope():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        command = importlib.import_module(COMMANDS[args.command][0])
        if getattr(args, "output_is_file", False):  # before the work, not after it
            from auditor.commands.options import check_output
            check_output(args)
        if not getattr(args, "set", None):
            return command.run(args)
        from auditor.config.settings import keys_first
        with keys_first(args.set):  # a run refused unscanned (simulate, gate, fix): the key first
            return command.run(args)
    except InputError as exc:
        print(f"p2paudit {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print(f"p2paudit {args.command}: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print(f"p2paudit {args.command}: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    except RecursionError:
        print(f"p2paudit {args.command}: error: an input nests too deeply to be read (rerun with "
              f"`p2paudit --debug {args.command} ...` to see which)", file=sys.stderr)
        return EXIT_INPUT
    except OSError as exc:  # no room to write is the machine's state, not p2paudit's crash
        room = no_room(exc)
        if room is None or args.debug:
            return _crashed(args, exc)
        print(f"p2paudit {args.command}: error: {room}", file=sys.stderr)
        return EXIT_INPUT
    except Exception as exc:
        return _crashed(args, exc)


def _crashed(args: argparse.Namespace, exc: Exception) -> int:
    """A crash is exit 2 with one line, never findings."""
    if args.debug:
        raise exc
    text = str(exc).splitlines()[0] if str(exc) else ""
    print(f"p2paudit {args.command}: internal error: {type(exc).__name__}"
          f"{': ' + text if text else ''} (rerun with `p2paudit --debug {args.command} ...` "
          "for the traceback, and report it)", file=sys.stderr)
    return EXIT_INPUT
