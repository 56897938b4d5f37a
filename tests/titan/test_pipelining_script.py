"""A training script that pipelines with torch.distributed.pipelining itself, launched by
`torchrun train.py`, is torch's pipelining stack (rules/pipelining.toml), not Megatron-LM's
front end: its entry point is the script run as __main__, its sites torch's pipelining ones,
its backend what its init_process_group call states (auditor/config/pipelining_script.py).

The repository's own examples/pipelining_pp2.sh (torchrun examples/pipelining_train.py, the
pipelining docs' manual-stage form) is the first launch; the second reproduces pytorch/PiPPy
@1bcb2bfb examples/huggingface/pippy_gpt2.py: `from torch.distributed.pipelining import ...`,
argparse flags, `dist.init_process_group(backend=...)` under `if __name__ == "__main__":`."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor import rulebook
from auditor.config.launch import read_launch
from auditor.config.pipelining_script import is_pipelining_script, script_entry
from auditor.scan import ScanInputs, run_scan

REPO = Path(__file__).resolve().parents[2]

# pippy_gpt2.py's shape (PiPPy@1bcb2bfb examples/huggingface/pippy_gpt2.py:6-11, 85-119), with a
# manual stage (the pipelining docs' form) instead of the tracer, and the backend a flag.
SCRIPT = '''\
import argparse
import os

import torch
import torch.distributed as dist
from torch.distributed.pipelining import PipelineStage, ScheduleGPipe


def run(args):
    stage = PipelineStage(torch.nn.Linear(8, 8), args.rank, args.world_size, torch.device("cpu"))
    schedule = ScheduleGPipe(stage, args.chunks)
    if args.rank == 0:
        schedule.step(torch.randn(8, 8))
    else:
        schedule.step()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--world_size", type=int, default=int(os.getenv("WORLD_SIZE", 4)))
    parser.add_argument("--rank", type=int, default=int(os.getenv("RANK", -1)))
    parser.add_argument("--chunks", type=int, default=4)
    parser.add_argument("--backend", type=str, default="nccl")
    args = parser.parse_args()
    dist.init_process_group(backend=args.backend, rank=args.rank, world_size=args.world_size)
    run(args)
'''


@pytest.mark.wheels  # the example states torch==2.13.0: that release's source is read
def test_the_repository_s_pipelining_example_is_torch_s_pipelining(monkeypatch):
    monkeypatch.chdir(REPO)  # the example names its script relative to the repository root
    doc = run_scan(ScanInputs("examples/pipelining_pp2.sh", jobs=1))
    assert doc["launch"]["launcher"] == "pipelining pipelining_train.py"
    assert doc["entries"] == ["examples/pipelining_train.py (run as __main__)"]
    reached = [s for s in doc["sites"] if s.get("reachable") == "yes"]
    assert reached and all(s["path"].startswith("torch/distributed/pipelining/") for s in reached)
    assert {s["function"] for s in reached} >= {"_PipelineStageBase.get_fwd_send_ops",
                                                "_PipelineStageBase._get_recv_ops"}
    assert doc["config"]["effective"]["distributed_backend"] == "gloo"  # init_process_group("gloo")
    head = doc["verdict"]["headline"]
    assert head.startswith("INCONCLUSIVE") and "torch/distributed/pipelining/" in head, head
    assert "p2paudit record" in head and "megatron" not in head.lower(), head


def test_a_script_s_own_flag_gives_its_backend(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    (tmp_path / "run.sh").write_text("torchrun --nproc-per-node 4 train.py --backend gloo --chunks 8\n")
    launch = read_launch(str(tmp_path / "run.sh"))
    assert launch.launcher == "pipelining train.py"
    assert launch.entry_values["distributed_backend"][0] == "gloo"
    said = [d for d in launch.diagnostics if d.kind == "launch.front-end"]
    assert said and "torch.distributed.pipelining" in said[0].message


@pytest.mark.parametrize("command", ["srun python train.py --backend gloo",
                                     "mpirun -np 8 python train.py --backend gloo"])
def test_a_pipelining_script_under_srun_or_mpirun_is_torch_s_pipelining(tmp_path, command):
    """The launchers torch's own SLURM examples use (ranks from SLURM_PROCID/SLURM_NTASKS): read as
    under torchrun, not as a megatron-core run on its defaults (a false CLEAN, found in review)."""
    (tmp_path / "train.py").write_text(SCRIPT)
    (tmp_path / "run.sh").write_text("#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n" + command + "\n")
    launch = read_launch(str(tmp_path / "run.sh"))
    assert launch.launcher == "pipelining train.py" and is_pipelining_script(launch)


def test_a_torchrun_script_without_pipelining_stays_megatron_s(tmp_path):
    (tmp_path / "train.py").write_text("import torch.distributed as dist\ndist.init_process_group()\n")
    (tmp_path / "run.sh").write_text("torchrun --nproc-per-node 4 train.py\n")
    launch = read_launch(str(tmp_path / "run.sh"))
    assert launch.launcher == "torchrun train.py" and not is_pipelining_script(launch)


def test_the_script_is_the_entry_run_as_main(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    (tmp_path / "run.sh").write_text("torchrun --nproc-per-node 4 train.py --backend gloo\n")
    launch = read_launch(str(tmp_path / "run.sh"))
    assert is_pipelining_script(launch)
    entry = script_entry(launch)
    assert entry is not None and entry[0] == "train.py (run as __main__)"
    assert entry[1].startswith("__name__ = '__main__'\n") and "PipelineStage" in entry[1]


def test_the_pipelining_api_is_the_installed_torch_s():
    """rules/pipelining.toml names torch.distributed.pipelining's public API as torch ships it."""
    import torch.distributed.pipelining as pipelining
    model = rulebook.load("pipelining").data["pipeline_model"]
    assert set(model["names"]) <= set(pipelining.__all__)
    path = Path(pipelining.__file__).parents[3] / model["source"].rpartition(":")[0]
    line = int(model["source"].rpartition(":")[2])
    assert path.read_text().splitlines()[line - 1].strip() == model["code"]


