"""Benchmark: `p2paudit export TRACE --format parquet` (pyarrow, the rank files parsed by the
trace reader's own line reading, in worker processes) against DuckDB's `read_ndjson` writing the
same two tables with SQL, and a plain `json.loads` of every line, on the synthetic megatron-core
trace of benchmarks/bench_report.py (--ranks x --events-per-rank). Each measurement runs in a
fresh process; prints medians, output sizes and ratios to `json.loads`; asserts nothing.

DuckDB is the other candidate writer; it is not what `export` uses: its JSON reader refuses the
file of a killed rank (the zeros after the last line, a cut last line) unless told to skip every
malformed line of every file, which would drop lines silently.

    python benchmarks/bench_export.py [--ranks 128] [--events-per-rank 10000] [--repeat 3]
                                      [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

DUCKDB_OPS = """
CREATE TEMP TABLE ev AS SELECT * FROM read_ndjson('{trace}/rank-*.jsonl', filename = true,
  columns = {{seq: 'BIGINT', t: 'DOUBLE', rank: 'INT', api: 'VARCHAR', phase: 'VARCHAR',
  kind: 'VARCHAR', batched: 'BOOLEAN', peer: 'INT', "group": 'JSON', site: 'JSON',
  op_site: 'JSON', via: 'VARCHAR', batch: 'BIGINT', "of": 'BIGINT', how: 'VARCHAR',
  shape: 'BIGINT[]', dtype: 'VARCHAR', comm_init: 'JSON', error: 'VARCHAR'}});
COPY (SELECT s.rank, s.filename AS file, s.seq, s.t, s.api, s.kind, s.batched, s.peer,
   coalesce(s."group"->>'name', s."group"->>'$') AS "group",
   s.site->>'path' AS site_path, (s.site->>'line')::INT AS site_line,
   (s.site->>'end_line')::INT AS site_end_line, s.site->>'function' AS site_function,
   s.op_site->>'path' AS op_site_path, (s.op_site->>'line')::INT AS op_site_line,
   (s.op_site->>'end_line')::INT AS op_site_end_line, s.op_site->>'function' AS op_site_function,
   s.via, s.batch, s.shape, s.dtype, s.comm_init->>'kind' AS comm_init_kind,
   s.comm_init->>'key' AS comm_init_key, e.seq AS end_seq, e.t AS end_t, e.how,
   e.error AS end_error
 FROM ev s LEFT JOIN ev e ON e.phase = 'end' AND e.filename = s.filename AND e."of" = s.seq
 WHERE s.phase = 'start' ORDER BY s.filename, s.seq) TO '{out}/ops.parquet';
COPY (SELECT rank, filename AS file, "group"->>'name' AS name, "group"->>'desc' AS "desc",
   "group"->>'backend' AS backend, ("group"->>'eager')::BOOLEAN AS eager,
   ("group"->>'size')::INT AS size, ("group"->'ranks')::INT[] AS ranks
 FROM ev WHERE phase = 'group') TO '{out}/groups.parquet';
"""


def measure(what: str, trace: str, out: str) -> None:
    """In a child process: one conversion (or the plain parse), seconds as JSON."""
    if what == "json.loads":  # bench_report's baseline, the same measurement
        sys.path.insert(0, str(ROOT / "benchmarks"))
        import bench_report

        bench_report.measure(what, trace, str(Path(trace).parent / "scan.json"), "")
        return
    start = time.perf_counter()
    if what == "export (pyarrow)":
        from auditor.cli import main as cli_main

        if cli_main(["export", trace, "--format", "parquet", "-o", out]):
            raise SystemExit("export failed")
    else:
        import duckdb

        duckdb.connect().execute(DUCKDB_OPS.format(trace=trace, out=out))
    print(json.dumps({"seconds": time.perf_counter() - start}))


def main() -> None:
    parser = argparse.ArgumentParser()
    for flag, default in (("--ranks", 128), ("--events-per-rank", 10_000), ("--repeat", 3)):
        parser.add_argument(flag, type=int, default=default)
    parser.add_argument("--keep", metavar="DIR", help="the trace directory's parent, kept; a "
                        "trace already there is reused")
    parser.add_argument("--measure", nargs=3, metavar=("WHAT", "TRACE", "OUT"))
    args = parser.parse_args()
    if args.measure:
        measure(*args.measure)
        return
    work = Path(args.keep or tempfile.mkdtemp(prefix="p2paudit-bench-export-"))
    work.mkdir(parents=True, exist_ok=True)
    if not (work / "trace").is_dir():
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_report.py"),
                        "--prepare", str(work), str(args.ranks), str(args.events_per_rank)],
                       check=True, capture_output=True)
    trace = work / "trace"
    files = list(trace.iterdir())
    lines = sum(f.read_bytes().count(b"\n") for f in files)
    print(f"{len(files)} ranks, {lines} lines, "
          f"{sum(f.stat().st_size for f in files) / 2**20:.1f} MiB of trace")
    runs: dict[str, list[float]] = {"json.loads": [], "export (pyarrow)": [], "duckdb": []}
    for _ in range(args.repeat):
        for what in runs:
            out = work / what.split()[0]
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            # a fresh process per measurement
            done = subprocess.run([sys.executable, __file__, "--measure", what, str(trace),
                                   str(out)], capture_output=True, text=True)
            if done.returncode:
                raise SystemExit(done.stderr)
            runs[what].append(json.loads(done.stdout.strip().splitlines()[-1])["seconds"])
    base = statistics.median(runs["json.loads"])
    for what, seconds in runs.items():
        out = work / what.split()[0]
        size = sum(f.stat().st_size for f in out.glob("*.parquet"))
        print(f"{what:<18} {statistics.median(seconds):7.2f} s  "
              f"{statistics.median(seconds) / base:5.2f}x json.loads  "
              f"{size / 2**20:6.1f} MiB of Parquet  (median of {args.repeat})")
    print(f"files kept in {work}")


if __name__ == "__main__":
    main()
