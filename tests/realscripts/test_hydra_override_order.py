"""Hydra applies the command line's overrides to the composed config before its `${...}`
interpolations are resolved (compose, override, then resolve), so an override of a key another
key interpolates reaches that key. Read the other way round, `pp=2` with
`pipeline_model_parallel_size: ${pp}` read PP=1 (false CLEAN on a ROLL copy) and
`worker_strategy=megatron` with `strategy: ${worker_strategy}` read FSDP (false NOT A PIPELINE
RUN on a verl copy).

The constructs: alibaba/ROLL@8eb27cc2dc34c4d1310b169d9b86d339004d811a examples/*/*.yaml read
top-level keys through `${...}` (e.g. `max_new_tokens: ${response_length}`,
`offload_nccl: ${offload_nccl}` in examples/qwen3-235BA22B-rlvr_megatron/rlvr_config_140GB.yaml);
volcengine/verl@b178a3cd56f58b2d502255daba591e92833930a7 verl/trainer/config/_generated_ppo_trainer.yaml
has `strategy: ${actor_rollout_ref.actor.strategy}` (the critic's follows the actor's), and
examples/split_placement/main_ppo_split.py is a `@hydra.main` copy of main_ppo run as
`python3 main_ppo_split.py a.b=c ...` (run_deepseek7b_llm.sh:3-37).
"""

from __future__ import annotations

from pathlib import Path

from auditor.bash.values import Symbolic
from auditor.config.hydra_compose import Unresolved, at, compose
from auditor.config.launch import parse_launch, read_launch
from tests.realscripts.test_hydra_main_entry import SPLIT_YAML, _roll
from tests.realscripts.test_hydra_main_entry import _checkout as _split_checkout
from tests.realscripts.test_roll import RLVR
from tests.realscripts.test_verl_strategy import _checkout as _verl_checkout
from tests.realscripts.test_verl_strategy import _not_pipeline

PP = "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size"


def test_an_override_reaches_the_keys_that_interpolate_it(tmp_path: Path) -> None:
    (tmp_path / "top.yaml").write_text("pp: 1\na:\n  size: ${pp}\n  text: x${pp}\n")
    data = compose(tmp_path, "top", overrides=[("pp", 2)]).data
    assert at(data, "a.size") == 2 and at(data, "a.text") == "x2"
    assert at(compose(tmp_path, "top").data, "a.size") == 1


def test_an_override_not_known_statically_leaves_its_dependents_unknown(tmp_path: Path) -> None:
    (tmp_path / "top.yaml").write_text("pp: 1\na:\n  size: ${pp}\n")
    data = compose(tmp_path, "top", overrides=[("pp", Unresolved("$PP", "not known"))]).data
    assert isinstance(at(data, "a.size"), Unresolved)


def test_a_deleted_key_leaves_its_dependents_unknown(tmp_path: Path) -> None:
    (tmp_path / "top.yaml").write_text("pp: 1\na:\n  size: ${pp}\n")
    assert isinstance(at(compose(tmp_path, "top", overrides=[("pp", None)]).data, "a.size"), Unresolved)


# ROLL: the YAML's roles read their pipeline size from a top-level `pp` (the ${...} pattern above).
ROLL_PP = RLVR.replace("num_gpus_per_node: 8\n", "num_gpus_per_node: 8\npp: 1\n").replace(
    "pipeline_model_parallel_size: 8", "pipeline_model_parallel_size: ${pp}").replace(
    "pipeline_model_parallel_size: 4", "pipeline_model_parallel_size: ${pp}")


def _roll_pp(root: Path, words: str) -> Path:
    run = _roll(root, words)
    (root / "examples/qwen3-235BA22B-rlvr_megatron/rlvr_config_140GB.yaml").write_text(ROLL_PP)
    return run


def test_a_roll_copy_s_override_of_an_interpolated_key_sets_each_role(tmp_path: Path) -> None:
    run = _roll_pp(tmp_path, "pp=2")
    actor, reference = (parse_launch(run.read_text(), str(run), which=k) for k in (0, 1))
    assert actor.flags["pipeline_model_parallel_size"].value == "2"
    assert reference.flags["pipeline_model_parallel_size"].value == "2"


def test_a_roll_copy_without_the_override_keeps_the_yaml_s_value(tmp_path: Path) -> None:
    run = _roll_pp(tmp_path, "exp_name=x")
    assert parse_launch(run.read_text(), str(run)).flags["pipeline_model_parallel_size"].value == "1"


# verl: one switch every role's strategy interpolates (verl's `strategy: ${actor_rollout_ref.actor.strategy}`).
SPLIT_SWITCH = SPLIT_YAML.replace("strategy: fsdp", "strategy: ${worker_strategy}") + "worker_strategy: fsdp\n"


