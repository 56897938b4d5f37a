"""PP-BugBench's `may hang` verdict (benchmarks/ppbugs.py): a bug whose order can deadlock and
whose size lies inside the stated transport's open range (rules/nccl.toml: above what is seen to
complete, below what hangs on every host) is expected as `may hang`, never as a `hang` the
transport alone cannot decide (benchmarks/ppbugs/cases/torchrec-4472/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.benchmark_module import load_benchmark

bench = load_benchmark("ppbugs.py")

SIDE = {"name": "separate-64mib", "runner": "record", "command": ["driver.py"], "transport": "nvlink",
        "expected": "may hang", "reason_lines": ["driver.py:25"]}


def document(tmp_path: Path, kind: str, where: str) -> Path:
    out = tmp_path / "doc.json"
    out.write_text(json.dumps({"findings": [{"kind": kind, "severity": "warning", "where": where,
                                             "message": f"the order can deadlock at {where}"}]}))
    return out


def test_a_may_hang_side_is_a_bug_and_right_when_the_can_hang_replay_names_its_line(tmp_path):
    assert bench.side_problem(SIDE) is None
    hit = bench.judge("torchrec-4472", SIDE, 0, document(tmp_path, "replay-can-hang", "driver.py:25"), "")
    assert (hit.got, hit.flagged, hit.right) == ("may hang", True, True)
    score = bench.scores([hit])
    assert (score["bug_sides"], score["recall"], score["right_reason"]) == (1, 1.0, 1.0)


def test_a_may_hang_side_read_as_will_hang_is_the_other_verdict(tmp_path):
    other = bench.judge("torchrec-4472", SIDE, 0, document(tmp_path, "replay-would-hang", "driver.py:25"), "")
    assert (other.got, other.flagged, other.right) == ("hang", True, False)
