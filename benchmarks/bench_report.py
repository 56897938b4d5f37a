"""Benchmark: join + HTML report for a large synthetic trace, against reading the same trace.

The trace is tests/test_join.py's synthetic megatron-core pipeline (shapes and activations in
batch_isend_irecv calls at the real sites of megatron-core 0.17.0, each batch run op by op, a
start and an end line per op) over --ranks ranks; --microbatches sets its length. The scan is the
seed script's (examples/glm5_1_lora_pp4.sh at torch 2.10.0). The baseline is
`auditor.dynamic.trace.read_trace_dir` of the same directory, measured in the same run: the join
reads the trace with it, so the ratio is what the join and the HTML add. Each measurement runs in
a fresh process (its peak RSS is that process's, interpreter and imports included). Prints
medians; asserts nothing. Targets (issue 5): <= 10 s, <= 1 GiB, HTML <= 5 MB.

    python benchmarks/bench_report.py [--ranks 1024] [--microbatches 2] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "examples" / "glm5_1_lora_pp4.sh"


def measure(what: str, trace: str, scan: str, html: str) -> None:
    """In a child process: time one operation, print seconds and peak RSS as JSON."""
    from auditor.analysis.join import join
    from auditor.dynamic.trace import read_trace_dir
    from auditor.report.html import render_html

    doc = json.loads(Path(scan).read_text())
    start = time.perf_counter()
    if what == "read":
        read_trace_dir(trace)
    else:
        text = render_html(join(doc, trace))
        Path(html).write_text(text, encoding="utf-8")
    seconds = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": seconds, "rss": rss}))


def child(what: str, trace: Path, scan: Path, html: Path) -> dict:
    out = subprocess.run([sys.executable, __file__, "--measure", what, str(trace), str(scan),
                          str(html)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--microbatches", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--measure", nargs=4, metavar=("WHAT", "TRACE", "SCAN", "HTML"))
    args = parser.parse_args()
    if args.measure:
        measure(*args.measure)
        return
    sys.path.insert(0, str(ROOT / "tests"))
    from test_join import megatron_programs, write_trace

    from auditor.scan import ScanInputs, run_scan

    work = Path(tempfile.mkdtemp(prefix="p2paudit-bench-report-"))
    scan = run_scan(ScanInputs(str(SEED), torch_version="2.10.0"))
    (work / "scan.json").write_text(json.dumps(scan))
    start = time.perf_counter()
    programs = megatron_programs(scan["sites"], world=args.ranks, pp=4,
                                 microbatches=args.microbatches)
    write_trace(work / "trace", programs, world=args.ranks)
    made = time.perf_counter() - start
    events = 2 * sum(len(p) for p in programs.values())
    size = sum(f.stat().st_size for f in (work / "trace").iterdir())
    print(f"{args.ranks} ranks, {events} events ({events / args.ranks:.0f} per rank), "
          f"{size / 2**20:.1f} MiB of trace; written in {made:.1f} s")
    runs = {"read": [], "join+html": []}
    for _ in range(args.repeat):
        for what in runs:
            runs[what].append(child(what, work / "trace", work / "scan.json", work / "report.html"))
    base = statistics.median(r["seconds"] for r in runs["read"])
    for what, results in runs.items():
        seconds = statistics.median(r["seconds"] for r in results)
        rss = statistics.median(r["rss"] for r in results)
        print(f"{what:<10} {seconds:7.3f} s  {seconds / base:5.2f}x read_trace_dir  "
              f"peak RSS {rss / 2**20:7.1f} MiB  (median of {args.repeat})")
    html = (work / "report.html").stat().st_size
    print(f"HTML       {html / 2**20:7.2f} MB   (targets: join+html <= 10 s, <= 1 GiB, HTML <= 5 MB)")
    print(f"files kept in {work}")


if __name__ == "__main__":
    main()
