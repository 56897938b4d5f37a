"""The join of a scan with a recorded run: on the traces the recorder wrote from a real 4-rank
gloo run (tests/record_fixtures), and on synthetic 128-rank traces of megatron-core 0.17.0's
pipeline exchanges placed at the real sites of the real wheel, as the recorder writes them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from collections.abc import Iterable
from typing import Any

import pytest

from auditor import sources
from auditor.analysis.join import join
from auditor.dynamic.trace import read_trace_dir
from auditor.report import document
from auditor.report.text import deadlock_lines
from auditor.scan import ScanInputs, run_scan
from auditor.static.inventory import inventory

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "record_fixtures"
TOY = FIXTURES / "toy_pipeline.py"
SEED = ROOT / "examples" / "glm5_1_lora_pp4.sh"
P2P = "megatron/core/pipeline_parallel/p2p_communication.py"


# --- the recorded toy pipeline -------------------------------------------------------------------
def toy_lines() -> dict[str, int]:
    """`# SITE: name` tags of the toy script -> line numbers."""
    out = {}
    for number, text in enumerate(TOY.read_text().splitlines(), 1):
        m = re.search(r"# SITE: (\S+)", text)
        if m:
            out[m.group(1)] = number
    return out


def toy_expected_calls(world: int = 4, steps: int = 2) -> dict[str, dict[int, int]]:
    """Calls per tag and rank, from what toy_pipeline.py does (not from the trace)."""
    has_prev = [r for r in range(world) if r > 0]
    has_next = [r for r in range(world) if r < world - 1]
    per_step = {
        "p2pop-isend": has_next, "p2pop-irecv": has_prev, "batch": list(range(world)),
        "recv-activation": has_prev, "send-activation": has_next,
        "irecv-grad": has_next, "isend-grad": has_prev,
    }
    out = {tag: dict.fromkeys(ranks, steps) for tag, ranks in per_step.items()}
    out["tail-isend"] = {2: 1}
    out["tail-irecv"] = {3: 1}
    return out


@pytest.fixture(scope="module")
def toy_doc() -> dict[str, Any]:
    src = sources.resolve(str(TOY))
    inv = inventory(src, jobs=0)
    return document.build([src], [s.to_json() for s in inv.sites], [inv.analysis])


def test_recorded_pipeline_fires_per_rank_and_static_misses(toy_doc):
    joined = join(toy_doc, read_trace_dir(FIXTURES / "pipeline"))
    lines, expected = toy_lines(), toy_expected_calls()
    by_line = {s["line"]: s for s in joined["sites"]}
    missed = {m["line"]: m for m in joined["run"]["misses"]}
    for tag, calls in expected.items():
        want = {str(r): n for r, n in sorted(calls.items())}
        line = lines[tag]
        if line in by_line:
            assert by_line[line]["fired"] == want, tag
        else:  # a P2P line the inventory has no site for: a static miss, shown first
            assert missed[line]["in_targets"] and missed[line]["fired"] == want, tag
    assert set(missed) == {lines[t] for t in expected} - set(by_line)
    # Every site the inventory has is a tagged P2P line of the script (the all_reduce is not).
    assert set(by_line) <= set(lines.values())
    assert joined["run"]["matched"] == {"line": sum(1 for s in by_line.values() if s["fired"])}
    if missed:
        first = next(f for f in joined["findings"] if f["kind"] == "static-miss")
        assert f"toy_pipeline.py:{min(missed, key=lambda n: (-missed[n]['calls'], n))}" in first["message"]
    # Ranks 2 and 3 also talk over the 2-rank 'tail' group: two communicators for one pair.
    assert joined["run"]["pairs"] == [{"ranks": [2, 3], "communicators": {
        "pp:2-3": ["unbatched op on pp"], "tail:2-3": ["unbatched op on tail"]}}]
    assert any(f["kind"] == "pair-on-two-communicators" for f in joined["findings"])
    assert joined["run"]["waitfor"]["hang"] is False


def test_unbatched_batch_on_gloo_contradicts_batch_p2p_comm(toy_doc):
    doc = dict(toy_doc, config={"effective": {"batch_p2p_comm": True}})
    joined = join(doc, read_trace_dir(FIXTURES / "pipeline"))
    batch_line = toy_lines()["batch"]
    found = [f for f in joined["findings"] if f["kind"] == "unbatched-run"
             and f["where"] == f"toy_pipeline.py:{batch_line}"]
    assert len(found) == 1, [f["where"] for f in joined["findings"]]
    f = found[0]
    # gloo never coalesces: every batch_isend_irecv ran its isend/irecv one by one, on 4 ranks.
    assert "issued its ops one by one" in f["message"]
    assert f["detail"]["group"] == {"label": "pp", "size": 4, "ranks": [0, 1, 2, 3]}
    assert f["detail"]["ranks"] == [0, 1, 2, 3]
    assert f["detail"]["ops"] == 3 * 2 + 3 * 2  # isend on ranks 0-2, irecv on 1-3, two steps
    assert "(size 4)" in f["message"] and "(ranks 0-3)" in f["message"]


def test_recorded_hang_shows_where_each_rank_stopped(toy_doc):
    joined = join(toy_doc, read_trace_dir(FIXTURES / "hang"))
    run = joined["run"]
    assert sorted(run["trace"]["pending"]) == ["1", "2", "3"]
    assert run["trace"]["hang_files"] == [0, 1, 2, 3]
    stopped = next(f for f in joined["findings"] if f["kind"] == "run-stopped-in-op")
    assert "ranks 1-3" in stopped["message"]
    lanes = {lane["rank"]: lane for lane in run["timeline"]["ranks"]}
    recv = toy_lines()["recv-activation"]
    for rank in (1, 2, 3):
        last = lanes[rank]["events"][-1]
        assert last["recorded"] == "pending" and last["where"].startswith(f"toy_pipeline.py:{recv} ")
        # Rank 0 slept before its send: the wait-for model leaves each receive blocked too.
        assert last["model"] == "blocked" and last["peer"] == rank - 1 and last["blocked_on"]


def test_a_missing_rank_file_is_no_completed_run(toy_doc, tmp_path):
    """The recorded toy pipeline completed on every rank; without rank 3's file the run cannot
    be called completed (the missing rank may be the one stuck), so a replay's cycle is an error,
    not a warning on a finished run."""
    import shutil

    assert join(toy_doc, read_trace_dir(FIXTURES / "pipeline"))["run"]["waitfor"]["run_completed"] is True
    shutil.copytree(FIXTURES / "pipeline", tmp_path / "trace")
    (tmp_path / "trace" / "rank-3.jsonl").unlink()
    assert join(toy_doc, read_trace_dir(tmp_path / "trace"))["run"]["waitfor"]["run_completed"] is False


# --- synthetic megatron-core pipeline traces -----------------------------------------------------
def site_of(sites: list[dict[str, Any]], function: str, api: str, ordinal: int) -> dict[str, Any]:
    return next(s for s in sites if s["path"] == P2P and s["function"] == function
                and s["id"].endswith(f":{api}:{ordinal}"))


def write_trace(root: Path, programs: dict[int, Iterable[dict[str, Any]]], world: int,
                pending: dict[int, int] | None = None) -> None:
    """Rank files as the recorder writes them: a meta line, then per op (a group line before the
    first op on each group, which later lines name) a start line and, unless the op is the
    rank's `pending` index, an end line right after it. One rank's lines in memory at a time."""
    root.mkdir(parents=True, exist_ok=True)
    for rank, ops in programs.items():
        lines = [{"seq": 0, "t": 0.0, "rank": rank, "api": "process", "phase": "meta",
                  "torch": "2.10.0", "recorder": "p2paudit test", "world_size": world}]
        declared: set[str] = set()
        for k, op in enumerate(ops):
            start = {"t": 1.0 + k, "rank": rank, "phase": "start", **op}
            if isinstance(op.get("group"), dict):  # setup calls have none
                name = start["group"] = op["group"]["name"]
                if name not in declared:
                    declared.add(name)
                    lines.append({"seq": len(lines), "t": 1.0 + k, "rank": rank, "api": "group",
                                  "phase": "group", "group": op["group"]})
            seq = len(lines)
            lines.append({"seq": seq, **start})
            if pending is None or pending.get(rank) != k:
                lines.append({"seq": seq + 1, "t": 1.5 + k, "rank": rank, "api": op["api"],
                              "phase": "end", "of": seq, "how": "wait"})
            else:
                break
        (root / f"rank-{rank}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def group(ranks: list[int], desc: str, name: str) -> dict[str, Any]:
    return {"ranks": ranks, "size": len(ranks), "desc": desc, "name": name, "backend": "nccl",
            "eager": False}


def megatron_programs(sites: list[dict[str, Any]], world: int = 128, pp: int = 4,
                      microbatches: int = 4, coalesced: bool = False
                      ) -> dict[int, list[dict[str, Any]]]:
    """Each rank's P2P ops in a GPipe-like order through megatron-core's batched paths: per
    exchange, shapes in one batch_isend_irecv on the PP group (P2PCommunicator._communicate_shapes)
    then the activation in one on the default group (_batched_p2p_ops under ms-swift's
    group=None patch). `coalesced=False`: torch ran each batch op by op (DETAIL on 2.10)."""
    stride = world // pp
    default = group(list(range(world)), "default_pg", "0")
    programs: dict[int, list[dict[str, Any]]] = {}
    for rank in range(world):
        stage, column = divmod(rank, stride)
        pp_group = group([column + i * stride for i in range(pp)], "pp", f"pp{column}")
        ops: list[dict[str, Any]] = []
        batch = 0
        comms: set[tuple] = set()

        def exchange(direction: str, peer_stage: int) -> None:
            nonlocal batch
            peer = column + peer_stage * stride
            send = direction.startswith("send")
            ordinal = {"send_prev": 0, "recv_prev": 1, "send_next": 2, "recv_next": 3}[direction]
            for function, g, shape, dtype in (
                    ("P2PCommunicator._communicate_shapes", pp_group, [3], "int64"),
                    ("_batched_p2p_ops", default, [8192, 1, 1536], "bfloat16")):
                batch += 1
                op_site, call = site_of(sites, function, "P2POp", ordinal), \
                    site_of(sites, function, "batch_isend_irecv", 0)
                key = (g["name"],) if coalesced else (g["name"], min(rank, peer), max(rank, peer))
                op = {"api": "isend" if send else "irecv", "kind": "p2p", "batched": coalesced,
                      "peer": peer, "group": g, "shape": shape, "dtype": dtype,
                      "via": "batch_isend_irecv", "batch": batch,
                      "site": {k: call[k] for k in ("path", "line", "end_line", "function")},
                      "op_site": {k: op_site[k] for k in ("path", "line", "end_line", "function")}}
                if key not in comms:
                    comms.add(key)
                    op["comm_init"] = {"kind": "group" if coalesced else "pair", "key": "x"}
                ops.append(op)

        for _ in range(microbatches):
            if stage > 0:
                exchange("recv_prev", stage - 1)
            if stage < pp - 1:
                exchange("send_next", stage + 1)
        for _ in range(microbatches):
            if stage < pp - 1:
                exchange("recv_next", stage + 1)
            if stage > 0:
                exchange("send_prev", stage - 1)
        programs[rank] = ops
    return programs


@pytest.fixture(scope="module")
def seed_scan(real_sources) -> dict[str, Any]:
    return run_scan(ScanInputs(str(SEED), torch_version="2.10.0"))


def test_synthetic_128_ranks_on_the_seed_scan(seed_scan, tmp_path):
    write_trace(tmp_path, megatron_programs(seed_scan["sites"]), world=128)
    joined = join(seed_scan, read_trace_dir(tmp_path))
    run = joined["run"]
    assert run["trace"]["ranks"] == 128 and not run["misses"]
    by_id = {s["id"]: s for s in joined["sites"]}
    shapes = by_id[site_of(seed_scan["sites"], "P2PCommunicator._communicate_shapes",
                           "batch_isend_irecv", 0)["id"]]
    # Stages 0 and 3 exchange with one neighbour (4 micro-batches forward + 4 backward), 1 and 2
    # with two; one shapes batch per exchange.
    assert {int(r): n for r, n in shapes["fired"].items()} == {
        r: 8 if r // 32 in (0, 3) else 16 for r in range(128)}
    send_next = by_id[site_of(seed_scan["sites"], "_batched_p2p_ops", "P2POp", 2)["id"]]
    assert set(map(int, send_next["fired"])) == set(range(96)) and set(send_next["fired"].values()) == {4}
    # Predicted reachable and fired: the scan and the run agree on the pipeline path.
    assert shapes["reachable"] == "yes" and send_next["reachable"] == "yes"
    unfired = {u["site_id"] for u in run["unfired"]}
    assert shapes["id"] not in unfired and send_next["id"] not in unfired
    # Each neighbour pair talks over a PP-group pair communicator and a default-group one.
    assert len(run["pairs"]) == 32 * 3
    assert run["pairs"][0] == {"ranks": [0, 32], "communicators": {
        "default_pg:0-32": ["unbatched op on default_pg"], "pp:0-32": ["unbatched op on pp"]}}
    pair = next(f for f in joined["findings"] if f["kind"] == "pair-on-two-communicators")
    assert "96 pipeline neighbour pair(s)" in pair["message"]
    # batch_p2p_comm=True, yet both batch_isend_irecv calls ran op by op: one finding per call
    # line and group, with the path from the schedule, the group and its size.
    unbatched = {(f["where"], f["detail"]["group"]["label"]): f for f in joined["findings"]
                 if f["kind"] == "unbatched-run"}
    assert set(unbatched) == {(f"{P2P}:{shapes['line']}", "pp"),
                              (f"{P2P}:{by_id[site_of(seed_scan['sites'], '_batched_p2p_ops', 'batch_isend_irecv', 0)['id']]['line']}", "default_pg")}
    acts = unbatched[next(k for k in unbatched if k[1] == "default_pg")]
    assert acts["detail"]["group"]["size"] == 128 and "(size 128)" in acts["message"]
    assert acts["detail"]["path"][:2] == ["base.BaseMegatronTrainer.train_step",
                                          "schedules.forward_backward_pipelining_without_interleaving"]
    assert acts["detail"]["ranks"] == list(range(128))
    assert unbatched[next(k for k in unbatched if k[1] == "pp")]["detail"]["group"]["size"] == 4


def test_coalesced_batches_on_one_group_raise_nothing(seed_scan, tmp_path):
    sites = seed_scan["sites"]
    programs = megatron_programs(sites, world=8, pp=4, microbatches=2, coalesced=True)
    for ops in programs.values():  # no group=None patch: activations on the PP group too
        for op in ops:
            if op["group"]["desc"] == "default_pg":
                op["group"] = next(o["group"] for o in ops if o["group"]["desc"] == "pp")
    write_trace(tmp_path, programs, world=8)
    joined = join(seed_scan, read_trace_dir(tmp_path))
    kinds = {f["kind"] for f in joined["findings"]} - {f["kind"] for f in seed_scan["findings"]}
    assert kinds == set() and joined["run"]["pairs"] == []


def test_trace_from_another_release_matches_by_stable_id(seed_scan, tmp_path):
    """Lines differ between 0.16.1 and 0.17.0 (the scan's); ids do not."""
    theirs = [s.to_json() for s in inventory(sources.resolve("megatron-core==0.16.1")).sites]
    ours = {s["id"]: s for s in seed_scan["sites"]}
    moved = [s for s in theirs if s["path"] == P2P and s["id"] in ours
             and s["line"] != ours[s["id"]]["line"]]
    assert moved  # the premise, read from the two wheels
    write_trace(tmp_path, megatron_programs(theirs, world=8, pp=2, microbatches=1), world=8)
    exact = join(seed_scan, read_trace_dir(tmp_path), trace_sites=theirs)
    assert not exact["run"]["misses"] and set(exact["run"]["matched"]) == {"id"}
    by_order = join(seed_scan, read_trace_dir(tmp_path))
    assert "line" not in by_order["run"]["matched"]
    for a, b in zip(exact["sites"], by_order["sites"]):
        assert a["fired"] == b["fired"], a["id"]
    fired = {s["id"] for s in exact["sites"] if s["fired"]}
    assert site_of(seed_scan["sites"], "_batched_p2p_ops", "P2POp", 2)["id"] in fired


def test_mixed_batched_and_unbatched_first_ops_deadlock(seed_scan, tmp_path):
    """docs/findings.md §1 on three ranks: rank 0's first op is a coalesced batch on the PP group (its
    communicator), ranks 1 and 2 start with unbatched ops (pair communicators): a cycle of
    communicator creations that no timeout breaks."""
    sites = seed_scan["sites"]
    pp = group([0, 1, 2], "pp", "1")
    call = {k: site_of(sites, "_batched_p2p_ops", "batch_isend_irecv", 0)[k]
            for k in ("path", "line", "end_line", "function")}
    op_site = {k: site_of(sites, "_batched_p2p_ops", "P2POp", 2)[k]
               for k in ("path", "line", "end_line", "function")}
    batched = {"api": "isend", "kind": "p2p", "batched": True, "peer": 1, "group": pp,
               "shape": [4], "dtype": "float32", "via": "batch_isend_irecv", "batch": 1,
               "site": call, "op_site": op_site, "comm_init": {"kind": "group", "key": "all"}}
    unbatched = {"api": "recv", "kind": "p2p", "batched": False, "group": pp, "shape": [4],
                 "dtype": "float32", "site": {"path": "train.py", "line": 7, "end_line": 7,
                                              "function": "step"}}
    programs = {0: [batched], 1: [dict(unbatched, peer=0, comm_init={"kind": "pair", "key": "0:1"})],
                2: [dict(unbatched, peer=1, comm_init={"kind": "pair", "key": "1:2"})]}
    programs[1].append(dict(unbatched, api="send", peer=2))
    write_trace(tmp_path, programs, world=3, pending={0: 0, 1: 0, 2: 0})
    joined = join(seed_scan, read_trace_dir(tmp_path))
    cycle = next(f for f in joined["findings"] if f["kind"] == "wait-for-cycle")
    assert "a cycle" in cycle["message"] and "creation of communicator" in cycle["message"]
    lanes = {lane["rank"]: lane for lane in joined["run"]["timeline"]["ranks"]}
    assert lanes[0]["events"][0]["communicator"] == "pp"
    assert lanes[1]["events"][0]["communicator"] == "pp:0-1"
    outside = next(f for f in joined["findings"] if f["kind"] == "unscanned-p2p")
    assert "train.py:7" in outside["message"]


def test_init_override_keeps_the_recorded_transport(tmp_path):
    """Found in review: `--init lazy` on a gloo trace used to replay it as NCCL's network
    transport. Only what is given changes."""
    trace = read_trace_dir(FIXTURES / "pipeline")
    doc = {"sites": [], "targets": [], "findings": [], "config": {}}
    recorded = join(doc, trace)["run"]["waitfor"]["conditions"]
    assert recorded["transport"] == "gloo"
    overridden = join(doc, trace, init="eager")["run"]["waitfor"]["conditions"]
    assert (overridden["transport"], overridden["init"]) == ("gloo", "eager")


def test_a_gloo_runs_deadlock_verdicts_say_they_ask_of_nccl():
    """Found in review (h42): the document of a gloo recording said `waitfor.deadlock.transport`
    "net" beside `waitfor.conditions.transport` "gloo", and the report printed "will deadlock
    here ... over net" under a gloo run: the verdicts are what NCCL would do with the order
    (docs/traces.md), and now say the backend the run ran on."""
    doc = {"sites": [], "targets": [], "findings": [], "config": {}}
    gloo = join(doc, read_trace_dir(FIXTURES / "pipeline"))["run"]["waitfor"]
    assert gloo["conditions"]["backend"] == "gloo"
    assert gloo["deadlock"]["transport"] == "net" and gloo["deadlock"]["ran_on"] == "gloo"
    assert "will deadlock under NCCL (the run ran on gloo)" in "\n".join(deadlock_lines(gloo["deadlock"]))
    nccl = join(doc, read_trace_dir(FIXTURES / "eager_nccl"))["run"]["waitfor"]["deadlock"]
    assert nccl["ran_on"] is None and "will deadlock here" in "\n".join(deadlock_lines(nccl))
    # --transport overrides the model asked, not the backend the run ran on (review r42-reliab)
    asked = join(doc, read_trace_dir(FIXTURES / "eager_nccl"), transport="gloo")["run"]["waitfor"]
    assert asked["conditions"]["backend"] == "gloo" and asked["deadlock"]["ran_on"] is None
    net = join(doc, read_trace_dir(FIXTURES / "pipeline"), transport="net")["run"]["waitfor"]["deadlock"]
    assert net["ran_on"] == "gloo"
