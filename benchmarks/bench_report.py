"""Benchmark: `p2paudit report` (read + join + wait-for + HTML) of a large synthetic trace,
against a plain `json.loads` of every line of the same files.

The trace is tests/analysis/test_join.py's synthetic megatron-core pipeline (shapes and activations in
batch_isend_irecv calls at the real sites of megatron-core 0.17.0, each batch run op by op, a
start and an end line per op) over --ranks ranks; --events-per-rank sets its length (on average
over the stages: the first and last stage issue half as many ops). The scan is the seed
script's (examples/glm5_1_lora_pp4.sh at torch 2.10.0). The baseline, measured in the same run,
is one process doing `json.loads` of every line of every rank file and keeping nothing. Each
measurement runs in a fresh process (its peak RSS is that process's, interpreter and imports
included). Prints medians; asserts nothing. Targets (issue 12): 128 ranks x 10k events <= 2x the
plain parse and <= 1 GiB; 1,024 ranks x 20k events <= 1 GiB; HTML <= 5 MB.

    python benchmarks/bench_report.py [--ranks 128] [--events-per-rank 10000] [--repeat 3]
                                      [--keep DIR] [--pairs N]

`--pairs N`: instead, a 2-rank recording of N blocking send/recv pairs (a ping-pong on the default
group), the shape whose replay was quadratic (issue 28 item 12: 10 s at 4,000 pairs).

`--flight-recorder-entries N` measures instead the Flight Recorder reader on two ranks' dumps of
N/4, N/2 and N entries in the shape that made it quadratic (issue 28 item 12: coalescing-window
closers each on a group of their own after a run of another group's collectives; 32k entries
took > 120 s): the time must about double with the entries.
"""

from __future__ import annotations

import argparse
import json
import os
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
    if what == "json.loads":
        for file in sorted(Path(trace).iterdir()):
            with file.open("rb") as f:
                for line in f:
                    json.loads(line)
    else:
        text = render_html(join(doc, read_trace_dir(trace)))
        Path(html).write_text(text, encoding="utf-8")
    seconds = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    # The reader's worker processes (large traces): the largest one's peak, times the workers.
    worker = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    workers = min(os.cpu_count() or 1, len(list(Path(trace).glob("rank-*.jsonl"))))
    print(json.dumps({"seconds": seconds, "rss": rss + worker * workers if worker else rss}))


