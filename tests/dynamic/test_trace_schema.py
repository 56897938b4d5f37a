"""The trace line is a contract (docs/schema/trace-line.schema.json): every line `p2paudit record`
writes is valid, on real runs (a fresh gloo recording, the committed fixtures, the NCCL
recordings under reports/), and the schema rejects what breaks the contract."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "schema" / "trace-line.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
# tests/hostile/inputs: traces broken on purpose (each refused or flagged by the reader)
COMMITTED = sorted({p.parent for p in (ROOT / "tests").rglob("rank-*.jsonl")
                    if "hostile" not in p.relative_to(ROOT / "tests").parts})
NCCL_ARCHIVES = [ROOT / "reports" / "record-gpu" / "results" / "record-results.tgz",
                 ROOT / "reports" / "glm5.1-pp-hang" / "gpu" / "results" / "runs.tar.gz"]


def lines(directory: Path) -> list[tuple[str, int, dict]]:
    """(file, line number, object) of every line of a trace directory's rank files; only a last
    line may be cut short (a SIGKILL mid-line: the reader skips it, as `damaged` has one)."""
    out = []
    for file in sorted(directory.glob("rank-*.jsonl")):
        raws = [(n, raw.strip(b"\0 ")) for n, raw in enumerate(file.read_bytes().split(b"\n"), 1)]
        raws = [(n, raw) for n, raw in raws if raw]
        for k, (number, raw) in enumerate(raws):
            try:
                out.append((file.name, number, json.loads(raw)))
            except ValueError:
                assert k == len(raws) - 1, f"{file}:{number}: not JSON, and not the last line"
    return out


def assert_valid(directory: Path) -> int:
    found = lines(directory)
    for name, number, line in found:
        errors = sorted(VALIDATOR.iter_errors(line), key=str)
        assert not errors, f"{directory / name}:{number}: {errors[0].message}"
    return len(found)


def test_the_schema_is_a_valid_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("directory", COMMITTED, ids=lambda p: p.name)
def test_committed_traces_are_valid(directory):
    assert assert_valid(directory) > 0


@pytest.mark.parametrize("archive", NCCL_ARCHIVES, ids=lambda p: p.parent.parent.name)
def test_recorded_nccl_traces_are_valid(archive, tmp_path):
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.name.endswith(".jsonl")]
        assert members
        tar.extractall(tmp_path, members=members, filter="data")
    directories = sorted({p.parent for p in tmp_path.rglob("rank-*.jsonl")})
    backends = set()
    for directory in directories:
        assert assert_valid(directory) > 0
        backends |= {line["group"]["backend"] for _, _, line in lines(directory)
                     if isinstance(line.get("group"), dict)}
    assert "nccl" in backends


@pytest.mark.heavy
def test_a_fresh_gloo_recording_is_valid(tmp_path):
    out = tmp_path / "trace"
    proc = subprocess.run(
        [sys.executable, "-m", "auditor", "record", "--trace", str(out), "--",
         sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
         str(ROOT / "tests" / "record_fixtures" / "exchange.py")],
        env=dict(os.environ, EXCHANGE_FLOATS="4"), cwd=ROOT, capture_output=True, text=True,
        timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = lines(out)
    assert assert_valid(out) == len(found)
    assert {line["phase"] for _, _, line in found} >= {"meta", "group", "start", "end"}


def _first(phase: str, kind: str | None = None) -> dict:
    for _, _, line in lines(ROOT / "tests" / "record_fixtures" / "pipeline"):
        if line["phase"] == phase and (kind is None or line.get("kind") == kind):
            return line
    raise AssertionError(f"no {phase} line")


# INVALID: real lines with one thing broken; the schema must refuse each.
@pytest.mark.parametrize("phase, kind, breakage", [
    ("meta", None, lambda d: d.pop("mono0")),
    ("meta", None, lambda d: d.update(recorder="someone else")),
    ("group", None, lambda d: d["group"].pop("eager")),
    ("group", None, lambda d: d["group"].update(ranks=[])),
    ("start", "p2p", lambda d: d.pop("peer")),
    ("start", "p2p", lambda d: d.update(kind="send")),
    ("start", "p2p", lambda d: d.update(phase="begin")),
    ("start", "p2p", lambda d: d.update(comm_init={"kind": "world", "key": "all"})),
    ("start", "setup", lambda d: d.pop("site")),
    ("end", None, lambda d: d.update(how="done")),
    ("end", None, lambda d: d.update(how="raise")),
    ("end", None, lambda d: d.pop("of")),
    ("end", None, lambda d: d.update(seq="12")),
    ("start", "p2p", lambda d: d.update(ends=[])),
    ("start", "p2p", lambda d: d.update(ends=[[3]])),
    ("start", "p2p", lambda d: d.update(ends=[["3", "dropped"]])),
    ("start", "p2p", lambda d: d.update(ends=[[3, "raise"]])),
])
def test_the_schema_rejects_broken_lines(phase, kind, breakage):
    line = copy.deepcopy(_first(phase, kind))
    assert VALIDATOR.is_valid(line)
    breakage(line)
    assert not VALIDATOR.is_valid(line)


# rank 1's exception line of wrap.py (review r44-report; gloo, torch 2.13 CPU, `raise ... from e`)
WRAPPED = {"seq": 20, "t": 3.832810, "rank": 1, "api": "process", "phase": "exception",
           "error": "RuntimeError: pipeline step 3 failed on rank 1", "type": "RuntimeError",
           "thread": "MainThread", "main": True,
           "chain": [{"type": "RuntimeError", "error": "RuntimeError: [/__w/pytorch/pytorch/third_party/"
                      "gloo/gloo/transport/tcp/pair.cc:537] Read error [127.0.0.1]:18816: "
                      "Connection reset by peer."}],
           "at": {"path": "wrap.py", "line": 16, "function": "<module>"}}


@pytest.mark.parametrize("chain", [[{"type": "E"}], "E: x", [{"type": "E", "error": "E", "at": 3}]])
def test_the_schema_rejects_a_broken_chain(chain):
    assert VALIDATOR.is_valid(WRAPPED)
    assert not VALIDATOR.is_valid({**WRAPPED, "chain": chain})
