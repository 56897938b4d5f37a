"""MUST's two verdicts on a send-first exchange: *can deadlock* (zero-buffer contract) and *will
deadlock here* (the transport's bound from rules/nccl.toml, the exchange's sizes). VALID: the
transport completes the exchange; INVALID: it hangs; UNDECIDED: the size lies between the bounds.
The bounds are the rules' own numbers (docs/transport-semantics.md), read through the loader."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from auditor.analysis.runfindings import replay_findings
from auditor.analysis.waitfor import transports
from auditor.analysis.waitfor.deadlock import Deadlock, deadlock
from auditor.analysis.waitfor.model import Conditions, Group, Op
from auditor.analysis.waitfor.replay import analyze

RULES = tomllib.loads((Path(__file__).resolve().parents[3] / "rules" / "nccl.toml").read_text())
PAIR = Group((0, 1), "pp")
KiB, MiB = 1 << 10, 1 << 20


def send_first(nbytes: int) -> dict[int, list[Op]]:
    """Both ranks ISEND then IRECV, op by op, on one pair communicator (the GLM-5.1 exchange)."""
    return {r: [Op(r, 0, "isend", PAIR, 1 - r, nbytes), Op(r, 1, "irecv", PAIR, 1 - r, nbytes)]
            for r in (0, 1)}


def verdicts(nbytes: int, transport: str, torch: str | None = None) -> Deadlock:
    programs = send_first(nbytes)
    return deadlock(lambda c: analyze(programs, c), Conditions.for_transport(transport, "eager"),
                    torch)


EXAMPLES = [
    # (size, transport, will deadlock here), can deadlock is True for every send-first exchange
    pytest.param(24, "net-ib", False, id="VALID-24B-shapes-NET/IB"),
    pytest.param(24, "net-socket", False, id="VALID-24B-shapes-NET/Socket"),
    pytest.param(24, "nvlink", False, id="VALID-24B-shapes-P2P"),
    pytest.param(12 * MiB, "net-socket", False, id="VALID-12MiB-NET/Socket-measured"),
    pytest.param(32 * MiB, "nvlink", False, id="VALID-32MiB-P2P-measured"),
    pytest.param(2 * MiB, "net-ib", False, id="VALID-2MiB-NET/IB-one-channel"),
    pytest.param(16 * MiB, "net-socket", True, id="INVALID-16MiB-NET/Socket-measured"),
    pytest.param(24 * MiB, "net-socket", True, id="INVALID-24MiB-NET/Socket"),
    pytest.param(256 * MiB, "net-ib", True, id="INVALID-256MiB-NET/IB-every-channel-any-host"),
    pytest.param(128 * MiB, "shm", True, id="INVALID-128MiB-SHM-every-channel-any-host"),
    # x86_64 hangs here, a 2.29.2+ Grace-Blackwell host buffers twice as much: no host is read.
    pytest.param(128 * MiB, "net-ib", None, id="UNDECIDED-128MiB-NET/IB-host-unknown"),
    pytest.param(64 * MiB, "shm", None, id="UNDECIDED-64MiB-SHM-host-unknown"),
    pytest.param(24 * MiB, "net-ib", None, id="UNDECIDED-24MiB-NET/IB-channels"),
    pytest.param(14 * MiB, "net-socket", None, id="UNDECIDED-14MiB-NET/Socket-between-12-and-16"),
    pytest.param(64 * MiB, "nvlink", None, id="UNDECIDED-64MiB-P2P-above-the-measured-32"),
    pytest.param(4, "gloo", True, id="INVALID-4B-gloo-buffers-nothing"),
]


@pytest.mark.parametrize("nbytes, transport, will", EXAMPLES)
def test_send_first_exchange(nbytes, transport, will):
    d = verdicts(nbytes, transport)
    assert d.can is True, d.to_json()
    assert d.will is will, d.to_json()
    (only,) = d.transports
    assert (only.decide != "") == (will is None), d.to_json()


def test_an_order_that_receives_first_on_one_side_cannot_deadlock():
    programs = send_first(64 * MiB)
    programs[1] = [Op(1, 0, "irecv", PAIR, 0, 64 * MiB), Op(1, 1, "isend", PAIR, 0, 64 * MiB)]
    d = deadlock(lambda c: analyze(programs, c), Conditions.for_transport("net", "eager"))
    assert (d.can, d.will) == (False, False)
    assert [v.will for v in d.transports] == [False, False]


def test_a_topology_decides_only_where_its_transports_agree():
    # Across nodes: NET/Socket hangs 24 MiB (measured), NET/IB leaves it to the channels per peer.
    d = verdicts(24 * MiB, "net")
    assert [(v.transport.name, v.will) for v in d.transports] == [("NET/Socket", True), ("NET/IB", None)]
    assert d.will is None and "--transport net-socket or net-ib" in d.decide()
    # 24 B completes on both: decided.
    assert verdicts(24, "net").will is False
    # Inside a node: P2P completes 16 MiB (measured 32), SHM's derived 1..128 MiB leaves it open.
    d = verdicts(16 * MiB, "node")
    assert [v.transport.model_name for v in d.transports] == ["nvlink", "shm"]
    assert [v.will for v in d.transports] == [False, None] and d.will is None


def test_the_bounds_are_the_rules_data_and_say_how_they_are_known():
    rules = {t["model_name"]: t for t in RULES["transport"]}
    assert set(transports.transports()) == set(rules)
    for name, t in transports.transports().items():
        assert t.completes_bytes == rules[name]["completes_bytes"]
        assert t.bound in ("measured", "derived")
        assert t.hangs_bytes is None or t.hangs_bytes > t.completes_bytes
    assert transports.TRANSPORT_BUFFER["net"] == 12 * MiB  # the largest sure bound of its candidates
    d = verdicts(24 * MiB, "net-ib", "2.11.0+cu130")
    j = d.to_json()
    assert j["transports"][0]["transport"]["bound"] == "derived"
    assert j["nccl"].startswith("2.28.9") and j["decide"].startswith("NET/IB: the channels")
    assert "not in rules/nccl.toml" in verdicts(24, "net-ib", "2.6.0").nccl


NCCL = RULES["nccl"]


@pytest.mark.parametrize("torch", sorted(NCCL["torch"]))
def test_every_pinned_torch_maps_to_an_nccl_whose_sources_were_read_or_is_flagged(torch):
    pin = NCCL["torch"][torch]
    name, _, version = pin["wheel"].partition("==")
    assert re.fullmatch(r"nvidia-nccl-cu1[0-9]", name) and version == pin["nccl"], pin
    shown = verdicts(24 * MiB, "net-ib", torch).nccl
    if pin["nccl"] in NCCL["versions"]:
        assert transports.nccl_version(torch) == pin["nccl"]
        assert shown == f"{pin['nccl']} (torch {torch}'s pin)"
    else:  # pinned but not read: the bounds are another release's, and say so
        assert transports.nccl_version(torch) is None and shown.startswith("read against NCCL "), shown


@pytest.mark.parametrize("spelling, nccl", [
    pytest.param("2.13.0+cu130", "2.29.7", id="VALID-local-version"),
    pytest.param("2.12.0", "2.29.7", id="VALID-cu13-pin"),
    pytest.param("2.7.1+cu126", "2.26.2", id="VALID-oldest-pin"),
    pytest.param("2.13", None, id="INVALID-no-patch-release"),
    pytest.param("2.7.0", None, id="INVALID-release-not-pinned-here"),
    pytest.param("v2.13.0", None, id="INVALID-tag-spelling"),
    pytest.param("", None, id="INVALID-empty"),
])
def test_torch_spellings_map_to_a_read_nccl_or_to_none(spelling, nccl):
    assert transports.nccl_version(spelling) == nccl


def test_every_read_release_is_one_torch_pins_and_the_ranges_are_specifiers():
    assert sorted(NCCL["versions"], key=Version) == NCCL["versions"]
    assert set(NCCL["versions"]) == {p["nccl"] for p in NCCL["torch"].values()}
    for entry in NCCL["p2p_chunk_bytes"]["by_range"]:
        spec = SpecifierSet(entry["nccl"])
        # A range names a difference between read releases: some of them fall inside, some not.
        assert 0 < len(list(spec.filter(NCCL["versions"]))) < len(NCCL["versions"]), entry
        assert entry["net"] != NCCL["p2p_chunk_bytes"]["net"] and entry["host"], entry


def test_an_unknown_transport_is_refused_by_name():
    with pytest.raises(ValueError, match="unknown transport 'net-IB'"):
        transports.candidates("net-IB")
    with pytest.raises(ValueError, match="unknown transport 'infiniband'"):
        Conditions.for_transport("infiniband")


def test_the_findings_word_the_conditions_as_the_replay_does():
    """Found in review: the run's findings worded the replayed conditions their own way
    ("NCCL, lazy init, ... sends up to 12 MiB complete unmatched") beside the replay's
    (`Conditions.words`, what simulate and the summary print): one wording now."""
    programs = send_first(24 * MiB)
    conditions = Conditions.for_transport("net-socket", "lazy", False)
    replayed = analyze(programs, conditions)
    wf = {"run_completed": True, "hang": replayed.hang, "cycle": replayed.cycle,
          "blocked": replayed.blocked, "conditions": conditions.to_json(), "mismatched_pairs": []}
    d = deadlock(lambda c: analyze(programs, c), conditions)
    (would,) = replay_findings(wf, d)
    assert would.kind == "replay-would-hang"
    assert f"this order would hang ({conditions.words()}): " in would.message
    (cycle,) = replay_findings(dict(wf, run_completed=False), d)
    assert cycle.kind == "wait-for-cycle"
    assert f"deadlocks under {conditions.words()}: {replayed.cycle}" in cycle.message
