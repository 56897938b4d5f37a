"""Re-record the committed fixture traces from toy_pipeline.py (run from the repository root).

    python tests/record_fixtures/regenerate.py

pipeline/  a clean run: `p2paudit record -- torchrun --nproc_per_node 4 toy_pipeline.py`
killed/    the same with TOY_KILL=2: rank 2 SIGKILLs itself after its first recv
hang/      TOY_SLEEP=120 and --hang-after 1: ranks 1-3 block in recv, write hang files; then
           SIGUSR1 and SIGTERM go to `p2paudit record`, and every rank's last hang file says SIGTERM
damaged/   pipeline/ as a SIGKILL during a write and a lost node leave it: rank 1's last line cut
           in half, rank 3's file missing
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT = "tests/record_fixtures/toy_pipeline.py"


def record(out: Path, *options: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "auditor", "record", "--out", str(out), *options, "--",
         sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "4",
         SCRIPT], env=env)


def reasons(out: Path) -> list[str | None]:
    found = []
    for rank in range(4):
        try:
            found.append(json.loads((out / f"hang-rank-{rank}.json").read_text())["reason"])
        except (OSError, ValueError):
            found.append(None)
    return found


def wait_for(predicate, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit("timed out")
        time.sleep(0.1)


def main() -> None:
    work = Path(tempfile.mkdtemp())
    base = os.environ.copy()
    record(work / "pipeline", env=base).wait()
    record(work / "killed", "--hang-after", "30", env=dict(base, TOY_KILL="2")).wait()
    hang = record(work / "hang", "--hang-after", "1", env=dict(base, TOY_SLEEP="120"))
    wait_for(lambda: all(reasons(work / "hang")[1:]), 90)
    hang.send_signal(signal.SIGUSR1)
    wait_for(lambda: reasons(work / "hang") == ["SIGUSR1"] * 4, 30)
    hang.send_signal(signal.SIGTERM)
    hang.wait()
    shutil.copytree(work / "pipeline", work / "damaged")
    (work / "damaged" / "rank-3.jsonl").unlink()
    cut = work / "damaged" / "rank-1.jsonl"
    data = cut.read_bytes()
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    cut.write_bytes(data[: last + (len(data) - last) // 2])
    for name in ("pipeline", "killed", "hang", "damaged"):
        shutil.rmtree(HERE / name, ignore_errors=True)
        shutil.copytree(work / name, HERE / name)
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
