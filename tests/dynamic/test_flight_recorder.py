"""Flight Recorder dumps in: real dumps from gloo (2 ranks, CPU) and NCCL (1 GPU), torch's own
reader as the oracle of the format, and 2-rank NCCL dumps built from the real NCCL dump's entries
where one GPU cannot make them (tests/fr_dumps/README.md says how each was made)."""

from __future__ import annotations

import argparse
import copy
import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from torch.distributed.flight_recorder.components.builder import build_groups_memberships
from torch.distributed.flight_recorder.components.loader import read_dir
from torch.distributed.flight_recorder.components.types import Op

from auditor.cli import main
from auditor.dynamic.flight_recorder import findings, read_flight_recorder
from auditor.dynamic.trace import read_trace_dir
from auditor.errors import InputError
from tests.analysis.test_join import site_of

DUMPS = Path(__file__).parents[1] / "fr_dumps"
SEED = Path(__file__).parents[2] / "examples" / "glm5_1_lora_pp4.sh"


def ops(trace, rank: int) -> list[tuple]:
    return [(e["api"], e["kind"], e["peer"], e["group"]["desc"], e["bytes"], e["batched"],
             e["end"] is not None) for e in trace.ranks[rank].starts()]


def test_gloo_json_and_pickle_say_the_same_and_what_gloo_leaves_out():
    as_json = read_flight_recorder(DUMPS / "gloo-clean" / "json")
    as_pickle = read_flight_recorder(DUMPS / "gloo-clean" / "pickle")
    for rank in (0, 1):
        assert ops(as_json, rank) == ops(as_pickle, rank) == [
            ("all_reduce", "collective", None, "default_pg", 16, None, True),
            ("all_reduce", "collective", None, "pp", 16, None, True),
            ("all_reduce", "collective", None, "pp", 256, None, True)]
    notes = "\n".join(as_pickle.skipped)
    # The script's send, isend, and batch of two on "pp" are op ids 2-5: gloo wrote no entry.
    assert "rank 0: group 1 (pp) enqueued 4 op(s) with no entry (op ids 2-5)" in notes
    assert "lazy communicator creation" in notes and "no pg_config entry" in notes
    script = (DUMPS / "make_dumps.py").read_text().splitlines()
    calls = {n for n, line in enumerate(script, 1) if "dist.all_reduce(" in line}
    sites = {e["site"]["line"] for e in as_pickle.ranks[0].starts()}
    assert sites == calls and len(calls) == 3 and all(e["site"] is None for e in as_json.ranks[0].starts())


def test_gloo_hang_names_the_rank_whose_dump_ends_first(tmp_path, capsys):
    trace = read_flight_recorder(DUMPS / "gloo-hang" / "pickle")
    assert [e["end"] is None for e in trace.ranks[0].starts()] == [False, False, True]
    (found,) = findings(trace)
    assert found.detail["rank"] == 0 and found.detail["peer"] == 1
    assert "rank 1's dump ends after 1 such op(s)" in found.message
    scan = tmp_path / "sites.json"
    assert main(["sites", str(DUMPS / "make_dumps.py"), "--format", "json", "-o", str(scan)]) == 0
    out = tmp_path / "report.html"
    code = main(["report", "--scan", str(scan), "--flight-recorder",
                 str(DUMPS / "gloo-hang" / "pickle"), "-o", str(out)])
    html = out.read_text()
    assert code == 1 and "flight recorder: rank 0: group 1 (pp) enqueued 4 op(s)" in html
    assert "rank 1&#39;s dump ends" in html or "rank 1's dump ends" in html


@pytest.mark.parametrize("folder", ["gloo-clean/pickle", "gloo-hang/pickle", "nccl-1gpu/pickle",
                                    "nccl-timeout"])
def test_torch_reads_every_dump_we_read(folder):
    """torch's own loader is the oracle: what it parses, we parse, entry for entry (the closing
    `coalesced` entries carry their window's state and are no op of their own)."""
    details, version = read_dir(argparse.Namespace(trace_dir=str(DUMPS / folder), prefix=None))
    assert version == "2.10"
    trace = read_flight_recorder(DUMPS / folder)
    for dump in details.values():
        theirs = [e["profiling_name"] for e in dump["entries"]
                  if not e["profiling_name"].endswith(":coalesced")]
        ours = [e["fr"]["profiling_name"] for e in trace.ranks[dump["rank"]].starts()]
        assert ours == theirs


