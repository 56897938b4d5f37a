"""auditor.analysis.uses: what each line of tests/record_fixtures/toy_pipeline.py did in its
recorded clean run (tests/record_fixtures/pipeline: 4 gloo ranks, STEPS steps), found by the
script's `# SITE:` markers: calls per rank, unbatched ops per group, and batch_isend_irecv
counted once per batch on its own line while each op counts on its P2POp line."""

from __future__ import annotations

import re
from pathlib import Path

from auditor.analysis.uses import group_label, read_uses
from auditor.dynamic.trace import read_trace_dir

FIXTURES = Path(__file__).parents[1] / "record_fixtures"
STEPS = int(re.search(r"(?m)^STEPS = (\d+)", (FIXTURES / "toy_pipeline.py").read_text()).group(1))
LINES = {m.group(1): n for n, line in enumerate((FIXTURES / "toy_pipeline.py").read_text().splitlines(), 1)
         if (m := re.search(r"# SITE: (\S+)", line))}


LINES_BY_NUMBER = {n: name for name, n in LINES.items()}


def uses_by_site():
    return {(LINES_BY_NUMBER[key[1]], key[4], key[5]): use
            for key, use in read_uses(read_trace_dir(FIXTURES / "pipeline")).items()}


def test_each_line_fired_where_the_script_runs_it():
    uses = uses_by_site()
    # send forward from every stage but the last, receive on every stage but the first.
    assert uses["send-activation", "send", None].fired == {0: STEPS, 1: STEPS, 2: STEPS}
    assert uses["recv-activation", "recv", None].fired == {1: STEPS, 2: STEPS, 3: STEPS}
    assert uses["tail-isend", "isend", None].fired == {2: 1}
    assert uses["tail-irecv", "irecv", None].fired == {3: 1}
    [(label, group)] = uses["tail-isend", "isend", None].groups.items()
    assert label == "tail" and group["ranks"] == [2, 3]
    # Collectives are not P2P: the all-reduce and barrier lines are not uses.
    assert not {k for k in uses if k[0] in ("all-reduce", "barrier")}


def test_a_batch_counts_once_on_its_line_and_each_op_on_its_p2pop_line():
    uses = uses_by_site()
    batch = uses["batch", "batch_isend_irecv", None]
    assert batch.via_batch and batch.fired == dict.fromkeys(range(4), STEPS)  # once per step and rank
    assert uses["p2pop-isend", "P2POp", "isend"].fired == {0: STEPS, 1: STEPS, 2: STEPS}
    assert uses["p2pop-irecv", "P2POp", "irecv"].fired == {1: STEPS, 2: STEPS, 3: STEPS}
    # gloo issues a batch's ops one by one: each is an unbatched op of the batch's line, on its group.
    assert batch.unbatched == {"pp": {0: STEPS, 1: 2 * STEPS, 2: 2 * STEPS, 3: STEPS}}


def test_group_labels():
    assert group_label({"desc": "pp", "ranks": [0, 1]}) == "pp"
    assert group_label({"ranks": [2, 3]}) == "group[2,3]"
    assert group_label({}) == "unknown group"
