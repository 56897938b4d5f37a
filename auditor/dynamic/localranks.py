"""Ranks on this machine: a `p2paudit` command started on N local ranks under torchrun, and the
exit status its rank 0 reports back (torchrun's own status says only whether the ranks ran)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

RESULT_ENV = "P2PAUDIT_DOCTOR_RESULT"  # the file rank 0 writes its exit status to


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_local(nproc: int, argv: list[str]) -> tuple[int, int | None]:
    """`python -m auditor *argv` on `nproc` local ranks: (torchrun's exit status, the status rank
    0 reported with `report_status`, None where it reported none)."""
    with tempfile.TemporaryDirectory(prefix="p2paudit-doctor-") as tmp:
        result = Path(tmp) / "result"
        env = dict(os.environ, **{RESULT_ENV: str(result)})
        package_root = str(Path(__file__).resolve().parent.parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        env.setdefault("OMP_NUM_THREADS", "1")
        command = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}",
                   "--master_addr=127.0.0.1", f"--master_port={free_port()}", "-m", "auditor",
                   *argv]
        done = subprocess.run(command, env=env)
        return done.returncode, int(result.read_text()) if result.exists() else None


def report_status(code: int) -> None:
    """Rank 0 of a `run_local` start: the command's exit status, for the caller."""
    if os.environ.get(RESULT_ENV):
        Path(os.environ[RESULT_ENV]).write_text(str(code))
