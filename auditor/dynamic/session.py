"""Start-up of a recorded process: read the P2PAUDIT_* environment and arm the recorder.

Called from `bootstrap/sitecustomize.py` (put on PYTHONPATH by `p2paudit record`) or from the
autostart `.pth` (P2PAUDIT_TRACE alone, where p2paudit is installed). Nothing is written and no
thread is started until the process calls `init_process_group`; a process that never does (the
launcher, a compiler worker) only pays for the wrappers.

Environment: P2PAUDIT_TRACE (directory; required), P2PAUDIT_HANG_AFTER (seconds, default 300,
0 = off), P2PAUDIT_COVERAGE (comma-separated packages to measure; unset = no coverage).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from auditor.dynamic import ending, hang, hooks
from auditor.dynamic.recorder import Recorder

DEFAULT_HANG_AFTER = 300.0
_recorder: Recorder | None = None


def start_from_env() -> Recorder | None:
    """Arm this process once; a bad setting costs one line on stderr, never the program."""
    global _recorder
    directory = os.environ.get("P2PAUDIT_TRACE")
    if _recorder is not None or not directory:
        return _recorder
    try:
        hang_after = float(os.environ.get("P2PAUDIT_HANG_AFTER") or DEFAULT_HANG_AFTER)
        rec = Recorder(Path(directory).absolute(), hang_after)
        before_death = []
        packages = [p for p in os.environ.get("P2PAUDIT_COVERAGE", "").split(",") if p]
        if packages:
            from auditor.dynamic.linecov import LineCoverage

            cov = LineCoverage(rec.directory, packages)
            rec.on_init.append(cov.set_rank)
            before_death.append(cov.save)
        watchdog = hang.Watchdog(rec, before_death)
        rec.on_init.append(lambda rank: watchdog.start())
        hooks.install_on_import(rec)
        ending.install(rec)
    except Exception as exc:
        print(f"p2paudit record: not recording this process ({type(exc).__name__}: {exc})",
              file=sys.stderr, flush=True)
        return None
    _recorder = rec
    return rec
