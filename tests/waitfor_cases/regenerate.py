"""Re-record the wait-for fixtures: real `p2paudit record` traces of `p2paudit repro` gloo runs.

    python tests/waitfor_cases/regenerate.py        (from the repository root; about a minute)

Each directory is one recorded run of a reproducer's op sequence on gloo (CPU). The runs that
complete record the whole sequence, waits included; `cases.toml` then asks the wait-for model
what the same sequence does under NCCL conditions (transport, coalescing, init) and holds the
answer docs/findings.md measured on GPUs. `fallback-2-4b-hung` is a run that really hung (gloo buffers
nothing, so send-before-receive blocks at 4 bytes): its trace stops where the ranks blocked.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

RUNS: dict[str, list[str]] = {
    "lazy-init-2": ["lazy-init", "--nproc", "2"],
    "lazy-init-4": ["lazy-init", "--nproc", "4"],
    "lazy-init-2-coalesced": ["lazy-init", "--nproc", "2", "--fix", "coalesced"],
    "lazy-init-2-unbatched": ["lazy-init", "--nproc", "2", "--fix", "unbatched"],
    # The real batch_isend_irecv on gloo runs op by op without waits in between, so these
    # complete and record every batch of the step, with its batch id.
    "fallback-2-32mib": ["fallback-1f1b", "--size", "32MiB", "--fix", "coalesced"],
    "fallback-2-4mib": ["fallback-1f1b", "--size", "4MiB", "--fix", "coalesced"],
    "fallback-2-16kib": ["fallback-1f1b", "--size", "16KiB", "--fix", "coalesced"],
    "fallback-4-32mib": ["fallback-1f1b", "--nproc", "4", "--size", "32MiB", "--fix", "coalesced"],
    "fallback-2-32mib-evenodd": ["fallback-1f1b", "--size", "32MiB", "--fix", "evenodd",
                                 "--variable-seq-lengths", "false"],
    "fallback-2-4b-hung": ["fallback-1f1b", "--size", "4", "--variable-seq-lengths", "false",
                           "--timeout", "4"],
}


def main() -> int:
    for name, argv in RUNS.items():
        out = HERE / name
        shutil.rmtree(out, ignore_errors=True)
        command = [sys.executable, "-m", "auditor", "record", "--out", str(out), "--hang-after",
                   "2", "--", sys.executable, "-m", "auditor", "repro", *argv, "--backend", "gloo"]
        done = subprocess.run(command, capture_output=True, text=True)
        print(f"{name}: exit {done.returncode}: {done.stdout.strip()[:160]}")
        for extra in out.glob("*.json"):  # hang files hold wall-clock stacks; keep traces only
            if name != "fallback-2-4b-hung":
                extra.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
