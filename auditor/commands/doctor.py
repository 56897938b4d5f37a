"""`p2paudit doctor`: what this cluster's torch/NCCL will really do with pipeline P2P.

Run it where the job runs, with the job's environment: `torchrun --nproc_per_node 8 --nnodes 16
... -m auditor doctor --pp 4` (every rank checks, rank 0 prints; ranks exit 0 once the checks
ran). Outside torchrun it starts `--nproc` local ranks itself and exits 1 when a group will not
coalesce batches or ranks disagree, 0 otherwise.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from auditor import jsonio
from auditor.commands import options
from auditor.commands.output import emit
from auditor.errors import EXIT_FINDINGS, EXIT_OK, InputError

RESULT_ENV = "P2PAUDIT_DOCTOR_RESULT"


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
    import torch
    import torch.distributed as dist

    from auditor import doctor

    backend = args.backend or ("nccl" if torch.cuda.is_available() else "gloo")
    world = int(os.environ["WORLD_SIZE"])
    if world % args.pp:
        raise InputError("--pp", f"{args.pp} does not divide the world size {world}")
    device = torch.device("cpu")
    kwargs: dict[str, Any] = {"backend": backend}
    if backend == "nccl":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        torch.cuda.set_device(device)
        if args.eager:
            kwargs["device_id"] = device
    job_env = doctor.environment()
    log_dir = _log_dir(args.nccl_log) if backend == "nccl" else None
    if log_dir is not None:  # before NCCL's first call: it reads NCCL_DEBUG once
        os.environ.update(doctor.nccl_debug_env(log_dir))
    dist.init_process_group(**kwargs)
    groups = doctor.pipeline_groups(args.pp)
    gather = dist.new_group(backend="gloo")  # for the reports: creates no NCCL communicator
    mine = doctor.collect(groups, device, args.batch_timeout, job_env).to_json()
    reports = doctor.gather_json(mine, gather)
    if dist.get_rank() == 0:
        nccl_log = (doctor.nccl_log_lines(sorted(log_dir.glob(f"nccl.*.{os.getpid()}.log")))
                    if log_dir is not None else
                    [f"NCCL log: none: the {backend} backend runs no NCCL (doctor --backend nccl "
                     f"on the job's GPUs writes one)"])
        findings = bool(doctor.not_coalescing(reports) or doctor.disagreements(reports))
        if args.format == "json":
            emit(jsonio.dumps({"ranks": reports, "not_coalescing": doctor.not_coalescing(reports),
                             "disagreements": doctor.disagreements(reports),
                             "nccl_log": nccl_log}, indent=1) + "\n", args.output)
        else:
            emit(doctor.render(reports, nccl_log) + "\n", args.output)
            sys.stdout.flush()
        if os.environ.get(RESULT_ENV):
            Path(os.environ[RESULT_ENV]).write_text(str(EXIT_FINDINGS if findings else EXIT_OK))
    else:
        for line in doctor.disagreements([reports[0], mine]):
            print(f"p2paudit doctor: {line}", file=sys.stderr, flush=True)
    dist.destroy_process_group()
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

    from auditor.repro.launch import free_port

    backend = args.backend or ("nccl" if torch.cuda.is_available() else "gloo")
    nproc = args.nproc or (torch.cuda.device_count() if backend == "nccl" else 2)
    if nproc < 1:
        raise InputError("--nproc", f"must be at least 1, not {nproc}")
    if backend == "nccl" and nproc > torch.cuda.device_count():
        raise InputError("--nproc", f"{nproc} NCCL ranks need {nproc} GPUs; this machine has "
                         f"{torch.cuda.device_count()}")
    if nproc % args.pp:
        raise InputError("--pp", f"{args.pp} does not divide --nproc {nproc}")
    forwarded = ["doctor", "--backend", backend, "--pp", str(args.pp), "--batch-timeout",
                 str(args.batch_timeout), "--format", args.format,
                 "--nccl-log", str(Path(args.nccl_log).resolve())] + (["--eager"] if args.eager else []) \
        + (["-o", args.output] if args.output else [])
    with tempfile.TemporaryDirectory(prefix="p2paudit-doctor-") as tmp:
        result = Path(tmp) / "result"
        env = dict(os.environ, **{RESULT_ENV: str(result)})
        package_root = str(Path(__file__).resolve().parent.parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        env.setdefault("OMP_NUM_THREADS", "1")
        command = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}",
                   "--master_addr=127.0.0.1", f"--master_port={free_port()}", "-m", "auditor",
                   *forwarded]
        done = subprocess.run(command, env=env)
        if done.returncode != 0 or not result.exists():
            print(f"p2paudit doctor: the ranks failed (torchrun exit {done.returncode})",
                  file=sys.stderr)
            return EXIT_FINDINGS
        return int(result.read_text())
