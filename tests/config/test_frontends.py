"""One reader per front end (auditor/config/frontends/): a launcher's `style` picks its reader
once; each reads the command as its front end's parser would (issue 26, item 2)."""

from __future__ import annotations

import pytest

from auditor.config.frontends import for_style
from auditor.config.frontends.argparse_flags import FlagsReader
from auditor.config.frontends.hydra import HydraReader
from auditor.config.frontends.megatron_lm import MegatronReader
from auditor.config.launch import parse_launch
from auditor.rulebook.launchers import Spelling


def test_every_style_the_rules_name_has_a_reader_of_that_style() -> None:
    spelling = Spelling.load(None)
    styles = {e["style"] for e in (*spelling.launchers, *spelling.swift_scripts)}
    assert {"megatron-lm", "ms-swift", "hydra", "deepspeed"} <= styles
    for style in styles:
        assert for_style(style).style == style
    assert isinstance(for_style("megatron-lm"), MegatronReader)
    assert isinstance(for_style("hydra"), HydraReader) and for_style("hydra").module_is_program
    assert isinstance(for_style("ms-swift"), FlagsReader) and not for_style("ms-swift").module_is_program


@pytest.mark.parametrize("text,style,flags", [
    # Megatron-LM's spellings resolve to their dest (rules/megatron-lm.toml [[flag]])
    ("torchrun --nproc-per-node 2 pretrain_gpt.py --no-overlap-p2p-communication\n", "megatron-lm",
     {"overlap_p2p_comm": False}),
    # ms-swift's dataclass fields, read as written
    ("NPROC_PER_NODE=2 megatron sft --pipeline_model_parallel_size 2\n", "ms-swift",
     {"pipeline_model_parallel_size": "2"}),
    # ms-swift's own training script run through torchrun directly ([[swift_script]])
    ("torchrun --nproc-per-node 2 swift/cli/sft.py --pipeline_model_parallel_size 2\n", "ms-swift",
     {"pipeline_model_parallel_size": "2"}),
])
def test_the_reader_of_the_style_reads_the_flags(text: str, style: str, flags: dict) -> None:
    launch = parse_launch(text, "run.sh")
    assert launch.style == style
    assert {k: launch.flags[k].value for k in flags} == flags


def test_a_hydra_front_end_reads_overrides_and_names_the_module() -> None:
    launch = parse_launch("python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.megatron."
                          "pipeline_model_parallel_size=2 trainer.n_gpus_per_node=8\n", "run.sh")
    assert launch.style == "hydra" and launch.launcher == "python -m verl.trainer.main_ppo"
    assert launch.script is None
