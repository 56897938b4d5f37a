"""A training script of any name that calls Megatron-LM's parser entry (megatron.training's
`pretrain`, `initialize_megatron`, `parse_args`) is Megatron-LM's front end even where no
Megatron-LM checkout lies around it (issue 22 items 6 and 9).

The shape is alibaba/Pai-Megatron-Patch (a098ca5acb): examples/llama2/finetune_megatron_llama.py
(`from megatron.initialize import initialize_megatron`, `initialize_megatron(extra_args_provider=
get_patch_args)` with get_patch_args from megatron_patch.arguments) and
examples/llama2/finetune_mcore_llama_withGA.py (`from megatron.training import pretrain`), run by
examples/deepseek/run_finetune_megatron_deepseek.sh as `torchrun $DISTRIBUTED_ARGS
../llama2/finetune_megatron_llama.py ...`; the Megatron-LM it imports is a git submodule
(backends/megatron/Megatron-LM-240126) that a plain clone does not hold.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.config.derive import derive
from auditor.config.launch import read_launch

FINETUNE = """\
from megatron import get_args
from megatron.initialize import initialize_megatron
from megatron_patch.arguments import get_patch_args


def main():
    initialize_megatron(extra_args_provider=get_patch_args)
    args = get_args()


if __name__ == "__main__":
    main()
"""

WITH_GA = """\
from megatron.training import pretrain
from megatron_patch.arguments import get_patch_args

if __name__ == "__main__":
    pretrain(None, None, None, extra_args_provider=get_patch_args)
"""

OWN = """\
def pretrain(args):
    return args


def parse_args(parser):
    return parser.parse_args()


if __name__ == "__main__":
    pretrain(None)
"""

LAUNCH = """\
#!/bin/bash
DISTRIBUTED_ARGS="--nproc_per_node 8 --nnodes 1 --node_rank 0"
run_cmd="torchrun $DISTRIBUTED_ARGS ../llama2/{entry} --tensor-model-parallel-size 2 \\
 --pipeline-model-parallel-size 2 --num-layers 8 --micro-batch-size 1 --global-batch-size 8"
eval ${{run_cmd}}
"""


def pai(tmp_path: Path, entry: str, text: str) -> Path:
    (tmp_path / "examples/llama2").mkdir(parents=True)
    (tmp_path / "examples/deepseek").mkdir(parents=True)
    (tmp_path / "examples/llama2" / entry).write_text(text)
    script = tmp_path / "examples/deepseek/run_finetune.sh"
    script.write_text(LAUNCH.format(entry=entry))
    return script


@pytest.mark.parametrize("entry,text", [("finetune_megatron_llama.py", FINETUNE),
                                        ("finetune_mcore_llama_withGA.py", WITH_GA)],
                         ids=["initialize_megatron", "pretrain"])
def test_an_entry_calling_megatrons_parser_is_megatron_lms_front_end(tmp_path, entry, text):
    launch = read_launch(pai(tmp_path, entry, text))
    assert launch.builds_parser == "megatron-lm"
    config = derive(launch, {"megatron-core": "0.17.0"}, torch_version="2.11.0")
    assert not [n for n in config.notes if "matches no rules frontend" in n], config.notes
    assert config.value("pipeline_model_parallel_size") == 2
    assert config.value("data_parallel_size") == 2  # 8 ranks / (TP 2 x PP 2)
    assert config.value("overlap_p2p_comm") is False  # Megatron-LM's default without VPP


def test_a_pretrain_of_its_own_is_not_megatron_lms(tmp_path):
    launch = read_launch(pai(tmp_path, "finetune_own.py", OWN))
    assert launch.builds_parser == ""
    config = derive(launch, {"megatron-core": "0.17.0"}, torch_version="2.11.0")
    assert any("matches no rules frontend" in n for n in config.notes)


@pytest.mark.wheels
def test_the_rule_quotes_each_verified_release():
    """[parser_entry] `code` is at `source` in every megatron-core release the front end verifies."""
    from auditor import rulebook, sources

    rule = rulebook.load("megatron-lm").data["parser_entry"]
    path, _, line = rule["source"].partition(":")
    for version in rulebook.load("megatron-lm").section("framework")["verified"]:
        text = (sources.resolve(f"megatron-core=={version}").root / path).read_text(encoding="utf-8")
        assert text.splitlines()[int(line) - 1] == rule["code"], version


# examples/llama2/finetune_megatron_llama_withGA.py (a098ca5acb): `from megatron_patch.training
# import pretrain` (:30), `pretrain(...)` (:121); megatron_patch/training.py:51-91 `def pretrain`
# imports initialize_megatron from megatron.initialize inside its body and calls it first.
PATCH_PRETRAIN = """\
from megatron_patch.training import pretrain
from megatron_patch.arguments import get_patch_args

if __name__ == "__main__":
    pretrain(None, None, None, None, extra_args_provider=get_patch_args)
"""
PATCH_TRAINING = """\
def pretrain(provider, model_provider, model_type, forward_step, extra_args_provider=None):
    from megatron.initialize import initialize_megatron
    initialize_megatron(extra_args_provider=extra_args_provider)
"""


@pytest.mark.parametrize("training,builds", [
    (PATCH_TRAINING, "megatron-lm"),
    ("def pretrain(*args, **kwargs):\n    return args\n", ""),
    # its own loop then sets a P2P key of the schedule: the parser's defaults do not say the run
    (PATCH_TRAINING + "    config = get_model_config(model[0])\n    config.batch_p2p_comm = True\n", ""),
], ids=["initializes-megatron", "own-loop", "sets-batch-p2p"])
def test_the_checkouts_own_pretrain_that_initializes_megatron(tmp_path, training, builds):
    script = pai(tmp_path, "finetune_megatron_llama_withGA.py", PATCH_PRETRAIN)
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "megatron_patch").mkdir()
    (tmp_path / "megatron_patch/__init__.py").write_text("")
    (tmp_path / "megatron_patch/training.py").write_text(training)
    launch = read_launch(script)
    assert launch.builds_parser == builds
    if builds:
        config = derive(launch, {"megatron-core": "0.17.0"}, torch_version="2.11.0")
        assert config.value("overlap_p2p_comm") is False  # Megatron-LM's default without VPP
        assert config.value("pipeline_model_parallel_size") == 2
