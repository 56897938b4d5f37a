"""Command-line entry point: a table of subcommands, each a module in auditor.commands.

Each command module has `add_arguments(parser)` and `run(args) -> int`; modules are imported
only when their command runs, so `p2paudit sites` never imports torch.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from auditor import __version__
from auditor.errors import EXIT_INPUT, InputError

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


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="p2paudit", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"p2paudit {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="on an internal error, print the traceback instead of one line")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == only:
            importlib.import_module(module).add_arguments(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    if command not in COMMANDS:
        command = None
    parser = build_parser(only=command)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_INPUT
    try:
        return importlib.import_module(COMMANDS[args.command][0]).run(args)
    except InputError as exc:
        print(f"p2paudit {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print(f"p2paudit {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - a crash is exit 2 with one line, never findings
        if args.debug:
            raise
        text = str(exc).splitlines()[0] if str(exc) else ""
        print(f"p2paudit {args.command}: internal error: {type(exc).__name__}"
              f"{': ' + text if text else ''} (rerun with `p2paudit --debug {args.command} ...` "
              "for the traceback, and report it)", file=sys.stderr)
        return EXIT_INPUT
