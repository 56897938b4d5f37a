"""Tool entries of a framework checkout (checkpoint conversion, inspection) are not training runs,
and their command lines are not checked against a parser they do not use.

After NVIDIA/Megatron-LM@d98e8a64dd examples/megatron_fsdp/sbatch_checkpoint_convert.sh: its
sbatch here-document runs `srun ... bash -x -c "${RUN_CMD}"` (:43-47), RUN_CMD (:10-18) being
`python3 tools/checkpoint/checkpoint_inspector.py convert-torch-dist-to-fsdp-dtensor --swiglu IN
OUT ...`; checkpoint_inspector.py is a click CLI (:63 `@click.group()`, `--swiglu` an is_flag
option), not Megatron-LM's training argparse, which takes `--swiglu` with no value.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.config.launch import NotAPipelineRun, parse_launch, refuse_not_pipeline
from auditor.config.model import LaunchConfig

_CLICK = ('import click\n\n\n@click.group()\ndef cli():\n    pass\n\n\n@cli.command()\n'
          '@click.argument("input_dir")\n@click.argument("output_dir")\n'
          '@click.option("--swiglu", is_flag=True)\ndef convert(input_dir, output_dir, swiglu):\n'
          '    print(input_dir, output_dir, swiglu)\n\n\nif __name__ == "__main__":\n    cli()\n')


def _tree(tmp_path: Path, entry: str, code: str) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / entry).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / entry).write_text(code)
    (tmp_path / "examples").mkdir()
    return tmp_path / "examples" / "run.sh"


def _launch(script: Path, text: str) -> LaunchConfig:
    """The launch read from `text`, written as the run script `script`."""
    script.write_text(text)
    return parse_launch(text, str(script))


def _megatron_lm(root: Path) -> None:
    """The version file that makes `root` a Megatron-LM checkout (d98e8a64dd megatron/core/package_info.py)."""
    (root / "megatron/core").mkdir(parents=True)
    (root / "megatron/core/package_info.py").write_text("MAJOR = 0\nMINOR = 16\nPATCH = 0\n")


def test_a_click_entry_is_not_read_with_megatron_lms_parser(tmp_path: Path) -> None:
    """A found entry that builds no Megatron-LM parser parses its own command line: a flag that
    Megatron-LM's parser takes bare (`--sequence-parallel`), given a value, is no `takes no value`
    error there (it was a DOES NOT START before)."""
    script = _tree(tmp_path, "inspect_ckpt.py", _CLICK)
    text = "torchrun --nproc_per_node 2 ../inspect_ckpt.py convert --sequence-parallel in_dir out_dir\n"
    config = _launch(script, text)
    assert not [d for d in config.diagnostics if d.severity == "error"], config.diagnostics
    assert not [d for d in config.diagnostics if d.kind.startswith("launch.megatron-spelling")]


def test_an_entry_building_megatron_lms_parser_is_still_checked(tmp_path: Path) -> None:
    """The check stays where the entry does build Megatron-LM's parser (pretrain bound from
    megatron.training)."""
    code = "from megatron.training import pretrain\n\nif __name__ == '__main__':\n    pretrain(None, None, None)\n"
    script = _tree(tmp_path, "train.py", code)
    text = "torchrun --nproc_per_node 2 ../train.py --sequence-parallel in_dir\n"
    config = _launch(script, text)
    assert [d.kind for d in config.diagnostics if d.severity == "error"] == ["launch.flag-takes-no-value"]


def test_a_megatron_lm_checkpoint_tool_behind_bash_x_c_is_not_a_pipeline_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`srun ... bash -x -c "$RUN_CMD"` (shell options before -c) is read as `bash -c`, and the
    tool it runs from tools/checkpoint/ names no schedule entry: NOT A PIPELINE RUN (it was a
    DOES NOT START on Megatron-LM's `--swiglu`). Audited from the checkout's root, as the job runs
    it (`cd ${MEGATRON_PATH}`)."""
    monkeypatch.chdir(tmp_path)
    script = _tree(tmp_path, "tools/checkpoint/checkpoint_inspector.py", _CLICK)
    _megatron_lm(tmp_path)
    text = ('RUN_CMD="cd /x; python3 tools/checkpoint/checkpoint_inspector.py convert --swiglu in_dir out_dir"\n'
            'srun --ntasks-per-node=8 -N 1 bash -x -c "${RUN_CMD}"\n')
    config = _launch(script, text)
    said = [d.message for d in config.diagnostics if d.kind == "launch.not-pipeline"]
    assert len(said) == 1 and "checkpoint tool" in said[0]
    with pytest.raises(NotAPipelineRun, match="checkpoint tool"):
        refuse_not_pipeline(config)


def test_a_checkpoint_tool_naming_a_schedule_is_not_named_so(tmp_path: Path) -> None:
    """The name holds only where the tool's code names no schedule entry."""
    code = "from megatron.training import pretrain\n\nif __name__ == '__main__':\n    pretrain(None, None, None)\n"
    script = _tree(tmp_path, "tools/checkpoint/convert.py", code)
    text = "torchrun --nproc_per_node 2 tools/checkpoint/convert.py --pipeline-model-parallel-size 2\n"
    config = _launch(script, text)
    assert not [d for d in config.diagnostics if d.kind == "launch.not-pipeline"]


