"""PP-BugBench diffusion-pipe-511: DeepSpeed 0.18.4's own PipelineEngine on 3 gloo ranks, recorded.

Each side runs as `benchmarks/ppbugs/cases/diffusion-pipe-511/case.toml` writes it (the driver under
`p2paudit record`, then `p2paudit report --transport`). On the buggy side the middle stage receives
rank 0's int64 `[2]` into a float32 `[2]` view of its pooled buffer and gloo stops rank 1 on the size
check; the report must pair that send with that receive. The fixed side (PR #544's patch) must be
clean. The runs need deepspeed==0.18.4 installed (p2paudit's `ppbugs` extra; about 30 s a side on
2 cores); the patch check reads the release's sdist from the p2paudit cache instead.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from tests.ppbugs.test_ppbugs_corpus import free_port, release_root

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "benchmarks" / "ppbugs" / "cases" / "diffusion-pipe-511"
SIDES = {s["name"]: s for s in tomllib.loads((CASE / "case.toml").read_text(encoding="utf-8"))["side"]}
DEEPSPEED = "0.18.4"


def installed_deepspeed() -> str | None:
    try:
        return importlib.metadata.version("deepspeed")
    except importlib.metadata.PackageNotFoundError:
        return None


needs_deepspeed = pytest.mark.skipif(
    installed_deepspeed() != DEEPSPEED,
    reason=f"needs deepspeed=={DEEPSPEED} installed (pip install '.[ppbugs]'), found {installed_deepspeed()}")


def p2paudit(*args: str, cwd: Path = ROOT, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "auditor", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def inventory(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sites") / "sites.json"
    done = p2paudit("sites", str(CASE), "--format", "json", "-o", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def recorded_report(side_name: str, inventory: Path, tmp: Path) -> tuple[int, dict]:
    """Record the side's command in the case folder, then report it over the side's transport."""
    side = SIDES[side_name]
    command = [str(free_port()) if arg == "{port}" else arg for arg in side["command"]]
    trace = tmp / "trace"
    # The driver ends itself before the side's timeout; the margin covers torchrun's own exit.
    p2paudit("record", "--out", str(trace), "--hang-after", "10", "--", *command, cwd=CASE,
             timeout=side["timeout"] + 30)
    out = tmp / "report.json"
    done = p2paudit("report", "--scan", str(inventory), "--trace", str(trace), "--transport", side["transport"],
                    "--format", "json", "-o", str(out))
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return done.returncode, json.loads(out.read_text(encoding="utf-8"))


@pytest.mark.heavy
@needs_deepspeed
def test_buggy_side_pairs_the_int64_send_with_the_float32_receive(inventory, tmp_path):
    rc, doc = recorded_report("buggy", inventory, tmp_path)
    assert rc == 1
    kinds = {f["kind"] for f in doc["findings"] if f["severity"] == "error"}
    assert "p2p-mismatch" in kinds
    mismatch = next(f for f in doc["findings"] if f["kind"] == "p2p-mismatch")
    pair = mismatch["detail"]["pairs"][0]
    send, recv = pair["send"], pair["recv"]
    assert (send["rank"], send["api"], send["dtype"], send["bytes"]) == (0, "send", "int64", 16)
    assert (recv["rank"], recv["api"], recv["dtype"], recv["bytes"]) == (1, "recv", "float32", 8)
    # The lines that call torch.distributed: DeepSpeed's comm backend, for the engine's p2p.send/recv.
    assert send["site"] == "deepspeed/comm/torch.py:319" and recv["site"] == "deepspeed/comm/torch.py:323"
    assert pair["communicator"] == "default_pg:0-1" and pair["what"] == "size and dtype"
    assert mismatch["where"] == send["site"]


@pytest.mark.heavy
@needs_deepspeed
def test_fixed_side_is_clean(inventory, tmp_path):
    rc, doc = recorded_report("fixed", inventory, tmp_path)
    assert rc == 0, [f["message"] for f in doc["findings"] if f["severity"] == "error"]
    assert not [f for f in doc["findings"] if f["severity"] == "error"]
    trace = doc["run"]["trace"]
    assert (trace["ranks"], trace["pending"], trace["raised"]) == (3, {}, {})
    assert doc["run"]["waitfor"]["mismatched_pairs"] == [] and doc["run"]["waitfor"]["complete"]
    # The middle stage received the int64 tensor as int64 in each of the driver's 4 micro-batches
    # (the buggy side gets 2 before the grad receive turns its buffer into float).
    ops = [json.loads(line) for line in (tmp_path / "trace" / "rank-1.jsonl").read_text().splitlines()]
    int64_receives = [op for op in ops if op.get("api") == "recv" and op.get("peer") == 0
                      and (op.get("shape"), op.get("dtype")) == ([2], "int64")]
    assert len(int64_receives) == 4


@pytest.mark.wheels
def test_fixed_side_is_deepspeeds_method_plus_the_dtype_test():
    """The driver's `fixed` patch is DeepSpeed 0.18.4's `_allocate_or_extend_buffers` with PR #544's one
    clause, and nothing else: the fixed side differs from the buggy one only where the PR does."""
    engine = release_root(f"deepspeed=={DEEPSPEED}") / "deepspeed" / "runtime" / "pipe" / "engine.py"
    cls = next(n for n in ast.parse(engine.read_text(encoding="utf-8")).body
               if isinstance(n, ast.ClassDef) and n.name == "PipelineEngine")
    upstream = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "_allocate_or_extend_buffers")
    patched = next(n for n in ast.parse((CASE / "driver.py").read_text(encoding="utf-8")).body
                   if isinstance(n, ast.FunctionDef) and n.name == "allocate_or_extend_buffers_checking_dtype")
    body = patched.body[1:]  # past the docstring
    condition = body[1].test
    assert isinstance(condition, ast.BoolOp) and isinstance(condition.op, ast.Or)
    added = condition.values.pop()
    assert ast.unparse(added) == "self._grad_layer_buf[idx].dtype != dtype"
    assert [ast.dump(s) for s in body] == [ast.dump(s) for s in upstream.body]
    assert ast.dump(patched.args) == ast.dump(upstream.args)
