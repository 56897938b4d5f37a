"""Benchmark: `p2paudit record` on a real torchtitan release, unchanged, on this machine's CPUs:
torchtitan 0.2.2 (PyPI) trains its llama3 "debugmodel" flavor at pipeline_parallel_degree=2
(its default schedule, Interleaved1F1B: 2 stages a rank, 8 micro-batches) on 2 gloo processes
under torchrun, 2 steps; then `p2paudit report --trace` judges the recording. Prints the wall
time of the recorded run (and, with --plain, of the same run unrecorded), each rank's op counts
per API, the line that chose each kind of op, and the verdict; asserts nothing. Too slow for CI
(about 80 s, and a torchtitan install of its own): its results are in docs/traces.md.

    python benchmarks/bench_record_titan.py --venv V --workdir W [--setup] [--plain] [--out DIR]

V: a virtual environment (`--setup` makes it: `python -m venv --system-site-packages V`, then
`pip install torchtitan==0.2.2 triton`: torchtitan imports triton at import, models/moe/kernels.py).
W: where the run starts, holding what torchtitan's repository (tag v0.2.2) has and its sdist
lacks: torchtitan/models/llama3/train_configs/debug_model.toml and tests/assets/tokenizer/; its
tests/assets/c4_test/data.json is written as a stand-in (JSON lines {"text": ...} from the
standard library's docstrings) where absent. torchtitan itself is imported from V.

torchtitan 0.2.2 takes `_get_available_device_type() or "cuda"` as its device
(torchtitan/tools/utils.py:37), so on a CPU build of torch it calls torch.cuda.set_device
(train.py:90): benchmarks/titan_cpu_shim/sitecustomize.py, put on PYTHONPATH behind the recorder,
sets that module's device_type to "cpu" (torchtitan then picks gloo itself,
distributed/utils.py:326-334) and its device_module to torch.cpu plus the memory-monitor calls
torch.cpu lacks. No torch or torchtitan communication or schedule code is replaced: every op
recorded is issued by torch.distributed.pipelining as torchtitan drives it.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHIM = ROOT / "benchmarks" / "titan_cpu_shim"
CONFIG = "torchtitan/models/llama3/train_configs/debug_model.toml"
RELEASE = "torchtitan==0.2.2"
TRAIN = ["-m", "torch.distributed.run", "--nproc_per_node=2", "--rdzv_backend", "c10d",
         "--rdzv_endpoint=localhost:0", "-m", "torchtitan.train", "--job.config_file", CONFIG,
         "--training.steps", "2", "--parallelism.pipeline_parallel_degree", "2",
         "--parallelism.data_parallel_shard_degree", "1"]


def setup(venv: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", RELEASE, "triton"],
                   check=True)


def stand_in_c4(workdir: Path) -> None:
    """tests/assets/c4_test/data.json in c4_test's form, where the checkout has none."""
    data = workdir / "tests" / "assets" / "c4_test" / "data.json"
    if data.exists():
        return
    import collections as c
    import json as j
    import re
    import textwrap

    texts = [d for m in (j, c, os, re, textwrap) for name in dir(m)
             if isinstance(d := getattr(getattr(m, name), "__doc__", None), str) and len(d) > 200]
    data.parent.mkdir(parents=True, exist_ok=True)
    data.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts * 5), encoding="utf-8")


def run(python: Path, workdir: Path, out: Path | None) -> float:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(SHIM)])}
    cmd = [str(python), *TRAIN]
    if out is not None:
        cmd = [str(python), "-m", "auditor", "record", "--out", str(out), "--", *cmd]
    print("$", " ".join(cmd), flush=True)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"exit {proc.returncode}:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return seconds


def summary(out: Path) -> None:
    for path in sorted(out.glob("rank-*.jsonl")):
        apis: collections.Counter[str] = collections.Counter()
        chosen: collections.Counter[tuple[str, str, str]] = collections.Counter()
        for text in path.read_text(encoding="utf-8").splitlines():
            line = json.loads(text)
            if line.get("phase") != "start":
                continue
            apis[line["api"]] += 1
            site, frame = line.get("site") or {}, line.get("chosen")
            where = frame or site
            chosen[(line["api"], f"{site.get('path')}:{site.get('line')}",
                    f"{where.get('path')}:{where.get('line')} {where.get('function')}")] += 1
        print(f"{path.name}: " + ", ".join(f"{a} {n}" for a, n in sorted(apis.items())))
        for (api, site, frame), n in sorted(chosen.items()):
            print(f"  {n:4d} {api:<18} site {site:<40} chosen {frame}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, required=True)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--setup", action="store_true", help="make the venv first")
    parser.add_argument("--plain", action="store_true", help="also time the run unrecorded")
    parser.add_argument("--out", type=Path, help="trace directory (default: a temporary one)")
    args = parser.parse_args()
    if args.setup:
        setup(args.venv)
    python = args.venv / "bin" / "python"
    stand_in_c4(args.workdir)
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp) / "trace"
        load = os.getloadavg()[0]
        recorded = run(python, args.workdir, out)
        plain = run(python, args.workdir, None) if args.plain else None
        summary(out)
        report = subprocess.run([sys.executable, "-m", "auditor", "report", "--trace", str(out),
                                 "--format", "json", "-o", str(Path(tmp) / "report.json")],
                                env={**os.environ, "PYTHONPATH": str(ROOT)},
                                capture_output=True, text=True)
        print(f"report exit {report.returncode}: {report.stderr.strip()}")
    print(f"recorded run {recorded:.1f} s" + (f", unrecorded {plain:.1f} s" if plain else "")
          + f"; cores: {os.cpu_count()}, load average at start: {load:.1f}")


if __name__ == "__main__":
    main()
