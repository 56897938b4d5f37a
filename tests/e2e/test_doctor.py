"""`p2paudit doctor` on 4 real gloo ranks (CPU): what it observes, who prints, and disagreement."""

from __future__ import annotations

import pytest
import json
import os
import subprocess
import sys
import textwrap

import torch

from auditor.errors import EXIT_FINDINGS, EXIT_INPUT
from auditor.dynamic.localranks import free_port


def doctor(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full_env = dict(os.environ, **(env or {}))
    for name in ("TORCH_DISTRIBUTED_DEBUG", "NCCL_TIMEOUT", "RANK", "WORLD_SIZE"):
        if name not in (env or {}):
            full_env.pop(name, None)
    return subprocess.run([sys.executable, "-m", "auditor", "doctor", *argv], env=full_env,
                          capture_output=True, text=True, timeout=180)


@pytest.mark.heavy
def test_four_gloo_ranks_rank_0_alone_prints_one_screen():
    done = doctor("--nproc", "4", "--backend", "gloo", "--pp", "2")
    assert done.returncode == EXIT_FINDINGS, done.stderr  # gloo's batches do not coalesce
    out = done.stdout
    assert out.count("p2paudit doctor:") == 1  # rank 0 only
    assert f"4 ranks on 1 host(s); torch {torch.__version__}" in out
    assert "TORCH_DISTRIBUTED_DEBUG: OFF" in out
    # Megatron-style strided PP groups of 2 out of 4: rank 0 is in [0, 2].
    assert "  pp[0, 2]" in out and "  default" in out
    assert "gloo: ProcessGroupGloo in ProcessGroup, init at creation" in out
    assert out.count("supports_coalescing=False; 2-op batch_isend_irecv did NOT coalesce") == 2
    assert "will NOT coalesce on default, pp[0, 2], pp[1, 3]: gloo never coalesces" in out
    assert "all 4 ranks agree with rank 0" in out
    assert len(out.strip().splitlines()) <= 25  # one screen
    assert max(map(len, out.splitlines())) <= 100, out  # pastes into a bug report unwrapped


@pytest.mark.heavy
def test_detail_wraps_the_backend_and_env_lint_runs_json():
    done = doctor("--nproc", "4", "--backend", "gloo", "--pp", "4", "--format", "json",
                  env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL", "NCCL_TIMEOUT": "1800"})
    assert done.returncode == EXIT_FINDINGS, done.stderr
    result = json.loads(done.stdout)
    assert [r["rank"] for r in result["ranks"]] == [0, 1, 2, 3]
    for report in result["ranks"]:
        assert report["debug_level"] == "DETAIL"
        assert report["torch"] == torch.__version__
        assert [g["name"] for g in report["groups"]] == ["default", "pp[0, 1, 2, 3]"]
        for group in report["groups"]:
            assert group["backend_type"] == "_ProcessGroupWrapper"
            # torch's own rule: coalesce only for a plain ProcessGroup whose backend says so.
            expected = group["group_type"] == "ProcessGroup" and group["supports_coalescing"]
            assert group["coalesced"] is bool(expected)
            assert group["batch_error"] is None
        flagged = {f["variable"]: f for f in report["env_findings"]}
        assert "NCCL_TIMEOUT" in flagged and "read by neither" in flagged["NCCL_TIMEOUT"]["message"]
    assert result["not_coalescing"] == ["default", "pp[0, 1, 2, 3]"]
    assert result["disagreements"] == []


@pytest.mark.heavy
def test_a_rank_that_differs_says_so_and_rank_0_lists_it(tmp_path):
    script = tmp_path / "differ.py"
    script.write_text(textwrap.dedent("""
        import os, sys
        if os.environ["RANK"] == "3":
            os.environ["NCCL_DEBUG"] = "INFO"
        from auditor.cli import main
        sys.exit(main(["doctor", "--backend", "gloo", "--pp", "2"]))
    """))
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("TORCH_DISTRIBUTED_DEBUG", None)
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=4",
                           "--master_addr=127.0.0.1", f"--master_port={free_port()}", str(script)],
                          env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr  # ranks exit 0 once the checks ran
    assert "ranks disagree:" in done.stdout
    assert "rank 3 (" in done.stdout and "env {'NCCL_DEBUG': 'INFO'" in done.stdout
    said = [line for line in done.stderr.splitlines() if line.startswith("p2paudit doctor: rank")]
    assert len(said) == 1 and said[0].startswith("p2paudit doctor: rank 3 (")


def test_pp_that_does_not_divide_the_ranks_is_bad_input():
    done = doctor("--nproc", "4", "--backend", "gloo", "--pp", "3")
    assert done.returncode == EXIT_INPUT
    assert "--pp: 3 does not divide --nproc 4" in done.stderr


def test_eager_init_on_each_ranks_own_gpu_is_agreement():
    """Found on 2 x H200: each rank binds cuda:<local rank>; that is not a disagreement."""
    from auditor.doctor import disagreements

    def report(rank: int, init: str) -> dict:
        group = {"name": "default", "backend_type": "ProcessGroupNCCL", "supports_coalescing": True,
                 "init": init, "timeout_s": 600, "coalesced": True}
        return {"rank": rank, "host": "h", "torch": "2.11", "nccl": "2.28", "cuda": "13.0",
                "debug_level": "OFF", "env": {}, "groups": [group]}

    assert disagreements([report(0, "eager (cuda:0)"), report(1, "eager (cuda:1)")]) == []
    assert disagreements([report(0, "eager (cuda:0)"), report(1, "lazy")]) == [
        "rank 1 (h): group default init 'lazy', rank 0's default has 'eager (cuda:0)'"]


@pytest.mark.heavy
def test_runs_where_torch_has_no_numpy(tmp_path):
    """torch installs without numpy (torch's object collectives need it; doctor does not): here a
    `numpy` that fails to import shadows the installed one, as in an environment without it."""
    shadow = tmp_path / "numpy"
    shadow.mkdir()
    (shadow / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'numpy'\", name='numpy')\n")
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    check = subprocess.run([sys.executable, "-c", "import numpy"], env=dict(os.environ, PYTHONPATH=path),
                           capture_output=True, text=True)
    assert "No module named 'numpy'" in check.stderr  # the premise
    done = doctor("--nproc", "2", "--backend", "gloo", env={"PYTHONPATH": path})
    assert done.returncode == EXIT_FINDINGS, done.stderr  # ran to its verdict (gloo: no coalescing)
    assert "Failed to initialize NumPy" in done.stderr  # torch itself ran without numpy
    assert "all 2 ranks agree with rank 0" in done.stdout
