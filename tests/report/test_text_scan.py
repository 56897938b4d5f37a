"""The scan as text, read in a terminal: an explanation shared by many sites is said once with
their lines under it (`--verbose`: once per site), nothing prints `None`, and the grouping is
presentation only (the JSON does not change)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SEED = "examples/glm5_1_lora_pp4.sh"


def scan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", SEED, *args],
                          capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env=dict(os.environ))


@pytest.fixture(scope="module")
def seed(real_sources) -> dict:
    grouped = scan("--torch", "2.10.0")
    verbose = scan("--torch", "2.10.0", "--verbose")
    as_json = scan("--torch", "2.10.0", "--format", "json")
    as_json_verbose = scan("--torch", "2.10.0", "--format", "json", "--verbose")
    return {"text": grouped.stdout, "verbose": verbose.stdout,
            "doc": json.loads(as_json.stdout), "doc_verbose": json.loads(as_json_verbose.stdout),
            "codes": {grouped.returncode, verbose.returncode, as_json.returncode}}


def _repeats(text: str) -> list[tuple[str, int]]:
    counts = Counter(line for line in text.splitlines() if line.strip())
    return [(line, n) for line, n in counts.most_common() if n > 3]


@pytest.mark.heavy
def test_no_line_of_the_shipped_scan_repeats_more_than_three_times(seed):
    assert seed["codes"] == {1}
    assert _repeats(seed["text"]) == []
    # Without grouping the ten contradictions repeat their `why` ten times (the report).
    why = next(s["unbatched_reason"] for s in seed["doc"]["sites"] if s["verdict"] == "contradiction")
    assert seed["verbose"].count(f"why: {why}") == 10
    assert seed["text"].count(f"why: {why}") == 1


def test_grouping_loses_no_site_or_explanation(seed):
    text = seed["text"]
    sites = [s for s in seed["doc"]["sites"] if s["verdict"] in ("contradiction", "ok")]
    blocks = re.findall(r"^    (\S+)  (\S+)(?:  groups: .*)?\n      lines: (.*)$", text, re.M)
    listed = {(path, function, int(entry.split()[0]))
              for function, path, lines in blocks for entry in lines.split(", ")}
    assert listed == {(s["path"], s["function"], s["line"]) for s in sites}
    for s in sites:
        assert "; ".join(s["guards"]) in text
        assert any(step in text for step in s["paths"][0][-1:])
        for group in s["groups"]:
            assert f"groups: {group}" in text
    assert "10 site(s) in 2 function(s)" in text


def test_json_is_the_same_with_or_without_verbose(seed):
    """(`analysis` holds the run's own counters and time, which vary from run to run.)"""
    a, b = seed["doc"], seed["doc_verbose"]
    assert {k: v for k, v in a.items() if k != "analysis"} == \
        {k: v for k, v in b.items() if k != "analysis"}


def test_no_none_and_no_empty_entry_line_for_a_directory_target(real_sources, tmp_path):
    target = tmp_path / "mytrain"
    target.mkdir()
    (target / "__init__.py").write_text(
        "import torch.distributed as dist\n\n\ndef step(x, peer):\n    dist.send(x, peer)\n")
    proc = scan("--torch", "2.10.0", "--target", str(target))
    assert proc.returncode in (0, 1), proc.stderr
    lines = proc.stdout.splitlines()
    assert "None" not in proc.stdout
    assert lines[1].startswith(f"targets: {target} (not recognised: ")
    assert lines[2].startswith("entry points: none (")
    assert not [line for line in lines if re.fullmatch(r"(entry points|targets):\s*", line)]
    with_entry = scan("--torch", "2.10.0", "--target", str(target), "--entry", "mytrain:step")
    assert "entry points: mytrain:step" in with_entry.stdout.splitlines()
    sites = subprocess.run([sys.executable, "-m", "auditor", "sites", str(target)],
                           capture_output=True, text=True, cwd=ROOT, env=dict(os.environ))
    assert "None" not in sites.stdout and f"{target} (not recognised: " in sites.stdout


def test_a_run_with_no_pipeline_names_no_entry_point(capsys, tmp_path):
    """A conversion reaching no schedule (tests/analysis/test_schedule_reach.py, after FlagScale's
    hf2mcore convertor) is NOT A PIPELINE RUN: the header named "entry points: megatron-core
    pipeline schedule" above it, as if the schedule had been analysed."""
    from auditor import cli
    from tests.analysis.test_schedule_reach import _conversion

    code = cli.main(["scan", "--config", str(_conversion(tmp_path))])
    text = capsys.readouterr().out
    assert code == 0 and "NOT A PIPELINE RUN" in text, text
    assert not [line for line in text.splitlines() if line.startswith("entry points:")]
