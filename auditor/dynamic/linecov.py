"""`--coverage`: coverage.py line data of the target packages in every recorded process.

A site reached through a path the hooks do not see (a ProcessGroup method called directly, an op
of a custom build) still shows as an executed line. Each process writes its own data file under
`DIR/coverage/` with the rank as dynamic context (`rank-N`); they combine like any coverage.py
data (`coverage combine`), which the launcher does into `DIR/.coverage` at the end of the run.
"""

from __future__ import annotations

import atexit
import os
from pathlib import Path

# Packages not imported by a process (the launcher, a helper) are not a problem worth a warning.
QUIET = ["module-not-imported", "module-not-measured", "no-data-collected", "couldnt-parse"]


class LineCoverage:
    def __init__(self, directory: Path, packages: list[str]) -> None:
        import coverage

        data_dir = directory / "coverage"
        data_dir.mkdir(parents=True, exist_ok=True)
        self.cov = coverage.Coverage(data_file=str(data_dir / ".coverage"), data_suffix=True,
                                     source_pkgs=packages, config_file=False)
        self.cov.set_option("run:disable_warnings", QUIET)
        self.cov.start()
        self.saved = False
        rank = os.environ.get("RANK")
        if rank is not None:
            self.set_rank(int(rank))
        atexit.register(self.save)

    def set_rank(self, rank: int) -> None:
        self.cov.switch_context(f"rank-{rank}")

    def save(self) -> None:
        if not self.saved:
            self.saved = True
            self.cov.stop()
            self.cov.save()


def combine(directory: Path) -> Path | None:
    """Combine the per-process files into `DIR/.coverage` (kept apart too); None if none."""
    import coverage
    from coverage.exceptions import NoDataError

    parts = directory / "coverage"
    if not parts.is_dir() or not any(parts.glob(".coverage.*")):
        return None
    target = directory / ".coverage"
    cov = coverage.Coverage(data_file=str(target), config_file=False)
    try:
        cov.combine([str(parts)], keep=True)
    except NoDataError:
        return None
    cov.save()
    return target
