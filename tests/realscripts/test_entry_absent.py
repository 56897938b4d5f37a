"""A training command that surely never runs its training script (issue 22), told from the tree.

A missing entry: alibaba/Pai-Megatron-Patch@a098ca5acbdeaf7172ce0393fa309b39a77506db
examples/deepseek_v3/run_mcore_deepseek_lite.sh (its shape; the upstream file itself runs
`$(python -c ...)` first and names submodules, so it stays undecided) builds `cmd="torchrun ${DISTRIBUTED_ARGS[@]}
pretrain_deepseek_250624.py ..."` (:203) and runs `eval $cmd 2>&1 | tee log_new.txt ; exit
${PIPESTATUS[0]}` (:209) under `set -e` (:2), with no `cd`; its directory holds
pretrain_deepseek.py only (6a7c390 deleted pretrain_deepseek_250624.py). Run from that directory,
every worker's python exits 2. Anything that may put the file there, or start the command
elsewhere, leaves it undecided as before.

A placeholder: NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553
examples/multimodal/llama_3p1_nemotron_nano_vl_8b_v1/sft_llama_3p1_nemotron_nano_vl_8b_v1.sh:165-173
runs `srun -l --verbose --container-image <path to docker image> --container-mounts "<some
mount>" ... sh -c "${run_cmd}"`: bash reads `<path` and `image>` as redirections, and srun runs
`docker`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from auditor.config.launch import parse_launch

PAI = """#!/bin/bash
set -e
export CUDA_DEVICE_MAX_CONNECTIONS=1
NUM_NODES=${WORLD_SIZE:-1}
DISTRIBUTED_ARGS=(--nproc_per_node 8 --nnodes $NUM_NODES)
MODEL_ARGS=(--num-layers 61 --hidden-size 7168)
INFRA_ARGS=(--tensor-model-parallel-size 2 --pipeline-model-parallel-size 8)
BEFORE
torchrun ${DISTRIBUTED_ARGS[@]} pretrain_deepseek_250624.py ${MODEL_ARGS[@]} ${INFRA_ARGS[@]}
"""
# The upstream lines kept as written: `$(python -c ...)` and `eval` run code before the command
PAI_UPSTREAM = PAI.replace("BEFORE\n", 'GPUS_PER_NODE=${KUBERNETES_CONTAINER_RESOURCE_GPU:-$(python -c '
                           '"import torch; print(torch.cuda.device_count())")}\n')

ENTRY = "from megatron.training import pretrain\nif __name__ == '__main__':\n    pretrain()\n"


def _checkout(root: Path, before: str = "", elsewhere: str = "") -> Path:
    """root/.gitmodules (Pai's top level holds no setup.py), the launch script beside
    pretrain_deepseek.py in examples/deepseek_v3/, and `elsewhere` (a path) holding the entry."""
    (root / "examples" / "deepseek_v3").mkdir(parents=True)
    (root / ".gitmodules").write_text("")
    (root / "examples" / "deepseek_v3" / "pretrain_deepseek.py").write_text(ENTRY)
    if elsewhere:
        (root / elsewhere).parent.mkdir(parents=True, exist_ok=True)
        (root / elsewhere).write_text(ENTRY)
    script = root / "examples" / "deepseek_v3" / "run_mcore_deepseek_lite.sh"
    script.write_text(PAI.replace("BEFORE\n", before))
    return script


def _errors(script: Path, monkeypatch: pytest.MonkeyPatch, cwd: Path | None = None) -> list:
    monkeypatch.chdir(cwd or script.parent)
    config = parse_launch(script.read_text(), str(script))
    return [d for d in config.diagnostics if d.kind == "launch.entry-missing"]


def test_an_entry_no_directory_holds_does_not_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _checkout(tmp_path)
    [error] = _errors(script, monkeypatch)
    assert error.severity == "error" and error.detail["category"] == "config"
    assert error.detail["looked_for"] == str(script.parent / "pretrain_deepseek_250624.py")
    assert "can't open file" in error.message and "(pretrain_deepseek.py is there)" in error.message


def test_a_scan_from_outside_the_checkout_says_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The job may start anywhere: only a scan standing in the tree reads where it starts."""
    script = _checkout(tmp_path / "pai")
    assert _errors(script, monkeypatch, cwd=tmp_path) == []


@pytest.mark.parametrize("before,elsewhere", [
    ("", "examples/deepseek_v3/pretrain_deepseek_250624.py"),  # there: found and read
    ("", "examples/other/pretrain_deepseek_250624.py"),  # a run started in examples/other finds it
    ("cd /opt/pai\n", ""),  # the command starts elsewhere
    ("wget -q https://example.com/pretrain_deepseek_250624.py\n", ""),  # fetched first
    ("git clone https://example.com/pai.git .\n", ""),  # a tree written first
    ("source ./env.sh\n", ""),  # code unread here runs first
    ("./prepare_code.sh\n", ""),  # a script of the tree runs first
    ("if ! tar xzf code.tar.gz; then exit 1; fi\n", ""),  # an archive unpacked under `!`
    ("HF_HUB_ENABLE_HF_TRANSFER=1 huggingface-cli download org/code --local-dir .\n", ""),  # env-prefixed
    ("cat ../../snapshot.list | xargs -n1 install -t .\n", ""),  # files listed, then copied
    ("#SBATCH --chdir=/opt/Megatron-LM\n", ""),  # the job's directory, in a directive
    ("#SBATCH --container-workdir=/workspace/megatron\n", ""),  # a container's directory
])
def test_anything_that_may_bring_the_file_leaves_it_undecided(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: str, elsewhere: str) -> None:
    assert _errors(_checkout(tmp_path, before, elsewhere), monkeypatch) == []


@pytest.mark.parametrize("before", ["python -c 'print(1)'\n", 'python3 -u -c "pass"\n'])
def test_a_python_c_text_that_only_prints_leaves_it_missing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: str) -> None:
    """h48-screen: one decider of "may an earlier command make this file" (entry_absent
    .unread_before) for a missing entry, a missing import and a missing Hydra config; the Hydra
    one knew (review r47-shell h11) that a literal `python -c` text printing constants writes
    nothing (checked with bash: `python -c "print(1)"` then `python missing.py` exits 2)."""
    [error] = _errors(_checkout(tmp_path, before), monkeypatch)
    assert error.severity == "error"


