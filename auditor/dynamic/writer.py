"""The lines of one process's rank file: numbered (`seq`), timed (`t`, seconds since `mono0`),
written under one lock, the meta line first, and held in memory until the rank is known.

`Recorder` extends it with what the lines say; the copy into the file is `mapped.MappedFile`'s.
"""

from __future__ import annotations

import atexit
import errno
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path
from time import monotonic_ns as _monotonic_ns

from auditor import __version__
from auditor.dynamic import ending, trace
from auditor.dynamic.mapped import MappedFile
from auditor.errors import NO_ROOM
from auditor.dynamic.rankfile import FILE_LIMIT
from auditor.dynamic.opstate import COMPACT, TracedOp


DISK_FULL = "recording stopped: disk full"  # the `off` line's error when the filesystem filled


class TraceWriter:
    """One process's rank file and the lines written to it; the file is created once the rank is
    known (`open`), cut to its lines at exit (`close`), and never written by a forked child."""

    def __init__(self, directory: Path, hang_after: float) -> None:
        self.directory = directory
        self.hang_after = hang_after
        self.on = True
        self.lock = threading.RLock()
        self.rank: int | None = None
        self.rank_json = "null"
        self.path: Path | None = None
        self.file: MappedFile | None = None
        self.pid = os.getpid()
        self.mono0_ns = time.monotonic_ns()
        self.mono0 = self.mono0_ns / 1e9  # the same clock as time.monotonic()
        self.wall0 = time.time()
        self.seq = 0
        self.held: list[str] = []  # lines written before the rank (hence the file) is known
        self.pending: dict[int, TracedOp] = {}  # seq -> op whose start line is written, in seq order
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forked)

    # The hot path takes `lock` once per line it writes, with acquire/release rather than a
    # `with` block (half the cost): methods named `_..._locked` expect it held.

    def _emit(self, body: str, op: TracedOp | None = None) -> None:
        lock = self.lock
        lock.acquire()
        try:
            self._emit_locked(body, op)
        finally:
            lock.release()

    def _emit_locked(self, body: str, op: TracedOp | None = None) -> None:
        # `t` is written as integer microseconds with an exponent (`1234567e-6`: the same JSON
        # number as 1.234567): formatting an int costs half of formatting a float.
        us = (_monotonic_ns() - self.mono0_ns) // 1000
        seq = self.seq = self.seq + 1
        line = f'{{"seq":{seq},"t":{us}e-6,"rank":{self.rank_json},{body}}}\n'
        if op is not None:
            op.seq, op.t, op.line = seq, us * 1e-6, line
            self.pending[seq] = op
        file = self.file
        if file is None:
            self.held.append(line)
            return
        data = line.encode()
        if file.map is not None:  # MappedFile.write's common case, without the call
            try:
                file.map.write(data)
                return
            except ValueError:  # past the map's end: `write` grows it
                pass
        file.write(data)

    def open(self, rank: int) -> None:
        """Create this rank's file; write the meta line and anything held back."""
        with self.lock:
            if self.file is not None:
                return
            self.rank = rank
            self.rank_json = str(rank)
            fd, self.path = trace.rank_file(self.directory, rank, os.getpid())
            self.file = MappedFile(fd)
            atexit.register(self.close)
            atexit.register(ending.at_exit, self)  # runs first: the `exit` line, then close
            torch = sys.modules.get("torch")
            meta = {
                "seq": 0, "t": 0.0, "rank": rank, "api": "process", "phase": "meta",
                "pid": os.getpid(), "host": socket.gethostname(), "argv": list(sys.argv),
                "cwd": _cwd(), **_launch(),
                "python": sys.version.split()[0], "torch": getattr(torch, "__version__", None),
                "recorder": f"p2paudit {__version__}", "hang_after": self.hang_after,
                "mono0": self.mono0, "wall0": self.wall0,
                "world_size": env_int("WORLD_SIZE"),
            }
            self.file.write((json.dumps(meta, separators=COMPACT) + "\n").encode())
            for line in self.held:
                self.file.write(line.replace('"rank":null,', f'"rank":{rank},', 1).encode())
            self.held.clear()

    def close(self) -> None:
        """At exit: the file cut to its lines. Not in a forked child: the file is the parent's."""
        with self.lock:
            if self.file is not None and os.getpid() == self.pid:
                self.file.close()
            self.file = None

    def fail(self, exc: BaseException) -> None:
        """Stop recording in this process, say so once, leave the program be: the trace's
        filesystem is full or the file reached the process's `ulimit -f` (a last `off` line says
        which, in the room `MappedFile` kept for it), or the recorder hit an internal error."""
        if not self.on:
            return
        self.on = False
        where = f" (rank {self.rank})" if self.rank is not None else ""
        if isinstance(exc, OSError) and exc.errno in NO_ROOM:
            limit = exc.errno == errno.EFBIG
            full = "file reached the file size limit (ulimit -f)" if limit else "filesystem is full"
            print(f"p2paudit record: warning: the trace's {full}{where}: recording "
                  f"stopped in this process ({self.path or self.directory} holds what was "
                  f"written); the run goes on", file=sys.stderr, flush=True)
            error, reason = (FILE_LIMIT, "file size limit") if limit else (DISK_FULL, "disk full")
            body = f'"api":"recorder","phase":"off","error":"{error}","reason":"{reason}"'
        else:  # an OSError here is the trace's folder or file, not the recorder (read-only, gone)
            what = "warning: cannot write the trace" if isinstance(exc, OSError) else "internal error"
            print(f"p2paudit record: {what}{where}, recording stopped in this process: "
                  f"{type(exc).__name__}: {exc}; the run goes on", file=sys.stderr, flush=True)
            error = json.dumps(f"{type(exc).__name__}: {exc}")
            body = f'"api":"recorder","phase":"off","error":{error},"reason":"internal error"'
        try:
            self._emit(body)
        except Exception:
            pass

    def _forked(self) -> None:
        # A forked child (a DataLoader worker) is not the rank; it must not write the rank's file.
        self.on = False
        self.lock = threading.RLock()
        self.file = None


def env_int(name: str) -> int | None:
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return None


def _cwd() -> str | None:
    """The process's working directory, which its relative argv is read from (None where it was
    removed): the files the recorded run names are inputs no report may write over
    (dynamic.runinputs)."""
    try:
        return os.getcwd()
    except OSError:
        return None


def _launch() -> dict[str, object]:
    """`record`'s own command (P2PAUDIT_LAUNCH: `bash run.sh`, `torchrun ...`): the ranks' argv
    names the training program, not the script that launched it, yet that script is an input of
    the run no report may write over either. Nothing where the variable is absent or not the
    JSON `record` writes."""
    try:
        launch = json.loads(os.environ["P2PAUDIT_LAUNCH"])
    except (KeyError, ValueError):
        return {}
    argv, cwd = (launch.get("argv"), launch.get("cwd")) if isinstance(launch, dict) else (0, 0)
    if not (isinstance(argv, list) and all(isinstance(w, str) for w in argv)
            and isinstance(cwd, str)):
        return {}
    return {"launch": {"argv": argv, "cwd": cwd}}
