"""`conda run [conda options] COMMAND`: conda runs COMMAND in a named environment, so the training
command is what follows its options (issue 22 items 9 and 10: a launcher behind a runner is followed,
not "could not be followed").

Shape from GPT-NeoX's online post-training example (EleutherAI/gpt-neox, commit
ea7aefd8f8e183256992d9fede4d7c71a46d67a5, post-training/online_example.sh): two vLLM servers started
in the background with `CUDA_VISIBLE_DEVICES=... conda run --no-capture-output -n vllm python -m
vllm.entrypoints.openai.api_server ... &`, then `conda run --no-capture-output -n neox python
deepy.py train.py post-training/configs/llama3-8b-reinforce.yml`, whose config sets
`"pipe_parallel_size": 0` (post-training/configs/llama3-8b-reinforce.yml:2). conda's options that
take a value (`-n`, `-p`, `--cwd`) are read from rules/gpt-neox.toml [[command_runner]] (conda's
`conda run --help`), so `conda run -n deepspeed python train.py` does not read the environment's
name as the launcher.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor import cli
from auditor.config.launch import NotAPipelineRun, parse_launch

SERVER = ("CUDA_VISIBLE_DEVICES={gpus} conda run --no-capture-output -n vllm python -m "
          "vllm.entrypoints.openai.api_server --model=meta-llama/Meta-Llama-3-8B-Instruct "
          "--tensor-parallel-size=4 --port {port} &\n")
CONFIG = '{{\n  "pipe_parallel_size": {size},\n  "model_parallel_size": 4,\n  "train_impl": "reinforce",\n}}\n'


def _online_example(tmp_path: Path, size: int) -> Path:
    (tmp_path / "deepy.py").write_text("import deepspeed.launcher.runner\n", encoding="utf-8")
    (tmp_path / "post-training" / "configs").mkdir(parents=True)
    (tmp_path / "post-training" / "configs" / "reinforce.yml").write_text(CONFIG.format(size=size), encoding="utf-8")
    script = tmp_path / "post-training" / "online_example.sh"
    script.write_text("# Launch vllm\n" + SERVER.format(gpus="0,1,2,3", port=8000) + "\n"
                      + SERVER.format(gpus="4,5,6,7", port=8001) + "\n# Launch training\n"
                      "conda run --no-capture-output -n neox python deepy.py train.py "
                      "post-training/configs/reinforce.yml\n", encoding="utf-8")
    return script


def test_the_training_command_behind_conda_run_is_followed(capsys, tmp_path) -> None:
    cli.main(["scan", "--config", str(_online_example(tmp_path, 0)), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["launch"]["launcher"] == "python deepy.py", doc["verdict"]["headline"]
    assert doc["verdict"]["status"] == "not-pipeline", doc["verdict"]["headline"]
    assert "pipe_parallel_size 0" in doc["verdict"]["headline"]


def test_conda_options_with_values_are_skipped() -> None:
    config = parse_launch("conda run -n deepspeed --cwd /work -p /opt/env -v --no-capture-output "
                          "torchrun --nproc_per_node 4 pretrain_gpt.py --pipeline-model-parallel-size 4\n", "run.sh")
    assert config.launcher == "torchrun pretrain_gpt.py" and config.world_size == 4
    assert config.wrapper == ["conda", "run", "-n", "deepspeed", "--cwd", "/work", "-p", "/opt/env", "-v",
                              "--no-capture-output"]
    assert config.flags["pipeline_model_parallel_size"].value == "4"


def test_the_separator_before_the_command() -> None:
    # conda >= 24: "Use '--' to separate conda run's options from the executable's options"
    config = parse_launch("conda run -s -n megatron -- python -m torch.distributed.run --nproc_per_node 2 "
                          "pretrain_gpt.py\n", "run.sh")
    assert config.launcher == "python -m torch.distributed.run pretrain_gpt.py" and config.world_size == 2


def test_other_conda_subcommands_run_nothing() -> None:
    # no command of the run's: the script starts no training process (turn 20, h40-nolaunch)
    with pytest.raises(NotAPipelineRun, match="`conda install`"):
        parse_launch("conda install -y -n deepspeed deepspeed\n", "run.sh")
