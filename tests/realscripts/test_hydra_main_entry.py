"""A Python entry configured by `@hydra.main` that no front end names (issue 22; test10's
verl-split-placement-dsk7b): read by guess as Megatron-LM's front end on megatron-core's
defaults, it read CLEAN. Now a copy of a known front end's Hydra main is read as that front end on
its own config (config/entry_copy.py `hydra_copy`), and any other `@hydra.main` entry read by guess
is INCONCLUSIVE (config/entry_stack.py `unknown_stack`, rules/stacks.toml `[hydra_entry]`).

The checkout written here mirrors volcengine/verl@b178a3cd56f58b2d502255daba591e92833930a7
examples/split_placement/: run_deepseek7b_llm.sh runs `python3 main_ppo_split.py a.b=c ... $@`
from that folder (:3-37); main_ppo_split.py imports verl (:24-27), is decorated
`@hydra.main(config_path="config", config_name="ppo_trainer_split", version_base=None)` (:95) and
picks its workers by `config.actor_rollout_ref.actor.strategy` (:131-134, as
verl/trainer/main_ppo.py:153 does); config/ppo_trainer_split.yaml has `hydra.searchpath:
[file://../../verl/trainer/config]` (:3-5, relative to the working directory), defaults
`[ppo_trainer, _self_]` (:7-9) and `strategy: fsdp` for the actor, critic and reward model
(:37, :106, :143).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor import cli, rulebook
from auditor.bash.values import Symbolic
from auditor.config.entry_stack import UnknownStack
from auditor.config.launch import NotAPipelineRun, parse_launch, read_launch, refuse_not_pipeline
from tests.realscripts.test_roll import RLVR, roll_tree

SPLIT_MAIN = '''import hydra
import ray
from omegaconf import OmegaConf

from verl.trainer.ppo.ray_trainer import RayPPOTrainer


@hydra.main(config_path="config", config_name="ppo_trainer_split", version_base=None)
def main(config):
    ray.get(main_task.remote(config))


@ray.remote
def main_task(config):
    if config.actor_rollout_ref.actor.strategy in {"fsdp", "fsdp2"}:
        from verl.workers.fsdp_workers import ActorRolloutRefWorker, CriticWorker
    elif config.actor_rollout_ref.actor.strategy == "megatron":
        from verl.workers.megatron_workers import ActorRolloutRefWorker, CriticWorker


if __name__ == "__main__":
    main()
'''
SPLIT_YAML = ("hydra:\n  searchpath:\n    - file://../../verl/trainer/config\n\n"
              "defaults:\n  - ppo_trainer\n  - _self_\n\n"
              "actor_rollout_ref:\n  actor:\n    strategy: fsdp\n"
              "critic:\n  strategy: fsdp\nreward_model:\n  strategy: fsdp\n")
RUN = ("set -x\n\npython3 main_ppo_split.py \\\n    algorithm.adv_estimator=gae \\\n"
       "    actor_rollout_ref.actor.fsdp_config.param_offload=False \\\n    {extra}"
       "trainer.n_gpus_per_node=8 \\\n    trainer.nnodes=1 $@\n")


# The checkout written here states no release: [hydra_strategy] decides on one it is verified on
# (tests/realscripts/test_hydra_strategy_release.py), as `--target verl==0.7.0` states it.
VERIFIED = {"verl": "0.7.0"}


def _checkout(root: Path, main: str = SPLIT_MAIN, extra: str = "") -> Path:
    """verl's trainer config (verl/trainer/config/ppo_trainer.yaml's defaults pick
    actor/dp_actor.yaml, `strategy: fsdp`) and the split-placement example beside it."""
    config = root / "verl/trainer/config"
    (config / "actor").mkdir(parents=True)
    (root / "verl/trainer/main_ppo.py").write_text(
        '@hydra.main(config_path="config", config_name="ppo_trainer", version_base=None)\n')
    (root / "setup.py").write_text("")
    (config / "ppo_trainer.yaml").write_text(
        "defaults:\n  - actor@actor_rollout_ref.actor: dp_actor\n  - _self_\n"
        "trainer:\n  nnodes: 1\n  n_gpus_per_node: 8\ncritic:\n  strategy: fsdp\nreward_model:\n  strategy: fsdp\n")
    (config / "actor/dp_actor.yaml").write_text("strategy: fsdp\n")
    example = root / "examples/split_placement"
    (example / "config").mkdir(parents=True)
    (example / "main_ppo_split.py").write_text(main)
    (example / "config/ppo_trainer_split.yaml").write_text(SPLIT_YAML)
    script = example / "run_deepseek7b_llm.sh"
    script.write_text(RUN.format(extra=extra))
    return script


def test_a_copy_of_verl_s_main_on_fsdp_is_no_pipeline_run(tmp_path: Path) -> None:
    launch = read_launch(_checkout(tmp_path))
    assert launch.launcher == "python -m verl.trainer.main_ppo"
    copy = next(d for d in launch.diagnostics if d.kind == "launch.entry-copy")
    assert "main_ppo_split.py" in copy.message and "@hydra.main" in copy.message
    with pytest.raises(NotAPipelineRun) as caught:  # on a release [hydra_strategy] is verified on
        refuse_not_pipeline(launch, VERIFIED)
    assert "fsdp" in caught.value.what and "ppo_trainer_split.yaml" in caught.value.what


def test_the_copy_s_overrides_apply(tmp_path: Path) -> None:
    """Megatron on every role, by the command line's overrides: verl's Megatron run, as for
    `python -m verl.trainer.main_ppo`, with the overrides read as its flags."""
    extra = ("actor_rollout_ref.actor.strategy=megatron critic.strategy=megatron "
             "reward_model.strategy=megatron actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2 ")
    launch = read_launch(_checkout(tmp_path, extra=extra))
    assert launch.launcher == "python -m verl.trainer.main_ppo"
    assert not any(d.kind in ("launch.not-pipeline", "launch.unknown-stack") for d in launch.diagnostics)
    assert launch.flags["actor_rollout_ref.actor.megatron.pipeline_model_parallel_size"].value == "2"


def test_the_copy_s_config_name_option_wins(tmp_path: Path) -> None:
    """`--config-name` is @hydra.main's own option: a config of the copy's folder on Megatron."""
    script = _checkout(tmp_path, extra="--config-name=mega ")
    (script.parent / "config/mega.yaml").write_text(SPLIT_YAML.replace("fsdp", "megatron"))
    launch = read_launch(script)
    assert not any(d.kind == "launch.not-pipeline" for d in launch.diagnostics)


def test_the_copy_s_own_config_gives_its_megatron_settings(tmp_path: Path) -> None:
    """The copy's config is its own: the Megatron settings the verl rules read come from it where
    the command line does not give them, not from verl's release defaults."""
    script = _checkout(tmp_path)
    (script.parent / "config/ppo_trainer_split.yaml").write_text(
        SPLIT_YAML.replace("fsdp", "megatron").replace(
            "    strategy: megatron\n", "    strategy: megatron\n    megatron:\n      pipeline_model_parallel_size: 4\n", 1))
    launch = read_launch(script)
    assert not any(d.kind == "launch.not-pipeline" for d in launch.diagnostics)
    assert launch.flags["actor_rollout_ref.actor.megatron.pipeline_model_parallel_size"].value == "4"