def test_real_nccl_dumps_coalesced_batch_and_a_watchdog_timeout():
    trace = read_flight_recorder(DUMPS / "nccl-1gpu" / "pickle")
    batch = [e for e in trace.ranks[0].starts() if e["kind"] == "p2p"]
    assert [(e["api"], e["peer"], e["via"], e["batched"]) for e in batch] == [
        ("isend", 0, "batch_isend_irecv", True), ("irecv", 0, "batch_isend_irecv", True)]
    # The ops of a coalesced window stay 'scheduled'; the closing entry holds the state.
    assert {e["fr"]["state"] for e in batch} == {"completed"} and batch[0]["batch"] == batch[1]["batch"]
    assert batch[0]["site"] == {"path": "m.py", "line": 18, "end_line": 18, "function": "<module>"}
    timeout = read_flight_recorder(DUMPS / "nccl-timeout")
    pending = [(e["api"], e["fr"]["state"]) for e in timeout.ranks[0].starts() if e["end"] is None]
    assert pending == [("isend", "scheduled"), ("irecv", "scheduled"), ("all_reduce", "scheduled")]
    assert not findings(timeout)  # one rank: every op has its match; the GPU sleep held them


# --- 2-rank NCCL dumps in the documented format, from the real NCCL dump's entries -------------------
def real_entry(name: str) -> dict[str, Any]:
    with (DUMPS / "nccl-1gpu" / "pickle" / "nccl_trace_rank_0").open("rb") as f:
        dump = pickle.load(f)
    return copy.deepcopy(next(e for e in dump["entries"] if e["profiling_name"] == name))


def p2p_entry(record: int, op: str, rank: int, peer: int, seq: int, frame: dict[str, Any],
              state: str, shape: list[int] | None = None, dtype: str = "BFloat16") -> dict[str, Any]:
    """One unbatched P2P entry (batch_isend_irecv running op by op: no closing entry)."""
    e = real_entry("nccl:send 0->0" if op == "send" else "nccl:recv 0<-0")
    arrow = "->" if op == "send" else "<-"
    sizes = [shape or [8192, 1, 1536]]
    e.update(record_id=record, op_id=seq, p2p_seq_id=seq, profiling_name=f"nccl:{op} {rank}{arrow}{peer}",
             process_group=("1", "pp"), input_sizes=sizes, output_sizes=sizes, input_dtypes=[dtype],
             output_dtypes=[dtype], state=state, retired=state == "completed",
             time_discovered_completed_ns=None, time_created_ns=e["time_created_ns"] + record * 1000)
    torch_frames = [f for f in e["frames"] if f["name"] in ("isend", "irecv", "batch_isend_irecv")]
    e["frames"] = torch_frames + [frame]
    e["frames"][0]["name"] = "isend" if op == "send" else "irecv"
    return e


def write_dumps(root: Path, entries: dict[int, list[dict[str, Any]]]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for rank, rank_entries in entries.items():
        dump = {"version": "2.10", "comm_lib_version": "2.28.9", "entries": rank_entries,
                "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"},
                              "1": {"name": "1", "desc": "pp", "ranks": "[0, 1]"}},
                "pg_status": {}}
        (root / f"nccl_trace_rank_{rank}").write_bytes(pickle.dumps(dump))


@pytest.fixture(scope="module")
def seed_scan(real_sources) -> dict[str, Any]:
    from auditor.scan import ScanInputs, run_scan
    return run_scan(ScanInputs(str(SEED), torch_version="2.10.0"))


def megatron_frame(site: dict[str, Any], name: str) -> dict[str, Any]:
    """The frame torch records for a call at a scanned site: the code object's own name, the file
    under the site-packages it was imported from."""
    return {"name": name, "line": site["line"], "filename": "/usr/lib/python3/site-packages/" + site["path"]}


