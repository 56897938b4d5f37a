"""A checkpoint tool run as a program of an installed package, its arguments the caller's: what
the run is, from the rules (rules/deepspeed.toml `[[launcher]]` deepspeed-checkpoint-tool and
its `[[entry_module]]`), and only where the script runs nothing else that may train.

CONVERT is written after OpenRLHF/OpenRLHF@3c3be6234e0cb353e76bb8019947db9dfe99fca7
examples/scripts/ckpt_ds_zero_to_universal.sh: a usage guard on `$#` (:4-8), `CKPT_PATH="$1";
shift; EXTRA_ARGS="$@"` (:11-13), a function reading the `latest` tag and running `python -m
deepspeed.checkpoint.ds_to_universal --inject_missing_state --input_folder ... --output_folder ...
$EXTRA_ARGS` (:16-38), called for `_actor`/`_critic` subdirectories where they exist, else for
the path itself (:41-59). DeepSpeed's own README spelling `python -m deepspeed.utils.zero_to_fp32
CKPT OUT` is the other tool the rule names.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor import cli, rulebook
from auditor.config.launch import parse_launch
from auditor.rulebook.frameworks import frameworks
from auditor.rulebook.launchers import Spelling

CONVERT = """#!/bin/bash

if [ "$#" -lt 1 ]; then
    echo "Usage: $0 <CKPT_PATH> [additional arguments for deepspeed.checkpoint.ds_to_universal]"
    exit 1
fi

CKPT_PATH="$1"
shift
EXTRA_ARGS="$@"

process_dir() {
    local path="$1"
    if [ ! -f "$path/latest" ]; then
        echo "latest tag file not found in $path"
        return 1
    fi
    LATEST_TAG=$(cat "$path/latest")
    LATEST_UNI_TAG="${LATEST_TAG}_uni"
    echo "$LATEST_UNI_TAG" > "$path/latest_universal"
    python -m deepspeed.checkpoint.ds_to_universal --inject_missing_state \\
        --input_folder "$path/$LATEST_TAG" \\
        --output_folder "$path/$LATEST_UNI_TAG" \\
        $EXTRA_ARGS
}

found_subdir=0
if [ -d "$CKPT_PATH/_actor" ]; then
    process_dir "$CKPT_PATH/_actor"
    found_subdir=1
fi
if [ "$found_subdir" -eq 0 ]; then
    process_dir "$CKPT_PATH"
fi
"""

TO_FP32 = 'python3 -m deepspeed.utils.zero_to_fp32 "$@"\n'
# By the file: the copy DeepSpeed's engine writes into the checkpoint (a path the caller gives), and
# a DeepSpeed checkout's (microsoft/Megatron-DeepSpeed@66f82d655f
# examples_deepspeed/universal_checkpointing/README.md:52).
COPY_IN_CHECKPOINT = 'CKPT=$1\npython $CKPT/zero_to_fp32.py $CKPT "$2"\n'
IN_CHECKOUT = "python ${HOME}/DeepSpeed/deepspeed/checkpoint/ds_to_universal.py --input_folder a --output_folder b\n"

# A pipeline trainer of the script's own, run with plain `python` before the conversion.
TRAIN = """import torch.distributed as dist
from torch.distributed.pipelining import ScheduleGPipe, pipeline

