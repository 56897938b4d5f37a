"""The recorded order as the scan document reads it (auditor.analysis.runreplay.recorded_order):
a scan that leaves torch unknown (no `# torch==` in the script, no --torch) reads as a scan that
says nothing of it, so the recorded run's own torch decides what NCCL would coalesce. The trace
is the shipped megatron-core PP=4 recording on gloo (tests/record_fixtures/megatron_pp4, torch
2.13.0+cpu)."""

from __future__ import annotations

from pathlib import Path

from auditor.analysis.runreplay import nccl_coalesces, recorded_order
from auditor.dynamic.trace import read_trace_dir

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "tests" / "record_fixtures" / "megatron_pp4"


def test_an_unknown_scan_torch_falls_back_to_the_recorded_torch():
    trace = read_trace_dir(TRACE)
    unknown = recorded_order(trace, {"sites": [], "config": {"effective": {"torch_version": "unknown"}}})
    assert unknown.torch_version is None  # never the string "unknown" as a release
    assert unknown.nccl_coalesce == nccl_coalesces("2.13.0+cpu", None) is not None
    assert unknown.nccl_coalesce == recorded_order(trace, {"sites": []}).nccl_coalesce


def test_a_known_scan_torch_is_the_one_judged():
    trace = read_trace_dir(TRACE)
    order = recorded_order(trace, {"sites": [], "config": {"effective": {"torch_version": "2.10.0"}}})
    assert order.torch_version == "2.10.0"
    assert order.nccl_coalesce == nccl_coalesces("2.10.0", None)
