"""Issue 23 item 6: `p2paudit report --trace DIR` without `--scan`. A trace alone is evidence
enough for the dynamic verdicts (a hang, a wait-for cycle, a crashed or incomplete run); a scan,
when given, is joined with it. The traces are real gloo recordings (tests/record_fixtures,
tests/waitfor_cases: recorded by their regenerate.py)."""

from __future__ import annotations

import json
from pathlib import Path

from auditor import cli
from auditor.errors import EXIT_FINDINGS, EXIT_OK

TESTS = Path(__file__).resolve().parent.parent


def report(capsys, *args: str) -> tuple[int, dict, str]:
    code = cli.main(["report", "--format", "json", *args])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out else {}, captured.err


def test_a_hung_recording_alone_reads_deadlock(capsys):
    code, doc, err = report(capsys, "--trace", str(TESTS / "waitfor_cases" / "fallback-2-4b-hung"))
    assert code == EXIT_FINDINGS, err
    kinds = {f["kind"] for f in doc["findings"]}
    assert {"run-stopped-in-op", "wait-for-cycle"} <= kinds
    assert "unscanned-p2p" not in kinds  # no scan: nothing was expected to be scanned
    assert err.startswith("p2paudit report: HANG")


def test_a_completed_recording_alone_reads_clean(capsys):
    code, doc, err = report(capsys, "--trace", str(TESTS / "record_fixtures" / "pipeline"))
    assert code == EXIT_OK and doc["verdict"]["status"] == "clean", err
    assert "not scanned" in err


def test_flight_recorder_dumps_alone(capsys):
    code, doc, err = report(capsys, "--flight-recorder",
                            str(TESTS / "fr_dumps" / "gloo-hang" / "json"))
    assert code == EXIT_FINDINGS and doc["verdict"]["status"] != "clean", err
