"""`p2paudit doctor`: what this cluster's torch/NCCL will really do with pipeline P2P.

Run it where the job runs, with the job's environment: `torchrun --nproc_per_node 8 --nnodes 16
... -m auditor doctor --pp 4` (every rank checks, rank 0 prints; ranks exit 0 once the checks
ran). Outside torchrun it starts `--nproc` local ranks itself and exits 1 when a group will not
coalesce batches or ranks disagree, 0 otherwise.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from auditor import jsonio
from auditor.commands import options
from auditor.commands.output import emit
from auditor.dynamic import backends, localranks
from auditor.errors import EXIT_FINDINGS, EXIT_OK, InputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nproc", type=int,
                        help="outside torchrun: local ranks to start (default: one per GPU, "
                             "else 2)")
    parser.add_argument("--backend", choices=("nccl", "gloo"),
                        help="default: nccl where CUDA is available, else gloo")
    parser.add_argument("--pp", type=int, default=2,
                        help="pipeline-parallel size of the PP groups doctor creates (default 2)")
    options.add_init(parser, "eager: init_process_group(device_id=...), check eager NCCL init "
                             "instead of the lazy init megatron-style launchers get (default lazy)",
                     as_flag="eager")
    parser.add_argument("--nccl-log", metavar="DIR", default="p2paudit-nccl-log",
                        help="NCCL backend: save each rank's NCCL_DEBUG=INFO log here, one file "
                             "per process on its own host (default: ./p2paudit-nccl-log); rank "
                             "0 prints what its log states")
    parser.add_argument("--batch-timeout", type=float, default=60.0,
                        help="give up on a group's test batch after this many seconds (NCCL)")
    options.add_format(parser, ("text", "json"), "text")
    options.add_output(parser)


def run(args: argparse.Namespace) -> int:
    if args.pp < 1:
        raise InputError("--pp", f"must be at least 1, not {args.pp}")
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        return _in_rank(args)
    return _launch(args)


def _in_rank(args: argparse.Namespace) -> int:
    from auditor import doctor

    backend = backends.chosen(args.backend)
    world = int(os.environ["WORLD_SIZE"])
    if world % args.pp:
        raise InputError("--pp", f"{args.pp} does not divide the world size {world}")
    log_dir = _log_dir(args.nccl_log) if backend.runs_nccl else None
    checked = doctor.check_in_rank(backend.name, args.pp, args.eager, log_dir, args.batch_timeout)
    reports = checked.reports
    if checked.rank == 0:
        findings = bool(doctor.not_coalescing(reports) or doctor.disagreements(reports))
        if args.format == "json":
            emit(jsonio.dumps({"ranks": reports, "not_coalescing": doctor.not_coalescing(reports),
                             "disagreements": doctor.disagreements(reports),
                             "nccl_log": checked.nccl_log}, indent=1) + "\n", args.output)
        else:
            emit(doctor.render(reports, checked.nccl_log) + "\n", args.output)
            sys.stdout.flush()
        localranks.report_status(EXIT_FINDINGS if findings else EXIT_OK)
    else:
        for line in doctor.disagreements([reports[0], checked.mine]):
            print(f"p2paudit doctor: {line}", file=sys.stderr, flush=True)
    return EXIT_OK


def _log_dir(text: str) -> Path:
    """The directory NCCL writes this job's logs to (made if new); not a file, not a symlink."""
    path = Path(text).resolve()
    if Path(text).is_symlink() or (path.exists() and not path.is_dir()):
        raise InputError(text, "--nccl-log must be a directory (NCCL writes one file per rank)")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _launch(args: argparse.Namespace) -> int:
    import torch

    backend = backends.chosen(args.backend)
    nproc = args.nproc or (torch.cuda.device_count() if backend.device == "cuda" else 2)
    if nproc < 1:
        raise InputError("--nproc", f"must be at least 1, not {nproc}")
    if backend.device == "cuda" and nproc > torch.cuda.device_count():
        raise InputError("--nproc", f"{nproc} NCCL ranks need {nproc} GPUs; this machine has "
                         f"{torch.cuda.device_count()}")
    if nproc % args.pp:
        raise InputError("--pp", f"{args.pp} does not divide --nproc {nproc}")
    forwarded = ["doctor", "--backend", backend.name, "--pp", str(args.pp), "--batch-timeout",
                 str(args.batch_timeout), "--format", args.format,
                 "--nccl-log", str(Path(args.nccl_log).resolve())] + (["--eager"] if args.eager else []) \
        + (["-o", args.output] if args.output else [])
    code, status = localranks.run_local(nproc, forwarded)
    if code != 0 or status is None:
        print(f"p2paudit doctor: the ranks failed (torchrun exit {code})", file=sys.stderr)
        return EXIT_FINDINGS
    return status