dist.init_process_group("nccl")
"""

CONVERSION = "python -m deepspeed.checkpoint.ds_to_universal --input_folder ckpt/global_step10 --output_folder out\n"


def _scan(capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, *more: str) -> tuple[int, dict]:
    script = tmp_path / "run.sh"
    script.write_text(text, encoding="utf-8")
    code = cli.main(["scan", "--config", str(script), "--format", "json", *more])
    return code, json.loads(capsys.readouterr().out)["verdict"]


@pytest.mark.parametrize("text, module", [(CONVERT, "deepspeed.checkpoint.ds_to_universal"),
                                          (TO_FP32, "deepspeed.utils.zero_to_fp32"),
                                          (COPY_IN_CHECKPOINT, "$1/zero_to_fp32.py"),
                                          (IN_CHECKOUT, "${HOME}/DeepSpeed/deepspeed/checkpoint/ds_to_universal.py")],
                         ids=["ds-to-universal-extra-args", "zero-to-fp32-all-args", "copy-in-checkpoint",
                              "file-of-a-checkout"])
def test_a_conversion_tool_is_not_a_pipeline_run(capsys, tmp_path, text, module):
    """The module is the program whatever the caller's arguments (`$EXTRA_ARGS`, `"$@"`): the
    rules say it converts a checkpoint in one process. (A program that is itself the caller's,
    `"$@"` alone, is a command not known statically: INCONCLUSIVE, as before.)"""
    code, verdict = _scan(capsys, tmp_path, text)
    assert verdict["status"] == "not-pipeline", verdict["headline"]
    assert code == 0
    assert module in verdict["headline"] and "converts a saved ZeRO checkpoint" in verdict["headline"]
    looked = Spelling.load(None).looked_for()  # `trains = false`: no training command looked for
    assert "torchrun SCRIPT" in looked and "zero_to_fp32" not in looked and "ds_to_universal" not in looked


def test_a_tool_run_by_its_file_is_known_by_the_parts_the_rule_names(capsys, tmp_path):
    """`$CKPT/zero_to_fp32.py` ends in the parts the rule names, known; `$DIR/checkpoint/
    ds_to_universal.py` does not (DIR may end in anything but `deepspeed`): that program is not
    the tool, and is not followed."""
    _, verdict = _scan(capsys, tmp_path, COPY_IN_CHECKPOINT)
    assert verdict["status"] == "not-pipeline", verdict["headline"]
    _, verdict = _scan(capsys, tmp_path, "python $DIR/checkpoint/ds_to_universal.py --input_folder a\n")
    assert verdict["status"] == "inconclusive" and "--command" in verdict["headline"], verdict["headline"]


def test_a_conversion_after_a_command_not_followed_is_not_the_run(capsys, tmp_path):
    """`$LAUNCHER train.py` may be the training run: the conversion after it does not say what
    the script runs; the step that decides is `--command`."""
    code, verdict = _scan(capsys, tmp_path, f"$LAUNCHER train.py --lr 1\n{CONVERSION}")
    assert verdict["status"] == "inconclusive", verdict["headline"]
    assert "line 2 runs `python -m deepspeed.checkpoint.ds_to_universal`, which trains no pipeline" \
        in verdict["headline"]
    assert "line 1 runs `$LAUNCHER`" in verdict["headline"] and "--command" in verdict["headline"]


# Commands the walk does not follow that may train, each before a tool that trains nothing (review
# r36-wrapped): a script not read, by bash, sbatch or its path; a command run on another host; and
# programs no rule names (ColossalAI's, accelerate's, fairseq's launchers).
MAY_TRAIN = ["bash $SCRIPT_DIR/run_bf16.sh", "bash scripts/pretrain_gpt.sh", "sbatch train_gpt.sbatch",
             "./run_bf16.sh", 'ssh $HEAD_NODE "cd $WORKDIR && bash run_bf16.sh"',
             "colossalai run --nproc_per_node 8 train.py --pp 4",
             "accelerate launch --config_file megatron_lm.yaml train.py",
             "fairseq-train data-bin --pipeline-model-parallel"]
TOOLS = ["python -m deepspeed.checkpoint.ds_to_universal --input_folder a --output_folder b\n",
         "python ckpt/zero_to_fp32.py ckpt out.bin\n"]


@pytest.mark.parametrize("first", MAY_TRAIN)
@pytest.mark.parametrize("tool", TOOLS, ids=["module", "file"])
def test_a_tool_beside_any_command_not_read_is_not_the_run(capsys, tmp_path, first, tool):
    """Whatever the walk did not follow and may train counts (LaunchShell.may_train, one list):
    the tool is then not surely what the script runs, and the headline names the command."""
    code, verdict = _scan(capsys, tmp_path, f"{first}\n{tool}")
    assert verdict["status"] == "inconclusive" and code == 1, verdict["headline"]
    assert "line 1 runs `" in verdict["headline"] and "which trains no pipeline" in verdict["headline"]


# microsoft/Megatron-DeepSpeed@66f82d655f examples_deepspeed/universal_checkpointing/README.md:29-72,
# steps 0-3: prepare the data, train TP=PP=DP=2 (run_bf16.sh), convert with DeepSpeed's file, resume
# (run_universal_bf16.sh); the steps run from outside the checkout, `$MDS` its path.
README_STEPS = ("bash $MDS/examples_deepspeed/universal_checkpointing/megatron_gpt/run_bf16.sh\n"
                "python ${HOME}/DeepSpeed/deepspeed/checkpoint/ds_to_universal.py \\\n"
                "    --input_folder z1_uni_ckpt/checkpoints/gpt2/z1/bf16/tp2_pp2_dp2_sp1_toy/global_step100 \\\n"
                "    --output_folder z1_uni_ckpt/checkpoints/gpt2/z1/bf16/tp2_pp2_dp2_sp1_toy/global_step100_universal\n"
                "bash $MDS/examples_deepspeed/universal_checkpointing/megatron_gpt/run_universal_bf16.sh\n")
PREPROCESS = ("python tools/preprocess_data.py --input oscar-1GB.jsonl --output-prefix my-gpt2 "
              "--vocab-file gpt2-vocab.json --dataset-impl mmap --tokenizer-type GPT2BPETokenizer "
              "--merge-file gpt2-merges.txt --append-eod --workers 8\n")
# what tools/preprocess_data.py imports there: a data step, no rank
PREPROCESS_PY = "import argparse\nimport multiprocessing\nimport torch\n\nif __name__ == '__main__':\n    pass\n"


def test_the_readme_steps_are_not_a_conversion_run(capsys, tmp_path):
    """The conversion between two training scripts not read is not what the steps run."""
    _, verdict = _scan(capsys, tmp_path, README_STEPS)
    assert verdict["status"] == "inconclusive", verdict["headline"]
    assert "line 1 runs `bash $MDS/" in verdict["headline"] and "line 5 runs `bash $MDS/" in verdict["headline"]


@pytest.mark.parametrize("steps", [PREPROCESS + README_STEPS,
                                   PREPROCESS + README_STEPS.splitlines(keepends=True)[-1]],
                         ids=["all-steps", "preprocess-then-resume"])
def test_a_data_step_is_not_the_run_beside_scripts_not_read(capsys, tmp_path, steps):
    """Inside the checkout `python tools/preprocess_data.py` is found and reaches no schedule; a
    plain `python` command is the run only where nothing else may train: here the scripts not
    read may (the older form, preprocess then resume, was NOT A PIPELINE RUN too)."""
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "preprocess_data.py").write_text(PREPROCESS_PY, encoding="utf-8")
    _, verdict = _scan(capsys, tmp_path, steps)
    assert verdict["status"] == "inconclusive", verdict["headline"]
    assert "run_universal_bf16.sh`, a script not read here" in verdict["headline"]


def test_an_export_after_a_script_not_read_is_not_the_run(capsys, tmp_path):
    """`swift export` (no pipeline, by its rules) after `bash $SCRIPT_DIR/run_pretrain.sh`."""
    _, verdict = _scan(capsys, tmp_path, "bash $SCRIPT_DIR/run_pretrain.sh\nswift export --model out/checkpoint-100\n")
    assert verdict["status"] == "inconclusive" and "run_pretrain.sh`, a script not read" in verdict["headline"]


@pytest.mark.parametrize("first", ["mkdir -p out", "echo converting", "nvidia-smi", "pip install deepspeed",
                                   'find ckpt -name "*.pt" | xargs -0 cp -t out', "srun -N 1 hostname",
                                   "command -v rsync", "env > env.log"])
def test_a_tool_beside_programs_that_train_nothing_is_the_run(capsys, tmp_path, first):
    """Programs the rules say start no training (`[wrappers] no_training`), behind a wrapper too,
    leave the tool the run; `find -exec` runs another program, which may train."""
    _, verdict = _scan(capsys, tmp_path, f"{first}\n{CONVERSION}")
    assert verdict["status"] == "not-pipeline", verdict["headline"]
    _, verdict = _scan(capsys, tmp_path, f"find . -name job -exec bash {{}} \\;\n{CONVERSION}")
    assert verdict["status"] == "inconclusive" and "`-exec` runs another program" in verdict["headline"]


def test_a_launcher_not_followed_is_said_once(capsys, tmp_path):
    _, verdict = _scan(capsys, tmp_path, f"debugpy-run -m torch.distributed.run -- train.py\n{CONVERSION}")
    assert verdict["headline"].count("line 1 runs `debugpy-run`") == 1, verdict["headline"]


def test_the_callers_words_in_the_tools_eval_are_its_arguments(capsys, tmp_path):
    """`eval $cmd`, cmd the tool with the caller's `$1`, `${@:3}`: the eval's unknown words are
    the tool's arguments, not another command. Unseen code elsewhere (`eval "$SETUP"`, whose
    command is itself unknown) may train: undecided."""
    text = ('cmd="python -m deepspeed.checkpoint.ds_to_universal --input_folder $1 --output_folder $2 ${@:3}"\n'
            "eval $cmd\n")
    _, verdict = _scan(capsys, tmp_path, text)
    assert verdict["status"] == "not-pipeline", verdict["headline"]
    _, verdict = _scan(capsys, tmp_path, 'eval "$SETUP"\n' + text)
    assert verdict["status"] == "inconclusive" and "`eval` of text not known statically" in verdict["headline"]
    # a variable set only from the caller's words holds them
    _, verdict = _scan(capsys, tmp_path, 'X=$1\nREST="$@"\ncmd="python -m deepspeed.checkpoint.ds_to_universal '
                                         '--input_folder $X --output_folder b $REST"\neval $cmd\n')
    assert verdict["status"] == "not-pipeline", verdict["headline"]


@pytest.mark.parametrize("text", [
    'cmd="python -m deepspeed.checkpoint.ds_to_universal --input_folder a --output_folder b $(cat post_steps.txt)"\n'
    "eval $cmd\n",
    'cmd="python -m deepspeed.checkpoint.ds_to_universal --input_folder a --output_folder b $POST"\neval $cmd\n',
    "source $HOME/setup_and_train.sh && python -m deepspeed.checkpoint.ds_to_universal --input_folder a "
    "--output_folder b\n"], ids=["command-substitution", "environment-variable", "source-on-the-tools-line"])
def test_unseen_code_that_is_not_the_callers_words_may_train(capsys, tmp_path, text):
    """Only an `eval` that ran the tool, every unknown word of it the script's own arguments, is
    exempt: `$(cat x)`, `$POST` may be anything, and a `source` on the tool's line is no eval."""
    _, verdict = _scan(capsys, tmp_path, text)
    assert verdict["status"] == "inconclusive", verdict["headline"]


