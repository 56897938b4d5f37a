"""How a recorded process ended, written as its last lines: a crash must not read as a hang.

A process that dies of a Python exception leaves its in-flight ops without end lines, exactly as
a rank blocked in an op does; only a line saying how it ended tells the two apart. So:
- `phase: "exception"`: an uncaught exception (`sys.excepthook`; a thread's through
  `threading.excepthook`, `main` false: the process goes on), with its type, message and the
  innermost frame outside torch and this recorder (`at`: the line a user can act on; `raised`,
  where the exception was raised outside this recorder, when that is another frame; `chain`, the
  exceptions it was raised from or while handling: an error raised after the program caught a
  lost connection is its own only where no link of its chain is that loss);
- `phase: "exit"`: the process ends, at exit (`atexit`): `how` "exception" (status 1), "exit"
  (`status` where `sys.exit` said it, else null: a return from the main module or a bare
  `raise SystemExit` is not visible to an exit handler), or "signal" (written by hang.Watchdog
  before it lets SIGTERM terminate the process; SIGINT for a KeyboardInterrupt, which writes no
  `exception` line: a user's Ctrl-C on a hung job leaves it a hang).
A process killed outright (SIGKILL, an OOM kill, `os._exit`) writes neither: the reader keeps
its pending ops as pending.

The program's own hooks are chained (called after ours, whatever ours did), nothing here raises
into the program, and the exit never waits on the recorder: its lock is taken with a timeout.
"""

from __future__ import annotations

import json
import sys
import threading
from types import FrameType, TracebackType
from typing import Any

from auditor.dynamic import callsite

LOCK_WAIT = 1.0  # seconds an ending line waits for the recorder's lock before it is skipped
ERROR_LIMIT = 500  # characters of an exception's message kept
CHAIN_LIMIT = 8  # links of an exception's chain (`__cause__`, else `__context__`) kept



def _state(rec: Any) -> dict[str, Any]:
    """What this process's ending has shown so far, kept on its recorder."""
    state = rec.__dict__.get("_ending")
    if state is None:
        state = rec._ending = {"status": None, "crashed": False, "exited": False}
    return state


def install(rec: Any) -> None:
    """Chain sys.excepthook and threading.excepthook, and note sys.exit's status; once."""
    if "_ending" in rec.__dict__:
        return
    state = _state(rec)
    previous_sys = sys.excepthook
    previous_thread = threading.excepthook
    previous_exit = sys.exit

    def excepthook(kind: type[BaseException], value: BaseException,
                   tb: TracebackType | None) -> Any:
        try:
            if isinstance(kind, type) and issubclass(kind, KeyboardInterrupt):
                state["interrupted"] = True  # Ctrl-C, often on a hung job: not a crash
            else:
                if threading.current_thread() is threading.main_thread():
                    state["crashed"] = True
                _write_exception(rec, kind, value, tb, threading.current_thread())
        except BaseException:
            pass
        return previous_sys(kind, value, tb)

    def thread_excepthook(args: Any) -> Any:
        try:
            if args.exc_type is not SystemExit:
                _write_exception(rec, args.exc_type, args.exc_value, args.exc_traceback,
                                 args.thread)
        except BaseException:
            pass
        return previous_thread(args)

    def exit(status: Any = None) -> None:  # noqa: A001 - sys.exit's own name
        try:
            if threading.current_thread() is threading.main_thread():
                state["status"] = status_of(status)
        except BaseException:
            pass
        previous_exit(status)

    sys.excepthook = excepthook
    threading.excepthook = thread_excepthook
    sys.exit = exit  # type: ignore[assignment]


def status_of(code: object) -> int:
    """The exit status SystemExit(code) gives: None 0, an int itself, anything else 1."""
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


