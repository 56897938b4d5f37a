"""The wait-for analysis: docs/findings.md §1 and 4 (and 4-stage / 4-rank cases) on recorded traces, and the
model's rules one at a time on small programs."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from auditor.analysis.runreplay import recorded_order
from auditor.analysis.waitfor.model import Conditions, Group, Op
from auditor.analysis.waitfor.prefixes import closed_prefixes
from auditor.analysis.waitfor.programs import programs_from_events
from auditor.analysis.waitfor.replay import analyze
from auditor.analysis.waitfor.transports import TRANSPORT_BUFFER
from auditor.cli import build_parser
from auditor.commands.repro import spec_from_args
from auditor.dynamic.trace import read_trace_dir
from auditor.repro import load_case

CASES_DIR = Path(__file__).parents[2] / "waitfor_cases"
CASES = tomllib.loads((CASES_DIR / "cases.toml").read_text())["case"]


def recorded(name: str) -> dict[int, list[Op]]:
    """The programs the join replays from the recorded trace `name` (no scan: no roles)."""
    return recorded_order(read_trace_dir(CASES_DIR / name), {"sites": []}).programs


def _case_id(case: dict) -> str:
    return f"{case['trace']}-{case['transport']}-{case['init']}-coalesce={case['coalesce']}"


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_recorded_case(case):
    trace = read_trace_dir(CASES_DIR / case["trace"])
    assert trace.init_mode() == "lazy"  # recorded without device_id; `init` below is the question
    programs = recorded(case["trace"])
    conditions = Conditions.for_transport(case["transport"], case["init"], case["coalesce"])
    analysis = analyze(programs, conditions)
    assert analysis.hang == (case["expect"] == "hang"), f"{case['oracle']}\n{analysis.summary()}"
    if "cycle" in case:
        assert case["cycle"] in analysis.cycle, analysis.summary()
    for words in case.get("blocked", []):
        assert any(words in line for line in analysis.blocked), analysis.summary()


def test_every_fixture_is_used_and_is_what_the_reproducer_issues():
    """The recorded op sequences are the repro cases' own programs, so the fixtures stay in step
    with the code that ran on GPUs (re-record with regenerate.py when a case changes)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("regenerate", CASES_DIR / "regenerate.py")
    regenerate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(regenerate)
    assert {c["trace"] for c in CASES} == set(regenerate.RUNS)
    parser = build_parser(only="repro")
    for name, argv in regenerate.RUNS.items():
        args = parser.parse_args(["repro", *argv, "--backend", "gloo"])
        plan = load_case(args.case).plan(spec_from_args(args))
        programs = recorded(name)
        for rank, program in plan.programs.items():
            planned = [(op.api, op.peer, op.nbytes) for op in program]
            got = [(op.api, op.peer, op.nbytes) for op in programs[rank]]
            if name.endswith("-hung"):  # the run stopped where it blocked
                assert got == planned[:len(got)] and len(got) < len(planned), name
            else:
                assert got == planned, f"{name} rank {rank}"


def test_json_form_for_the_report():
    programs = recorded("fallback-2-32mib")
    result = analyze(programs, Conditions.for_transport("net", "lazy", False)).to_json()
    assert result["hang"] is True
    assert result["conditions"] == {"init": "lazy", "coalesce": False,
                                    "buffer_bytes": TRANSPORT_BUFFER["net"], "transport": "net",
                                    "backend": "nccl"}
    rank0 = result["ranks"][0]
    states = [op["state"] for op in rank0["ops"]]
    blocked = states.index("blocked")
    assert states[:blocked] == ["done"] * blocked
    assert states[blocked + 1] == "queued"
    assert set(states[blocked + 2:]) == {"not_issued"}
    edge = rank0["ops"][blocked]["blocked_on"]
    assert edge["rank"] == 1 and edge["reason"] == "match"
    assert result["ranks"][1]["ops"][edge["index"]]["state"] == "queued"
    assert rank0["ops"][blocked]["communicator"] == "default_pg:0-1"


# --- the model's rules, one at a time -------------------------------------------------------------
PAIR = Group((0, 1), "pp")
MiB = 1 << 20


def op(rank, index, api, peer, nbytes=16, **kw):
    return Op(rank, index, api, kw.pop("group", PAIR), peer, nbytes, **kw)


