"""The GPU validation's training script (reports/record-gpu/train_gpt.py) as far as it runs on
CPU: the real megatron-core 0.17.0 and ms-swift 4.3.0 sources, 2 gloo ranks, under
`p2paudit record`. The 1F1B run itself needs GPUs (reports/record-gpu/run.sh); this makes sure
everything before it (imports, megatron's groups, the variants' config and ms-swift's patch,
executed from its own source) works, recorded, before a GPU is spent on it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.dynamic import trace

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "reports" / "record-gpu" / "train_gpt.py"
SMALL = ["--hidden", "128", "--heads", "4", "--layers", "2", "--seq", "256", "--vocab", "512"]


def launch(variant: str, metrics: Path, env: dict[str, str], out: Path | None) -> str:
    train = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
             "2", str(SCRIPT), "--variant", variant, "--cpu-check", "--metrics", str(metrics),
             *SMALL]
    command = train if out is None else [
        sys.executable, "-m", "auditor", "record", "--out", str(out), "--", *train]
    proc = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stderr


@pytest.mark.heavy
@pytest.mark.wheels
def test_train_script_cpu_check(real_sources, tmp_path: Path) -> None:
    roots = [str(real_sources[name].root) for name in ("megatron-core", "ms-swift")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(roots + [str(REPO)]))
    launch("swift", tmp_path / "swift", env, tmp_path / "trace")
    launch("unbatched", tmp_path / "unbatched", env, None)
    swift = [json.loads((tmp_path / "swift" / f"rank-{r}.json").read_text()) for r in (0, 1)]
    plain = [json.loads((tmp_path / "unbatched" / f"rank-{r}.json").read_text()) for r in (0, 1)]
    for result in swift + plain:
        assert result["schedule"] == "forward_backward_pipelining_without_interleaving"
        assert result["variable_seq_lengths"] is True and len(set(result["lengths"])) > 1
    assert all(r["batch_p2p_comm"] is True for r in swift)
    assert all(r["batch_p2p_comm"] is False and r["swift_patch"] is None for r in plain)
    assert all(r["swift_patch"].endswith("swift/megatron/init.py:23") for r in swift)
    t = trace.read_trace_dir(tmp_path / "trace")
    assert sorted(t.ranks) == [0, 1] and t.skipped == []
    for rt in t.ranks.values():
        groups = [e for e in rt.starts("setup") if e["api"] == "new_group"]
        assert groups and all(e["site"]["path"] == "megatron/core/parallel_state.py"
                              for e in groups)
        assert all(e["end"] is not None for e in rt.starts())
