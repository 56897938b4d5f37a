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


def test_a_click_entry_is_not_read_with_megatron_lms_parser(tmp_path: Path) -> None:
    """A found entry that builds no Megatron-LM parser parses its own command line: a flag that
    Megatron-LM's parser takes bare (`--sequence-parallel`), given a value, is no `takes no value`
    error there (it was a DOES NOT START before)."""
    script = _tree(tmp_path, "inspect_ckpt.py", _CLICK)
    text = "torchrun --nproc_per_node 2 ../inspect_ckpt.py convert --sequence-parallel in_dir out_dir\n"
    script.write_text(text)
    config = parse_launch(text, str(script))
    assert not [d for d in config.diagnostics if d.severity == "error"], config.diagnostics
    assert not [d for d in config.diagnostics if d.kind.startswith("launch.megatron-spelling")]


def test_an_entry_building_megatron_lms_parser_is_still_checked(tmp_path: Path) -> None:
    """The check stays where the entry does build Megatron-LM's parser (pretrain bound from
    megatron.training)."""
    code = "from megatron.training import pretrain\n\nif __name__ == '__main__':\n    pretrain(None, None, None)\n"
    script = _tree(tmp_path, "train.py", code)
    text = "torchrun --nproc_per_node 2 ../train.py --sequence-parallel in_dir\n"
    script.write_text(text)
    config = parse_launch(text, str(script))
    assert [d.kind for d in config.diagnostics if d.severity == "error"] == ["launch.flag-takes-no-value"]


def test_a_megatron_lm_checkpoint_tool_behind_bash_x_c_is_not_a_pipeline_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`srun ... bash -x -c "$RUN_CMD"` (shell options before -c) is read as `bash -c`, and the
    tool it runs from tools/checkpoint/ names no schedule entry: NOT A PIPELINE RUN (it was a
    DOES NOT START on Megatron-LM's `--swiglu`). Audited from the checkout's root, as the job runs
    it (`cd ${MEGATRON_PATH}`)."""
    monkeypatch.chdir(tmp_path)
    script = _tree(tmp_path, "tools/checkpoint/checkpoint_inspector.py", _CLICK)
    text = ('RUN_CMD="cd /x; python3 tools/checkpoint/checkpoint_inspector.py convert --swiglu in_dir out_dir"\n'
            'srun --ntasks-per-node=8 -N 1 bash -x -c "${RUN_CMD}"\n')
    script.write_text(text)
    config = parse_launch(text, str(script))
    said = [d.message for d in config.diagnostics if d.kind == "launch.not-pipeline"]
    assert len(said) == 1 and "checkpoint tool" in said[0]
    with pytest.raises(NotAPipelineRun, match="checkpoint tool"):
        refuse_not_pipeline(config)


def test_a_checkpoint_tool_naming_a_schedule_is_not_named_so(tmp_path: Path) -> None:
    """The name holds only where the tool's code names no schedule entry."""
    code = "from megatron.training import pretrain\n\nif __name__ == '__main__':\n    pretrain(None, None, None)\n"
    script = _tree(tmp_path, "tools/checkpoint/convert.py", code)
    text = "torchrun --nproc_per_node 2 tools/checkpoint/convert.py --pipeline-model-parallel-size 2\n"
    script.write_text(text)
    config = parse_launch(text, str(script))
    assert not [d for d in config.diagnostics if d.kind == "launch.not-pipeline"]
