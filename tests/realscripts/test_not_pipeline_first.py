"""A run that is no pipeline run, refused by torch's launcher only from a torch release on, on a
run that states no torch: what the run is comes first, the refusal after it (issue 22 item 11).

Reproduces microsoft/DeepSpeedExamples@83757d9c937daabd1089a08051061706cb73900d
compression/gpt2/bash_script/run_zero_quant.sh (`export CUDA_VISIBLE_DEVICES=0`; `python -m
torch.distributed.launch --nproc_per_node=1 --master_port 12345 run_clm_no_trainer.py ...
--num_train_epochs 0 --deepspeed`, :4-16): run_clm_no_trainer.py (:199-204 parse_args) knows only
`--local_rank`, which torch.distributed.launch passes before torch 2.0 (`--local-rank` from 2.0,
rules/torch.toml torch.launch-local-rank `versions`); it imports torch, deepspeed, transformers
(no Trainer): no pipeline on any torch. compression/bert/bash_script/XTC/quant_1bit.sh's
`--master_port 66664` is refused on every release the rules judge: DOES NOT START stays first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor import cli

TRAIN = '''import argparse
import torch
import deepspeed
from transformers import AutoModelForCausalLM


def parse_args():
    parser = argparse.ArgumentParser(description="zero quant")
    parser.add_argument("--num_train_epochs", type=int, default=3)
    parser.add_argument("--local_rank", type=int, default=-1, help="local_rank for distributed training on gpus")
    parser = deepspeed.add_config_arguments(parser)
    args = parser.parse_args()
    return args


def main():
    args = parse_args()
    model = AutoModelForCausalLM.from_pretrained("gpt2-large")
    model, _, _, _ = deepspeed.initialize(args=args, model=model)


if __name__ == "__main__":
    main()
'''

LAUNCH = ("#!/bin/bash\nexport CUDA_VISIBLE_DEVICES=0\n\n"
          "python -m torch.distributed.launch --nproc_per_node=1 \\\n    --master_port {port} \\\n"
          "    run_clm_no_trainer.py \\\n    --num_train_epochs 0 \\\n    --deepspeed\n")


def _scan(tmp_path: Path, capsys: pytest.CaptureFixture[str], port: int, *more: str) -> tuple[int, str]:
    (tmp_path / "run_clm_no_trainer.py").write_text(TRAIN)
    script = tmp_path / "run_zero_quant.sh"
    script.write_text(LAUNCH.format(port=port))
    code = cli.main(["scan", "--config", str(script), "--format", "json", *more])
    return code, json.loads(capsys.readouterr().out)["verdict"]["headline"]


def test_not_a_pipeline_run_first_where_the_refusal_needs_a_torch_not_stated(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, headline = _scan(tmp_path, capsys, 12345)
    assert headline.startswith("NOT A PIPELINE RUN: `python -m torch.distributed.launch run_clm_no_trainer.py`")
    assert "On torch 2.0 and later" in headline and "does not start" in headline and "`--local-rank=N`" in headline
    assert code == 0


def test_does_not_start_where_the_run_is_judged_on_a_refusing_torch(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, headline = _scan(tmp_path, capsys, 12345, "--torch", "2.10.0")
    assert headline.startswith("DOES NOT START: torch's launcher passes `--local-rank=N`") and code == 1


def test_does_not_start_where_a_refusal_holds_on_every_release(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, headline = _scan(tmp_path, capsys, 66664)
    assert headline.startswith("DOES NOT START: `--master_port 66664` is not a TCP port") and code == 1
