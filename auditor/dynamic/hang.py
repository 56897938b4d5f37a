"""Hang evidence: `hang-rank-N.json`, written when an op has been pending too long or on a signal.

A silently hung rank is usually blocked inside C++ (a communicator being created, a wait), where
Python signal handlers do not run and NCCL's watchdog may have nothing to watch. So the evidence
is written by a thread of our own: it wakes every few seconds to look at the oldest pending op,
and it is woken at once by SIGUSR1/SIGTERM through `signal.set_wakeup_fd` (CPython's C handler
writes the signal number there immediately, whatever the main thread is doing). The file holds the
pending ops with their sites, the last completed op of each group, and every Python thread's
stack. Nothing here depends on NCCL timeouts.

Signals: SIGUSR1 and SIGTERM get a handler only where the program left them at the default (or
has a Python handler, which is then called after ours); SIGUSR1 then means "write the hang file"
instead of "terminate"; SIGTERM still terminates, by the default action, right after the file is
written.
"""

from __future__ import annotations

import ctypes
import json
import linecache
import os
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

from auditor.dynamic import callsite, ending, trace
from auditor.dynamic.recorder import Recorder

SIGNALS = (signal.SIGUSR1, signal.SIGTERM)


class Watchdog:
    def __init__(self, rec: Recorder, before_death: list[Callable[[], None]] | None = None) -> None:
        self.rec = rec
        self.before_death = before_death or []
        self.previous: dict[int, Any] = {}
        self.wakeup: socket.socket | None = None
        self.dumped_for = 0  # seq of the oldest pending op the last automatic dump was about
        self.signal_lock = threading.Lock()
        self.signal_dumps: dict[int, float] = {}
        self.dumps = 0
        self.started = False

    def start(self) -> None:
        """Once per process (a second init_process_group does not start a second thread)."""
        if self.started:
            return
        self.started = True
        self._install_signals()
        threading.Thread(target=self._run, name="p2paudit-watchdog", daemon=True).start()

    # --- the thread ----------------------------------------------------------------------------

    def _run(self) -> None:
        after = self.rec.hang_after
        step = min(max(after / 5, 0.05), 5.0) if after > 0 else None
        while self.rec.on:
            try:
                if self.wakeup is not None:
                    ready, _, _ = select.select([self.wakeup], [], [], step)
                    if ready:
                        for signum in self.wakeup.recv(512):
                            if signum in SIGNALS:
                                self._on_signal(signum, main=False)
                elif step is not None:
                    time.sleep(step)
                else:
                    return
                if after > 0:
                    self._check(after)
            except Exception as exc:
                self.rec.fail(exc)

    def _check(self, after: float) -> None:
        rec = self.rec
        oldest = _oldest(rec)
        if oldest is None or time.monotonic() - rec.mono0 - oldest.t < after:
            return
        rec.poll()  # an op whose Work finished unwaited is not a hang
        oldest = _oldest(rec)
        if oldest is None or oldest.seq == self.dumped_for:
            return
        age = time.monotonic() - rec.mono0 - oldest.t
        if age >= after:
            self.dumped_for = oldest.seq
            self.dump(f"op {oldest.seq} ({oldest.api}) pending for {age:.1f} s "
                      f"(--hang-after {after:g} s)")

    # --- signals -------------------------------------------------------------------------------

    def _install_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # handlers can only be set from the main thread; the timer still works
        for signum in SIGNALS:
            previous = signal.getsignal(signum)
            if previous is None or previous is signal.SIG_IGN:
                continue  # set outside Python, or deliberately ignored: leave it alone
            self.previous[signum] = previous
            signal.signal(signum, self._on_signal_in_main)
        if not self.previous:
            return
        reader, writer = socket.socketpair()
        writer.setblocking(False)
        old = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        if old != -1:  # the program uses the wakeup fd itself (asyncio): give it back
            signal.set_wakeup_fd(old)
            reader.close()
            writer.close()
            return
        self.wakeup = reader
        self._writer = writer  # kept open as long as the process lives

    def _on_signal_in_main(self, signum: int, frame: Any) -> None:
        self._on_signal(signum, main=True, frame=frame)

    def _on_signal(self, signum: int, main: bool, frame: Any = None) -> None:
        """Reached twice per signal when the wakeup fd works (thread first, main thread when it
        next runs Python); the dump is written once, the program's handler is called once."""
        with self.signal_lock:
            now = time.monotonic()
            if now - self.signal_dumps.get(signum, -10.0) > 2.0:
                self.signal_dumps[signum] = now
                self.dump(signal.Signals(signum).name)
        previous = self.previous.get(signum)
        if callable(previous):
            if main:
                previous(signum, frame)
        elif signum == signal.SIGTERM and previous is signal.SIG_DFL:
            self._die(signum, main)

    def _die(self, signum: int, main: bool) -> None:
        """Terminate by the default action, as the program would have without us (no exit
        handler runs then: the `exit` line is written and the trace file cut to its lines here)."""
        ending.on_signal(self.rec, signal.Signals(signum).name)
        for callback in (*self.before_death, self.rec.close):
            try:
                callback()
            except Exception:
                pass
        try:
            if main:
                signal.signal(signum, signal.SIG_DFL)
            else:  # Python only lets the main thread change handlers; libc does not mind
                libc = ctypes.CDLL(None, use_errno=True)
                libc.signal.restype = ctypes.c_void_p
                libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
                libc.signal(signum, None)
            os.kill(os.getpid(), signum)
        finally:
            os._exit(128 + signum)

    # --- the file ------------------------------------------------------------------------------

    def dump(self, reason: str) -> None:
        rec = self.rec
        if rec.rank is None:
            return
        try:
            report = build_report(rec, reason)
            self.dumps += 1
            report["dumps"] = self.dumps
            path = trace.hang_file(rec.directory, rec.rank)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")
            os.replace(tmp, path)
            first = report["pending"][0] if report["pending"] else None
            what = (f"{first['api']} at {_where(first.get('site'))}, pending {first['age_s']:.0f} s"
                    if first else "no op pending")
            print(f"p2paudit record: rank {rec.rank}: {reason}: {what}; wrote {path}",
                  file=sys.stderr, flush=True)
        except Exception as exc:
            rec.fail(exc)