def test_send_within_the_buffer_completes_without_its_receive_running():
    # 12 MiB: the largest send-before-receive measured to complete over the network transport.
    programs = {0: [op(0, 0, "isend", 1, 12 * MiB), op(0, 1, "irecv", 1, 12 * MiB)],
                1: [op(1, 0, "isend", 0, 12 * MiB), op(1, 1, "irecv", 0, 12 * MiB)]}
    assert not analyze(programs, Conditions.for_transport("net")).hang
    bigger = {r: [o.__class__(**{**o.__dict__, "nbytes": 12 * MiB + 1}) for o in p]
              for r, p in programs.items()}
    assert analyze(bigger, Conditions.for_transport("net")).hang


def test_an_op_nobody_matches_hangs_without_a_cycle():
    programs = {0: [op(0, 0, "isend", 1, 64 * MiB)], 1: []}
    analysis = analyze(programs, Conditions.for_transport("net", "eager"))
    assert analysis.hang and analysis.cycle == ""
    assert analysis.ranks[0].ops[0].blocked_on["reason"].startswith("no matching RECV")


def test_a_pair_communicator_the_peer_never_creates():
    """After a collective created the group's communicator, a coalesced send on it and an
    unbatched recv (its own pair communicator under lazy init) never meet."""
    programs = {0: [op(0, 0, "all_reduce", None), op(0, 1, "isend", 1, batch=0)],
                1: [op(1, 0, "all_reduce", None), op(1, 1, "recv", 0)]}
    analysis = analyze(programs, Conditions.for_transport("nvlink", "lazy", True))
    assert analysis.hang and analysis.cycle == ""
    assert analysis.ranks[0].cpu == "finished"  # its 16 B went into the buffer
    assert analysis.ranks[1].cpu == "creating"
    assert "needs rank(s) 0 (which never uses it)" in analysis.ranks[1].words
    assert analysis.ranks[1].blocked_on == [
        {"rank": None, "index": None, "reason": "rank 0 never uses communicator pp:0-1"}]
    eager = analyze(programs, Conditions.for_transport("nvlink", "eager", True))
    assert not eager.hang


def test_waiting_for_an_earlier_op_orders_the_cpu():
    """Rank 1 sends only after its receive completed; rank 0 receives first: no hang. If rank 0
    also waited for its own receive before sending, each waits for the other."""
    ok = {0: [op(0, 0, "isend", 1, 64 * MiB), op(0, 1, "irecv", 1, 64 * MiB)],
          1: [op(1, 0, "irecv", 0, 64 * MiB), op(1, 1, "isend", 0, 64 * MiB, after=(0,))]}
    assert not analyze(ok, Conditions.for_transport("net")).hang
    stuck = {0: [op(0, 0, "irecv", 1, 64 * MiB), op(0, 1, "isend", 1, 64 * MiB, after=(0,))],
             1: [op(1, 0, "irecv", 0, 64 * MiB), op(1, 1, "isend", 0, 64 * MiB, after=(0,))]}
    analysis = analyze(stuck, Conditions.for_transport("net"))
    assert analysis.hang and analysis.ranks[0].cpu == "waiting"
    assert "waits for rank 1 to issue the matching op" in analysis.cycle


def test_events_become_programs_with_waits_and_batches():
    group = {"ranks": [0, 1], "size": 2, "desc": "pp", "eager": False}
    start = {"phase": "start", "kind": "p2p", "group": group, "shape": [2, 3], "dtype": "bfloat16"}
    events = {0: [dict(start, seq=1, api="isend", peer=1, batched=True, batch=7),
                  dict(start, seq=2, api="irecv", peer=1, batched=True, batch=7),
                  {"phase": "end", "seq": 3, "of": 1, "how": "wait"},
                  {"phase": "end", "seq": 4, "of": 2, "how": "dropped"},
                  dict(start, seq=5, api="send", peer=1, batched=False)],
              1: [dict(start, seq=1, api="all_reduce", kind="collective")]}
    programs = programs_from_events(events)
    first, second, third = programs[0]
    assert (first.batch, first.coalesced, first.nbytes) == (7, True, 12)
    assert second.batch == 7 and third.batch is None
    assert third.after == (0,)  # a dropped Work is not a wait
    assert programs[1][0].kind == "collective"


