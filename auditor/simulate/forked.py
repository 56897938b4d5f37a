"""The ranks of a simulation as forked processes, each recorded: what megatron-core's schedule
(simulate/rank.py) and torch's pipelining schedules (simulate/pipelining_rank.py) share once
their framework is imported in the parent."""

from __future__ import annotations

import os
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Any

from auditor.dynamic import session


def run_forked(spec: dict[str, Any], run_rank: Callable[[dict[str, Any], int], None]) -> int:
    """Fork one process per rank of `spec["pipeline_size"]`, each recording (`record_env`) while
    it runs `run_rank`; the exit status is the first failing rank's, 128+N for a rank killed by
    signal N (the others are stopped then: they would wait for it in gloo), else 0."""
    children = []
    for rank in range(spec["pipeline_size"]):
        pid = os.fork()
        if pid == 0:
            status = 0
            recorder = None
            try:
                os.environ.update(spec["record_env"])
                recorder = session.start_from_env()
                run_rank(spec, rank)
            except BaseException:  # noqa: BLE001  (the child must never return into the parent's loop)
                traceback.print_exc()
                status = 1
            if recorder is not None:  # os._exit runs no atexit: close the rank file as exit does
                recorder.close()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)
        children.append(pid)
    running = set(children)
    while running:
        pid, status = os.wait()
        running.discard(pid)
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            for other in running:
                os.kill(other, signal.SIGKILL)
            if code < 0:
                print(f"rank {children.index(pid)}: killed by {signal.Signals(-code).name}",
                      file=sys.stderr, flush=True)
                return 128 - code
            return code
    return 0