# pytorch/PiPPy@1bcb2bfb examples/llama/pippy_llama.py:5, 22-51: the tracer front end,
# `pipeline(model, mb_args=...)` then `pipe.build_stage(rank, device=...)`, stepped by GPipe.
TRACER = '''\
import os
import torch
from torch.distributed.pipelining import SplitPoint, pipeline, ScheduleGPipe

rank = int(os.environ["RANK"])
world_size = int(os.environ["WORLD_SIZE"])
device = torch.device(f"cuda:{rank % torch.cuda.device_count()}")
torch.distributed.init_process_group(rank=rank, world_size=world_size)
model = torch.nn.Sequential(*[torch.nn.Linear(8, 8) for _ in range(world_size)])
split_spec = {f"{i}": SplitPoint.BEGINNING for i in range(1, world_size)}
pipe = pipeline(model, mb_args=(torch.randn(2, 8),), split_spec=split_spec)
stage = pipe.build_stage(rank, device=device)
schedule = ScheduleGPipe(stage, 4)
if rank == 0:
    schedule.step(torch.randn(8, 8))
else:
    schedule.step()
'''


def test_the_tracer_front_end_is_not_walked_and_its_stage_is_stepped(tmp_path):
    """`pipeline()` traces the model (torch.export, no P2P): rules/torch.toml's [[symbol]] takes
    its result as a Pipe, so the call graph reaches the schedule's stage ops through
    Pipe.build_stage's _PipelineStage instead of spending its budget inside torch.fx."""
    (tmp_path / "pippy_llama.py").write_text(TRACER)
    (tmp_path / "run.sh").write_text("torchrun --nproc-per-node 4 pippy_llama.py\n")
    doc = run_scan(ScanInputs(str(tmp_path / "run.sh"), torch_version="2.10.0", jobs=1))
    assert not doc["analysis"]["budget_cuts"], doc["analysis"]["budget_cuts"][:1]
    reached = {s["function"] for s in doc["sites"] if s.get("reachable") == "yes"}
    assert {"_PipelineStageBase.get_fwd_send_ops", "_PipelineStageBase._get_recv_ops"} <= reached


def test_the_tracer_symbol_is_the_installed_torch_s_function():
    import torch.distributed.pipelining as pipelining
    (symbol,) = [s for s in rulebook.load("torch").data["symbol"]
                 if s["function"] == "torch.distributed.pipelining._IR.pipeline"]
    path, _, line = symbol["source"].rpartition(":")
    text = (Path(pipelining.__file__).parents[3] / path).read_text().splitlines()
    assert text[int(line) - 1] == "def pipeline("


@pytest.mark.wheels  # reads the example's stated torch==2.13.0 first
def test_simulate_says_a_script_s_own_schedule_is_left_to_record():
    """simulate runs megatron-core's schedule (or torchtitan's): for a script's own
    torch.distributed.pipelining it says so and names `record`, not a megatron release."""
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "auditor", "simulate", "--config", "examples/pipelining_pp2.sh"],
                          check=False, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 2, proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if "error:" in x]
    assert "torch.distributed.pipelining" in line and "p2paudit record" in line, line
    assert "megatron-core==" not in line, line