def test_a_plain_python_trainer_beside_a_conversion_is_the_run(tmp_path):
    """`python train.py` with no launcher is the run's command where the only launcher command
    the script runs trains no pipeline: the trainer is read, not the conversion."""
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    config = parse_launch(f"python train.py --lr 1\n{CONVERSION}", str(tmp_path / "run.sh"))
    assert config.script == "train.py"
    assert not any(d.kind == "launch.not-pipeline" for d in config.diagnostics)


def test_a_given_command_is_the_run_whatever_else_the_script_runs(tmp_path):
    """`--command` names the run: what the script's own walk did not follow no longer counts."""
    config = parse_launch(f"$LAUNCHER train.py\n{CONVERSION}", str(tmp_path / "run.sh"),
                          command="python -m deepspeed.utils.zero_to_fp32 ckpt out")
    assert config.launcher == "python -m deepspeed.utils.zero_to_fp32"
    assert any(d.kind == "launch.not-pipeline" for d in config.diagnostics)


def test_every_tool_launcher_is_the_entry_that_says_what_it_is():
    """A `trains = false` launcher finds the tool; its [[entry_module]] says what it is: the two
    name the same modules and scripts, or a tool found would be said as nothing."""
    for framework in frameworks():
        rules = rulebook.load(framework.name).data
        for launcher in (e for e in rules.get("launcher", []) if e.get("trains") is False):
            assert any(sorted(entry["modules"]) == sorted(launcher.get("python_modules", []))
                       and sorted(entry.get("scripts", [])) == sorted(launcher.get("python_scripts", []))
                       for entry in rules.get("entry_module", [])), launcher["name"]