def _split(root: Path, extra: str) -> Path:
    script = _split_checkout(root, extra=extra)
    (script.parent / "config/ppo_trainer_split.yaml").write_text(
        SPLIT_SWITCH + "pp: 1\nactor_rollout_ref:\n  actor:\n    megatron:\n      pipeline_model_parallel_size: ${pp}\n")
    return script


def _kinds(script: Path) -> set[str]:
    return {d.kind for d in read_launch(script).diagnostics}


def test_a_verl_copy_s_override_of_the_interpolated_strategy_keeps_the_megatron_run(tmp_path: Path) -> None:
    assert "launch.not-pipeline" not in _kinds(_split(tmp_path, "worker_strategy=megatron "))


def test_a_verl_copy_s_interpolated_strategy_not_known_statically_decides_nothing(tmp_path: Path) -> None:
    assert "launch.not-pipeline" not in _kinds(_split(tmp_path, "worker_strategy=$WS "))


def test_a_verl_copy_on_the_interpolated_fsdp_is_still_no_pipeline_run(tmp_path: Path) -> None:
    assert "launch.not-pipeline" in _kinds(_split(tmp_path, ""))


def test_a_verl_copy_s_override_of_an_interpolated_size_is_its_flag(tmp_path: Path) -> None:
    launch = read_launch(_split(tmp_path, "worker_strategy=megatron pp=2 "))
    assert launch.flags[PP].value == "2"
    launch = read_launch(_split(tmp_path / "b", "worker_strategy=megatron pp=$PP "))
    assert isinstance(launch.flags[PP].value, Symbolic)


def test_verl_s_main_on_a_config_that_interpolates_the_strategy(tmp_path: Path) -> None:
    """`python -m verl.trainer.main_ppo --config-name=NAME`, the config's strategies `${...}` of one key."""
    root = _verl_checkout(tmp_path)
    (root / "verl/trainer/config/switch.yaml").write_text(
        "defaults:\n  - ppo_trainer\n  - _self_\nworker_strategy: fsdp\n"
        "actor_rollout_ref:\n  actor:\n    strategy: ${worker_strategy}\n"
        "critic:\n  strategy: ${actor_rollout_ref.actor.strategy}\nreward_model:\n  strategy: ${worker_strategy}\n")
    assert _not_pipeline(root, "--config-name=switch")
    assert not _not_pipeline(root, "--config-name=switch worker_strategy=megatron")
    assert not _not_pipeline(root, "--config-name=switch worker_strategy=$WS")


# A value the reader leaves unknown (`${oc.env:...}`, a resolver: alibaba/ROLL@8eb27cc2dc
# roll/configs/*.py read such YAMLs through OmegaConf, which resolves at run time) is unknown, and
# so is every key under it: never a role dropped, never a release default.
def test_a_role_whose_strategy_is_not_known_statically_is_not_dropped(tmp_path: Path) -> None:
    run = _roll(tmp_path, "exp_name=x")
    (tmp_path / "examples/qwen3-235BA22B-rlvr_megatron/rlvr_config_140GB.yaml").write_text(
        RLVR.replace("strategy_name: megatron_train", "strategy_name: ${oc.env:STRATEGY}").replace(
            "strategy_name: megatron_infer", "strategy_name: ${oc.env:STRATEGY}"))
    launch = parse_launch(run.read_text(), str(run))
    kinds = {d.kind for d in launch.diagnostics}
    assert "launch.not-pipeline" not in kinds and "launch.config-file-unread" in kinds


def test_a_role_s_settings_not_known_statically_are_unknown(tmp_path: Path) -> None:
    run = _roll(tmp_path, "exp_name=x")
    (tmp_path / "examples/qwen3-235BA22B-rlvr_megatron/rlvr_config_140GB.yaml").write_text(
        RLVR.replace("    strategy_config:\n      tensor_model_parallel_size: 2\n", "    strategy_config: ${oc.env:CFG}\n"
                     "    unused:\n      tensor_model_parallel_size: 2\n", 1))
    launch = parse_launch(run.read_text(), str(run))
    assert isinstance(launch.flags["pipeline_model_parallel_size"].value, Symbolic)


def test_a_key_under_an_unknown_value_is_unknown(tmp_path: Path) -> None:
    (tmp_path / "top.yaml").write_text("a: 1\n")
    data = compose(tmp_path, "top", overrides=[("a", Unresolved("$A", "not known"))]).data
    assert isinstance(at(data, "a.b.c"), Unresolved)
