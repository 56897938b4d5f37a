"""One fail-closed rule for a word of the training command not known statically (config.flags
`unresolved` and `open_settings`): the settings the verdict rests on (rules' [[setting_cases]])
that such a word may set, those not written after it, are unknown, for every front end; the
scan then judges them case by case (analysis/settingcases). The script's own arguments (`"$@"`)
add nothing to the script run as written (`bash SCRIPT`, no arguments), which the header says.

The constructs are those of upstream launch scripts:
- `${EXTRA_ARGS}` after the flags: NVIDIA/Megatron-LM d98e8a64dd
  examples/multimodal/nvlm/sft_qwen20_72b_internvit_6b.sh (OPTIONS ... `${EXTRA_ARGS}`, run by
  `torchrun ... examples/multimodal/train.py ${OPTIONS}`);
- `$@` last among Hydra overrides: volcengine/verl b178a3cd56 examples/gpg_trainer/run_qwen2-7b_math.sh
  (`trainer.total_epochs=15 $@`);
- `${DISTRIBUTED_ARGS}` among torchrun's options: NVIDIA/Megatron-LM core_v0.17.0
  examples/gpt3/train_gpt3_175b_distributed.sh (`torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py`);
- a caller's variable behind an empty fallback, spliced unquoted into the command:
  NVIDIA-NeMo/Megatron-Bridge 067f987df03b8355b03192d88d70f1709fedf51a
  examples/models/nemotron/nemotron_3/ultra/slurm_pretrain.sh:47 (`EXTRA_OVERRIDES=${EXTRA_OVERRIDES:-}`,
  then `${EXTRA_OVERRIDES}` last on the training command, :173);
- the same empty fallback inside an array (`EXTRA=(${EXTRA_ARGS:-})`), a quoted text later split,
  `eval` or `bash -c`: the forms of review r36-falseclean 1 (none among the pinned scripts);
- a loop over such a caller's words appending to the string that runs the command:
  NVIDIA-NeMo/Megatron-Bridge 067f987df0 examples/models/stepfun/step37/slurm_pretrain.sh:143-156
  (`SRUN_CMD="${SRUN_CMD} --container-mounts=${mount}"` for each word of `${CONTAINER_MOUNTS}`,
  then `${SRUN_CMD} ... bash -c "...; ${INNER_SCRIPT}"`);
- a default set only where the caller left the variable empty (`if [ -z "$X" ]; then X=...; fi`,
  `[ -z "$X" ] && X=...`: review r36-falseclean 4), also where the test reads the caller's
  empty default: NVIDIA-NeMo/Megatron-Bridge 067f987df0 examples/models/deepseek_v4/inference.sh:46-51
  (`if [[ -z "${PP:-}" ]]; then case ... PP=1 ...; fi`, then `--pp ${PP}`).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from auditor.bash.values import Field, Symbolic
from auditor.config.derive import derive
from auditor.config.expr import UNKNOWN
from auditor.config.flags import open_settings
from auditor.config.frontends.hydra_strategy import judge_strategy
from auditor.config.launch import CommandNotFollowed, parse_launch
from auditor.config.model import LaunchConfig
from auditor.config.overrides import read_overrides
from tests.config.test_hf_config_file import lf_tree
from tests.realscripts.test_verl_strategy import _checkout

HEAD = "#!/bin/bash\n# megatron-core==0.17.0\n# torch==2.10.0\n"
MODEL = ("--num-layers 24 --hidden-size 1024 --num-attention-heads 16 --micro-batch-size 1 "
         "--global-batch-size 8 --seq-length 1024 --max-position-embeddings 1024")


def _effective(body: str, overrides: dict[str, str] | None = None) -> dict[str, object]:
    config = parse_launch(HEAD + body, "train.sh")
    eff = derive(config, {"megatron-core": "0.17.0"}, overrides, "2.10.0")
    return {k: eff.value(k) for k in ("pipeline_model_parallel_size", "batch_p2p_comm", "variable_seq_lengths")}


def test_a_variable_never_set_may_set_what_is_written_before_it() -> None:
    """PP 4 written before `${EXTRA_ARGS}` could be overridden by it (argparse: the last wins);
    before this rule the run read PP 4 (and PP 1 where none was written), and could read CLEAN."""
    values = _effective(f"torchrun --nproc-per-node 8 pretrain_gpt.py --pipeline-model-parallel-size 4 "
                        f"{MODEL} ${{EXTRA_ARGS}}\n")
    assert values == dict.fromkeys(values, UNKNOWN)


def test_what_is_written_after_the_word_stands() -> None:
    values = _effective(f"torchrun --nproc-per-node 8 pretrain_gpt.py {MODEL} ${{EXTRA_ARGS}} "
                        "--pipeline-model-parallel-size 4\n")
    assert values["pipeline_model_parallel_size"] == 4
    assert values["batch_p2p_comm"] is UNKNOWN  # no flag after the word states it


def test_a_command_substitution_is_such_a_word_and_set_decides_it() -> None:
    body = f"torchrun --nproc-per-node 8 pretrain_gpt.py {MODEL} $(cat extra_args.txt)\n"
    assert _effective(body)["pipeline_model_parallel_size"] is UNKNOWN
    assert _effective(body, {"pipeline_model_parallel_size": "2"})["pipeline_model_parallel_size"] == 2


def test_the_scripts_own_arguments_add_nothing_to_the_script_run_as_written() -> None:
    config = parse_launch(HEAD + f'torchrun --nproc-per-node 8 pretrain_gpt.py {MODEL} "$@"\n', "train.sh")
    assert config.unknown_words == []
    [said] = [d for d in config.diagnostics if d.kind == "launch.script-arguments"]
    assert "`bash train.sh`, with no arguments: `$@` (line 4) adds nothing" in said.message
    assert not any(d.kind == "launch.unresolved-args" for d in config.diagnostics)


def test_a_word_among_the_launchers_options_sets_no_training_setting() -> None:
    values = _effective("DISTRIBUTED_ARGS=(--nproc-per-node 8)\n"
                        f"torchrun ${{DISTRIBUTED_ARGS[@]}} $RDZV pretrain_gpt.py {MODEL} "
                        "--pipeline-model-parallel-size 2\n")
    assert values["pipeline_model_parallel_size"] == 2 and values["batch_p2p_comm"] is True


def test_hydra_overrides_after_the_word_stand() -> None:
    """verl's `python3 -m verl.trainer.main_ppo a.b=c ... ${EXTRA}`: the word may set any key
    not overridden after it, its dotted key read as the setting the rules alias it to."""
    config = parse_launch("python3 -m verl.trainer.main_ppo trainer.total_epochs=15 ${EXTRA} "
                          "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2\n", "run.sh")
    [word] = config.unknown_words
    assert word.text == "${EXTRA}" and word.after == {"actor_rollout_ref.actor.megatron.pipeline_model_parallel_size"}
    assert "pipeline_model_parallel_size" not in open_settings(config)
    assert "batch_p2p_comm" in open_settings(config)


@pytest.mark.wheels  # megatron-core 0.17.0, downloaded once into the cache
@pytest.mark.heavy  # two scans, each over up to 15 cases (~40 s on a loaded machine)
def test_scan_judges_the_word_case_by_case_and_names_it(tmp_path: Path) -> None:
    """With DETAIL on torch 2.10, a run whose `${EXTRA_ARGS}` may set PP > 1 and batched P2P is
    INCONCLUSIVE naming the word (it read CLEAN at PP 1 before); without DETAIL every case is
    clean and the headline says it holds whatever the word adds."""
    body = f"torchrun --nproc-per-node 8 pretrain_gpt.py --tensor-model-parallel-size 2 {MODEL} ${{EXTRA_ARGS}}\n"
    script = tmp_path / "train.sh"
    script.write_text(HEAD + "export TORCH_DISTRIBUTED_DEBUG=DETAIL\n" + body)
    done = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script)],
                          capture_output=True, text=True, cwd=tmp_path, check=False)
    headline = done.stdout.split("\n\n")[1]
    assert done.returncode == 1 and headline.startswith("INCONCLUSIVE: batch_p2p_comm is not known statically")
    assert "`${EXTRA_ARGS}` (line 5) may set it" in headline and "decide it with --set batch_p2p_comm=" in headline
    script.write_text(HEAD + body)
    done = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script)],
                          capture_output=True, text=True, cwd=tmp_path, check=False)
    headline = " ".join(done.stdout.split("\n\n")[1].split())
    assert done.returncode == 0 and headline.startswith("CLEAN:")
    assert "it holds whatever `${EXTRA_ARGS}` adds" in headline


def test_a_word_that_may_set_the_strategy_is_never_no_pipeline_run(tmp_path: Path) -> None:
    """verl on FSDP is NOT A PIPELINE RUN only where no word may set the strategy: `${EXTRA}`
    could be `actor_rollout_ref.actor.strategy=megatron` unless the strategy is overridden after it."""
    root = _checkout(tmp_path)
    script = root / "examples/multiturn/run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo\n")

    def said(*words: str | Symbolic) -> bool:
        config = LaunchConfig(path=str(script), launcher="python3 -m verl.trainer.main_ppo", command_line=1)
        fields = [Field(w, 1, unsplit=isinstance(w, Symbolic)) for w in words]
        read_overrides(config, fields, str(script))
        judge_strategy(config, fields, str(script))
        return any(d.kind == "launch.not-pipeline" for d in config.diagnostics)

    assert said("data.x=1", Symbolic("$@"))  # the script run as written: its arguments add nothing
    assert not said("data.x=1", Symbolic("${EXTRA}"))
    strategies = ("actor_rollout_ref.actor.strategy=fsdp", "critic.strategy=fsdp", "reward_model.strategy=fsdp")
    assert said(*strategies) and said(Symbolic("${EXTRA}"), *strategies)  # overridden after the word


def test_a_word_with_known_text_is_an_argument_not_added_flags() -> None:
    """THUDM/slime 624b824a89 scripts/run-deepseek-r1.sh: `--eval-prompt-data aime
    $BASE_DIR/rl_data/aime-2024.jsonl`: a path with an unknown prefix adds no flags."""
    config = parse_launch(HEAD + f"torchrun --nproc-per-node 8 pretrain_gpt.py {MODEL} "
                          "--data-path $BASE_DIR/rl_data/aime-2024.jsonl $BASE_DIR/x.jsonl\n", "train.sh")
    assert config.unknown_words == [] and open_settings(config) == {}


def test_a_positional_config_files_overrides_follow_the_same_rule(tmp_path: Path) -> None:
    """LLaMA-Factory's `src/train.py examples/megatron/qwen3_moe_full.yaml key=value ...`
    (hiyouga/LLaMA-Factory ff6d4d12ee, tests/config/test_hf_config_file.py): `${EXTRA}` after the
    file may set the settings the verdict rests on, not every key of the file; `$@` adds nothing."""
    launch = "USE_MCA=1 torchrun --nproc_per_node 8 src/train.py examples/megatron/qwen3_moe_full.yaml"
    words = parse_launch(lf_tree(tmp_path, f"{launch} ${{EXTRA}} pipeline_model_parallel_size=2").read_text(),
                         str(tmp_path / "run.sh"))
    assert [w.text for w in words.unknown_words] == ["${EXTRA}"]
    assert words.flags["expert_model_parallel_size"].value == "2"  # the file's, as written
    assert "pipeline_model_parallel_size" not in open_settings(words) and "batch_p2p_comm" in open_settings(words)
    (tmp_path / "run.sh").write_text(f'{launch} "$@"\n')
    arguments = parse_launch((tmp_path / "run.sh").read_text(), str(tmp_path / "run.sh"))
    assert arguments.unknown_words == [] and arguments.flags["pipeline_model_parallel_size"].value == "4"


def test_a_variable_the_script_assigns_on_a_branch_is_read_as_written() -> None:
    """NVIDIA/Megatron-LM d98e8a64dd examples/mixtral/train_mixtral_8x7b_distributed.sh:
    `LOGGING_ARGS+=(--wandb-project ...)` under `if [ -n "${WANDB_API_KEY}" ]`: the script
    assigns it (this reading cannot tell which branch ran), so it is no word wholly unknown:
    PP 4 written before it stands, with the warning."""
    body = ("PAR=(--pipeline-model-parallel-size 4)\nLOG=(--log-interval 1)\n"
            'if [ -n "${WANDB_API_KEY}" ]; then\n    LOG+=(--wandb-project x)\nfi\n'
            f"torchrun --nproc-per-node 8 pretrain_gpt.py {MODEL} ${{PAR[@]}} ${{LOG[@]}}\n")
    config = parse_launch(HEAD + body, "train.sh")
    [warned] = [d for d in config.diagnostics if d.kind == "launch.unresolved-args"]
    assert config.unknown_words == [] and warned.detail["open"] == []  # no verdict says it holds whatever LOG adds
    assert _effective(body)["pipeline_model_parallel_size"] == 4


@pytest.mark.parametrize("splice", ["OPTS=${EXTRA_ARGS:-}\n", "EXTRA_ARGS=${EXTRA_ARGS:-}\n"])
def test_an_empty_fallback_of_a_callers_variable_may_set_what_is_written_before_it(splice: str) -> None:
    """`${EXTRA_ARGS:-}` is empty only where the caller sets nothing: its empty default states no
    value, so the word may add `--pipeline-model-parallel-size 4` as `${EXTRA_ARGS}` unset may
    (before this, read as empty: PP 1 and no finding, CLEAN)."""
    var = splice.split("=")[0]
    body = f"{splice}torchrun --nproc-per-node 8 pretrain_gpt.py {MODEL} --pipeline-model-parallel-size 2 ${var}\n"
    values = _effective(body)
    assert values == dict.fromkeys(values, UNKNOWN)
    config = parse_launch(HEAD + body, "train.sh")
    assert [w.text for w in config.unknown_words] == ["${EXTRA_ARGS:-}"]
    [said] = [d for d in config.diagnostics if d.kind == "launch.unresolved-args"]
    assert "`--pipeline-model-parallel-size`" in said.message and said.where == "train.sh:5"
    assert _effective(body, {"pipeline_model_parallel_size": "2"})["pipeline_model_parallel_size"] == 2


def test_a_fallback_with_text_is_the_scripts_own_statement() -> None:
    """`${EXTRA_ARGS:-"--bf16"}` states what the run gets where the caller sets nothing: read as
    written (the verdict assumes the caller leaves it unset, as for a launcher option's fallback)."""
    values = _effective('OPTS=${EXTRA_ARGS:-"--bf16"}\n'
                        f"torchrun --nproc-per-node 8 pretrain_gpt.py {MODEL} --pipeline-model-parallel-size 2 $OPTS\n")
    assert values["pipeline_model_parallel_size"] == 2


def test_a_quoted_empty_fallback_and_a_set_variable_add_no_unknown_word() -> None:
    """`"${EXTRA_ARGS:-}"` is one argument, empty or the caller's whole text: not split into flags
    here either way; a variable the script sets keeps its value."""
    for body in (f'torchrun --nproc-per-node 8 pretrain_gpt.py {MODEL} --pipeline-model-parallel-size 2 '
                 f'"${{EXTRA_ARGS:-}}"\n',
                 f"EXTRA_ARGS=--bf16\nOPTS=${{EXTRA_ARGS:-}}\n"
                 f"torchrun --nproc-per-node 8 pretrain_gpt.py {MODEL} --pipeline-model-parallel-size 2 $OPTS\n"):
        assert parse_launch(HEAD + body, "train.sh").unknown_words == []


@pytest.mark.parametrize("splice", [
    'EXTRA=(${EXTRA_ARGS:-})\nARGS+=("${EXTRA[@]}")\n',
    "ARGS+=(${EXTRA_ARGS:-})\n",
    'TRAIN="${ARGS[*]} ${EXTRA_ARGS:-}"\nARGS=($TRAIN)\n',
    'TRAIN="${ARGS[*]}"\nTRAIN+=" ${EXTRA_ARGS:-}"\nARGS=($TRAIN)\n',
])
def test_an_empty_fallback_spliced_into_an_array_or_a_split_text_may_set_flags(splice: str) -> None:
    """`${EXTRA_ARGS:-}` in an array or in a quoted text split later gives the caller's words
    there as it does as a word of the command (before this, read as empty there: PP 1, CLEAN)."""
    body = (f"ARGS=({MODEL} --pipeline-model-parallel-size 2)\n{splice}"
            'torchrun --nproc-per-node 8 pretrain_gpt.py "${ARGS[@]}"\n')
    values = _effective(body)
    assert values == dict.fromkeys(values, UNKNOWN)
    assert [w.text for w in parse_launch(HEAD + body, "train.sh").unknown_words] == ["${EXTRA_ARGS:-}"]


@pytest.mark.parametrize("run", ['eval ${CMD}', 'bash -c "${CMD}"'])
def test_an_empty_fallback_in_a_command_text_run_later_may_set_flags(run: str) -> None:
    body = (f'CMD="torchrun --nproc-per-node 8 pretrain_gpt.py {MODEL} --pipeline-model-parallel-size 2 '
            f'${{EXTRA_ARGS:-}}"\n{run}\n')
    assert _effective(body)["pipeline_model_parallel_size"] is UNKNOWN


def test_an_empty_fallback_glued_to_a_path_adds_no_word_and_a_test_of_it_decides_nothing() -> None:
    """`"${DATA_ROOT:-}/x"` is one path, no flags; a test of the caller's empty default is no
    sure choice: the caller may give EXTRA_ARGS, so PP is 2 or 4 (before: 2, as if it gave none)."""
    body = (f'if [ -z "${{EXTRA_ARGS:-}}" ]; then PP=2; else PP=4; fi\n'
            f'torchrun --nproc-per-node 8 pretrain_gpt.py {MODEL} --pipeline-model-parallel-size $PP '
            '--data-path "${DATA_ROOT:-}/x"\n')
    assert _effective(body)["pipeline_model_parallel_size"] is UNKNOWN
    assert parse_launch(HEAD + body, "train.sh").unknown_words == []
    assert _effective(body, {"pipeline_model_parallel_size": "4"})["pipeline_model_parallel_size"] == 4


SRUN_LOOP = ('CONTAINER_MOUNTS=${CONTAINER_MOUNTS:-}\nSRUN_CMD="srun --mpi=pmix"\n'
             'for mount in ${CONTAINER_MOUNTS}; do\n    SRUN_CMD="${SRUN_CMD} --container-mounts=${mount}"\ndone\n')


def test_a_string_a_loop_over_the_callers_words_appends_to_keeps_what_it_begins_with() -> None:
    """The loop runs once per word the caller gives: SRUN_CMD is read after one pass, as an
    array a loop appends to is, its srun kept (not an unknown program before `bash -c`)."""
    body = (SRUN_LOOP + f'${{SRUN_CMD}} --nodes=2 --ntasks-per-node=8 bash -c "python pretrain_gpt.py {MODEL} '
            '--pipeline-model-parallel-size 2"\n')
    config = parse_launch(HEAD + body, "train.sh")
    assert config.wrapper[0] == "srun" and config.launcher.startswith("srun")
    assert any(d.kind == "launch.loop-once" and d.detail.get("string") == "SRUN_CMD" for d in config.diagnostics)


def test_a_plain_python_behind_an_unknown_program_is_no_guess_of_the_run(tmp_path: Path) -> None:
    """`${PREFIX} bash -c "python train.py"`: an unknown word before `bash` may be a command of its
    own; the `python` command read behind it is not taken as the run (before, it was, and a
    plain entry read as Megatron-LM's front end could read CLEAN), as behind a launcher."""
    (tmp_path / "train.py").write_text("import torch\n")
    script = tmp_path / "train.sh"
    script.write_text(HEAD + '${PREFIX} bash -c "python train.py --num-layers 2"\n')
    with pytest.raises(CommandNotFollowed, match=r"\$\{PREFIX\}"):
        parse_launch(script.read_text(), str(script))


@pytest.mark.parametrize("guard, word", [
    ('if [ -z "${EXTRA_ARGS}" ]; then EXTRA_ARGS="--bf16"; fi\n', "$EXTRA_ARGS"),
    ('[ -z "$EXTRA_ARGS" ] && EXTRA_ARGS="--bf16"\n', "$EXTRA_ARGS"),
    ('[ -n "$EXTRA_ARGS" ] || EXTRA_ARGS="--bf16"\n', "$EXTRA_ARGS"),
    ('if [ -z "${EXTRA_ARGS:-}" ]; then EXTRA_ARGS=""; fi\n', "${EXTRA_ARGS:-}"),
])
def test_a_default_set_where_the_caller_left_it_empty_keeps_the_callers_value_possible(guard: str, word: str) -> None:
    """Where the test does not take the branch, the caller gave the variable: its value is
    spliced, any flags (before this, read as empty there or the branch's value certain: PP 2,
    CLEAN); an empty value set where the caller left it empty is the empty default still."""
    body = f"{guard}torchrun --nproc-per-node 8 pretrain_gpt.py {MODEL} --pipeline-model-parallel-size 2 {word}\n"
    values = _effective(body)
    assert values == dict.fromkeys(values, UNKNOWN)
    assert len(parse_launch(HEAD + body, "train.sh").unknown_words) == 1


def test_a_default_a_test_decided_through_the_empty_default_is_the_scripts_statement() -> None:
    """`if [[ -z "${PP:-}" ]]; then PP=4; fi` (Megatron-Bridge 067f987df0
    examples/models/deepseek_v4/inference.sh:46-51) states the run's PP where the caller sets
    none, as `PP=${PP:-4}` does: read as that default (review r38-inner 4; before: unknown)."""
    for guard in ('if [[ -z "${PP:-}" ]]; then\n    PP=4\nfi\n', '[ -z "${PP:-}" ] && PP=4\n', 'PP=${PP:-4}\n'):
        body = f"{guard}torchrun --nproc-per-node 8 pretrain_gpt.py {MODEL} --pipeline-model-parallel-size ${{PP}}\n"
        assert _effective(body)["pipeline_model_parallel_size"] == 4, guard
    case = ('if [[ -z "${PP:-}" ]]; then\n    case "${VARIANT:-Flash}" in\n        Pro*) PP=4 ;;\n'
            '        *) PP=1 ;;\n    esac\nfi\n')  # inference.sh:46-51: the default a case picks
    body = f"{case}torchrun --nproc-per-node 8 pretrain_gpt.py {MODEL} --pipeline-model-parallel-size ${{PP}}\n"
    assert _effective(body)["pipeline_model_parallel_size"] == 1
    body = ('if [[ -z "${PP:-}" ]]; then PP=4; else PP=2; fi\n'
            f"torchrun --nproc-per-node 8 pretrain_gpt.py {MODEL} --pipeline-model-parallel-size ${{PP}}\n")
    assert _effective(body)["pipeline_model_parallel_size"] is UNKNOWN  # an else: still undecided


def test_a_variable_a_branch_sets_untested_is_read_as_written() -> None:
    """A branch whose test does not read the variable: the script's own values, as before."""
    body = (f'if [ "$MODE" = pp ]; then EXTRA_ARGS="--pipeline-model-parallel-size 4"; fi\n'
            f"torchrun --nproc-per-node 8 pretrain_gpt.py {MODEL} $EXTRA_ARGS\n")
    assert parse_launch(HEAD + body, "train.sh").unknown_words == []