# --- the rule against the DeepSpeed releases it names -------------------------------------------

TOOL = next(e for e in rulebook.load("deepspeed").data["entry_module"]
            if "deepspeed.checkpoint.ds_to_universal" in e["modules"])
# What would make the tool communicate with other ranks or build pipeline stages.
COMMUNICATES = ("torch.distributed", "deepspeed.comm", "init_distributed", "deepspeed.pipe", "PipelineModule",
                "deepspeed.initialize", "import deepspeed\n")


@pytest.mark.wheels
@pytest.mark.parametrize("version", TOOL["checked"])
def test_each_checked_release_ships_the_tools_as_one_process_programs(release, version):
    """Each release named: every module is a file of the package with a main block (`code`), and
    none imports or calls what communicates or pipelines; each of `scripts` is one of those files
    by its tail path, zero_to_fp32.py the file the engine copies into each checkpoint."""
    root = Path(release(f"deepspeed=={version}").root)
    package = next(p.parent for p in sorted(root.rglob("deepspeed/checkpoint/ds_to_universal.py"))).parent.parent
    files = [module.replace(".", "/") + ".py" for module in TOOL["modules"]]
    for file in files:
        text = (package / file).read_text(encoding="utf-8")
        assert TOOL["code"] in text, file
        assert not [s for s in COMMUNICATES if s in text], file
    assert all(any(f.endswith(tail) for f in files) for tail in TOOL["scripts"])
    engine = (package / "deepspeed/runtime/engine.py").read_text(encoding="utf-8")
    assert '"zero_to_fp32.py"' in engine[engine.index("def _copy_recovery_script"):][:400]
