"""`p2paudit record [--out DIR] [--coverage[=PKGS]] [--hang-after S] -- COMMAND ...`

Runs COMMAND with every rank it starts writing `DIR/rank-N.jsonl` (each P2P op and collective,
before torch gets it) and, when an op stays pending longer than --hang-after or on SIGUSR1/SIGTERM,
`DIR/hang-rank-N.json`. Exit status: COMMAND's own (2 when COMMAND cannot be started or the
options are wrong). On a cluster whose launchers a scheduler starts, set the same variables
instead: P2PAUDIT_TRACE=DIR (needs p2paudit installed in the training interpreter, which then
records itself through its autostart .pth), or PYTHONPATH as `--print-env` shows.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from auditor.dynamic import record

# The packages p2paudit audits, measured by a bare --coverage.
DEFAULT_COVERAGE = "megatron,swift,mcore_bridge,deepspeed"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("p2paudit-trace"), metavar="DIR",
                        help="trace directory (default: ./p2paudit-trace); must hold no trace yet")
    parser.add_argument("--coverage", nargs="?", const=DEFAULT_COVERAGE, default=None,
                        metavar="PKG,...",
                        help=f"also record line coverage of these packages per rank "
                             f"(bare flag: {DEFAULT_COVERAGE})")
    parser.add_argument("--hang-after", type=float, default=300.0, metavar="SECONDS",
                        help="write hang-rank-N.json when an op is pending this long "
                             "(default 300; 0 = only on SIGUSR1/SIGTERM)")
    parser.add_argument("--print-env", action="store_true",
                        help="print the environment a recorded run needs, and run nothing")
    parser.add_argument("run_argv", nargs=argparse.REMAINDER, metavar="-- COMMAND ...",
                        help="the command to run, after --")


def run(args: argparse.Namespace) -> int:
    command = list(args.run_argv)
    if command and command[0] == "--":
        command = command[1:]
    coverage = [p for p in args.coverage.split(",") if p] if args.coverage else None
    if args.print_env:
        env = record.environment(args.out.absolute(), args.hang_after, coverage, base={})
        for name, value in sorted(env.items()):
            if name == "PYTHONPATH":  # keep whatever the job already has
                print(f'export PYTHONPATH={shlex.quote(value)}"${{PYTHONPATH:+:$PYTHONPATH}}"')
            else:
                print(f"export {name}={shlex.quote(value)}")
        return 0
    return record.run(command, args.out, args.hang_after, coverage)
