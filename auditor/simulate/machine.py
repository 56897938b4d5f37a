"""What this machine can hold: a simulation's memory estimated before it forks its ranks, an
OOM kill named as one after, and `--jobs` capped at the cores.

A simulated rank is a fork of a process that imported torch and megatron-core; its private
memory is what it copies on write plus the stand-in stage's tensors. Measured with megatron-core
0.17.0, torch 2.13.0 CPU, examples/glm5_1_lora_pp4.sh (PP=4, 4 micro-batches of 24 MiB): the
rank process 347 MiB private before it forks, each rank 220-322 MiB private at its peak (Private_*
of /proc/PID/smaps_rollup, sampled every 0.5 s). The estimate charges each rank a base and two
messages (the received input and the output it keeps) per micro-batch it can hold in flight, plus
four in transit; it is above every measured rank (rank 0: 518 MiB estimated, 322 MiB measured;
rank 3: 374 MiB, 225 MiB)
so that a refusal errs towards not starting a run the kernel would kill.
"""

from __future__ import annotations

import sys
from pathlib import Path

from auditor.static.analyze import usable_cpus

PARENT_BYTES = 365 << 20  # the rank process before it forks (RSS: what the forks share)
RANK_BYTES = 230 << 20  # a forked rank's own pages before its tensors
IN_TRANSIT = 4  # messages a rank holds beyond those of its micro-batches in flight
HEADROOM = 0.9  # of the memory available: what the rest of the machine keeps


def estimate(ranks: int, stages: int, microbatches: int, message_bytes: int) -> int:
    """Bytes a simulation of `ranks` processes is expected to need at its peak: rank r holds up
    to the stages after its own in flight (1F1B's warm-up), at most every micro-batch."""
    per = stages // ranks
    messages = sum(2 * min(microbatches, stages - r * per) + IN_TRANSIT for r in range(ranks))
    return PARENT_BYTES + ranks * RANK_BYTES + messages * message_bytes


def available_memory() -> int | None:
    """Bytes this process may still allocate: the kernel's MemAvailable, lowered by this
    cgroup's limit less its usage where one is set (cgroup v2 memory.max, v1 limit_in_bytes)."""
    found: list[int] = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                found.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    group = _cgroup()
    if group is not None:
        where, v2 = group
        try:
            limit = (where / ("memory.max" if v2 else "memory.limit_in_bytes")).read_text().strip()
            usage = (where / ("memory.current" if v2 else "memory.usage_in_bytes")).read_text()
            if limit != "max" and int(limit) < 1 << 60:
                found.append(int(limit) - int(usage))
        except (OSError, ValueError):
            pass
    return min(found) if found else None


def jobs_option(text: str) -> int:
    """`--jobs N` (an argparse type): at most the usable cores, said once on stderr when capped:
    a worker beyond the cores only waits for one, and each holds its own memory. (A count
    below 1 is the command's to refuse, as bad input.)"""
    asked = int(text)
    cores = usable_cpus()
    if asked > cores:
        print(f"p2paudit: --jobs {asked} is more than this machine's {cores} usable core(s): "
              f"using {cores}", file=sys.stderr, flush=True)
        return cores
    return asked


def refusal(ranks: int, stages: int, microbatches: int, message_bytes: int) -> str | None:
    """Why this machine cannot run the simulation (one sentence with the numbers), or None."""
    need = estimate(ranks, stages, microbatches, message_bytes)
    have = available_memory()
    if have is None or need <= have * HEADROOM:
        return None
    return (f"{ranks} rank processes ({microbatches} micro-batch(es) of {_mib(message_bytes)}) "
            f"need about {_mib(need)}, and this machine has {_mib(have)} available "
            f"({usable_cpus()} core(s)): the kernel would kill the ranks")


def oom_kills() -> int | None:
    """The kernel's count of OOM kills, for this cgroup where it keeps one (v2 memory.events, v1
    memory.oom_control), else the machine's (/proc/vmstat); None where none can be read."""
    group = _cgroup()
    sources = [Path("/proc/vmstat")]
    if group is not None:
        sources.insert(0, group[0] / ("memory.events" if group[1] else "memory.oom_control"))
    for path in sources:
        try:
            for line in path.read_text().splitlines():
                name, _, value = line.partition(" ")
                if name == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            continue
    return None


def killed_words(status: int, kills_before: int | None) -> str | None:
    """What killed a rank process that exited with `status` (128+N: killed by signal N, as
    `auditor.simulate.rank` reports a rank's death), or None when no signal did."""
    if status <= 128 or status > 128 + 64:
        return None
    signum = status - 128
    if signum != 9:
        return f"a rank was killed by signal {signum}"
    after = oom_kills()
    if kills_before is not None and after is not None and after > kills_before:
        return (f"a rank was killed by the kernel's OOM killer (out of memory: {after - kills_before}"
                f" OOM kill(s) during the run); simulate fewer micro-batches (--microbatches) or "
                f"on a machine with more memory")
    return ("a rank was killed by SIGKILL (the kernel's OOM killer kills so; its counter did not "
            "change, so likely another process: see `dmesg | grep -i oom`)")


def _cgroup() -> tuple[Path, bool] | None:
    """This process's memory cgroup directory, and whether it is cgroup v2."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if "memory" in controllers.split(","):
            where = Path("/sys/fs/cgroup/memory") / path.lstrip("/")
            if (where / "memory.limit_in_bytes").exists():
                return where, False
        if hierarchy == "0" and controllers == "":
            where = Path("/sys/fs/cgroup") / path.lstrip("/")
            if (where / "memory.max").exists():
                return where, True
    return None


def _mib(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.0f} MiB"