@pytest.fixture(scope="module")
def glm_dumps(seed_scan, tmp_path_factory) -> Path:
    """Two pipeline neighbours, batch_isend_irecv running op by op (torch 2.10 with DETAIL): the
    shapes exchange (P2PCommunicator._communicate_shapes) completes, then both ISEND their 24 MiB
    activation first (_batched_p2p_ops) and wait."""
    root = tmp_path_factory.mktemp("glm-dumps")
    shapes = site_of(seed_scan["sites"], "P2PCommunicator._communicate_shapes", "batch_isend_irecv", 0)
    call = site_of(seed_scan["sites"], "_batched_p2p_ops", "batch_isend_irecv", 0)
    small = megatron_frame(shapes, "_communicate_shapes")
    big = megatron_frame(call, "_batched_p2p_ops")
    write_dumps(root, {r: [
        p2p_entry(0, "send", r, 1 - r, 1, small, "completed", [3], "Long"),
        p2p_entry(1, "recv", r, 1 - r, 2, small, "completed", [3], "Long"),
        p2p_entry(2, "send", r, 1 - r, 3, big, "started"),
        p2p_entry(3, "recv", r, 1 - r, 4, big, "scheduled")] for r in (0, 1)})
    return root


def test_two_rank_nccl_dumps_deadlock_like_the_glm_run(seed_scan, glm_dumps, tmp_path):
    """The dumps map to megatron-core's sites (a method named by its code name too), the join
    flags the unbatched ops and the wait-for replay finds the cycle."""
    details, _ = read_dir(argparse.Namespace(trace_dir=str(glm_dumps), prefix=None))
    _, _, _, members, guids = build_groups_memberships(
        {d["rank"]: d["pg_config"] for d in details.values()})
    for d in details.values():  # torch parses every entry, peers as we place them
        for e in d["entries"]:
            op = Op(e, members, guids[("1", d["rank"])])
            assert (op._src_g, op._dst_g) in ((0, 1), (1, 0))
    scan = tmp_path / "scan.json"
    scan.write_text(json.dumps(seed_scan))
    out = tmp_path / "report.json"
    assert main(["report", "--scan", str(scan), "--flight-recorder", str(glm_dumps),
                 "--format", "json", "-o", str(out)]) == 1
    doc = json.loads(out.read_text())
    fired = {s["id"]: s["fired"] for s in doc["sites"]}
    for function in ("_batched_p2p_ops", "P2PCommunicator._communicate_shapes"):
        site = site_of(seed_scan["sites"], function, "batch_isend_irecv", 0)
        assert fired[site["id"]] == {"0": 1, "1": 1}, function
    kinds = {f["kind"] for f in doc["findings"]}
    assert {"wait-for-cycle", "unbatched-run", "run-stopped-in-op"} <= kinds
    assert "flight-recorder-unmatched" not in kinds  # every pending op has its match in a dump
    notes = "\n".join(doc["run"]["trace"]["skipped"])
    assert "rank 1, group pp: last completed IRECV from 0 (record 1, completed); then 2 pending: " \
           "ISEND to 0 (record 2, started), IRECV from 0 (record 3, scheduled)" in notes


def test_scan_with_flight_recorder_dumps_is_one_report(glm_dumps, tmp_path):
    out = tmp_path / "scan.html"
    assert main(["scan", "--config", str(SEED), "--torch", "2.10.0", "--flight-recorder",
                 str(glm_dumps), "--format", "html", "-o", str(out)]) == 1
    html = out.read_text()
    assert "wait-for cycle" in html and "flight recorder: a dump does not say" in html


def test_two_rank_nccl_dump_that_ends_early_names_that_rank(tmp_path):
    frame = {"name": "step", "line": 7, "filename": "/job/train.py"}
    write_dumps(tmp_path, {0: [p2p_entry(0, "send", 0, 1, 1, frame, "started")],
                           1: [real_entry("nccl:all_reduce")]})
    (found,) = findings(read_flight_recorder(tmp_path))
    assert found.detail == {"rank": 0, "peer": 1, "fr": found.detail["fr"]}
    assert "rank 1's dump ends after 0 such op(s)" in found.message and found.where == "train.py:7"


def long_dumps(root: Path) -> None:
    """40 exchanges of two ranks complete, then rank 0 sends once more (81 ops on rank 0)."""
    frame = {"name": "step", "line": 7, "filename": "/job/train.py"}
    entries = {r: [p2p_entry(i, ("send", "recv")[(i + r) % 2], r, 1 - r, i + 1, frame, "completed")
                   for i in range(80)] for r in (0, 1)}
    entries[0].append(p2p_entry(80, "send", 0, 1, 81, frame, "started"))
    write_dumps(root, entries)


