"""Review holes 2 and 3 (turn 10): a plain `python` command that is not one process.

- LOOP: the shell starts the ranks, `for i in 0 1 2 3; do python train.py --rank $i --world 4 &
  done`, each joining over tcp:// with rank/world from argv (torch's tutorials' init_method
  rendezvous; pytorch/examples distributed/ddp's `--rank/--world-size` loop). Several `python`
  commands, a backgrounded one, or an explicit `init_process_group(init_method=, rank=,
  world_size=)` make the world unknown, never 1.
- PKG: a package whose code is not read starts the processes: facebookresearch/detectron2
  detectron2/engine/launch.py `launch(main, num_gpus_per_machine)` runs mp.start_processes.
- CTX: `torch.multiprocessing.get_context("spawn").Process(...)` (torch/multiprocessing/
  __init__.py re-exports multiprocessing's get_context).
"""

from __future__ import annotations

import pytest

from auditor.bash.values import Symbolic
from auditor.config.launch import read_launch
from tests.realscripts.test_one_process import CONVERT, CONVERT_PY, _tree

TRAIN_PY = """import argparse
import torch

p = argparse.ArgumentParser()
p.add_argument("--rank", type=int)
p.add_argument("--world", type=int)
a = p.parse_args()
torch.distributed.init_process_group("nccl", init_method="tcp://127.0.0.1:29500", rank=a.rank, world_size=a.world)
"""
LAUNCH_PY = """from detectron2.engine import launch


def main():
    pass


if __name__ == "__main__":
    launch(main, 4)
"""
CTX_PY = """import torch.multiprocessing as mp


def worker(rank):
    pass


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=worker, args=(r,)) for r in range(4)]
"""
LOOP = "for i in 0 1 2 3; do\n  python convert_ckpt.py a b --rank $i &\ndone\nwait\n"


def _world(tmp_path, monkeypatch, launch: str, files: dict[str, str]) -> str:
    config = read_launch(_tree(tmp_path, monkeypatch, launch, files))
    assert isinstance(config.nproc_per_node, Symbolic)
    return config.world_source["nproc_per_node"]


@pytest.mark.parametrize("launch, said", [
    (LOOP, "the script runs 4 `python` commands"),
    ("python convert_ckpt.py a b\npython convert_ckpt.py b c\n", "the script runs 2 `python` commands"),
    ("python convert_ckpt.py a b &\nwait\n", "line 1 runs it in the background"),
    ("for i in $(seq 0 $((N-1))); do\n  python convert_ckpt.py a b --rank $i &\ndone\n", "line 2 runs it in the background"),
], ids=["loop", "two-commands", "background", "loop-not-unrolled"])
def test_python_commands_the_shell_starts_together_are_no_world_of_one(tmp_path, monkeypatch, launch, said):
    assert said in _world(tmp_path, monkeypatch, launch, {"convert_ckpt.py": CONVERT_PY})


def test_an_explicit_join_is_no_world_of_one(tmp_path, monkeypatch):
    why = _world(tmp_path, monkeypatch, "python train.py --rank 0 --world 4\n", {"train.py": TRAIN_PY})
    assert "train.py:8 calls `torch.distributed.init_process_group`" in why and "init_method" in why


def test_a_call_into_a_package_not_read_is_no_world_of_one(tmp_path, monkeypatch):
    why = _world(tmp_path, monkeypatch, "python train.py\n", {"train.py": LAUNCH_PY})
    assert "train.py:9 calls `launch` (detectron2.engine.launch)" in why


def test_torch_multiprocessing_context_starts_processes(tmp_path, monkeypatch):
    why = _world(tmp_path, monkeypatch, "python train.py\n", {"train.py": CTX_PY})
    assert "calls `mp.get_context` (torch.multiprocessing.get_context)" in why


def test_a_join_of_no_world_of_its_own_stays_one_process(tmp_path, monkeypatch):
    """torch's env:// default without WORLD_SIZE fails: `init_process_group("gloo")` alone joins none."""
    joins = CONVERT_PY + "torch.distributed.init_process_group('gloo')\n"
    config = read_launch(_tree(tmp_path, monkeypatch, CONVERT, {"convert_ckpt.py": joins}))
    assert (config.nproc_per_node, config.nnodes) == (1, 1)


# microsoft/DeepSpeedExamples@83757d9c937daabd1089a08051061706cb73900d applications/DeepSpeed-VisualChat/
# chat/chat.py: `python chat.py` (chat_scripts/run.sh:11-18) calls deepspeed.add_config_arguments
# (:64), termcolor.colored (:71) and, through utils/utils.py:149, deepspeed.zero.GatheredParameters;
# DeepSpeed starts processes only through its launcher (`deepspeed.launcher.*`). Was an unknown
# world ("a package whose code is not read"), the chat then judged on megatron-core's defaults.
CHAT_PY = """import argparse
import deepspeed
from termcolor import colored


def main():
    parser = argparse.ArgumentParser()
    parser = deepspeed.add_config_arguments(parser)
    args = parser.parse_args()
    with deepspeed.zero.GatheredParameters([], enabled=False):
        print(colored("ready", "green"))


if __name__ == "__main__":
    main()
"""


def test_deepspeed_outside_its_launcher_starts_no_process(tmp_path, monkeypatch):
    config = read_launch(_tree(tmp_path, monkeypatch, "python chat.py\n", {"chat.py": CHAT_PY}))
    assert (config.nproc_per_node, config.nnodes) == (1, 1), config.world_source


def test_deepspeed_s_launcher_still_starts_processes(tmp_path, monkeypatch):
    runner = CHAT_PY.replace("import deepspeed\n", "import deepspeed\nfrom deepspeed.launcher.runner import main as run\n")
    why = _world(tmp_path, monkeypatch, "python chat.py\n", {"chat.py": runner.replace("    main()\n", "    run()\n")})
    assert "deepspeed.launcher.runner.main" in why


def test_deepspeed_s_init_distributed_joins_a_world_it_names(tmp_path, monkeypatch):
    """deepspeed.init_distributed(init_method=, rank=, world_size=) hands them to torch's
    init_process_group (deepspeed 0.19.8 deepspeed/comm/comm.py:844): copies started by hand
    (`python train.py --rank R --world 4` on each node) make up the world, not one process."""
    train = CHAT_PY.replace("    args = parser.parse_args()\n", "    args = parser.parse_args()\n"
                            "    deepspeed.init_distributed('nccl', init_method='tcp://10.0.0.1:29500', "
                            "rank=args.rank, world_size=args.world)\n")
    why = _world(tmp_path, monkeypatch, "python chat.py --rank 0 --world 4\n", {"chat.py": train})
    assert "calls `deepspeed.init_distributed` with init_method, rank, world_size" in why
