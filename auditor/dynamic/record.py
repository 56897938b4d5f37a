"""The launcher: runs a command so that every Python process it starts records itself.

The command (torchrun, `megatron sft`, mpirun, a script) gets PYTHONPATH led by the bootstrap
directory and P2PAUDIT_* variables; nothing in the user's code changes. While it runs, SIGTERM
is passed on to it and SIGUSR1 is passed on to every recording rank of this host (each writes its
hang file). Afterwards: per-process coverage files are combined, and a summary of the trace is
printed, so the user knows at once which ranks wrote what.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from auditor.dynamic import linecov, trace
from auditor.errors import InputError

BOOTSTRAP = Path(__file__).resolve().parent / "bootstrap"


def environment(out: Path, hang_after: float, coverage: list[str] | None,
                base: dict[str, str] | None = None) -> dict[str, str]:
    """The variables a recorded run needs (also what to export on a cluster by hand)."""
    env = dict(os.environ if base is None else base)
    env["P2PAUDIT_TRACE"] = str(out)
    env["P2PAUDIT_HANG_AFTER"] = f"{hang_after:g}"
    if coverage:
        env["P2PAUDIT_COVERAGE"] = ",".join(coverage)
    else:
        env.pop("P2PAUDIT_COVERAGE", None)
    paths = [str(BOOTSTRAP)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def run(command: list[str], out: Path, hang_after: float, coverage: list[str] | None) -> int:
    """Run `command` recorded into `out`; returns its exit status (128+N if killed by signal N)."""
    if not command:
        raise InputError("record", "no command to run: p2paudit record [options] -- COMMAND ...")
    torch_pkgs = [p for p in coverage or () if p == "torch" or p.startswith("torch.")]
    if torch_pkgs:
        # Seen with torch 2.13 and coverage.py 7.17: tracing torch's own files breaks its import.
        raise InputError("--coverage", f"cannot measure torch itself ({torch_pkgs[0]}): "
                                       f"name the packages that call it")
    if hang_after < 0:
        raise InputError("--hang-after", f"must be >= 0 seconds (0 = off), not {hang_after:g}")
    out = out.absolute()
    if out.exists() and not out.is_dir():
        raise InputError(str(out), "exists and is not a directory")
    taken = sorted(p.name for p in out.glob("rank-*.jsonl")) if out.is_dir() else []
    if taken:
        raise InputError(str(out), f"already holds a trace ({taken[0]}, ...); "
                                   f"give another trace directory or remove it")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(str(out), f"cannot make the trace directory: {exc.strerror or exc}") from None
    _check_writable(out)
    print(f"p2paudit record: tracing into {out}", file=sys.stderr, flush=True)
    env = environment(out, hang_after, coverage)
    env["P2PAUDIT_LAUNCH"] = json.dumps({"argv": command, "cwd": os.getcwd()})
    try:
        child = subprocess.Popen(command, env=env)
    except OSError as exc:
        raise InputError(command[0], f"cannot run: {exc.strerror or exc}") from None

    def forward_term(signum: int, frame: object) -> None:
        child.send_signal(signum)

    def dump_ranks(signum: int, frame: object) -> None:
        for pid in _local_rank_pids(out):
            try:
                os.kill(pid, signal.SIGUSR1)
            except OSError:
                pass

    previous = {
        signal.SIGTERM: signal.signal(signal.SIGTERM, forward_term),
        signal.SIGUSR1: signal.signal(signal.SIGUSR1, dump_ranks),
        # Ctrl-C reaches the command through the terminal; do not die before it does.
        signal.SIGINT: signal.signal(signal.SIGINT, signal.SIG_IGN),
    }
    try:
        status = child.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if coverage:
        combined = linecov.combine(out)
        if combined is not None:
            print(f"p2paudit record: coverage of {', '.join(coverage)} in {combined} "
                  f"(contexts rank-N; per process in {out / 'coverage'})", file=sys.stderr)
    code = 128 - status if status < 0 else status
    print(summary(out, code), file=sys.stderr)
    return code


def _check_writable(out: Path) -> None:
    """Refuse before the job starts where no rank could write its file (a read-only folder or
    filesystem, a full disk): each rank would warn and run unrecorded, and the user would learn
    only afterwards that the run they waited for left no trace."""
    probe = out / f".p2paudit-probe-{os.getpid()}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, b"\n")  # a full disk still makes an empty file
        finally:
            os.close(fd)
    except OSError as exc:
        raise InputError(str(out), f"cannot write in the trace directory: "
                                   f"{exc.strerror or exc}; the command was not started") from None
    finally:
        try:
            probe.unlink()
        except OSError:
            pass


def summary(out: Path, status: int = 0) -> str:
    """A few lines a user can paste: per rank, ops recorded, pending at the end, the exception
    a process died of (or the signal that ended it), hang files.
    A command that failed (`status`) before any rank file was written is said to have: a
    launch refused by the framework's own config check is not a recording problem."""
    try:
        t = trace.read_trace_dir(out)
    except InputError as exc:
        if status and not any(out.glob("rank-*.jsonl")):
            return (f"p2paudit record: no rank wrote a trace in {out}: the command exited with "
                    f"status {status} before any process called torch.distributed (its error "
                    "is above)")
        return f"p2paudit record: {exc}"
    lines = [f"p2paudit record: {len(t.ranks)} rank(s) traced in {out}"
             + (f" (world size {t.world_size})" if t.world_size else "")]
    for rank, rt in t.ranks.items():
        p2p = sum(n for u, n in rt.usage.items() if u.kind == "p2p")
        unbatched = sum(n for u, n in rt.usage.items() if u.kind == "p2p" and not u.batched)
        pending = rt.pending()
        line = (f"  rank {rank}: {rt.ops} ops ({p2p} P2P, {unbatched} of them unbatched), "
                f"{len(pending)} pending at the end")
        if rt.crash is not None:
            at = rt.crash.get("at") or {}
            line += f"; died of {rt.crash.get('error')}" + (
                f" at {at.get('path')}:{at.get('line')}" if at.get("path") else "")
        elif (rt.exit or {}).get("how") == "signal":
            line += f"; ended by {rt.exit.get('signal')}"  # type: ignore[union-attr]
        if rt.stopped is not None:
            line += f"; the trace is incomplete: {rt.stopped}"
        if rt.hang is not None:
            line += f"; hang file: {rt.hang.get('reason')}"
        lines.append(line)
    lines += [f"  skipped: {s}" for s in t.skipped]
    return "\n".join(lines)


def _local_rank_pids(out: Path) -> list[int]:
    host = socket.gethostname()
    return [m["pid"] for m in trace.read_meta_lines(out)
            if m.get("host") == host and isinstance(m.get("pid"), int)]
