"""A rank file cut after it was written (`head -c`, `head -n`, a copy taken mid-write) lacks ops
that happened: its peer's file records receives from it that completed.

Before: rank 1's file of a 2-rank batch_isend_irecv run cut to its first lines (no `off` line,
nothing that says it stopped) read as rank 1 waiting at its last line (HANG), or, cut mid-line,
as rank 1 sending too few (FINDINGS p2p-count-mismatch). Now the file whose sends fall short of
its peer's completed receives is read as a stopped recording: INCONCLUSIVE, incomplete, naming
where it ends. A real hang, where the receives never completed, is still judged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor import cli
from auditor.errors import EXIT_FINDINGS

from .test_recorder_cut import rank_lines

REPLAY = ("wait-for-cycle", "p2p-count-mismatch", "run-stopped-in-op", "rank-file-not-closed")


def exit_line(rank: int, seq: int) -> dict:
    return {"seq": seq, "t": seq / 1000, "rank": rank, "api": "process", "phase": "exit",
            "how": "exit", "status": 0}


def write(root: Path, texts: dict[int, str]) -> Path:
    root.mkdir()
    for rank, text in texts.items():
        (root / f"rank-{rank}.jsonl").write_text(text)
    return root


def whole(rank: int, steps: int) -> str:
    lines = rank_lines(rank, steps)
    lines.append(exit_line(rank, len(lines)))
    return "".join(json.dumps(x) + "\n" for x in lines)


def report(trace: Path, out: Path) -> tuple[int, dict]:
    code = cli.main(["report", "--trace", str(trace), "--format", "json", "-o", str(out)])
    return code, json.loads(out.read_text())


@pytest.mark.parametrize("cut", ["lines", "bytes"])
def test_a_file_cut_after_the_run_is_incomplete(tmp_path: Path, cut: str) -> None:
    rank1 = whole(1, 6)
    text = "".join(rank1.splitlines(keepends=True)[:6]) if cut == "lines" else rank1[:1900]
    code, joined = report(write(tmp_path / "trace", {0: whole(0, 6), 1: text}), tmp_path / "o.json")
    head = joined["verdict"]["headline"]
    assert code == EXIT_FINDINGS and head.startswith("INCONCLUSIVE") and "incomplete" in head, head
    assert "rank 1 at rank-1.jsonl:" in head and "HANG" not in head, head
    assert not [f["kind"] for f in joined["findings"] if f["kind"] in REPLAY], joined["findings"]
    # no recorder error to fix: the whole files give the run (h42: decided by the reason)
    assert "decide it with the rank files whole, copied once the run has ended" in head, head


def test_the_whole_run_stays_clean(tmp_path: Path) -> None:
    code, joined = report(write(tmp_path / "trace", {0: whole(0, 6), 1: whole(1, 6)}),
                          tmp_path / "o.json")
    assert code == 0 and joined["verdict"]["headline"].startswith("CLEAN"), joined["verdict"]


def test_receives_that_never_completed_are_still_a_hang(tmp_path: Path) -> None:
    """Rank 1 stopped sending after 3 steps and hangs in its fourth; rank 0's fourth receive has
    no end (it is waiting): nothing rank 0 completed is missing from rank 1's file."""
    def hung(rank: int) -> str:
        lines = rank_lines(rank, 4)
        keep = lines[:4 + 4 * 3] + [x for x in lines[4 + 4 * 3:] if x["phase"] == "start"]
        return "".join(json.dumps(x) + "\n" for x in keep)
    code, joined = report(write(tmp_path / "trace", {0: hung(0), 1: hung(1)}), tmp_path / "o.json")
    head = joined["verdict"]["headline"]
    assert code == EXIT_FINDINGS and not head.startswith(("CLEAN", "INCONCLUSIVE")), head
    assert "incomplete" not in head, head
