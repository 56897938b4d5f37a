"""One reader of a trace's recorded init mode (`Trace.init_mode`), and the join replays what it
reads: on recorded gloo runs (lazy), a recorded NCCL run with device_id
(eager), and recorded traces with their groups' `eager` changed the way a mixed run or a
recorder that does not write it would."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from auditor.analysis.join import join
from auditor.dynamic.trace import read_trace_dir

TESTS = Path(__file__).resolve().parents[1]
RECORDED = [TESTS / "record_fixtures" / "pipeline", TESTS / "record_fixtures" / "hang",
            TESTS / "waitfor_cases" / "fallback-2-32mib", TESTS / "waitfor_cases" / "lazy-init-4"]
EMPTY_SCAN = {"sites": [], "targets": [], "findings": [], "config": {}}


def joined_init(trace) -> str:
    return join(EMPTY_SCAN, trace)["run"]["waitfor"]["conditions"]["init"]


def edit_groups(source: Path, target: Path, edit) -> Path:
    """A copy of a recorded trace with `edit(rank, group)` applied to every group it writes."""
    shutil.copytree(source, target)
    for file in target.glob("rank-*.jsonl"):
        rank = int(file.name.split("-")[1].split(".")[0])
        out = []
        for raw in file.read_text(encoding="utf-8").split("\n"):
            if '"eager"' in raw:
                line = json.loads(raw)
                if isinstance(line.get("group"), dict):
                    edit(rank, line["group"])
                raw = json.dumps(line, separators=(",", ":"))
            out.append(raw)
        file.write_text("\n".join(out), encoding="utf-8")
    return target


@pytest.mark.parametrize("directory", RECORDED, ids=lambda p: p.name)
def test_recorded_lazy_runs_read_lazy_everywhere(directory):
    trace = read_trace_dir(directory)
    assert trace.init_mode() == "lazy"
    assert joined_init(trace) == "lazy"


def test_a_recorded_eager_run_reads_eager_everywhere():
    """A real NCCL run with init_process_group(device_id=...) (record_fixtures/eager_nccl)."""
    trace = read_trace_dir(TESTS / "record_fixtures" / "eager_nccl")
    assert trace.init_mode() == "eager"
    assert joined_init(trace) == "eager"


def test_groups_that_disagree_are_unknown_and_the_join_replays_lazy(tmp_path):
    """The join used to call this run eager (any group eager) while the wait-for programs called
    it unknown; now both read unknown, and the join replays the mode where creation can block."""
    trace = read_trace_dir(edit_groups(RECORDED[0], tmp_path / "mixed",
                                             lambda rank, g: g.update(eager=rank == 0)))
    assert trace.init_mode() is None
    assert joined_init(trace) == "lazy"


def test_a_trace_that_does_not_say_is_unknown(tmp_path):
    trace = read_trace_dir(edit_groups(RECORDED[0], tmp_path / "unsaid", lambda rank, g: g.pop("eager")))
    assert trace.init_mode() is None
    assert joined_init(trace) == "lazy"