def at_exit(rec: Any) -> None:
    """The `exit` line (registered to run before the file is closed)."""
    state = _state(rec)
    if state.get("interrupted"):
        _write_exit(rec, '"how":"signal","signal":"SIGINT"')
    elif state["crashed"]:
        _write_exit(rec, '"how":"exception","status":1')
    else:
        status = state["status"]
        _write_exit(rec, f'"how":"exit","status":{"null" if status is None else int(status)}')


def on_signal(rec: Any, name: str) -> None:
    """The `exit` line of a process a signal is about to terminate."""
    _write_exit(rec, f'"how":"signal","signal":{json.dumps(name)}')


def _write_exit(rec: Any, fields: str) -> None:
    try:
        state = _state(rec)
        if state["exited"]:
            return
        state["exited"] = True
        _emit(rec, f'"api":"process","phase":"exit",{fields}')
    except BaseException:
        pass


def _write_exception(rec: Any, kind: type[BaseException], value: BaseException | None,
                     tb: TracebackType | None, thread: threading.Thread | None) -> None:
    if not rec.on:
        return
    try:
        text = str(value)
    except BaseException:
        text = "<the exception's str() raised>"
    name = getattr(kind, "__name__", "?")
    error = (f"{name}: {text}" if text else name)[:ERROR_LIMIT]
    body = {"api": "process", "phase": "exception", "error": error, "type": name,
            "thread": getattr(thread, "name", None),
            "main": thread is threading.main_thread()}
    body["chain"] = _chain(value)
    at, raised = _frames(tb)
    if at is not None:
        body["at"] = at
    if raised is not None and raised != at:
        body["raised"] = raised
    _emit(rec, json.dumps(body, separators=(",", ":"))[1:-1])


def _chain(value: BaseException | None) -> list[dict[str, str]]:
    """The exceptions `value` was raised from (`__cause__`) or while handling (`__context__`,
    even where `from None` hides it: it still happened first), innermost last, each as its type
    and `Type: message`, bounded."""
    out: list[dict[str, str]] = []
    seen = {id(value)}
    link = _next(value)
    while link is not None and id(link) not in seen and len(out) < CHAIN_LIMIT:
        seen.add(id(link))
        name = type(link).__name__
        try:
            text = str(link)
        except BaseException:
            text = "<the exception's str() raised>"
        out.append({"type": name, "error": (f"{name}: {text}" if text else name)[:ERROR_LIMIT]})
        link = _next(link)
    return out


def _next(value: BaseException | None) -> BaseException | None:
    if value is None:
        return None
    return value.__cause__ if value.__cause__ is not None else value.__context__


def _frames(tb: TracebackType | None) -> tuple[dict[str, object] | None, dict[str, object] | None]:
    """(the innermost frame outside torch and this recorder, the innermost frame outside this
    recorder) as sites: an op's exception passes through the recorder's wrapper of the call
    (hooks.py's `wait`), whose frame is no line of the program."""
    frames: list[tuple[FrameType, int]] = []
    while tb is not None:
        frames.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    if not frames:
        return None, None

    def site(frame: FrameType, line: int) -> dict[str, object]:
        described = callsite.frame_site(frame)
        return {"path": described["path"], "line": line, "function": described["function"]}

    def module(frame: FrameType) -> str:
        return frame.f_globals.get("__name__") or ""

    theirs = [f for f in frames if not callsite.in_module(module(f[0]), callsite.RECORDER)]
    inner = site(*(theirs or frames)[-1])
    for frame, line in reversed(theirs):
        if not callsite.in_module(module(frame), *callsite.SKIPPED):
            return site(frame, line), inner
    return inner, inner


def _emit(rec: Any, body: str) -> None:
    """Write a line without ever waiting long: a thread holding the lock forever (stuck
    mid-write) costs this line, not the process's exit."""
    if not rec.on:
        return
    lock = rec.lock
    if not lock.acquire(timeout=LOCK_WAIT):
        return
    try:
        rec._emit_locked(body)
    except Exception:
        pass
    finally:
        lock.release()
