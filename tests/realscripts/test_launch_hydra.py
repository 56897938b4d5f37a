"""Hydra-style overrides (issue 22 item 9, launch side): an RL trainer configured by `a.b.c=value`
words, as verl's examples/ppo_trainer/run_qwen1.5_moe_a2.7b-gsm8k_megatron.sh (volcengine/verl commit
b178a3cd56f58b2d502255daba591e92833930a7) runs `python3 -m verl.trainer.main_ppo --config-path=./config
--config-name='ppo_megatron_trainer' ... actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=$PP
... trainer.n_gpus_per_node=8 trainer.nnodes=$NODES`.

The reader is generic: a launcher rule of style "hydra" (in the framework's rules file) routes a
command here, and its `nproc_keys`/`nnodes_keys` name the settings that size the world.
"""

from __future__ import annotations

from auditor.bash.lexer import Lexer
from auditor.bash.parser import ShellParser
from auditor.bash.values import Field, Symbolic
from auditor.config.launcher import world_size
from auditor.config.model import LaunchConfig
from auditor.config.overrides import read_overrides
from auditor.config.training_command import Candidate, LaunchShell
from auditor.rulebook.launchers import Spelling

SCRIPT = """NODES=4
PP=2
python3 -m verl.trainer.main_ppo --config-path=./config --config-name='ppo_megatron_trainer' \\
    data.train_files="$train_files" \\
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=$PP \\
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=$TP \\
    +actor_rollout_ref.actor.megatron.override_transformer_config.num_layers_in_first_pipeline_stage=3 \\
    ~trainer.logger \\
    trainer.n_gpus_per_node=8 trainer.nnodes=$NODES $@
"""


def _words(text: str) -> list[Field]:
    shell = LaunchShell("v.sh", Spelling.load(None), {}, [], text.split("\\n"))
    seen: list[list[Field]] = []
    shell.external = lambda fields, inline, cmd, siblings, at: seen.append(fields) or 0  # type: ignore[method-assign]
    shell.run(ShellParser(Lexer(text, "v.sh").tokens(), "v.sh", []).parse())
    return seen[-1][3:]  # after `python3 -m verl.trainer.main_ppo`


def test_overrides_are_settings_by_dotted_key() -> None:
    config = LaunchConfig(path="v.sh", launcher="python -m verl.trainer.main_ppo", command_line=3, end_line=9)
    read_overrides(config, _words(SCRIPT), "v.sh")
    flags = {name: flag.value for name, flag in config.flags.items()}
    assert flags["actor_rollout_ref.actor.megatron.pipeline_model_parallel_size"] == "2"
    assert isinstance(flags["actor_rollout_ref.actor.megatron.tensor_model_parallel_size"], Symbolic)
    assert flags["actor_rollout_ref.actor.megatron.override_transformer_config.num_layers_in_first_pipeline_stage"] == "3"
    assert flags["trainer.logger"] is None  # deleted
    assert config.launcher_flags["config-name"].value == "ppo_megatron_trainer"
    assert config.positionals and any(d.kind == "launch.script-arguments" for d in config.diagnostics)  # $@

    launcher = {"name": "verl", "style": "hydra", "nproc_keys": ["trainer.n_gpus_per_node"],
                "nnodes_keys": ["trainer.nnodes"]}
    chosen = Candidate(launcher, "python -m verl.trainer.main_ppo", "", [], [], {}, {}, 3, 9, False)
    world_size(config, launcher, chosen, Spelling.load(None), "v.sh")
    assert (config.nproc_per_node, config.nnodes) == (8, 4)
    assert "trainer.nnodes=4" in config.world_source["nnodes"]
