"""An NCCL_DEBUG=INFO log decides "will deadlock here" where the rules leave it to the cluster:
the seed's 24 MiB exchange over NET/IB is undecided between 2 MiB (1 channel) and 256 MiB (64
channels, either host); a log that states the channels per peer decides it, both ways. Real log
excerpts (tests/fixtures/nccllog/*issue*.log, each citing its GitHub issue) parse; the seed-ib-*
logs are written for these tests in NCCL v2.27.5-1's formats (their header cites the lines)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.analysis.waitfor.test_deadlock_verdicts import MiB, send_first

from auditor.analysis.waitfor.deadlock import deadlock
from auditor.analysis.waitfor.model import Conditions
from auditor.analysis.waitfor.replay import analyze
from auditor.errors import InputError
from auditor.analysis.ncclbounds import decide
from auditor.dynamic.nccllog import read_logs

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "nccllog"


def will(nbytes: int, transport: str, logs: list[Path] | None = None, torch: str | None = None):
    """The send-first exchange's *will deadlock here* over `transport`, read with `logs`."""
    conditions = Conditions.for_transport(transport, "eager")
    if logs:
        conditions = conditions.with_bounds(decide(read_logs(logs), transport, torch).transports)
    programs = send_first(nbytes)
    return deadlock(lambda c: analyze(programs, c), conditions, torch)


def test_a_real_log_states_transports_and_channels_per_peer_but_no_version():
    log = read_logs([LOGS / "nccl-issue-1189-h20-ib.log"])
    assert {c.family for c in log.connections} == {"NET/IB", "P2P"}
    assert [f.value for f in log.per_peer] == [2, 2]
    net = next(c for c in log.connections if c.family == "NET/IB")
    assert (net.channel, net.index, net.src, net.dst, net.direction, net.via) == (
        7, 0, 0, 2, "receive", "NET/IB/3/GDRDMA")
    assert net.where.endswith("nccl-issue-1189-h20-ib.log:7") and net.process == "H20-GPU-06:4015539"
    assert log.processes == ["H20-GPU-06:4015540", "H20-GPU-06:4015539", "H20-GPU-05:1789225"]
    missing = log.missing()
    assert any("NCCL version" in m for m in missing) and any("Chunksize" in m for m in missing)
    assert not any("channels per peer" in m for m in missing)


def test_an_unprefixed_version_line_and_ring_listings():
    log = read_logs([LOGS / "nccl-tests-issue-185-version.log", LOGS / "nccl-issue-1412-rings.log"])
    assert [f.value for f in log.versions] == ["2.19.3+cuda12.3"]
    assert [f.value for f in log.networks] == ["IB", "IB"]
    assert log.connections == []  # "Channel 00/08 :    0   5 ..." is a ring, not a connection
    (chunk,) = log.chunks
    assert (chunk.value, chunk.nnodes) == (131072, None)  # another thread than the comm line's
    assert "the transport per peer" in " ".join(log.missing())


def test_per_rank_logs_in_a_directory():
    log = read_logs([LOGS / "seed-ib-2ch"])
    assert [Path(f).name for f in log.files] == ["rank0.log", "rank1.log"]
    assert log.processes == ["node05:41230", "node06:7718"]
    assert log.per_process()["node06:7718"] == {
        "versions": ["2.27.5+cuda12.9"], "transports": ["NET/IB"], "p2p_channels_per_peer": [2],
        "chunks": [131072]}
    assert {f.value for f in log.versions} == {"2.27.5+cuda12.9"}
    assert [(f.value, f.nnodes) for f in log.chunks] == [(131072, 2), (131072, 2)]
    assert log.missing() == []


