"""Benchmark: what `p2paudit record` adds to each intercepted torch.distributed call, on CPU.

Baseline and recorded calls are measured in the same processes, in alternating blocks (hooks
installed, then removed, then installed again...), so drift hits both alike. Two settings:
- "fake": torch's FakeProcessGroup (2 ranks in one process, ops return at once): the call is
  nearly all Python, so the difference is the recorder's own cost per call;
- "gloo": two real processes exchanging small tensors over gloo: the cost against a real op.
Each recorded call writes its trace lines to a real file. Prints medians (ns per call), the
difference, the ratio, and the difference per intercepted call (a case's calls into hooked
functions: `isend + Work.wait` is two, a 2-op `batch_isend_irecv` with its P2POps five); asserts
nothing. Target: <= 5 us added per intercepted call. First, a process that records isends and
SIGKILLs itself: what its file reads back (every op, up to the last).

    python benchmarks/bench_record.py [--calls 2000] [--rounds 10]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from collections.abc import Callable

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d
import torch.multiprocessing as mp

from auditor.dynamic import hooks
from auditor.dynamic.recorder import Recorder


def timed_calls(call: Callable[[], object], n: int) -> list[int]:
    clock = time.perf_counter_ns
    samples = []
    for _ in range(n):
        start = clock()
        call()
        samples.append(clock() - start)
    return samples


def alternate(cases: dict[str, Callable[[], object]], rank: int, out: Path, calls: int,
              rounds: int, sync: Callable[[], None]) -> dict[str, tuple[float, float]]:
    """Median ns per call of each case, unhooked and recorded, in alternating blocks."""
    samples: dict[str, tuple[list[int], list[int]]] = {k: ([], []) for k in cases}
    for r in range(rounds):
        for recorded in (False, True):
            if recorded:
                rec = Recorder(out / f"round-{r}", hang_after=0)
                hooks.install(rec, c10d)
                rec.open(rank)
            try:
                for name, call in cases.items():
                    sync()
                    samples[name][recorded].extend(timed_calls(call, calls))
            finally:
                if recorded:
                    hooks.uninstall()
    return {k: (statistics.median(p), statistics.median(h)) for k, (p, h) in samples.items()}


# Intercepted calls per case: the hooked functions a call of the case goes through.
INTERCEPTED = {"isend + Work.wait": 2, "batch_isend_irecv (2 ops)": 5,
               "batch_isend_irecv + wait": 7}


def report(setting: str, medians: dict[str, tuple[float, float]]) -> None:
    for name, (plain, hooked) in medians.items():
        calls = INTERCEPTED.get(name, 1)
        print(f"{setting:5} {name:28} unhooked {plain:9.0f} ns   recorded {hooked:9.0f} ns   "
              f"added {hooked - plain:7.0f} ns   ratio {hooked / plain:5.2f}   "
              f"added per intercepted call ({calls}) {(hooked - plain) / calls:7.0f} ns")


def fake(calls: int, rounds: int, out: Path) -> None:
    from torch.testing._internal.distributed.fake_pg import FakeStore

    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=2)
    t = torch.ones(1024)
    cases = {
        "isend": lambda: dist.isend(t, dst=1),
        "irecv": lambda: dist.irecv(t, src=1),
        "isend + Work.wait": lambda: dist.isend(t, dst=1).wait(),
        "batch_isend_irecv (2 ops)": lambda: dist.batch_isend_irecv(
            [dist.P2POp(dist.isend, t, 1), dist.P2POp(dist.irecv, t, 1)]),
        "all_reduce": lambda: dist.all_reduce(t),
    }
    report("fake", alternate(cases, 0, out, calls, rounds, lambda: None))
    dist.destroy_process_group()


def gloo_worker(rank: int, calls: int, rounds: int, out: str, init: str) -> None:
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
    peer = 1 - rank
    t = torch.ones(256)

    def exchange() -> None:
        ops = [dist.P2POp(dist.isend, t, peer), dist.P2POp(dist.irecv, torch.empty(256), peer)]
        for work in dist.batch_isend_irecv(ops):
            work.wait()

    def send_recv() -> None:
        if rank == 0:
            dist.send(t, peer)
        else:
            dist.recv(t, peer)

    cases = {"send/recv": send_recv, "batch_isend_irecv + wait": exchange,
             "all_reduce": lambda: dist.all_reduce(t)}
    medians = alternate(cases, rank, Path(out), calls, rounds, dist.barrier)
    if rank == 0:
        report("gloo", medians)
    dist.destroy_process_group()


def killed_worker(out: str, calls: int) -> None:
    """Records `calls` isends on the fake backend, says how many, and SIGKILLs itself: no exit
    handler runs, the file is left as the memory map had it."""
    from torch.testing._internal.distributed.fake_pg import FakeStore

    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=2)
    rec = Recorder(Path(out), hang_after=0)
    hooks.install(rec, c10d)
    rec.open(0)
    t = torch.ones(4)
    works = [dist.isend(t, dst=1) for _ in range(calls)]
    print(f"{len(works)} isends issued, last seq {rec.seq}", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


def killed(out: Path, calls: int) -> None:
    """A rank killed right after its last op: its file must still read back to that op."""
    from auditor.dynamic.trace import read_trace_dir

    proc = subprocess.run([sys.executable, __file__, "--killed", str(out), str(calls)],
                          capture_output=True, text=True)
    t = read_trace_dir(out)
    last = t.ranks[0].head[-1] if t.ranks[0].complete else None
    print(f"SIGKILL after {calls} isends (exit {proc.returncode}): {proc.stdout.strip()}; the "
          f"file reads back {t.ranks[0].ops} op(s), {len(t.ranks[0].pending())} pending, last "
          f"line seq {last and last['seq']}; notes: {'; '.join(t.skipped) or 'none'}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000, help="calls per block")
    parser.add_argument("--rounds", type=int, default=10, help="blocks of each kind")
    parser.add_argument("--killed", nargs=2, metavar=("OUT", "CALLS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.killed:
        killed_worker(args.killed[0], int(args.killed[1]))
        return
    print(f"torch {torch.__version__}, Python {sys.version.split()[0]}, {os.cpu_count()} cores, "
          f"{args.rounds} x {args.calls} calls per case and mode")
    with tempfile.TemporaryDirectory() as tmp:
        killed(Path(tmp) / "killed", args.calls)
        fake(args.calls, args.rounds, Path(tmp) / "fake")
        init = f"file://{tmp}/rendezvous"
        mp.spawn(gloo_worker, args=(args.calls, args.rounds, f"{tmp}/gloo", init), nprocs=2)


if __name__ == "__main__":
    main()