def build_report(rec: Recorder, reason: str) -> dict[str, Any]:
    pending, last, unfinished = rec.snapshot()
    now = time.monotonic() - rec.mono0
    names = {t.ident: t.name for t in threading.enumerate()}
    with rec.lock:
        groups = {g.name: g.json for _, g in rec.groups.values()}

    def read(line: str) -> dict[str, Any]:
        """A trace line with its group's ranks, not just its name."""
        entry = json.loads(line)
        entry.pop("ends", None)  # other ops' ends, which this line happened to carry
        if isinstance(entry.get("group"), str) and entry["group"] in groups:
            entry["group"] = json.loads(groups[entry["group"]])
        return entry

    ops = []
    for op, work in pending:
        entry = read(op.line)
        entry["age_s"] = round(now - op.t, 3)
        entry["thread"] = names.get(op.thread, op.thread)
        if work is None:
            entry["state"] = "inside the call"
        else:
            entry["state"] = "call returned; its Work is not complete"
            try:
                entry["work_completed"] = work.is_completed()
            except Exception as exc:
                entry["work_completed"] = f"{type(exc).__name__}: {exc}"
        ops.append(entry)
    return {
        "rank": rec.rank, "pid": os.getpid(), "host": socket.gethostname(), "reason": reason,
        "t": round(now, 6), "wall": time.time(),
        "pending": ops,
        "last_completed": {name: read(line) for name, line in last.items()},
        "unfinished_after_wait": [read(line) for line in unfinished],
        "threads": thread_stacks(names),
    }


def thread_stacks(names: dict[int | None, str]) -> list[dict[str, Any]]:
    """Every Python thread's stack, outermost frame first, as sites plus the source line; frames
    of this recorder (its pass-through wrappers, the watchdog) carry `recorder: true`."""
    stacks: list[dict[str, Any]] = []
    for ident, top in sys._current_frames().items():
        frames = []
        frame: FrameType | None = top
        while frame is not None:
            site = callsite.frame_site(frame)
            # The recorder's own wrappers only pass calls through; say so, so nobody suspects them.
            site["recorder"] = frame.f_globals.get("__name__", "").startswith("auditor.dynamic")
            site["file"] = frame.f_code.co_filename
            site["text"] = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
            frames.append(site)
            frame = frame.f_back
        frames.reverse()
        stacks.append({"thread": names.get(ident, str(ident)), "ident": ident, "stack": frames})
    return stacks


def _oldest(rec: Recorder) -> Any:
    with rec.lock:
        return next(iter(rec.pending.values()), None)


def _where(site: Any) -> str:
    if not isinstance(site, dict):
        return "?"
    return f"{site.get('path')}:{site.get('line')} ({site.get('function')})"