def test_a_file_that_is_not_an_nccl_log_is_bad_input(tmp_path):
    (tmp_path / "x.log").write_text("Traceback (most recent call last):\n")
    with pytest.raises(InputError, match="x.log.*not an NCCL_DEBUG=INFO log"):
        read_logs([tmp_path / "x.log"])
    with pytest.raises(InputError, match="no such file"):
        read_logs([tmp_path / "absent.log"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="empty directory"):
        read_logs([tmp_path / "empty"])


@pytest.mark.parametrize("logs, expected, completes", [
    pytest.param(None, None, 2 * MiB, id="no-log-UNDECIDED-2-to-256MiB"),
    pytest.param("seed-ib-2ch", True, 4 * MiB, id="2-channels-HANGS"),
    pytest.param("seed-ib-16ch", False, 32 * MiB, id="16-channels-COMPLETES"),
])
def test_the_seeds_24MiB_exchange_over_ib_is_decided_by_the_logs_channels(logs, expected, completes):
    d = will(24 * MiB, "net-ib", [LOGS / logs] if logs else None, "2.10.0")
    assert d.can is True and d.will is expected, d.to_json()
    (t,) = d.transports
    assert t.transport.completes_bytes == completes
    if logs:  # one threshold: the log states the channels and the chunk
        assert t.transport.hangs_bytes == completes + 1
        rank0 = LOGS / logs / "rank0.log"  # where the log first states its channels per peer
        first = next(i for i, ln in enumerate(rank0.read_text().splitlines(), 1) if "Channel 00/1" in ln)
        assert t.transport.log == f"{rank0}:{first}"
        assert "from the NCCL log at" in t.why and t.transport.log in t.why
        assert t.decide == ""


def test_a_topology_is_narrowed_to_the_transport_the_log_states():
    assert will(24 * MiB, "net").will is None  # NET/Socket hangs, NET/IB undecided
    d = will(24 * MiB, "net", [LOGS / "seed-ib-16ch"], "2.10.0")
    assert [v.transport.name for v in d.transports] == ["NET/IB"] and d.will is False
    assert d.asked == "net-ib"


def test_a_real_log_decides_without_a_version_over_either_host():
    # 2 channels per peer (NVIDIA/nccl#1189); no chunk printed, no version: 128 KiB, or 256 KiB on
    # a 2.29.2+ Grace-Blackwell host: 4 to 8 MiB buffered. 24 MiB hangs either way; 6 MiB is open.
    log = [LOGS / "nccl-issue-1189-h20-ib.log"]
    d = decide(read_logs(log), "net", None)
    (t,) = d.transports
    assert (t.completes_bytes, t.hangs_bytes) == (4 * MiB, 8 * MiB + 1)
    assert will(24 * MiB, "net", log).will is True
    open_ = will(6 * MiB, "net", log)
    assert open_.will is None and "'P2P Chunksize set to N'" in open_.decide()


def test_a_log_of_another_nccl_than_the_pin_is_shown_not_used():
    d = decide(read_logs([LOGS / "seed-ib-2ch"]), "net-ib", "2.13.0")
    assert not d.used and d.transports == ()
    assert "NCCL 2.27.5" in d.words() and "pins NCCL 2.29.7" in d.words() and "rank0.log:4" in d.words()
    assert will(24 * MiB, "net-ib", [LOGS / "seed-ib-2ch"], "2.13.0").will is None


def test_a_network_plugin_whose_sources_were_not_read_decides_nothing():
    d = decide(read_logs([LOGS / "nccl-issue-1814-ibext.log"]), "net", None)
    assert not d.used and "NET/IBext_v8" in d.words() and "not read" in d.words()


def test_a_log_whose_transports_the_layout_does_not_allow_is_shown_not_used():
    d = decide(read_logs([LOGS / "seed-ib-2ch"]), "node", "2.10.0")
    assert not d.used and "NET/IB at" in d.words() and "node" in d.words()


@pytest.mark.parametrize("log, exit_code, headline", [
    (None, 1, "INCONCLUSIVE"), ("seed-ib-2ch", 1, "HANG PREDICTED"), ("seed-ib-16ch", 0, "CLEAN")])
def test_repro_predict_reads_the_log_and_says_which_line_decided(capsys, log, exit_code, headline):
    from auditor.cli import main

    argv = ["repro", "fallback-1f1b", "--backend", "nccl", "--predict", "--transport", "net-ib",
            "--size", "24MiB"] + (["--nccl-log", str(LOGS / log)] if log else [])
    assert main(argv) == exit_code
    out = capsys.readouterr().out
    assert headline in out.splitlines()[0]
    if log:
        assert f"from the NCCL log at {LOGS / log / 'rank0.log'}:" in out
        assert out.count("NCCL log: NET/IB (") == 1


def test_report_replays_a_trace_over_the_logs_transport_in_a_valid_document(tmp_path):
    import json

    from tests.analysis.test_join import FIXTURES
    import jsonschema
    from tests.report.test_schema import SCHEMA

    from auditor.cli import main

    out = tmp_path / "run.json"
    assert main(["report", "--trace", str(FIXTURES / "pipeline"), "--nccl-log",
                 str(LOGS / "seed-ib-2ch"), "--format", "json", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    (t,) = doc["run"]["waitfor"]["deadlock"]["transports"]
    assert t["transport"]["log"] == f"{LOGS / 'seed-ib-2ch' / 'rank0.log'}:9"
    assert t["transport"]["completes_bytes"] == 4 * MiB
    assert doc["run"]["nccl_log"]["used"] is True
    def valid(part: str, value: dict) -> bool:  # a trace alone has no 'tool': check the parts
        validator = jsonschema.Draft202012Validator({"$ref": f"#/$defs/{part}", "$defs": SCHEMA["$defs"]})
        return validator.is_valid(value)

    assert valid("deadlock", doc["run"]["waitfor"]["deadlock"])
    assert valid("nccl_log", doc["run"]["nccl_log"])
    assert not valid("nccl_log", {**doc["run"]["nccl_log"], "contradictions": ["another NCCL"]})
    assert main(["report", "--trace", str(FIXTURES / "pipeline"), "--nccl-log",
                 str(LOGS / "seed-ib-16ch"), "-o", str(tmp_path / "run.html")]) == 0
    assert "NCCL log: NET/IB (" in (tmp_path / "run.html").read_text()
    assert main(["report", "--trace", str(FIXTURES / "pipeline"), "--transport", "gloo",
                 "--nccl-log", str(LOGS / "seed-ib-2ch")]) == 2  # bad input


def test_a_partial_log_narrows_the_transport_and_says_what_is_missing(tmp_path):
    # Two lines as NCCL 2.27.5 prints them: the transport, but no channels per peer.
    (tmp_path / "rank0.log").write_text(
        "n1:10:10 [0] NCCL INFO NCCL version 2.27.5+cuda12.9\n"
        "n1:10:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0\n")
    decision = decide(read_logs([tmp_path]), "net", "2.10.0")
    assert [t.name for t in decision.transports] == ["NET/IB"]
    assert "not in it: the channels per peer" in decision.words()
    d = will(24 * MiB, "net", [tmp_path], "2.10.0")
    assert [v.transport.name for v in d.transports] == ["NET/IB"] and d.will is None
    assert "channels" in d.decide()


def test_a_log_of_an_nccl_whose_sources_were_not_read_decides_nothing():
    d = decide(read_logs([LOGS / "nccl-tests-issue-185-version.log"]), "net", None)
    assert not d.used and "NCCL 2.19.3's sources were not read" in d.words()


def test_real_logs_of_a_plugin_network_and_of_an_older_format():
    log = read_logs([LOGS / "nccl-issue-1737-init.log"])
    assert [f.value for f in log.versions] == ["2.21.5+cuda12.4"]
    assert [f.value for f in log.networks] == ["IBext_v8"] and log.connections == []
    d = decide(log, "net", None)
    assert not d.used and "NCCL 2.21.5's sources were not read" in d.words()
    assert "NET/IBext_v8 (" in d.words()  # named by "Using network", before any connection
    old = read_logs([LOGS / "nccl-issue-429-old-format.log"])
    assert [(c.family, c.index, c.src, c.dst, c.direction) for c in old.connections] == [
        ("P2P", None, 4, 5, ""), ("NET/IB", None, 15, 6, "receive"), ("P2P", None, 2, 3, "")]