def test_dumps_longer_than_the_head_window_read_as_a_recorded_trace(tmp_path):
    """With the head cut at 32 ops per rank, the op counts, the pending op and the unmatched
    finding are those of the whole dump, and the events fold into the trace exactly as the same
    lines in a recorded rank file do."""
    long_dumps(tmp_path / "dumps")
    whole = read_flight_recorder(tmp_path / "dumps")
    cut = read_flight_recorder(tmp_path / "dumps", head_ops=64)
    assert whole.ranks[0].complete and not cut.ranks[0].complete
    assert len(cut.ranks[0].starts()) == 32 and cut.ranks[0].ops == whole.ranks[0].ops == 81
    assert cut.ranks[0].usage == whole.ranks[0].usage
    assert [e["fr"]["record_id"] for e in cut.ranks[0].open_ops] == [80]
    assert [f.message for f in findings(cut)] == [f.message for f in findings(whole)]
    assert "SEND to 1 #41" in findings(cut)[0].message
    recorded = tmp_path / "trace"
    recorded.mkdir()
    for rank, rt in read_flight_recorder(tmp_path / "dumps").ranks.items():
        lines = [rt.meta] + [{k: v for k, v in e.items() if k != "end"} for e in rt.head]
        (recorded / f"rank-{rank}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    for rank, rt in read_trace_dir(recorded).ranks.items():
        fr = whole.ranks[rank]
        assert (rt.usage, rt.batch_calls, rt.lines, rt.groups, rt.world_sizes, rt.highest[0]) == \
               (fr.usage, fr.batch_calls, fr.lines, fr.groups, fr.world_sizes, fr.highest[0])
        assert rt.head == fr.head and rt.open_ops == fr.open_ops


# --- refused input ------------------------------------------------------------------------------------
class Payload:
    def __reduce__(self):
        return (Path.touch, (Path("/tmp/p2paudit-pickle-ran"),))


def test_a_pickle_carrying_an_object_is_refused_with_one_line(tmp_path, capsys):
    marker = Path("/tmp/p2paudit-pickle-ran")
    marker.unlink(missing_ok=True)
    (tmp_path / "nccl_trace_rank_0").write_bytes(pickle.dumps(
        {"version": "2.10", "entries": [], "pg_config": {}, "extra": Payload()}))
    with pytest.raises(InputError, match="pickle refused: it names pathlib"):
        read_flight_recorder(tmp_path)
    scan = tmp_path.parent / "sites.json"
    assert main(["sites", str(DUMPS / "make_dumps.py"), "--format", "json", "-o", str(scan)]) == 0
    capsys.readouterr()
    assert main(["report", "--scan", str(scan), "--flight-recorder", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nccl_trace_rank_0: pickle refused" in err[0]
    assert not marker.exists()


@pytest.mark.parametrize("files, cause", [
    ({}, "no Flight Recorder dumps"),
    ({"rank0.json": b"{not json"}, "not a JSON Flight Recorder dump"),
    ({"rank0.json": b'{"version": "2.10"}'}, "no 'version' and 'entries'"),
    ({"rank0.json": b'{"version": "3.0", "entries": []}'}, "this reader knows 2.x"),
    ({"rank0.json": b'{"version": "2.10", "entries": []}',
      "trace_0": pickle.dumps({"version": "2.10", "entries": []})}, "a second dump for rank 0"),
    ({"rank_0": b"GIF89a"}, "neither JSON nor a pickle"),
    ({"rank_0": pickle.dumps({"version": "2.10", "entries": []})[:-3]}, "unreadable pickle"),
])
def test_bad_dump_directories_exit_2_naming_the_file(tmp_path, capsys, files, cause):
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    scan = tmp_path.parent / "sites.json"
    assert main(["sites", str(DUMPS / "make_dumps.py"), "--format", "json", "-o", str(scan)]) == 0
    capsys.readouterr()
    assert main(["report", "--scan", str(scan), "--flight-recorder", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and cause in err and str(tmp_path) in err


def test_trace_and_flight_recorder_together_are_refused(tmp_path, capsys):
    scan = tmp_path / "sites.json"
    main(["sites", str(DUMPS / "make_dumps.py"), "--format", "json", "-o", str(scan)])
    assert main(["report", "--scan", str(scan), "--trace", str(tmp_path),
                 "--flight-recorder", str(DUMPS / "nccl-timeout")]) == 2
    assert "not both" in capsys.readouterr().err
