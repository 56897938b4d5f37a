"""The options several commands share, written once so that one idea has one spelling everywhere:
`--config`, `--target`, `--torch`, `--set`, `--entry`, `--format`, `-o/--output`, `--jobs`, the
trace directory `--trace` and the communicator init mode `--init {lazy,eager}`.

Older spellings stay accepted as aliases (`record --out`, `simulate --trace-dir`, `doctor --eager`,
`sites TARGET ...`); each helper keeps the `dest` its command reads.
"""

from __future__ import annotations

import argparse
import os
import stat
from pathlib import Path
from collections.abc import Sequence
from typing import Any

from auditor import reads
from auditor.commands.output import refuse_input, refuse_link
from auditor.errors import InputError
from auditor.simulate import machine

TARGET_HELP = ("framework sources (NAME==VERSION, wheel, sdist, directory, installed name); "
               "default: the `name==X` comments of the script, else the installed distributions")
TORCH_HELP = ("the cluster's torch version (default: what the script states, a torch==X pin or an "
              "NGC image, else every covered release; the installed torch never decides)")
INIT_MODES = ("lazy", "eager")


def add_config(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, metavar="RUN.SH", help="the launch script")


def check_config(path: str) -> None:
    """Refuse a `--config` that is a device before anything reads it: /dev/zero never ends (the
    read grows until the kernel kills it), a disk is not a script. A terminal or pipe given as
    /dev/stdin is the user's own input, read as given; what else is wrong with the path (missing,
    a directory, not UTF-8) the script reader says."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return
    if stat.S_ISBLK(mode) or (stat.S_ISCHR(mode) and not _is_stdin(path)):
        raise InputError(path, "is a device, not a launch script")


def _is_stdin(path: str) -> bool:
    try:
        return os.isatty(0) and os.path.samestat(os.stat(path), os.fstat(0))
    except OSError:
        return False


def add_command(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--command", dest="training_command", metavar="'CMD ...'",
                        help="the training command line, read after the script (its variables set), "
                             "when the script hides it")


def target(text: str) -> str:
    """A `--target` as given; an empty one (a CI variable that expanded to nothing) would be read
    as the current directory, so it is a usage error."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty target: give NAME==VERSION, a path or an "
                                         "installed distribution's name")
    return text


def add_targets(parser: argparse.ArgumentParser, help: str = TARGET_HELP,
                default: list[str] | None = None) -> None:
    parser.add_argument("--target", action="append", default=default, type=target,
                        metavar="TARGET", help=help)


def add_torch(parser: argparse.ArgumentParser, help: str = TORCH_HELP) -> None:
    parser.add_argument("--torch", metavar="VERSION", help=help)


def add_nccl_log(parser: argparse.ArgumentParser) -> None:
    """`--nccl-log FILE|DIR` (repeatable): the cluster's NCCL_DEBUG=INFO logs (ncclbounds)."""
    parser.add_argument("--nccl-log", action="append", default=[], type=Path, metavar="FILE",
                        help="an NCCL_DEBUG=INFO log of the job (repeatable; or a directory of "
                             "per-rank logs): the transport, channels per peer and NCCL version it "
                             "states replace the modelled ones in 'will deadlock here'")


def add_set(parser: argparse.ArgumentParser,
            help: str = "override an effective config value, or env.NAME=VALUE a variable of the "
                        "job's environment the script leaves unknown (repeatable)") -> None:
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help=help)


def add_entry(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--entry", action="append", metavar="MODULE[:QUALNAME]", help=help)


def add_format(parser: argparse.ArgumentParser, choices: Sequence[str], default: str) -> None:
    """`--format`; a command that writes a report document passes `report_format(kind)`."""
    parser.add_argument("--format", choices=tuple(choices), default=default)


def report_format(kind: str) -> tuple[tuple[str, ...], str]:
    """The choices and default of a command writing a `kind` document, from the one table
    (imported here: the renderers it names cost ~0.1 s, which record and doctor, run once per
    rank, need not pay)."""
    from auditor.report import formats

    return formats.choices(kind), formats.DEFAULTS[kind]


# The options (their dests) that name a file the command reads: known before it reads them.
INPUT_FILES = ("config", "scan", "baseline", "before", "after")


def check_output(args: argparse.Namespace) -> None:
    """`-o FILE`, refused before the command does its work (a scan or a simulation can take
    minutes) where it cannot be written: its directory missing, a directory itself, a symbolic
    link to a file (output.refuse_link), or a file the command line names as an input
    (`INPUT_FILES`, noted here as read later: output.refuse_input). What else is wrong (an input
    found in the work, a full disk) is said where it is written."""
    for dest in INPUT_FILES:
        named = getattr(args, dest, None)
        if isinstance(named, str):
            reads.note(named)
    text = args.output
    if text is None or text == "-" or text.startswith(("/dev/", "/proc/")):
        return
    refuse_link(text)
    refuse_input(text)
    if os.path.isdir(text):
        raise InputError(text, "is a directory; -o names the file to write")
    if not os.path.isdir(os.path.dirname(text) or "."):
        raise InputError(text, "the output's directory does not exist")


def add_output(parser: argparse.ArgumentParser, help: str = "write here instead of stdout") -> None:
    """`-o FILE`; the CLI checks it (`check_output`) before the command runs."""
    parser.add_argument("-o", "--output", metavar="FILE", help=help)
    parser.set_defaults(output_is_file=True)


def add_jobs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--jobs", type=machine.jobs_option, default=None,
                        help="parser processes (default: the idle cores; at most the cores)")


def add_trace(parser: argparse.ArgumentParser, help: str, *aliases: str, dest: str = "trace",
              **kwargs: Any) -> None:
    """The trace directory: `--trace DIR` in every command, plus the command's older spelling."""
    parser.add_argument("--trace", *aliases, dest=dest, metavar="DIR", help=help, **kwargs)


def add_flight_recorder(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--flight-recorder", metavar="DIR",
                        help="PyTorch Flight Recorder dumps, one file per rank (JSON or pickle), "
                             "instead of a recorded trace")


def add_init(parser: argparse.ArgumentParser, help: str, *, as_flag: str | None = None) -> None:
    """Communicator creation, `--init {lazy,eager}`. `as_flag`: the dest of a command that reads
    the mode as a boolean `eager` (doctor), whose old spelling `--eager` stays an alias."""
    if as_flag is None:
        parser.add_argument("--init", choices=INIT_MODES, help=help)
        return
    parser.add_argument("--init", choices=INIT_MODES, dest=as_flag, action=_EagerMode, default=False,
                        help=help)
    parser.add_argument("--eager", dest=as_flag, action="store_true", help="the same as --init eager")


class _EagerMode(argparse.Action):
    """`--init lazy|eager` stored as the boolean `eager`."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values == "eager")


class _ExtendTargets(argparse.Action):
    """`sites`'s targets, positional (its old spelling) and `--target` (every other command's),
    gathered into one list."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        given = values if isinstance(values, list) else [values]
        setattr(namespace, self.dest, (getattr(namespace, self.dest) or []) + given)


def add_target_list(parser: argparse.ArgumentParser, help: str) -> None:
    """Targets as `sites` takes them: `sites A B` or `sites --target A --target B` (or both)."""
    parser.add_argument("targets", nargs="*", action=_ExtendTargets, type=target, metavar="TARGET",
                        help=help)
    parser.add_argument("--target", dest="targets", action=_ExtendTargets, type=target,
                        metavar="TARGET",
                        help="the same as a positional TARGET (repeatable)")