def test_a_copy_s_config_not_read_is_unknown_not_verl_s_defaults(tmp_path: Path) -> None:
    script = _checkout(tmp_path)
    (script.parent / "config/ppo_trainer_split.yaml").unlink()
    launch = read_launch(script)
    assert any(d.kind == "launch.config-file-unread" for d in launch.diagnostics)
    pp = launch.flags["actor_rollout_ref.actor.megatron.pipeline_model_parallel_size"].value
    assert isinstance(pp, Symbolic)


def test_a_config_name_no_folder_holds_stops_the_copy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """volcengine/verl@b178a3cd56 verl/experimental/fully_async_policy/shell/dapo_30b_a3b_base_math_fsdp.sh
    runs fully_async_main.py (a copy of main_ppo) with `--config-path=config
    --config-name='fully_async_dapo_trainer.yaml'` (:100-101), a file no folder of the checkout holds:
    Hydra stops the job. It read CLEAN on the copy's unknown settings; a comment naming a
    `config.json` before it (:14) writes nothing."""
    script = _checkout(tmp_path, extra="--config-name='absent_trainer.yaml' ")
    script.write_text("# edit max_position_embeddings in config.json first\n" + script.read_text())
    launch = read_launch(script)
    missing = [d for d in launch.diagnostics if d.kind == "launch.config-file-missing"]
    assert missing and "absent_trainer" in missing[0].message
    code = cli.main(["scan", "--config", str(script), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"]["headline"].startswith("DOES NOT START: Cannot find primary config 'absent_trainer'"), doc
    assert code != 0


def test_a_config_an_earlier_command_may_write_stays_unknown(tmp_path: Path) -> None:
    """The same, but a line before the run names the missing file's folder (`cp ... config/`):
    it may write it, so the config stays unread (unknown), never a stop by guess."""
    script = _checkout(tmp_path, extra="--config-name='absent_trainer.yaml' ")
    script.write_text("cp /shared/absent_trainer.yaml config/\n" + script.read_text())
    launch = read_launch(script)
    assert not any(d.kind == "launch.config-file-missing" for d in launch.diagnostics)
    assert any(d.kind == "launch.config-file-unread" for d in launch.diagnostics)


def test_a_module_copy_run_with_python_m_is_read_as_verl_s(tmp_path: Path) -> None:
    """volcengine/verl@b178a3cd56 verl/experimental/one_step_off_policy/main_ppo.py: its own
    `@hydra.main(config_path="config", config_name="one_step_off_ppo_trainer")` (:219), its
    workers picked by the actor's strategy (:86-108); its config's searchpath
    `file://verl/trainer/config` and defaults `[ppo_trainer, _self_]` (config/
    one_step_off_ppo_trainer.yaml:1-8); run as `python3 -m verl.experimental.one_step_off_policy.main_ppo`
    from the checkout's root (shell/grpo_0.6b_gsm8k_fsdp2_2_6.sh)."""
    _checkout(tmp_path)
    package = tmp_path / "verl/experimental/one_step_off_policy"
    (package / "config").mkdir(parents=True)
    (package / "shell").mkdir()
    (package / "main_ppo.py").write_text(SPLIT_MAIN.replace("ppo_trainer_split", "one_step_off_ppo_trainer"))
    (package / "config/one_step_off_ppo_trainer.yaml").write_text(
        "hydra:\n  searchpath:\n    - file://verl/trainer/config\n\ndefaults:\n  - ppo_trainer\n  - _self_\n")
    script = package / "shell/grpo_fsdp2.sh"
    script.write_text("python3 -m verl.experimental.one_step_off_policy.main_ppo \\\n"
                      "    actor_rollout_ref.actor.strategy=fsdp2 critic.strategy=fsdp2 trainer.n_gpus_per_node=8\n")
    launch = read_launch(script)
    assert launch.launcher == "python -m verl.trainer.main_ppo"
    with pytest.raises(NotAPipelineRun) as caught:
        refuse_not_pipeline(launch, VERIFIED)
    assert "fsdp2" in caught.value.what and "one_step_off_ppo_trainer.yaml" in caught.value.what


def test_an_unknown_hydra_main_is_not_read_on_megatron_core_s_defaults(capsys, tmp_path: Path) -> None:
    """A `@hydra.main` entry no front end's rules know (it imports megatron, not verl): its
    settings are the composed config's, not megatron-core's defaults: INCONCLUSIVE, one step."""
    main = SPLIT_MAIN.replace("from verl.", "from megatron.")
    script = _checkout(tmp_path, main=main)
    with pytest.raises(UnknownStack) as caught:
        refuse_not_pipeline(read_launch(script))
    assert "@hydra.main" in caught.value.what and "ppo_trainer_split" in caught.value.what
    code = cli.main(["scan", "--config", str(script), "--format", "json"])
    verdict = json.loads(capsys.readouterr().out)["verdict"]
    assert verdict["status"] == "inconclusive" and code == 1
    assert len(verdict["undecided"]) == 1 and verdict["undecided"][0]["decide"]


def test_a_verl_import_without_the_strategy_read_is_no_copy(tmp_path: Path) -> None:
    """Importing verl is not enough: the copy picks its workers by the strategy key, as verl's
    main does; another Hydra app on verl (an evaluation) is not read as main_ppo."""
    main = SPLIT_MAIN.replace("config.actor_rollout_ref.actor.strategy", "config.data.kind")
    launch = read_launch(_checkout(tmp_path, main=main))
    assert launch.launcher != "python -m verl.trainer.main_ppo"
    assert any(d.kind == "launch.unknown-stack" for d in launch.diagnostics)


# ROLL: a `@hydra.main` copy of examples/start_rlvr_pipeline.py (alibaba/ROLL@8eb27cc2dc, :1-37:
# argparse --config_path/--config_name, hydra.experimental initialize + compose, then
# RLVRPipeline(pipeline_config=from_dict(RLVRConfig, cfg)).run()), composing its config by the
# decorator instead; the YAML is test_roll.py's (examples/qwen3-235BA22B-rlvr_megatron/).
ROLL_MAIN = '''import hydra
from dacite import from_dict
from omegaconf import OmegaConf

from roll.distributed.scheduler.initialize import init
from roll.pipeline.rlvr.rlvr_config import RLVRConfig
from roll.pipeline.rlvr.rlvr_pipeline import RLVRPipeline


@hydra.main(config_path="qwen3-235BA22B-rlvr_megatron", config_name="rlvr_config_140GB", version_base=None)
def main(cfg):
    ppo_config = from_dict(data_class=RLVRConfig, data=OmegaConf.to_container(cfg, resolve=True))
    init()
    RLVRPipeline(pipeline_config=ppo_config).run()
'''


def _roll(root: Path, words: str) -> Path:
    script = roll_tree(root, "qwen3-235BA22B-rlvr_megatron", RLVR, "rlvr_config_140GB")
    (root / "examples/main_rlvr.py").write_text(ROLL_MAIN)
    run = root / "run.sh"
    run.write_text(f"cd $(dirname $0)\npython examples/main_rlvr.py {words}\n")
    assert script.is_file()
    return run


def test_a_hydra_main_copy_of_roll_s_entry_is_read_by_roll_s_roles(tmp_path: Path) -> None:
    run = _roll(tmp_path, "actor_train.strategy_args.strategy_config.pipeline_model_parallel_size=2")
    actor, reference = (parse_launch(run.read_text(), str(run), which=k) for k in (0, 1))
    assert any(d.kind == "launch.entry-copy" for d in actor.diagnostics)
    assert (actor.case_name, reference.case_name) == ("actor_train", "reference") and actor.commands == 2
    assert actor.flags["pipeline_model_parallel_size"].value == "2"  # the override applies
    assert reference.flags["pipeline_model_parallel_size"].value == "4"


def test_a_roll_copy_s_override_not_known_statically_leaves_the_config_unread(tmp_path: Path) -> None:
    run = _roll(tmp_path, "actor_train.strategy_args.strategy_config.pipeline_model_parallel_size=$PP")
    actor = parse_launch(run.read_text(), str(run))
    assert any(d.kind == "launch.config-file-unread" for d in actor.diagnostics)
    assert isinstance(actor.flags["pipeline_model_parallel_size"].value, Symbolic)  # unknown, no default


# verl's FSDP SFT trainer, a Hydra app run by torchrun: volcengine/verl@b178a3cd56
# examples/sft/gsm8k/run_qwen_05_sp2.sh (:14-16) runs `torchrun --standalone --nnodes=1
# --nproc_per_node=$nproc_per_node -m verl.trainer.fsdp_sft_trainer data.train_files=... $@`;
# verl/trainer/fsdp_sft_trainer.py has `@hydra.main(config_path="config", config_name="sft_trainer")`
# (:843) and wraps the model with PyTorch FSDP (`self.fsdp_model = FSDP(`, :312).
SFT_RUN = ("torchrun --standalone --nnodes=1 --nproc_per_node=8 \\\n     -m verl.trainer.fsdp_sft_trainer \\\n"
           "    data.train_files=$HOME/data/gsm8k/train.parquet \\\n    ulysses_sequence_parallel_size=2\n")


def test_verl_s_fsdp_sft_trainer_is_no_pipeline_run(capsys, tmp_path: Path) -> None:
    script = tmp_path / "run_qwen_05_sp2.sh"
    script.write_text(SFT_RUN)
    code = cli.main(["scan", "--config", str(script), "--format", "json"])
    verdict = json.loads(capsys.readouterr().out)["verdict"]
    assert verdict["status"] == "not-pipeline" and code == 0, verdict["headline"]
    assert "verl.trainer.fsdp_sft_trainer" in verdict["headline"] and "FSDP" in verdict["headline"]


@pytest.mark.wheels
def test_each_checked_release_s_sft_trainer_is_fsdp_only(release) -> None:
    entry = next(e for e in rulebook.load("verl").data["entry_module"]
                 if "verl.trainer.fsdp_sft_trainer" in e["modules"])
    path = entry["source"].split()[1].partition(":")[0]
    for version in entry["checked"]:
        text = next(Path(release(f"verl=={version}").root).rglob(path)).read_text(encoding="utf-8")
        assert entry["code"] in text and '@hydra.main(config_path="config", config_name="sft_trainer"' in text, version
        assert "megatron" not in text.lower() and "pipeline" not in text.lower(), version
