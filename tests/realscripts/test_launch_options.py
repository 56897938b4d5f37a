"""Options torch's launcher refuses, and the `--local-rank` it hands the script, before any
worker trains (issue 22; auditor/config/launch_options.py, rules/torch.toml [[launcher_option]],
[[launcher_handoff]]).

Shape from DeepSpeedExamples (microsoft/DeepSpeedExamples, commit
83757d9c937daabd1089a08051061706cb73900d): compression/bert/bash_script/XTC/quant_1bit.sh runs
`python -m torch.distributed.launch --nproc_per_node=1 --master_port 66664 run_glue_no_trainer.py`
(:20-21), whose parse_args (:71-191) defines `--local_rank` only and calls parser.parse_args();
compression/gpt2/run_clm_no_trainer.py also passes its parser to deepspeed.add_config_arguments
(:203) before parse_args (:204).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.config.launch import parse_launch
from auditor.config.launch_options import KIND, check
from auditor.rulebook import files

COVERED = tuple(files.load("torch").section("framework")["releases"])

TRAIN = '''import argparse
import deepspeed


def parse_args():
    parser = argparse.ArgumentParser(description="glue")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument(LOCAL, type=int, default=-1, help="local_rank for distributed training on gpus")
    HELPER
    args = parser.PARSE()
    return args


def main():
    args = parse_args()
    print(args)


if __name__ == "__main__":
    main()
'''


def _script(tmp_path: Path, launch: str, local: str = '"--local_rank"', parse: str = "parse_args",
            helper: str = "") -> Path:
    (tmp_path / "run_glue_no_trainer.py").write_text(
        TRAIN.replace("LOCAL", local).replace("PARSE", parse).replace("HELPER", helper))
    path = tmp_path / "quant_1bit.sh"
    path.write_text("#!/bin/bash\nexport CUDA_VISIBLE_DEVICES=0\n" + launch)
    return path


def _refusals(path: Path, releases: tuple[str, ...] = COVERED) -> list:
    config = parse_launch(path.read_text(), str(path))
    return [f for f in check(config, releases) if f.kind == KIND]


LAUNCH = ("python -m torch.distributed.launch --nproc_per_node=1 \\\n  --master_port {port} \\\n"
          "  run_glue_no_trainer.py \\\n  --seed 42\n")


def test_port_beyond_65535_does_not_start(tmp_path: Path) -> None:
    path = _script(tmp_path, LAUNCH.format(port=66664), local='"--local-rank", "--local_rank"')
    [found] = _refusals(path)
    assert found.severity == "error" and found.detail["category"] == "config"
    assert found.where == f"{path}:4" and "66664" in found.message
    assert "rendezvous/utils.py" in found.message


def test_port_not_an_integer_does_not_start(tmp_path: Path) -> None:
    path = _script(tmp_path, "torchrun --nproc_per_node=1 --master-port=auto run_glue_no_trainer.py\n")
    [found] = _refusals(path)
    assert found.severity == "error" and "integer" in found.message


def test_node_rank_not_an_integer_does_not_start(tmp_path: Path) -> None:
    path = _script(tmp_path, "torchrun --nnodes 2 --node_rank node0 --master_port 29500 run_glue_no_trainer.py\n")
    [found] = _refusals(path)
    assert found.severity == "error" and "run.py:622" in found.message
    assert not _refusals(_script(tmp_path, "torchrun --nnodes 2 --node_rank $RANK run_glue_no_trainer.py\n"))


def test_valid_port_or_own_rendezvous_is_no_refusal(tmp_path: Path) -> None:
    assert not _refusals(_script(tmp_path, "torchrun --master_port 12345 run_glue_no_trainer.py\n"))
    assert not _refusals(_script(tmp_path, "torchrun --standalone --master_port 66664 run_glue_no_trainer.py\n"))


def test_launch_passes_dashed_local_rank_the_script_rejects(tmp_path: Path) -> None:
    path = _script(tmp_path, LAUNCH.format(port=12345))
    [found] = _refusals(path)
    assert found.severity == "error" and "--local-rank" in found.message
    assert "run_glue_no_trainer.py:10" in found.message and found.where == f"{path}:3"


def test_deepspeed_add_config_arguments_adds_no_local_rank(tmp_path: Path) -> None:
    # compression/gpt2/run_clm_no_trainer.py:203
    path = _script(tmp_path, LAUNCH.format(port=12345), helper="parser = deepspeed.add_config_arguments(parser)")
    assert [f.severity for f in _refusals(path)] == ["error"]


@pytest.mark.parametrize("launch", [
    "python -m torch.distributed.launch --use_env run_glue_no_trainer.py\n",  # LOCAL_RANK instead
    "torchrun --nproc_per_node=1 run_glue_no_trainer.py\n",  # run.py: get_use_env is True
    "python -m torch.distributed.run run_glue_no_trainer.py\n",
])
def test_launchers_that_pass_no_local_rank(tmp_path: Path, launch: str) -> None:
    assert not _refusals(_script(tmp_path, launch))


@pytest.mark.parametrize("local, parse, helper", [
    ('"--local-rank", "--local_rank"', "parse_args", ""),  # torch's own advice: both spellings
    ('"--local_rank"', "parse_known_args", ""),  # extra words tolerated
    ('"--local_rank"', "parse_args", "add_more(parser)"),  # options added where not read
])
def test_scripts_that_take_it_or_are_not_decided(tmp_path: Path, local: str, parse: str, helper: str) -> None:
    assert not _refusals(_script(tmp_path, LAUNCH.format(port=12345), local, parse, helper))


def test_script_not_found_says_nothing(tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text("python -m torch.distributed.launch elsewhere.py\n")
    assert not _refusals(path)


def test_refused_on_some_releases_is_undecided(tmp_path: Path) -> None:
    path = _script(tmp_path, LAUNCH.format(port=12345))
    [found] = _refusals(path, ("1.13.1", "2.7.0"))
    assert found.severity == "info" and "2.7.0" in found.detail["undecided"]
    assert found.detail["decide"] == "--torch X.Y.Z"
    assert not _refusals(path, ("1.13.1",))


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch installed")
@pytest.mark.parametrize("table", ["launcher_option", "launcher_handoff"])
def test_cited_torch_code_is_in_the_installed_release(table: str) -> None:
    import torch
    root = Path(torch.__file__).parent.parent
    version = torch.__version__.split("+")[0]
    for entry in files.load("torch").data[table]:
        if not files.version_in(version, entry["versions"]):
            continue
        lines = (root / entry["source"]).read_text().splitlines()
        if version == "2.13.0":  # the release the lines were read on
            assert entry["code"] in lines[entry["line"] - 1]
        else:
            assert any(entry["code"] in line for line in lines)
        if "parsed_at" in entry and version == "2.13.0":
            parsed, _, at = entry["parsed_at"].partition(":")
            assert "type=int" in (root / parsed).read_text().splitlines()[int(at) - 1]
        for option in [*entry.get("options", ()), *entry.get("unless", ())]:
            where = "launch.py" if "use" in option else "run.py"
            assert f'"{option}"' in (root / "torch/distributed" / where).read_text()


@pytest.mark.wheels
def test_scan_headline_is_does_not_start(tmp_path: Path) -> None:
    """The whole scan, out of the box: the launcher's refusal is the headline, exit 1, its line named."""
    path = _script(tmp_path, LAUNCH.format(port=66664))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", path.name, "--format", "json"],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
    assert proc.returncode == 1, proc.stderr
    verdict = json.loads(proc.stdout)["verdict"]
    assert verdict["headline"].startswith("DOES NOT START: `--master_port 66664` is not a TCP port")
    assert "quant_1bit.sh:4" in verdict["headline"] and "1 other cause(s)" in verdict["headline"]


