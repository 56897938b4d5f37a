"""The run a command joins with a scan: a `record` trace directory or PyTorch Flight Recorder
dumps, read into one Trace."""

from __future__ import annotations

from typing import Any

from auditor.dynamic import flight_recorder
from auditor.dynamic.trace import Trace, read_trace_dir
from auditor.errors import InputError


def read_run(trace: str | None, dumps: str | None, sites: list[dict[str, Any]]) -> Trace | None:
    """The run to join: a `record` trace or Flight Recorder dumps (never both), or None. `sites`:
    the scan's, which Flight Recorder frames are matched to."""
    if trace and dumps:
        raise InputError("--flight-recorder", "give --trace DIR or --flight-recorder DIR, not both")
    if dumps:
        return flight_recorder.read_flight_recorder(dumps, sites)
    return read_trace_dir(trace) if trace else None
