"""A torch launcher's entry that builds DeepSpeed's PipelineModule runs DeepSpeed's pipeline
engine, whoever starts its ranks: INCONCLUSIVE, naming DeepSpeed's launcher's reading, never
CLEAN on megatron-core's defaults (auditor/config/entry_stack.py `deepspeed_pipeline`,
rules/stacks.toml `[torch_launched_deepspeed]`).

EVAL_PIPE is written after microsoft/DeepSpeedExamples@83757d9c937daabd1089a08051061706cb73900d
training/pipeline_parallelism/train.py (get_args, `PipelineModule(layers=..., num_stages=args.
pipeline_parallel_size)`, `deepspeed.initialize(args=args, model=net, ...)`), with the step an
evaluation, `engine.eval_batch(...)` only, as microsoft/Megatron-DeepSpeed@f4157bea69f3df8c6cb66f2ebcda66ba03d1288e
tasks/eval_harness/evaluate.py:245 runs it; started with torchrun or python instead of
`deepspeed` (deepspeed.initialize reads the ranks torchrun sets). Before, the entry was read as
Megatron-LM's front end on megatron-core's defaults: CLEAN, 0 reachable P2P site(s), while
eval_batch runs InferenceSchedule's blocking send/recv of activations between the 2 stages.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor import cli
from auditor.config.entry_stack import UnknownStack
from auditor.config.launch import read_launch, refuse_not_pipeline

EVAL_PIPE = """import argparse

import deepspeed
import torch
from deepspeed.pipe import PipelineModule


def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.add_argument("-p", "--pipeline-parallel-size", type=int, default=2)
    parser = deepspeed.add_config_arguments(parser)
    return parser.parse_args()


def evaluate(args):
    net = PipelineModule(layers=[torch.nn.Linear(32, 32) for _ in range(8)], loss_fn=torch.nn.MSELoss(),
                         num_stages=args.pipeline_parallel_size)
    engine, _, _, _ = deepspeed.initialize(args=args, model=net, model_parameters=net.parameters())
    for _ in range(10):
        engine.eval_batch(iter([(torch.zeros(4, 32), torch.zeros(4, 32))]))


if __name__ == "__main__":
    deepspeed.init_distributed()
    evaluate(get_args())
"""
HEAD = "#!/bin/bash\n# deepspeed==0.16.0\n# torch==2.13.0\n"
ARGS = "evalpipe.py --deepspeed_config ds_config.json --pipeline-parallel-size 2\n"


def _write(tmp_path: Path, launcher: str, entry: str = EVAL_PIPE) -> Path:
    (tmp_path / "evalpipe.py").write_text(entry, encoding="utf-8")
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8}\n', encoding="utf-8")
    script = tmp_path / "run.sh"
    script.write_text(f"{HEAD}{launcher} {ARGS}", encoding="utf-8")
    return script


def _scan(capsys, script: Path, *more: str) -> tuple[int, dict]:
    code = cli.main(["scan", "--config", str(script), "--format", "json", *more])
    return code, json.loads(capsys.readouterr().out)


def test_the_line_named_is_the_pipeline_classs_where_its_module_is_not_imported(capsys, tmp_path):
    """`from deepspeed import PipelineModule`, then `PipelineModule(...)`: the line of the bare
    name (review r36-falseclean: it said `evalpipe.py:0`)."""
    entry = EVAL_PIPE.replace("from deepspeed.pipe import PipelineModule", "from deepspeed import PipelineModule")
    _, doc = _scan(capsys, _write(tmp_path, "torchrun --nproc_per_node 2", entry))
    line = entry.split("\n").index("    net = PipelineModule(layers=[torch.nn.Linear(32, 32) for _ in range(8)], "
                                    "loss_fn=torch.nn.MSELoss(),") + 1
    assert f"builds DeepSpeed's PipelineModule (evalpipe.py:{line})" in doc["verdict"]["headline"]


def test_torchrun_of_a_deepspeed_pipeline_is_inconclusive_naming_deepspeeds_launcher(capsys, tmp_path):
    code, doc = _scan(capsys, _write(tmp_path, "torchrun --nproc_per_node 2"))
    verdict = doc["verdict"]
    assert verdict["status"] == "inconclusive" and code == verdict["exit_code"] == 1
    assert verdict["headline"].startswith("INCONCLUSIVE: evalpipe.py builds DeepSpeed's PipelineModule "
                                          "(evalpipe.py:5)")
    assert verdict["undecided"][0]["decide"].startswith("--command 'deepspeed --num_gpus N evalpipe.py ...'")
    assert not doc["sites"]  # no verdict on megatron-core's defaults


@pytest.mark.parametrize("launcher", ["python", "python -m torch.distributed.run --nproc_per_node 2"])
def test_other_torch_launchers_are_read_so_too(tmp_path, launcher):
    with pytest.raises(UnknownStack) as caught:
        refuse_not_pipeline(read_launch(_write(tmp_path, launcher)))
    assert caught.value.what.startswith("evalpipe.py builds DeepSpeed's PipelineModule")


def test_the_step_it_names_decides_it(capsys, tmp_path, real_sources):
    """DeepSpeed's launcher's reading: the engine's blocking send/recv reached, none batched."""
    script = _write(tmp_path, "torchrun --nproc_per_node 2")
    code, doc = _scan(capsys, script, "--command", f"deepspeed --num_gpus 2 {ARGS.strip()}")
    assert doc["verdict"]["status"] == "clean" and code == 0
    reached = {s["function"] for s in doc["sites"] if s.get("reachable") == "yes"}
    assert reached == {"TorchBackend.send", "TorchBackend.recv"}


def test_an_entry_that_imports_megatron_too_keeps_its_reading(tmp_path):
    """Megatron-DeepSpeed's pretrain_gpt.py builds GPTModelPipe, a PipelineModule, from its own
    `megatron` package: its front end's rules read it (rules/deepspeed.toml [[front_end]])."""
    launch = read_launch(_write(tmp_path, "torchrun --nproc_per_node 2",
                                "from megatron.training import pretrain\n" + EVAL_PIPE))
    assert not any(d.kind == "launch.unknown-stack" for d in launch.diagnostics)


def test_deepspeed_without_its_pipeline_module_keeps_its_reading(tmp_path):
    entry = EVAL_PIPE.replace("from deepspeed.pipe import PipelineModule\n", "").replace("PipelineModule(", "dict(")
    launch = read_launch(_write(tmp_path, "torchrun --nproc_per_node 2", entry))
    assert not any(d.kind == "launch.unknown-stack" for d in launch.diagnostics)