def child(*argv: str) -> dict:
    """A fresh process from this lean one (a child's peak RSS starts from its parent's image)."""
    out = subprocess.run([sys.executable, __file__, *argv], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def prepare(work: str, ranks: int, events_per_rank: int, pairs: int = 0) -> None:
    """In a child process: the seed scan, and the trace written rank by rank."""
    sys.path.insert(0, str(ROOT))
    from tests.analysis.test_join import group, megatron_programs, write_trace

    from auditor.scan import ScanInputs, run_scan

    root = Path(work)
    scan = run_scan(ScanInputs(str(SEED), torch_version="2.10.0"))
    (root / "scan.json").write_text(json.dumps(scan))
    start = time.perf_counter()
    if pairs:
        default = dict(group([0, 1], "default_pg", "0"), backend="gloo")  # as a CPU recording
        write_trace(root / "trace", {r: [{"api": "send" if (i + r) % 2 == 0 else "recv", "kind": "p2p",
                                          "peer": 1 - r, "group": default, "shape": [4], "dtype": "float32"}
                                         for i in range(2 * pairs)] for r in (0, 1)}, world=2)
        print(json.dumps({"seconds": time.perf_counter() - start, "events": 8 * pairs}))
        return
    # One micro-batch's ops (forward, then backward), repeated: per micro-batch the four stages
    # write 8, 16, 16 and 8 lines (a start and an end per op), 12 per rank on average.
    microbatches = max(1, -(-events_per_rank // 12))
    once = megatron_programs(scan["sites"], world=ranks, pp=4, microbatches=1)
    write_trace(root / "trace", {r: _repeat(ops, microbatches) for r, ops in once.items()},
                world=ranks)
    events = 2 * microbatches * sum(len(ops) for ops in once.values())
    print(json.dumps({"seconds": time.perf_counter() - start, "events": events}))


def _repeat(ops: list[dict], times: int):
    """`ops` `times` over, each batch_isend_irecv call with its own batch id; the communicator
    creations only the first time."""
    batches = max(op["batch"] for op in ops)
    for k in range(times):
        for op in ops:
            op = dict(op, batch=op["batch"] + k * batches)
            if k:
                op.pop("comm_init", None)
            yield op


def flight_recorder_dumps(root: Path, entries: int) -> None:
    """Two ranks' JSON dumps (format 2.10) of `entries` entries each: half all_reduce on group 1,
    then `nccl:coalesced` closers, each on a group no other entry is on."""
    rows = []
    for i in range(entries):
        group, name = (["1", "g1"], "nccl:all_reduce") if i < entries // 2 else \
            ([f"c{i}", "coalesced"], "nccl:coalesced")
        rows.append({"record_id": i, "process_group": group, "collective_seq_id": i,
                     "p2p_seq_id": i, "op_id": i, "profiling_name": name,
                     "state": "completed", "retired": True})
    dump = {"version": "2.10", "entries": rows,
            "pg_config": {"1": {"name": "1", "desc": "g1", "ranks": "[0, 1]"}}}
    root.mkdir(parents=True, exist_ok=True)
    for rank in range(2):
        (root / f"rank{rank}.json").write_text(json.dumps(dump))


def bench_flight_recorder(entries: int, repeat: int) -> None:
    from auditor.dynamic.flight_recorder import read_flight_recorder

    with tempfile.TemporaryDirectory(prefix="p2paudit-bench-fr-") as work:
        for n in (entries // 4, entries // 2, entries):
            flight_recorder_dumps(Path(work) / str(n), n)
            times = []
            for _ in range(repeat):
                start = time.perf_counter()
                read_flight_recorder(Path(work) / str(n))
                times.append(time.perf_counter() - start)
            print(f"flight recorder, 2 ranks x {n:>6} entries: {statistics.median(times):7.3f} s "
                  f"(median of {repeat})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, default=128)
    parser.add_argument("--events-per-rank", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", metavar="DIR", help="write the trace here (and keep it); "
                        "reuse it when it already holds one")
    parser.add_argument("--measure", nargs=4, metavar=("WHAT", "TRACE", "SCAN", "HTML"))
    parser.add_argument("--pairs", type=int, default=0, help="a 2-rank trace of N send/recv pairs")
    parser.add_argument("--prepare", nargs=4, metavar=("WORK", "RANKS", "EVENTS", "PAIRS"))
    parser.add_argument("--flight-recorder-entries", type=int, metavar="N",
                        help="measure the Flight Recorder reader on dumps of up to N entries")
    args = parser.parse_args()
    if args.flight_recorder_entries:
        bench_flight_recorder(args.flight_recorder_entries, args.repeat)
        return
    if args.measure:
        measure(*args.measure)
        return
    if args.prepare:
        prepare(args.prepare[0], int(args.prepare[1]), int(args.prepare[2]), int(args.prepare[3]))
        return
    work = Path(args.keep or tempfile.mkdtemp(prefix="p2paudit-bench-report-"))
    work.mkdir(parents=True, exist_ok=True)
    if not (work / "trace").is_dir():
        made = child("--prepare", str(work), str(args.ranks), str(args.events_per_rank), str(args.pairs))
        print(f"trace written in {made['seconds']:.1f} s")
    files = list((work / "trace").iterdir())
    lines = sum(f.read_bytes().count(b"\n") for f in files)
    size = sum(f.stat().st_size for f in files)
    print(f"{len(files)} ranks, {lines} lines ({lines / len(files):.0f} per rank), "
          f"{size / 2**20:.1f} MiB of trace")
    runs: dict[str, list[dict]] = {"json.loads": [], "report": []}
    for _ in range(args.repeat):
        for what in runs:
            runs[what].append(child("--measure", what, str(work / "trace"),
                                    str(work / "scan.json"), str(work / "report.html")))
    base = statistics.median(r["seconds"] for r in runs["json.loads"])
    for what, results in runs.items():
        seconds = statistics.median(r["seconds"] for r in results)
        rss = statistics.median(r["rss"] for r in results)
        print(f"{what:<10} {seconds:7.3f} s  {seconds / base:5.2f}x json.loads  "
              f"peak RSS {rss / 2**20:7.1f} MiB  (median of {args.repeat})")
    html = (work / "report.html").stat().st_size
    print(f"HTML       {html / 2**20:7.2f} MB   (targets: report <= 2x json.loads at 128 x 10k, "
          f"<= 1 GiB, HTML <= 5 MB)")
    print(f"files kept in {work}")


if __name__ == "__main__":
    main()