@pytest.mark.parametrize("before", ["python -c \"open('pretrain_deepseek_250624.py', 'w')\"\n",
                                    'python -c "$TEXT"\n'])
def test_a_python_c_text_that_may_write_leaves_it_undecided(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: str) -> None:
    assert _errors(_checkout(tmp_path, before), monkeypatch) == []


def test_a_descriptor_redirection_to_a_file_leaves_it_undecided(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """h48-screen2 (review r48-screen 3): `>& WORD`, WORD no number nor `-`, sends stdout and
    stderr to the file WORD (checked with bash: `echo ... >& pretrain_deepseek_${N}.py` makes it)."""
    before = "N=250624\necho 'from megatron.training import pretrain' >& pretrain_deepseek_${N}.py\n"
    assert _errors(_checkout(tmp_path, before), monkeypatch) == []
    [error] = _errors(_checkout(tmp_path / "b", "echo 'starting' >&2\n"), monkeypatch)
    assert error.severity == "error"


@pytest.mark.parametrize("before", ["./python -c 'print(1)'\n", "bin/python3 -c 'print(1)'\n",
                                    "export PATH=$PWD/bin:$PATH\npython -c 'print(1)'\n"])
def test_a_python_of_the_checkout_leaves_it_undecided(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: str) -> None:
    """h48-screen2 (review r48-screen 1): `./python -c 'print(1)'` runs the checkout's file named
    python, any program (checked with bash: a `./python` that writes pretrain_deepseek_250624.py
    makes the run start); so does `python` on a PATH the script put the tree's bin/ first on.
    Only a bare name on the caller's PATH or an absolute path outside the tree is an interpreter."""
    script = _checkout(tmp_path, before)
    for name in ("python", "bin/python3", "bin/python"):
        (script.parent / name).parent.mkdir(exist_ok=True)
        (script.parent / name).write_text("#!/bin/bash\necho > pretrain_deepseek_250624.py\n")
    assert _errors(script, monkeypatch) == []


def test_an_option_loop_before_the_command_leaves_it_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`while [[ $# -gt 0 ]]; do case $1 in ... shift ... exit 1` (NVIDIA/Megatron-LM@d98e8a64dd
    examples/multimodal/llama_3p1_nemotron_nano_vl_8b_v1/text_generation.sh:16-:78): builtins that
    test, shift and exit run nothing and write no file (entry_absent.unread_before, the one test
    the import check shares)."""
    loop = ('while [[ $# -gt 0 ]]; do\n  case $1 in\n    --tp) TP="$2"; shift; shift ;;\n'
            '    -*|--*) echo "Invalid option $1"; exit 1 ;;\n  esac\ndone\n')
    [error] = _errors(_checkout(tmp_path, loop), monkeypatch)
    assert error.detail["looked_for"] == str(tmp_path / "examples/deepseek_v3/pretrain_deepseek_250624.py")


def test_the_upstream_lines_leave_it_undecided(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A command substitution runs code before the training command: it may make the file."""
    script = _checkout(tmp_path)
    script.write_text(PAI_UPSTREAM)
    assert _errors(script, monkeypatch) == []


def test_a_conditional_command_is_undecided(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`if [ "$1" = new ]; then torchrun ...; else ...; fi`: the branch may never run."""
    script = _checkout(tmp_path)
    script.write_text(PAI.replace("BEFORE\ntorchrun", 'if [ "$1" = new ]; then torchrun').rstrip() + "\nfi\n")
    assert _errors(script, monkeypatch) == []


def test_a_submodule_not_checked_out_leaves_it_undecided(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pai's .gitmodules names backends/megatron/*: a recursive clone fills them, and a run may
    start inside one (`cd PAI-Megatron-LM && bash ../examples/...`)."""
    script = _checkout(tmp_path)
    (tmp_path / ".gitmodules").write_text('[submodule "PAI-Megatron-LM"]\n\tpath = PAI-Megatron-LM\n')
    (tmp_path / "PAI-Megatron-LM").mkdir()
    assert _errors(script, monkeypatch) == []


def test_a_directory_no_script_is_run_from_says_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A launch script kept among configs (no Python script beside it) is run from another tree."""
    script = _checkout(tmp_path)
    (script.parent / "pretrain_deepseek.py").unlink()
    assert _errors(script, monkeypatch) == []


def test_a_built_file_is_not_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _checkout(tmp_path)
    (tmp_path / ".gitignore").write_text("pretrain_deepseek_250624.py\n")  # made where it runs
    assert _errors(script, monkeypatch) == []


def test_python_itself_cannot_open_it(tmp_path: Path) -> None:
    """What the workers do: `python FILE` of a missing file exits 2 (CPython's main.c)."""
    run = subprocess.run(["python3", "pretrain_deepseek_250624.py"], cwd=tmp_path, capture_output=True,
                         text=True, check=False)
    assert run.returncode == 2 and "can't open file" in run.stderr


NEMOTRON = """#!/bin/bash
which srun
BATCH=$((1-$?))
WORKSPACE="<some dir>"
SOURCE=`pwd`
OPTIONS=" \\
    --tensor-model-parallel-size 4 \\
    --pipeline-model-parallel-size 1 \\
    --num-layers 32 \\
    --save ${WORKSPACE}/output/${MODEL_NAME}/checkpoints \\
"
if [[ $BATCH -eq 0 ]]; then
    torchrun --nproc_per_node 8 examples/multimodal/train.py ${OPTIONS}
else
    run_cmd="cd ${SOURCE}; python -u examples/multimodal/train.py ${OPTIONS}"
    srun -l --verbose \\
    --container-image <path to docker image> \\
    --container-mounts "<some mount>" \\
    --output=${LOGS_DIR}/%x_%j.log \\
    sh -c "${run_cmd}"
fi
"""


def test_srun_runs_a_word_of_the_placeholder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = parse_launch(NEMOTRON, "sft.sh", which=1)
    [error] = [d for d in config.diagnostics if d.kind == "launch.placeholder-program"]
    assert config.script == "docker" and error.severity == "error" and error.where == "sft.sh:17"
    assert "`<path` reads standard input from a file named `path`" in error.message
    assert "`image>` writes its standard output to a file named by the next word, `--container-mounts`" \
        in error.message
    # the script's parser is not asked for: docker is no training script
    assert not [d for d in config.diagnostics if d.kind == "launch.front-end-unread"]


def test_a_placeholder_whose_file_is_there_says_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`torchrun --nproc_per_node 8 <hosts.txt train.py --num-layers=4>train.log` with hosts.txt
    there: bash opens it and torchrun runs train.py."""
    (tmp_path / "hosts.txt").write_text("")
    monkeypatch.chdir(tmp_path)
    config = parse_launch("torchrun --nproc_per_node 8 <hosts.txt pretrain_x.py --num-layers=4>train.log\n", "run.sh")
    assert not [d for d in config.diagnostics if d.kind == "launch.placeholder-program"]


def test_bash_reads_the_placeholder_as_redirections(tmp_path: Path) -> None:
    """As bash runs it: without a file `path`, the command never runs; with one, its stdout goes
    to a file named `--container-mounts` and `docker` is an argument."""
    line = 'printf "%s\\n" --container-image <path to docker image> \\\n --container-mounts "<some mount>"\n'
    run = subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert run.returncode == 1 and "path: No such file or directory" in run.stderr and run.stdout == ""
    (tmp_path / "path").write_text("")
    run = subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert (tmp_path / "--container-mounts").read_text().split("\n")[:4] == ["--container-image", "to", "docker",
                                                                            "image"]


# megatron/training/arguments.py of the tree the command runs from, as far as these flags go
ARGUMENTS = """def parse_args(extra_args_provider=None, ignore_unknown_args=False):
    parser = argparse.ArgumentParser(allow_abbrev=False)
    parser = _add_network_size_args(parser)
    return parser.parse_args()


def _add_network_size_args(parser):
    group = parser.add_argument_group(title='network size')
    group.add_argument('--num-layers', type=int, default=None)
    group.add_argument('--tensor-model-parallel-size', type=int, default=1)
    group.add_argument('--pipeline-model-parallel-size', type=int, default=1)
    group.add_argument('--save', type=str, default=None)
    return parser
"""


def test_a_stray_word_with_an_unknown_part_is_still_rejected(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Command 1: `--save <some dir>/output/${MODEL_NAME}/checkpoints` splits into `--save <some`
    and `dir>/output/${MODEL_NAME}/checkpoints`, whose known start is no option whatever
    MODEL_NAME holds: argparse rejects it (the twin nvlm/sft_34b_internvit.sh is read so through a
    word with no unknown part)."""
    (tmp_path / "megatron" / "training").mkdir(parents=True)
    (tmp_path / "megatron" / "training" / "arguments.py").write_text(ARGUMENTS)
    (tmp_path / "examples" / "multimodal").mkdir(parents=True)
    (tmp_path / "examples" / "multimodal" / "train.py").write_text(ENTRY)
    (tmp_path / "sft.sh").write_text(NEMOTRON)
    monkeypatch.chdir(tmp_path)
    config = parse_launch(NEMOTRON, "sft.sh", which=0)
    errors = [d for d in config.diagnostics if d.kind == "launch.extra-argument"]
    assert [e.message.split("`")[1] for e in errors] == ["dir>/output/${MODEL_NAME}/checkpoints"]
    assert "follows `--save <some`" in errors[0].message


@pytest.mark.parametrize("word", ["${EXTRA}/x", "$X", " ${EXTRA}"])
def test_a_word_that_may_start_an_option_is_not_rejected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          word: str) -> None:
    """The tree's parser is read, so a literal stray word there is rejected; one whose unknown
    part may begin `--` is not."""
    (tmp_path / "megatron" / "training").mkdir(parents=True)
    (tmp_path / "megatron" / "training" / "arguments.py").write_text(ARGUMENTS)
    (tmp_path / "pretrain_gpt.py").write_text(ENTRY)
    monkeypatch.chdir(tmp_path)

    def rejected(word: str) -> list:
        text = f'torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 32 --save /ckpt "{word}"\n'
        return [d for d in parse_launch(text, "run.sh").diagnostics if d.kind == "launch.extra-argument"]
    assert rejected("stray/x") and not rejected(word)


def test_a_module_run_is_never_judged_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`torchrun -m pkg.train.py`: module `py` of package pkg.train, looked up on sys.path
    (config.entry_module; an installed package, not in this checkout), never a file `pkg.train.py`
    of the launch directory, although a checkout whose directory runs scripts holds none."""
    (tmp_path / ".gitmodules").write_text("")
    (tmp_path / "pretrain_gpt.py").write_text(ENTRY)
    script = tmp_path / "run.sh"
    script.write_text("torchrun --nproc_per_node 8 -m pkg.train.py --num-layers 2\n")
    monkeypatch.chdir(tmp_path)
    config = parse_launch(script.read_text(), str(script))
    assert config.script_module and config.script_absent == ""


# NVIDIA/Megatron-LM@d98e8a64dd examples/academic_paper_scripts/detxoify_lm/generate-1.3b.sh: moved
# with its example, it still runs examples/detxoify_lm/generate_samples_gpt.py (:20) from the
# tree's root, after command substitutions of programs that only print (:13-14).
DETOX = """#!/bin/bash
CHECKPOINT_PATH=$2
GPUS_PER_NODE=1
MASTER_PORT=$(($RANDOM + 1024))
NUM_SAMPLES=$(wc -l < $1)
PREFIX=$(basename $2)
BEFORE
DISTRIBUTED_ARGS="--nproc_per_node $GPUS_PER_NODE --nnodes 1 --master_port $MASTER_PORT"
python -m torch.distributed.run $DISTRIBUTED_ARGS examples/detxoify_lm/generate_samples_gpt.py \\
       --tensor-model-parallel-size 1 --load $CHECKPOINT_PATH --num-samples $NUM_SAMPLES
"""


def _megatron(root: Path, before: str = "") -> Path:
    """A Megatron-LM-shaped root (pretrain_gpt.py, the moved example) and the moved launch script."""
    (root / "examples/academic_paper_scripts/detxoify_lm").mkdir(parents=True)
    (root / "setup.py").write_text("")
    (root / "pretrain_gpt.py").write_text(ENTRY)
    (root / "examples/academic_paper_scripts/detxoify_lm/generate_samples_gpt.py").write_text(ENTRY)
    script = root / "examples/academic_paper_scripts/detxoify_lm/generate-1.3b.sh"
    script.write_text(DETOX.replace("BEFORE\n", before))
    return script


def test_a_moved_example_run_from_the_root_does_not_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`$(wc -l < $1)`, `$(basename $2)` write nothing; examples/detxoify_lm/ is not there at
    all, and the root it is opened from holds the tree's scripts: every rank exits 2, and the
    verdict says so whatever stack the unread entry would have used."""
    from auditor.analysis.verdict import launcher_refuses
    script = _megatron(tmp_path)
    monkeypatch.chdir(tmp_path)
    config = parse_launch(script.read_text(), str(script))
    [error] = [d for d in config.diagnostics if d.kind == "launch.entry-missing"]
    assert error.detail["looked_for"] == str(tmp_path / "examples/detxoify_lm/generate_samples_gpt.py")
    assert "can't open file" in (launcher_refuses(config, None) or "")


# NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553 examples/academic_paper_scripts/
# detxoify_lm/self_generation/selfgenerate-1.3b-unconditional.sh:16-17 makes its output folder
# (`save_dir=$SHARE_DATA/selfgeneration/...; mkdir -p $save_dir`) before the same moved command
# (:22): mkdir makes directories only, and a directory is no script python can open.
@pytest.mark.parametrize("before", [
    "save_dir=$PWD/selfgeneration/unconditional_generation_$PREFIX/\nmkdir -p $save_dir\n",
    "mkdir -p examples/detxoify_lm\n",  # even the entry's folder: the file is still not there
])
def test_a_folder_made_before_the_moved_command_leaves_it_missing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: str) -> None:
    [error] = _errors(_megatron(tmp_path, before), monkeypatch, cwd=tmp_path)
    assert error.detail["looked_for"] == str(tmp_path / "examples/detxoify_lm/generate_samples_gpt.py")


def test_the_cause_names_the_launch_line_from_the_checkout_root(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The start-up failure's words end with its FILE:LINE, the launch script named from the
    checkout's root, not by the auditing machine's absolute path (which wrapped the cause past
    the first screen: benchmarks first_screen on Megatron-DeepSpeed@f4157bea69 examples/merge_mp_bert.sh)."""
    from auditor.analysis.verdict import launcher_refuses
    script = _megatron(tmp_path)
    monkeypatch.chdir(tmp_path)
    said = launcher_refuses(parse_launch(script.read_text(), str(script)), None) or ""
    assert said.endswith("(examples/academic_paper_scripts/detxoify_lm/generate-1.3b.sh:8)"), said
    assert str(tmp_path) not in said and "(line " not in said, said


@pytest.mark.parametrize("before", [
    "N=$(wc -l < $1 | tee examples/detxoify_lm/generate_samples_gpt.py)\n",  # a substitution that writes
    "V=$(python -c 'import megatron')\n",  # one that runs code
    "echo started > log.txt\n",  # a printing program whose output goes to a file
    "[ -d /opt/megatron ] && cd /opt/megatron\n",  # may move the run
])
def test_a_substitution_or_command_that_may_write_or_move_leaves_it_undecided(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: str) -> None:
    assert _errors(_megatron(tmp_path, before), monkeypatch, cwd=tmp_path) == []


def test_a_folder_that_is_not_there_from_a_directory_of_no_scripts_says_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from a directory holding no Python script (a tree of configs), the job starts elsewhere."""
    script = _megatron(tmp_path)
    (tmp_path / "pretrain_gpt.py").unlink()
    assert _errors(script, monkeypatch, cwd=tmp_path) == []


# bigcode-project/Megatron-LM@7c325cd34a examples/merge_mp_bert.sh:8 runs a tool its tree removed
# (5df9e1fb "Remove old merge tool."): a plain `python` command, only assignments before it.
MERGE = """#!/bin/bash
TENSOR_MODEL_PARALLEL_SIZE=2
CHECKPOINT_PATH=checkpoints/bert_345m
WORLD_SIZE=$TENSOR_MODEL_PARALLEL_SIZE python tools/merge_mp_partitions.py \\
    --model-type BERT --tensor-model-parallel-size $TENSOR_MODEL_PARALLEL_SIZE --load $CHECKPOINT_PATH
"""


def _bigcode(root: Path, before: str = "") -> Path:
    (root / "examples").mkdir(parents=True)
    (root / "tools").mkdir()
    (root / "setup.py").write_text("")
    (root / "pretrain_bert.py").write_text(ENTRY)
    (root / "tools/checkpoint_util.py").write_text("")
    script = root / "examples/merge_mp_bert.sh"
    script.write_text(before + MERGE)
    return script


def test_a_plain_python_command_whose_file_is_gone_is_the_run_and_does_not_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _bigcode(tmp_path)
    [error] = _errors(script, monkeypatch, cwd=tmp_path)
    assert error.detail["looked_for"] == str(tmp_path / "tools/merge_mp_partitions.py")


@pytest.mark.parametrize("before", ["cd $MEGATRON_DIR\n", "source ./setup_env.sh\n"])
def test_a_plain_python_command_that_may_start_elsewhere_is_not_followed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: str) -> None:
    from auditor.config.launch import CommandNotFollowed
    script = _bigcode(tmp_path, before)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CommandNotFollowed):
        parse_launch(script.read_text(), str(script))