# Megatron-LM 23.06 (NVIDIA/Megatron-LM, commit 4f8e9ac412eff9cabae31495b9f5f3f02fe5a9d4,
# megatron/arguments.py:15-44, 964): one parser, `--local_rank` only, parse_args() unless
# ignore_unknown_args; examples/finetune_race_distributed.sh:18 runs it through
# `python -m torch.distributed.launch $DISTRIBUTED_ARGS`.
MEGATRON_ARGS = '''import argparse


def parse_args(extra_args_provider=None, ignore_unknown_args=False):
    parser = argparse.ArgumentParser(description='Megatron-LM Arguments', allow_abbrev=False)
    parser = _add_distributed_args(parser)
    if ignore_unknown_args:
        args, _ = parser.parse_known_args()
    else:
        args = parser.parse_args()
    return args


def _add_distributed_args(parser):
    group = parser.add_argument_group(title='distributed')
    group.add_argument('--pipeline-model-parallel-size', type=int, default=1)
    group.add_argument('--local_rank', type=int, default=None, help='local rank passed from distributed launcher.')
    return parser
'''


@pytest.mark.parametrize("ignore, refused", [("", True), ("args_defaults={}, ignore_unknown_args=True", False)])
def test_megatron_checkout_parser_with_underscore_only(tmp_path: Path, ignore: str, refused: bool) -> None:
    (tmp_path / "megatron").mkdir()
    (tmp_path / "megatron" / "__init__.py").write_text("")
    (tmp_path / "megatron" / "arguments.py").write_text(MEGATRON_ARGS)
    (tmp_path / "pretrain_gpt.py").write_text(
        f"from megatron.training import pretrain\n\nif __name__ == '__main__':\n    pretrain(None, None, {ignore})\n")
    path = tmp_path / "run.sh"
    path.write_text("python -m torch.distributed.launch --nproc_per_node 2 pretrain_gpt.py "
                    "--pipeline-model-parallel-size 2\n")
    found = _refusals(path)
    assert [f.severity for f in found] == (["error"] if refused else [])
    if refused:
        assert "knows only `--local_rank`" in found[0].message and "arguments.py" in found[0].message


def test_script_without_any_local_rank_is_refused_too(tmp_path: Path) -> None:
    path = _script(tmp_path, LAUNCH.format(port=12345), local='"--other"')
    [found] = _refusals(path)
    assert "has no `--local-rank`" in found.message


def test_spelling_not_written_literally_is_not_decided(tmp_path: Path) -> None:
    path = _script(tmp_path, LAUNCH.format(port=12345), helper='parser.add_argument("--" + "local-rank", type=int)')
    assert not _refusals(path)
