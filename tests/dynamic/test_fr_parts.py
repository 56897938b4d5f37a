"""A Flight Recorder dump's groups and entries on their own (auditor.dynamic.frgroups,
auditor.dynamic.frevents); the dumps as a whole are tests/dynamic/test_flight_recorder.py's."""

from __future__ import annotations

from pathlib import Path

from auditor.dynamic.frdump import Dump
from auditor.dynamic.frevents import rank_events
from auditor.dynamic.frgroups import DumpGroup, groups_of


def entry(record: int, name: str, pg: tuple[str, str], state: str = "completed", **more) -> dict:
    return {"record_id": record, "profiling_name": name, "process_group": list(pg),
            "state": state, "retired": state == "completed", "p2p_seq_id": record,
            "collective_seq_id": 0, "op_id": record + 1, "time_created_ns": 1000 + record,
            "time_discovered_completed_ns": 2000 + record if state == "completed" else None,
            "input_sizes": [[4, 2]], "input_dtypes": ["Float"],
            "output_sizes": [[4, 2]], "output_dtypes": ["Float"], **more}


def test_without_pg_config_the_default_group_is_every_dumped_rank_and_that_is_said():
    """gloo writes no pg_config (tests/fr_dumps/README.md): the members are inferred."""
    dumps = [Dump(r, Path(f"rank{r}"), "2.10", [entry(0, "gloo:all_reduce", ("0", "default_pg"))])
             for r in (0, 1, 2)]
    notes: list[str] = []
    groups = groups_of(dumps, notes)
    assert groups[(1, "0")] == DumpGroup("0", "default_pg", (0, 1, 2), known=False)
    assert notes == ["group 0 (default_pg): no pg_config entry (gloo writes none); its members "
                     "are taken as every dumped rank: 0, 1, 2"]


def test_a_send_names_its_peer_in_group_ranks_and_only_a_completed_op_ends():
    """`nccl:send 0->1` on a group of global ranks (2, 5): the peer is global rank 5."""
    pg = {"1": {"name": "1", "desc": "pp", "ranks": "[2, 5]"}}
    dump = Dump(2, Path("rank2"), "2.10", [entry(0, "nccl:send 0->1", ("1", "pp")),
                                            entry(1, "nccl:recv 0<-1", ("1", "pp"), "started")], pg)
    notes: list[str] = []
    events = rank_events(dump, groups_of([dump], notes), 1000, notes, {})
    starts = [e for e in events if e["phase"] == "start"]
    assert [(e["api"], e["peer"], e["bytes"], e["dtype"], e["group"]["ranks"]) for e in starts] \
        == [("send", 5, 32, "float32", [2, 5]), ("recv", 5, 32, "float32", [2, 5])]
    assert [e["of"] for e in events if e["phase"] == "end"] == [1]
    assert notes == []