def _absent(script: Path, monkeypatch: pytest.MonkeyPatch, cwd: Path) -> str:
    """config.script_absent and the entry-missing errors, in words ("" where none; a command not
    followed says nothing either)."""
    from auditor.config.launch import CommandNotFollowed
    monkeypatch.chdir(cwd)
    try:
        config = parse_launch(script.read_text(), str(script))
    except CommandNotFollowed:
        return ""
    return config.script_absent + "".join(d.message for d in config.diagnostics if d.kind == "launch.entry-missing")


# Review r40-missing, hole 1, after bigcode-project/Megatron-LM@7c325cd34a examples/merge_mp_bert.sh:
# a gone tool, then the real training; no `set -e`, so bash goes on to the next command.
THEN_TRAIN = """CHECKPOINT_PATH=checkpoints/gpt_345m
{first} tools/merge_mp_partitions.py --model-type GPT --load $CHECKPOINT_PATH
{second} pretrain_gpt.py --pipeline-model-parallel-size 2 --load $CHECKPOINT_PATH
"""


@pytest.mark.parametrize("launcher", ["python", "torchrun --nproc_per_node 8"])
def test_a_missing_script_with_commands_after_it_is_not_the_end(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, launcher: str) -> None:
    script = _bigcode(tmp_path)
    (tmp_path / "pretrain_gpt.py").write_text(ENTRY)
    script.write_text(THEN_TRAIN.format(first=launcher, second=launcher))
    assert _absent(script, monkeypatch, tmp_path) == ""