# Review inputs r45-scan b5/b6: a tools/checkpoint/*.py that trains a pipeline with another stack.
_DEEPSPEED_PIPE = (
    "import deepspeed\nimport torch\nfrom deepspeed.pipe import PipelineModule, LayerSpec\n\n"
    "def main():\n    deepspeed.init_distributed()\n"
    "    model = PipelineModule(layers=[LayerSpec(torch.nn.Linear, 16, 16) for _ in range(8)], num_stages=2)\n"
    "    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config='ds.json')\n"
    "    for _ in range(10):\n        engine.train_batch()\n\n"
    "if __name__ == '__main__':\n    main()\n")
_TORCH_PIPE = (
    "import torch\nimport torch.distributed as dist\n"
    "from torch.distributed.pipelining import pipeline, SplitPoint, ScheduleGPipe\n\n"
    "def main():\n    dist.init_process_group('nccl')\n"
    "    model = torch.nn.Sequential(*[torch.nn.Linear(16, 16) for _ in range(4)])\n"
    "    pipe = pipeline(model, mb_args=(torch.randn(2, 16),), split_spec={'2': SplitPoint.BEGINNING})\n"
    "    schedule = ScheduleGPipe(pipe.build_stage(dist.get_rank(), torch.device('cuda')), n_microbatches=4)\n"
    "    for _ in range(10):\n        schedule.step(torch.randn(8, 16))\n\n"
    "if __name__ == '__main__':\n    main()\n")


def _tool_run(tmp_path: Path, name: str, code: str) -> list[str]:
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "tools/checkpoint").mkdir(parents=True, exist_ok=True)
    (tmp_path / "tools/checkpoint" / name).write_text(code)
    text = f'#!/bin/bash\ncd "$(dirname "$0")"\ntorchrun --nproc_per_node 2 tools/checkpoint/{name}\n'
    (tmp_path / "run.sh").write_text(text)
    config = parse_launch(text, str(tmp_path / "run.sh"))
    return [d.message for d in config.diagnostics if d.kind == "launch.not-pipeline"]


@pytest.mark.parametrize("name,code", [("resume_pipe.py", _DEEPSPEED_PIPE), ("resume_pp.py", _TORCH_PIPE)],
                         ids=["deepspeed", "torch-pipelining"])
def test_a_tools_checkpoint_script_outside_megatron_lm_is_not_named_a_tool(
        tmp_path: Path, name: str, code: str) -> None:
    """The tools/checkpoint rule holds only in a Megatron-LM checkout: in another repository a
    tools/checkpoint/*.py that trains DeepSpeed's PipelineModule (engine.train_batch()) or torch
    pipelining's ScheduleGPipe is a training run (it was a false NOT A PIPELINE RUN)."""
    assert not [m for m in _tool_run(tmp_path, name, code) if "checkpoint tool" in m]


@pytest.mark.parametrize("name,code", [("resume_pipe.py", _DEEPSPEED_PIPE), ("resume_pp.py", _TORCH_PIPE)],
                         ids=["deepspeed", "torch-pipelining"])
def test_a_megatron_lm_tool_building_another_pipeline_is_not_named_a_tool(
        tmp_path: Path, name: str, code: str) -> None:
    """Even in a Megatron-LM checkout, a tools/checkpoint/*.py that builds a pipeline by a means
    the scan knows (DeepSpeed's PipelineModule, torch.distributed.pipelining) is no checkpoint tool."""
    _megatron_lm(tmp_path)
    assert not [m for m in _tool_run(tmp_path, name, code) if "checkpoint tool" in m]


def test_a_megatron_lm_checkpoint_tool_is_named_in_its_checkout(tmp_path: Path) -> None:
    """The kept gain: a click tool under a Megatron-LM checkout's tools/checkpoint/ is named."""
    _megatron_lm(tmp_path)
    said = _tool_run(tmp_path, "checkpoint_inspector.py", _CLICK)
    assert len(said) == 1 and "checkpoint tool" in said[0]


def test_an_entry_whose_helper_beside_it_builds_megatron_lms_parser_is_checked(tmp_path: Path) -> None:
    """Review input r45-scan b1: train.py runs `from helper import go`, and the helper.py beside
    it (python's sys.path[0]) calls megatron.training.pretrain, so Megatron-LM's parser rejects
    `--sequence-parallel 1` (it was read as the entry's own flags, the DOES NOT START lost)."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "examples/foo").mkdir(parents=True)
    (tmp_path / "examples/foo/train.py").write_text("from helper import go\nif __name__ == '__main__':\n    go()\n")
    (tmp_path / "examples/foo/helper.py").write_text(
        "from megatron.training import pretrain\ndef go():\n    pretrain(None, None, None)\n")
    text = "torchrun --nproc_per_node 8 train.py --pipeline-model-parallel-size 2 --sequence-parallel 1\n"
    run = tmp_path / "examples/foo/run.sh"
    run.write_text(text)
    config = parse_launch(text, str(run))
    assert [d.kind for d in config.diagnostics if d.severity == "error"] == ["launch.flag-takes-no-value"]


def test_an_entry_calling_an_unread_import_is_checked(tmp_path: Path) -> None:
    """An entry whose called import is not read (an installed package's function) is not known to
    build no Megatron-LM parser: its flags are checked as Megatron-LM's, as before."""
    code = "from megatron_patch.training import pretrain\nif __name__ == '__main__':\n    pretrain()\n"
    script = _tree(tmp_path, "train.py", code)
    text = "torchrun --nproc_per_node 2 ../train.py --sequence-parallel 1\n"
    config = _launch(script, text)
    assert [d.kind for d in config.diagnostics if d.severity == "error"] == ["launch.flag-takes-no-value"]
