"""The recorded order as the scan document reads it (auditor.analysis.runreplay.recorded_order):
a scan that leaves the cluster's torch unknown (no `# torch==` in the script, no --torch) leaves
what NCCL would coalesce undecided: a gloo recording's torch is the recording machine's (here a
+cpu build), not the cluster's. Without a scan's word, the recorded torch is used. The trace
is the shipped megatron-core PP=4 recording on gloo (tests/record_fixtures/megatron_pp4, torch
2.13.0+cpu)."""

from __future__ import annotations

from pathlib import Path

from auditor.analysis.runreplay import nccl_coalesces, recorded_order
from auditor.dynamic.trace import read_trace_dir

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "tests" / "record_fixtures" / "megatron_pp4"


def test_an_unknown_scan_torch_stays_unknown():
    trace = read_trace_dir(TRACE)
    unknown = recorded_order(trace, {"sites": [], "config": {"effective": {"torch_version": "unknown"}}})
    assert unknown.torch_version is None  # never the string "unknown" as a release
    assert unknown.nccl_coalesce is None  # the laptop's +cpu torch does not decide it


def test_without_a_scan_torch_the_recorded_torch_decides():
    trace = read_trace_dir(TRACE)
    bare = recorded_order(trace, {"sites": []})
    assert bare.nccl_coalesce == nccl_coalesces("2.13.0+cpu", None) is not None


def test_a_known_scan_torch_is_the_one_judged():
    trace = read_trace_dir(TRACE)
    order = recorded_order(trace, {"sites": [], "config": {"effective": {"torch_version": "2.10.0"}}})
    assert order.torch_version == "2.10.0"
    assert order.nccl_coalesce == nccl_coalesces("2.10.0", None)