def test_conditions_refuse_unknown_values():
    with pytest.raises(ValueError, match="unknown transport"):
        Conditions.for_transport("infiniband")
    with pytest.raises(ValueError, match="init must be"):
        Conditions.for_transport("net", "sometimes")


def test_groups_sharing_a_description_are_different_communicators():
    """Megatron names every PP group "pp": [0, 2] meeting does not create [1, 3]'s communicator."""
    even, odd = Group((0, 2), "pp"), Group((1, 3), "pp")
    programs = {0: [op(0, 0, "isend", 2, batch=0, group=even)],
                2: [op(2, 0, "irecv", 0, batch=0, group=even)],
                1: [op(1, 0, "isend", 3, batch=0, group=odd)],
                3: []}
    analysis = analyze(programs, Conditions.for_transport("nvlink", "lazy", True))
    assert analysis.hang
    assert [r for r, s in analysis.ranks.items() if s.cpu == "creating"] == [1]
    assert analysis.ranks[1].words.startswith("inside the creation of communicator pp[1,3] ")
    assert "needs rank(s) 3 (which never uses it)" in analysis.ranks[1].words
    assert analysis.ranks[0].ops[0].communicator == "pp[0,2]"


def test_gloo_model_runs_a_batch_op_by_op_without_streams():
    """What gloo did (tests/dynamic/test_record_runs.py records it): both ranks isend then irecv, op by
    op, unbuffered, and it completes, since gloo has no stream to queue the irecv behind the
    isend. NCCL with the same zero buffer (the repro's stream emulation on gloo) deadlocks."""
    programs = {0: [op(0, 0, "isend", 1, batch=1), op(0, 1, "irecv", 1, batch=1),
                    op(0, 2, "send", 1, after=(0, 1))],
                1: [op(1, 0, "isend", 0, batch=1), op(1, 1, "irecv", 0, batch=1),
                    op(1, 2, "recv", 0, after=(0, 1))]}
    gloo = analyze(programs, Conditions.gloo())
    assert not gloo.hang and all(s.cpu == "finished" for s in gloo.ranks.values())
    assert {o.communicator for s in gloo.ranks.values() for o in s.ops} == {"pp"}
    streams = analyze(programs, Conditions("lazy", False, 0, "gloo"))
    assert streams.hang and "a cycle" in streams.cycle
    # A receive nobody sends still waits under gloo.
    alone = analyze({0: [op(0, 0, "recv", 1)], 1: []}, Conditions.gloo())
    assert alone.hang and "no matching SEND" in alone.ranks[0].ops[0].blocked_on["reason"]


def test_the_recorded_gloo_hang_still_hangs_under_gloos_model():
    programs = recorded("fallback-2-4b-hung")
    analysis = analyze(programs, Conditions.gloo())
    assert analysis.hang and "ISEND to 1 (4 B) on default_pg waits for rank 1" in analysis.cycle


def test_closed_prefixes_cut_no_exchange_in_half():
    """A completed 2-rank ping-pong cut at 3 ops per rank: rank 0's third op (a send) is matched
    by rank 1's fourth op; cut blindly, the send looks blocked. The closed cut drops it."""
    ping = {0: [], 1: []}
    for k in range(4):
        ping[0].append(op(0, k, "send" if k % 2 == 0 else "recv", 1, 64 * MiB))
        ping[1].append(op(1, k, "recv" if k % 2 == 0 else "send", 0, 64 * MiB))
    ping[1].insert(0, op(1, 0, "all_reduce", None, group=Group((1,), "self")))
    ping[1] = [Op(**{**o.__dict__, "index": i}) for i, o in enumerate(ping[1])]
    cond = Conditions.for_transport("net", "eager")
    blind = {r: p[:3] for r, p in ping.items()}
    assert analyze(blind, cond).hang
    closed = closed_prefixes(ping, cond, 3)
    assert [len(closed[0]), len(closed[1])] == [2, 3] and not analyze(closed, cond).hang
    # A rank whose whole program is in the cut is not cut: what it lacks is really missing.
    short = {0: ping[0][:3], 1: ping[1][:3]}
    assert analyze(closed_prefixes(short, cond, 3), cond).hang