@pytest.mark.parametrize("before", ["set -e\n", "set -euo pipefail\n", "set -o errexit\n", "set +e\nset -ex\n"])
def test_errexit_ends_the_script_at_the_missing_script(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: str) -> None:
    script = _bigcode(tmp_path)
    (tmp_path / "pretrain_gpt.py").write_text(ENTRY)
    script.write_text(before + THEN_TRAIN.format(first="python", second="python"))
    assert "merge_mp_partitions.py" in _absent(script, monkeypatch, tmp_path)


# Review r40-missing, hole 2: a function defined above runs after a `tar` that may unpack its script.
FUNCTION_THEN_PREP = """GPUS_PER_NODE=8
train() {
  torchrun --nproc_per_node $GPUS_PER_NODE tools/merge_mp_partitions.py --pipeline-model-parallel-size 2
}
tar -xzf /shared/megatron_tools.tar.gz
train
"""


def test_a_function_called_after_a_command_that_may_write_its_script_says_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _bigcode(tmp_path)
    script.write_text(FUNCTION_THEN_PREP)
    assert _absent(script, monkeypatch, tmp_path) == ""


# Review r40-missing, hole 3: a project whose README clones Megatron-LM into its root and whose
# script runs `Megatron-LM/pretrain_gpt.py` (a README runs `python -m torch.distributed.launch ...
# Megatron-LM/pretrain_gpt.py`): a missing top-level folder is another tree, not a moved example.
CLONED = """GPUS_PER_NODE=8
DISTRIBUTED_ARGS="--nproc_per_node $GPUS_PER_NODE --nnodes 1"
torchrun $DISTRIBUTED_ARGS Megatron-LM/pretrain_gpt.py --pipeline-model-parallel-size 2 --num-layers 24
"""


def test_a_missing_top_level_folder_is_another_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("setup.py", "prepare_data.py", "convert_hf.py"):
        (tmp_path / name).write_text("")
    (tmp_path / "scripts").mkdir()
    script = tmp_path / "scripts/pretrain_gpt_pp2.sh"
    script.write_text(CLONED)
    assert _absent(script, monkeypatch, tmp_path) == ""


def test_errexit_turned_off_again_lets_bash_go_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _bigcode(tmp_path)
    (tmp_path / "pretrain_gpt.py").write_text(ENTRY)
    script.write_text("set -e\nset +e\n" + THEN_TRAIN.format(first="python", second="python"))
    assert _absent(script, monkeypatch, tmp_path) == ""
