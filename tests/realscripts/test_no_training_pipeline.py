"""An entry that builds or steps a pipeline itself is never NOT A PIPELINE RUN (issue 22 item 11,
the h32 review of config/no_training.py): the rule says what the framework's own loops do, not
what an entry's own code does.

Reproduced (written here, after the upstream files they cite):
- pytorch/torchtitan@b5bcd76c66d0acb1a08b176d9639425bc55e0b2a torchtitan/models/flux/run_infer.sh
  and torchtitan/models/flux/inference/infer.py:19-97 (FluxTrainer reused for forward passes),
  with the model pipelined by torch.distributed.pipelining (PipelineStage, ScheduleGPipe), by
  torchtitan's own torchtitan/distributed/pipeline_parallel.py:65 pipeline_llm, or its latents
  sent with dist.send/dist.recv.
- microsoft/Megatron-DeepSpeed@f4157bea69f3df8c6cb66f2ebcda66ba03d1288e
  examples_deepspeed/compression/ds_evalharness.sh:69-72 (--no-pipeline-parallel) and
  tasks/eval_harness/evaluate.py:245 (`self.model.eval_batch(...)`), the engine built over
  DeepSpeed's own PipelineModule (deepspeed/runtime/pipe/module.py).
"""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from tests.realscripts.test_not_training_entry import INFER, _mds, _not_pipeline, _titan

PP_TORCH = dedent('''\
    import torch
    import torch.distributed as dist
    from torch.distributed.pipelining import PipelineStage, ScheduleGPipe
    from torchtitan.config import ConfigManager
    from torchtitan.models.flux.trainer import FluxTrainer


    @torch.no_grad()
    def inference(config):
        trainer = FluxTrainer(config)
        rank, world = dist.get_rank(), dist.get_world_size()
        stage = PipelineStage(trainer.model_parts[0], rank, world, trainer.device)
        sched = ScheduleGPipe(stage, n_microbatches=4)
        x = torch.zeros(8, 16, device=trainer.device)
        return sched.step(x) if rank == 0 else sched.step()


    if __name__ == "__main__":
        inference(ConfigManager().parse_args())
    ''')

PP_EVAL = dedent('''\
    import torch
    from torchtitan.config import ConfigManager
    from torchtitan.distributed.pipeline_parallel import pipeline_llm
    from torchtitan.models.flux.trainer import FluxTrainer


    @torch.no_grad()
    def inference(config):
        trainer = FluxTrainer(config)
        sched, parts, first, last = pipeline_llm(trainer.model_parts[0], trainer.parallel_dims, config)
        x = torch.zeros(8, 16, device=trainer.device)
        return sched.eval(x) if first else sched.eval()


    if __name__ == "__main__":
        inference(ConfigManager().parse_args())
    ''')

P2P_DECODE = dedent('''\
    import torch
    import torch.distributed as dist
    from torchtitan.config import ConfigManager
    from torchtitan.models.flux.trainer import FluxTrainer


    @torch.no_grad()
    def inference(config):
        trainer = FluxTrainer(config)
        latents = torch.zeros(1, 16, 64, 64, device=trainer.device)
        if dist.get_rank() == 0:
            dist.send(trainer.model_parts[0](latents), dst=1)
        else:
            dist.recv(latents, src=0)


    if __name__ == "__main__":
        inference(ConfigManager().parse_args())
    ''')

EVAL_PIPE = dedent('''\
    import deepspeed
    import torch
    from deepspeed.pipe import PipelineModule
    from megatron.arguments import parse_args


    def main():
        args = parse_args()
        layers = [torch.nn.Linear(1024, 1024) for _ in range(8)]
        engine = deepspeed.initialize(args=args, model=PipelineModule(layers=layers, num_stages=2))[0]
        print(engine.eval_batch(iter([torch.zeros(4, 1024)]), compute_loss=False, reduce_output=None))


    if __name__ == "__main__":
        main()
    ''')


@pytest.mark.parametrize("entry", [PP_TORCH, PP_EVAL, P2P_DECODE], ids=["pipelining", "pipeline_llm", "send-recv"])
def test_torchtitan_inference_entry_that_pipelines_is_left_to_the_analysis(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str) -> None:
    script = _titan(tmp_path, entry)
    (tmp_path / "torchtitan/distributed").mkdir()
    (tmp_path / "torchtitan/distributed/__init__.py").write_text("")
    (tmp_path / "torchtitan/distributed/pipeline_parallel.py").write_text(
        "def pipeline_llm(model, parallel_dims, config):\n    return None, [model], True, True\n")
    monkeypatch.chdir(tmp_path)
    assert _not_pipeline(script) is None


def test_torchtitan_plain_inference_is_still_not_a_pipeline_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _titan(tmp_path, INFER)
    monkeypatch.chdir(tmp_path)
    assert _not_pipeline(script) is not None


def test_loop_reached_through_a_foreign_call_is_left_to_the_analysis(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`copy.deepcopy(trainer).train()` steps the trainer's loop on what a call of a foreign
    module returned: a method of an object, not a function of that module (as
    `deepspeed.initialize(...)[0].train_batch()` is DeepSpeed's engine, not `deepspeed.train_batch`)."""
    entry = INFER.replace("import os\n", "import copy\nimport os\n").replace(
        "    trainer.checkpointer.load(", "    copy.deepcopy(trainer).train()\n    trainer.checkpointer.load(")
    assert "copy.deepcopy(trainer).train()" in entry
    script = _titan(tmp_path, entry)
    monkeypatch.chdir(tmp_path)
    assert _not_pipeline(script) is None


def test_mds_entry_building_a_pipeline_module_is_left_to_the_analysis(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _mds(tmp_path, entry=EVAL_PIPE)
    monkeypatch.chdir(script.parent)
    assert _not_pipeline(script) is None
