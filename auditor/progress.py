"""Progress a log can show: what p2paudit is doing and how far, one line every few seconds.

A download or a cold parse of three frameworks takes tens of seconds; in a CI log or under
`nohup` a single "downloading ..." line followed by silence looks like a hang. So long steps
print `p2paudit: <what>: <how far>, <seconds> s` on stderr every `P2PAUDIT_PROGRESS_SECONDS`
(default 5), on a terminal and in a log alike, and nothing at all when they finish sooner.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

DEFAULT_SECONDS = 5.0


def interval() -> float:
    try:
        return max(0.01, float(os.environ.get("P2PAUDIT_PROGRESS_SECONDS", DEFAULT_SECONDS)))
    except ValueError:
        return DEFAULT_SECONDS


class Progress:
    """Used as a context manager: a background thread reports while the step runs (a blocking
    download reports too); `advance` counts the units done. The last line says when it ended."""

    def __init__(self, what: str, total: int | None = None, unit: str = "",
                 how_far: Callable[[], str] | None = None, stream: TextIO | None = None) -> None:
        self.what, self.total, self.unit, self.how_far = what, total, unit, how_far
        self.done = 0
        self.stream = stream or sys.stderr
        self.every = interval()
        self.started = time.monotonic()
        self.printed = False
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def advance(self, n: int = 1) -> None:
        self.done += n

    def __enter__(self) -> Progress:
        self._thread = threading.Thread(target=self._tick, name="p2paudit-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.printed:
            self._line("done" if exc[0] is None else "stopped")

    def _tick(self) -> None:
        while not self._stop.wait(self.every):
            self._line(self._how_far())

    def _how_far(self) -> str:
        if self.how_far is not None:
            return self.how_far()
        if self.total:
            return f"{self.done} of {self.total} {self.unit} ({100 * self.done // self.total}%)"
        return f"{self.done} {self.unit}".strip()

    def _line(self, state: str) -> None:
        with self._lock:
            self.printed = True
            seconds = time.monotonic() - self.started
            parts = [p for p in (state, f"{seconds:.0f} s") if p]
            print(f"p2paudit: {self.what}: {', '.join(parts)}", file=self.stream, flush=True)
