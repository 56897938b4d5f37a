"""Where each rank of a reproducer is: one small JSON file per rank, rewritten at every change.

A hung rank cannot report anything, so it says what it is about to do before doing it: the
launcher reads these files after killing the run and knows every rank's blocked op. The file is
replaced atomically, so a kill leaves the last complete state.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

ISSUING = "issuing"  # inside the call that hands the op to torch (a lazy creation blocks here)
PENDING = "pending"  # handed over, not completed
DONE = "done"


def state_path(directory: Path, rank: int) -> Path:
    return directory / f"rank-{rank}.state.json"


class ReproProgress:
    """The writer, inside one rank."""

    def __init__(self, directory: Path, rank: int, nops: int) -> None:
        self.path = state_path(directory, rank)
        self.state: dict[str, Any] = {
            "rank": rank, "pid": os.getpid(), "phase": "init", "t_init": time.time(),
            "t_ops": None, "t_done": None, "ops": [None] * nops, "waiting_for": None,
            "coalesced": {}, "wrong_data": [], "error": None}
        self._write()

    def phase(self, name: str) -> None:
        self.state["phase"] = name
        self.state["t_" + name] = time.time()
        self._write()

    def op(self, index: int, state: str) -> None:
        self.state["ops"][index] = {"state": state, "t": time.time()}
        self._write()

    def waiting_for(self, index: int | None) -> None:
        """The op this rank's CPU waits on, or None."""
        if self.state["waiting_for"] != index:
            self.state["waiting_for"] = index
            self._write()

    def coalesced(self, batch: int | str | None, ran: bool) -> None:
        """Whether torch's coalescing manager really ran around this batch."""
        self.state["coalesced"][str(batch)] = ran
        self._write()

    def wrong_data(self, index: int) -> None:
        self.state["wrong_data"].append(index)
        self._write()

    def error(self, exc: BaseException) -> None:
        lines = str(exc).strip().splitlines() or [""]
        self.state["phase"] = "error"
        self.state["t_error"] = time.time()
        self.state["error"] = f"{type(exc).__name__}: {lines[0]}"[:600]
        self._write()

    def _write(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state), encoding="utf-8")
        os.replace(tmp, self.path)


def read_states(directory: Path, nproc: int) -> dict[int, dict[str, Any] | None]:
    """Every rank's last state; None for a rank that never wrote (it died before init)."""
    states: dict[int, dict[str, Any] | None] = {}
    for rank in range(nproc):
        try:
            states[rank] = json.loads(state_path(directory, rank).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            states[rank] = None
    return states
