"""The launch-script reader on real script shapes, checked against bash itself where it can run.

Oracle: the fixture scripts run under the real bash with stub launchers on PATH that record the
argv and environment they receive; the reader must see the same flags and environment without
running anything. Rules: every spelling in rules/megatron-lm.toml carries VALID/INVALID
examples run here, and the table is re-derived from the megatron-core wheels' own argument parser.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.config.megatron_lm_parser import megatron_cli

from auditor import rulebook, sources
from auditor.bash.values import Symbolic
from auditor.config.launch import NotAPipelineRun, parse_launch, read_launch, read_script
from auditor.config.model import LaunchConfig
from auditor.errors import InputError

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).resolve().parents[1] / "launch_scripts"
EXAMPLES = REPO / "examples"
BASH = shutil.which("bash")

# "Configurations Tried" of the seed report: PP -> (TP, EP, global batch).
SEED_TABLE = {1: ("4", "8", "32"), 2: ("4", "8", "32"), 4: ("4", "8", "32"), 8: ("4", "8", "32")}


def kinds(config: LaunchConfig, *severities: str) -> list[str]:
    return [d.kind for d in config.diagnostics if not severities or d.severity in severities]


def flag_values(config: LaunchConfig) -> dict[str, object]:
    return {name: flag.value for name, flag in config.flags.items()}


# --- the seed report -----------------------------------------------------------------------------


def test_seed_script_fixed_gives_the_reported_layout() -> None:
    config = read_launch(EXAMPLES / "glm5_1_lora_pp4.sh")
    assert config.launcher == "megatron sft" and config.style == "ms-swift"
    flags = flag_values(config)
    assert (flags["pipeline_model_parallel_size"], flags["tensor_model_parallel_size"],
            flags["expert_model_parallel_size"]) == ("4", "4", "8")
    assert flags["decoder_last_pipeline_num_layers"] == "18"
    assert flags["sequence_parallel"] == "true"  # ms-swift bool: the text is kept for the next stage
    assert flags["no_save_optim"] == "true"  # a swift field named no_*, not a negation
    assert flags["model"] == "ZhipuAI/GLM-5.1"
    assert isinstance(flags["dataset"], Symbolic)  # ${DATASET_PATH:?...} with nothing to resolve it
    assert (config.nproc_per_node, config.nnodes, config.world_size) == (8, 16, 128)
    assert config.pins["torch"] == "2.10.0"
    env = {name: (var.value, var.how) for name, var in config.env.items()}
    assert env["TORCH_DISTRIBUTED_DEBUG"] == ("DETAIL", "export")
    assert env["NCCL_TIMEOUT"] == ("1800", "export")
    assert env["NCCL_ASYNC_ERROR_HANDLING"] == ("1", "export")
    assert env["NPROC_PER_NODE"] == ("8", "inline")
    assert env["CUDA_VISIBLE_DEVICES"] == ("0,1,2,3,4,5,6,7", "inline")
    assert kinds(config, "warning", "error") == []
    line = config.flags["pipeline_model_parallel_size"].line
    assert "--pipeline_model_parallel_size 4" in (EXAMPLES / "glm5_1_lora_pp4.sh").read_text().splitlines()[line - 1]


@pytest.mark.parametrize("pp", sorted(SEED_TABLE))
def test_seed_variants_follow_the_reports_table(pp: int) -> None:
    config = read_launch(EXAMPLES / f"glm5_1_lora_pp{pp}.sh")
    flags = flag_values(config)
    tp, ep, gbs = SEED_TABLE[pp]
    assert (flags["pipeline_model_parallel_size"], flags["tensor_model_parallel_size"],
            flags["expert_model_parallel_size"], flags["global_batch_size"]) == (str(pp), tp, ep, gbs)
    assert ("decoder_last_pipeline_num_layers" in flags) == (pp >= 4)
    assert config.world_size == 128


def test_seed_report_verbatim_is_read_as_one_command_with_a_diagnostic() -> None:
    verbatim = read_launch(EXAMPLES / "seed_report_verbatim.sh")
    fixed = read_launch(EXAMPLES / "glm5_1_lora_pp4.sh")
    broken = [d for d in verbatim.diagnostics if d.kind == "launch.broken-continuation"]
    assert len(broken) == 1 and broken[0].severity == "error"
    text = (EXAMPLES / "seed_report_verbatim.sh").read_text().splitlines()
    assert text[verbatim.command_line - 1] == "megatron sft"
    assert broken[0].where == f"{EXAMPLES / 'seed_report_verbatim.sh'}:{verbatim.command_line}"
    assert "--model: command not found" in broken[0].message
    assert verbatim.end_line == len(text)
    # Every flag of the published block, with the same text wherever no path variable is involved.
    assert set(verbatim.flags) == set(fixed.flags)
    for name, flag in verbatim.flags.items():
        if not isinstance(flag.value, Symbolic):
            assert flag.value == fixed.flags[name].value, name
    # The assignment lines above it are read as that command's environment, unresolved.
    assert verbatim.env["NPROC_PER_NODE"].how == "inline"
    assert verbatim.env["NPROC_PER_NODE"].value == Symbolic("${n_gpus_per_node}")
    assert verbatim.env["CUDA_VISIBLE_DEVICES"].value == "0,1,2,3,4,5,6,7"
    assert isinstance(verbatim.nproc_per_node, Symbolic) and verbatim.world_size is None
    resolved = read_launch(EXAMPLES / "seed_report_verbatim.sh",
                           environ={"n_gpus_per_node": "8", "nnodes": "16", "ARNOLD_ID": "0"})
    assert resolved.world_size == 128


@pytest.mark.parametrize("text, stop, why", [
    ("NPROC_PER_NODE=1 megatron sft \\\n --a 1 \\\n --b 2\n --c 3 \\\n --d 4\n", 3, ""),
    ("NPROC_PER_NODE=1 megatron sft \\\n --a 1 \\ \n --c 3\n", 2, "escapes the space"),
    ("NPROC_PER_NODE=1 megatron sft \\\n --a 1  # note \\\n --c 3\n", 2, "inside a comment"),
])
def test_a_continuation_broken_mid_command(text: str, stop: int, why: str) -> None:
    config = parse_launch(text, "run.sh")
    broken = [d for d in config.diagnostics if d.kind == "launch.broken-continuation"]
    assert len(broken) == 1 and broken[0].where == f"run.sh:{stop}" and why in broken[0].message
    assert "`--c: command not found`" in broken[0].message
    assert config.flags["a"].values[0] == "1" and config.flags["c"].value == "3"


# --- more shapes ---------------------------------------------------------------------------------


def test_megatron_lm_arrays_and_dash_spellings() -> None:
    config = read_launch(SCRIPTS / "megatron_lm_arrays.sh")
    assert config.launcher == "torchrun pretrain_gpt.py" and config.style == "megatron-lm"
    flags = flag_values(config)
    assert flags["pipeline_model_parallel_size"] == "2"
    assert flags["tensor_model_parallel_size"] == "8"
    assert flags["overlap_p2p_comm"] is False  # --no-overlap-p2p-communication, through the rules
    assert config.flags["overlap_p2p_comm"].spelling == "--no-overlap-p2p-communication"
    assert flags["sequence_parallel"] is True and flags["fp16"] is True
    assert flags["num_layers_per_virtual_pipeline_stage"] == "4"  # appended with +=( )
    assert config.flags["rampup_batch_size"].values == ("16", "16", "5859375")
    assert flags["attention_backend"] == "auto"  # the comment inside the array is not a value
    assert flags["data_path"] == "/data/gpt_text_document"  # ${2:-default}
    assert flags["save"] == Symbolic("$1")
    assert (config.nproc_per_node, config.nnodes) == (8, 2)
    assert config.launcher_flags["master_port"].value == "6000"
    assert config.env["CUDA_DEVICE_MAX_CONNECTIONS"].how == "export"
    assert config.env["WORLD_SIZE"].value == "16"  # $(($GPUS_PER_NODE*$NUM_NODES)), never exported
    assert config.env["WORLD_SIZE"].how == "assign"
    # The flag's line is where the user wrote it, inside the array.
    line = config.flags["tensor_model_parallel_size"].line
    assert "--tensor-model-parallel-size 8" in (SCRIPTS / "megatron_lm_arrays.sh").read_text().splitlines()[line - 1]


def test_slurm_srun_wrapping_bash_c() -> None:
    config = read_launch(SCRIPTS / "slurm_srun.sh")
    assert config.launcher == "torchrun pretrain_gpt.py"
    assert config.wrapper[:1] == ["srun"] and config.wrapper[-2:] == ["bash", "-c"]
    flags = flag_values(config)
    assert flags["pipeline_model_parallel_size"] == "4" and flags["tensor_model_parallel_size"] == "2"
    assert flags["distributed_timeout_minutes"] == "30"
    assert config.nproc_per_node == 8
    assert config.nnodes == 4  # `\$SLURM_NNODES` for the inner shell: the job's `#SBATCH --nodes=4`
    assert isinstance(config.env["MASTER_ADDR"].value, Symbolic)  # $(scontrol ...)
    assert config.env["NCCL_ASYNC_ERROR_HANDLING"].value == "1"


def test_swift_sft_multi_value_flags() -> None:
    config = read_launch(SCRIPTS / "swift_sft.sh")
    assert config.launcher == "swift sft" and config.style == "ms-swift"
    dataset = config.flags["dataset"]
    assert dataset.values == ("AI-ModelScope/alpaca-gpt4-data-zh#500", "AI-ModelScope/alpaca-gpt4-data-en#500",
                              "swift/self-cognition#500")
    assert config.flags["lora_rank"].spelling == "--lora-rank"  # dashes normalised for ms-swift
    assert config.flags["gradient_checkpointing"].value is True
    assert config.flags["system"].value == "You are a helpful assistant."
    assert (config.nproc_per_node, config.nnodes) == (4, 1)
    assert "torchrun's default" in config.world_source["nnodes"]


def test_python_m_torch_distributed_run_with_gpu_count_and_elastic_nodes() -> None:
    config = read_launch(SCRIPTS / "torch_distributed_run.sh")
    assert config.launcher == "python -m torch.distributed.run pretrain_gpt.py"
    flags = flag_values(config)
    assert flags["pipeline_model_parallel_size"] == "4"  # --flag=value
    assert flags["overlap_p2p_comm_warmup_flush"] is True and flags["use_ring_exchange_p2p"] is True
    assert config.nproc_per_node == 6  # --nproc-per-node=gpu: the CUDA_VISIBLE_DEVICES count
    assert config.nnodes == Symbolic("2:4") and config.world_size is None
    assert "launch.elastic-nnodes" in kinds(config)
    assert config.launcher_flags["rdzv_endpoint"].value == "127.0.0.1:29400"


def test_symbolic_values_stay_symbolic() -> None:
    config = read_launch(SCRIPTS / "symbolic_values.sh")
    flags = flag_values(config)
    assert flags["pipeline_model_parallel_size"] == "4"  # ${PP_SIZE:-4}
    assert flags["tensor_model_parallel_size"] == Symbolic("${TP_SIZE}")
    assert flags["save"] == Symbolic("/ckpt/run-$(hostname)-`date +%s`")
    assert flags["log_interval"] == "10"  # unquoted $EXTRA splits into a flag and its value
    assert config.nproc_per_node == 8 and config.nnodes == Symbolic("${NNODES}")
    unresolved = [d for d in config.diagnostics if d.kind == "launch.unresolved-args"]
    assert [d.message.split("`")[1] for d in unresolved] == ["$EXTRA_ARGS"]
    [arguments] = [d for d in config.diagnostics if d.kind == "launch.script-arguments"]
    assert "with no arguments: `$@`" in arguments.message  # the script run as written: adds nothing
    told = read_launch(SCRIPTS / "symbolic_values.sh", environ={"NNODES": "4", "TP_SIZE": "2", "GPUS": "4"})
    assert (told.nproc_per_node, told.nnodes, told.flags["tensor_model_parallel_size"].value) == (4, 4, "2")


def test_inline_environment_and_unexported_variables() -> None:
    config = read_launch(SCRIPTS / "inline_env.sh")
    env = {name: (var.value, var.how) for name, var in config.env.items()}
    assert env["NCCL_DEBUG"] == ("WARN", "inline")  # the command's own value beats the script's
    assert env["NCCL_P2P_DISABLE"] == ("1", "inline")  # through `env NAME=value`
    assert env["OMP_NUM_THREADS"] == ("4", "export")
    assert env["TORCH_DISTRIBUTED_DEBUG"] == ("DETAIL", "assign")
    assert "launch.not-exported" in kinds(config)
    assert config.launcher_flags["standalone"].value is True
    assert config.flags["num_layers"].value == "16"
    assert "launch.repeated-flag" in kinds(config, "warning")


def test_branches_defaults_and_functions() -> None:
    config = read_launch(SCRIPTS / "conditional.sh")
    assert config.launcher == "megatron pt"
    flags = flag_values(config)
    assert flags["pipeline_model_parallel_size"] == "4"  # MODE=${1:-pp} is pp: the first branch runs
    assert flags["virtual_pipeline_model_parallel_size"] == "2"  # every branch agrees
    assert flags["lr"] == "1e-4"  # case with a `*)` arm
    assert flags["seed"] == "3"  # set from a loop variable: the loop over 1 2 3 ends at 3, as in bash
    # [ -z "$NNODES" ] && NNODES=2: 2 only where the caller left NNODES unset, else the caller's
    assert config.nproc_per_node == 8 and config.nnodes == Symbolic("${NNODES}")


def test_quotes_escapes_comments_heredoc() -> None:
    config = read_launch(SCRIPTS / "quoting.sh")
    flags = flag_values(config)
    assert flags["pipeline_model_parallel_size"] == "2"  # not the 99 of the here-document
    assert flags["system"] == "You are \"helpful\"; don't # stop"
    assert flags["run_name"] == "tab\tseparated"
    assert flags["output_dir"] == "out dir"
    assert config.flags["dataset"].values == ("a b", "c")
    assert flags["sequence_parallel"] is True
    assert (config.nproc_per_node, config.nnodes) == (2, 1)


def test_unexported_world_size_means_one_process() -> None:
    config = read_launch(SCRIPTS / "single_process.sh")
    assert (config.nproc_per_node, config.nnodes) == (1, 1)
    single = [d for d in config.diagnostics if d.kind == "launch.single-process"]
    assert single and "NPROC_PER_NODE is assigned at line 2 but not exported" in single[0].message


def test_crlf_line_endings() -> None:
    text = (EXAMPLES / "glm5_1_lora_pp4.sh").read_text()
    crlf = parse_launch(text.replace("\n", "\r\n"), "run.sh")
    lf = parse_launch(text, "run.sh")
    assert flag_values(crlf) == flag_values(lf) and crlf.world_size == 128
    assert kinds(crlf, "warning") == ["launch.crlf"]


def test_megatron_spelling_mistakes_and_versions() -> None:
    config = parse_launch(
        "torchrun --nproc_per_node 2 pretrain_gpt.py --pipeline_model_parallel_size 2 --batch-p2p-comm "
        "--sequence-parallel true --num-layers 4 8 --overlap-p2p-communication\n", "run.sh")
    messages = {d.kind: [] for d in config.diagnostics}
    for d in config.diagnostics:
        messages[d.kind].append((d.severity, d.message))
    assert any("spells it `--pipeline-model-parallel-size`" in m for _, m in messages["launch.megatron-spelling"])
    assert any("no `--batch-p2p-comm` flag" in m for _, m in messages["launch.megatron-spelling"])
    assert any(s == "info" and "<0.4.0" in m for s, m in messages["launch.megatron-spelling"])
    assert messages["launch.flag-takes-no-value"][0][0] == "error"
    assert "`8` follows `--num-layers 4`" in messages["launch.extra-argument"][0][1]
    assert config.flags["overlap_p2p_comm"].value is True
    pinned = parse_launch("torchrun pretrain_gpt.py --overlap-p2p-communication\n", megatron_version="0.17.0")
    # No parser read (only the rules' table): never an error (issue 22 item 6), and the run is
    # undecided: whether the unread parser accepts the flag is unknown (never clean).
    assert [(d.severity, d.kind) for d in pinned.diagnostics] == [
        ("warning", "launch.megatron-spelling"), ("warning", "launch.front-end-unread")]


def test_several_training_commands_and_wrappers() -> None:
    config = parse_launch(
        "nohup timeout 3600 torchrun --nproc_per_node=4 train.py --pipeline-model-parallel-size 2 &\n"
        "megatron sft --model m\n", "run.sh")
    assert config.launcher == "torchrun train.py" and config.wrapper == ["nohup", "timeout", "3600"]
    assert "launch.several-commands" in kinds(config, "warning")
    echoed = parse_launch("echo megatron sft --model m\nNPROC_PER_NODE=2 megatron sft --model real\n")
    assert echoed.flags["model"].value == "real" and echoed.command_line == 2


# --- bash as the oracle --------------------------------------------------------------------------

RECORDER = """#!/bin/bash
out="$P2PAUDIT_ORACLE/$(basename "$0").$$"
printf '%s\\0' "$@" > "$out.argv"
env -0 > "$out.env"
"""
PASS_THROUGH = """#!/bin/bash
while [ "${1#-}" != "$1" ]; do shift; done
exec "$@"
"""

ORACLE_CASES = {
    # script: (launcher stub it runs, environment the caller gives)
    "examples/glm5_1_lora_pp4.sh": ("megatron", {"DATASET_PATH": "/data/sft.jsonl"}),
    "examples/glm5_1_lora_pp8.sh": ("megatron", {"DATASET_PATH": "/data/sft.jsonl", "NNODES": "2"}),
    "tests/launch_scripts/megatron_lm_arrays.sh": ("torchrun", {}),
    # run as sbatch runs it: the allocation its #SBATCH lines ask for is in the job's environment,
    # every variable sbatch(1) OUTPUT ENVIRONMENT VARIABLES sets from --nodes and --gpus-per-node
    "tests/launch_scripts/slurm_srun.sh": ("torchrun", {"SLURM_NNODES": "4", "SLURM_JOB_NUM_NODES": "4",
                                                        "SLURM_NTASKS_PER_NODE": "1", "SLURM_GPUS_PER_NODE": "8"}),
    "tests/launch_scripts/swift_sft.sh": ("swift", {}),
    "tests/launch_scripts/torch_distributed_run.sh": ("python3", {}),
    "tests/launch_scripts/symbolic_values.sh": ("torchrun", {}),
    "tests/launch_scripts/inline_env.sh": ("torchrun", {}),
    "tests/launch_scripts/conditional.sh": ("megatron", {}),
    "tests/launch_scripts/quoting.sh": ("megatron", {}),
}


def _groups(argv: list[str]) -> dict[str, list[str]]:
    """argv as option -> the words after it, the way both argparse front ends group them."""
    out: dict[str, list[str]] = {}
    current = None
    for word in argv:
        if word.startswith("-") and word not in ("-", "--") and not re.match(r"-\.?[0-9]", word):
            current, eq, value = word.partition("=") if word.startswith("--") else (word, "", "")
            out[current] = [value] if eq else []
        elif current is not None:
            out[current].append(word)
    return out


@pytest.mark.skipif(BASH is None, reason="needs bash")
@pytest.mark.parametrize("script", sorted(ORACLE_CASES))
def test_reader_agrees_with_bash(script: str, tmp_path: Path) -> None:
    launcher, caller_env = ORACLE_CASES[script]
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for name, body in [(launcher, RECORDER), ("srun", PASS_THROUGH), ("scontrol", "#!/bin/bash\necho node001\n")]:
        (stubs / name).write_text(body)
        (stubs / name).chmod(stat.S_IRWXU)
    records = tmp_path / "records"
    records.mkdir()
    env = {"PATH": f"{stubs}:/usr/bin:/bin", "P2PAUDIT_ORACLE": str(records), "HOME": str(tmp_path), **caller_env}
    subprocess.run([BASH, str(REPO / script)], env=env, cwd=tmp_path, check=True, timeout=60,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    argv_files = sorted(records.glob("*.argv"))
    assert len(argv_files) == 1, argv_files
    argv = argv_files[0].read_bytes().decode().split("\0")[:-1]
    bash_env = dict(item.split("=", 1) for item in argv_files[0].with_suffix(".env").read_bytes().decode().split("\0") if "=" in item)

    config = read_launch(REPO / script, environ=caller_env)
    # The training script's arguments: after the subcommand, or after torchrun's `*.py` argument.
    if launcher in ("megatron", "swift"):
        args = argv[1:]
    else:
        args = argv[next(i for i, w in enumerate(argv) if w.endswith(".py")) + 1:]
    groups = _groups(args)
    assert {flag.spelling for flag in config.flags.values()} == set(groups)
    for flag in config.flags.values():
        if all(isinstance(v, str) for v in flag.values):
            assert list(flag.values) == groups[flag.spelling], flag.spelling
    for name, var in config.env.items():
        if var.how == "assign":
            assert name not in bash_env, name
        elif isinstance(var.value, str):
            assert bash_env.get(name) == var.value, name
    for name, value in (("NPROC_PER_NODE", config.nproc_per_node), ("NNODES", config.nnodes)):
        if launcher in ("megatron", "swift") and isinstance(value, int) and name in bash_env:
            assert int(bash_env[name]) == value


# --- bad input -----------------------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        read_launch(tmp_path / "run.sh")
    assert err.value.line is None and "no such launch script" in str(err.value)


def test_undecodable_bytes_are_read_as_bash_runs_them_and_named(tmp_path: Path) -> None:
    """Bash runs a Latin-1 byte in a comment or a value; so is the script read, with the line
    named (an upstream script with a Latin-1 `é` in a comment was refused before)."""
    path = tmp_path / "run.sh"
    path.write_bytes(b"export A=1\n# caf\xe9\nmegatron sft --model m --pipeline_model_parallel_size 2\n")
    config = read_launch(path)
    assert config.flags["pipeline_model_parallel_size"].value == "2"
    found = [d for d in config.diagnostics if d.kind == "launch.not-utf8"]
    assert [d.where for d in found] == [f"{path}:2"]


def test_undecodable_bytes_are_refused_where_the_text_is_written_back(tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_bytes(b"export A=1\n# comment\nmegatron sft --model \xff\xfe\n")
    with pytest.raises(InputError) as err:
        read_script(path, lossless=True)
    assert err.value.line == 3 and str(err.value).startswith(f"{path}:3: not UTF-8")


@pytest.mark.parametrize("text, line, what", [
    ("A=1\nmegatron sft --model 'abc\n--x\n", 2, "unterminated single quote"),
    ('A=1\n\nmegatron sft --system "abc\n', 3, "unterminated double quote"),
    ("megatron sft \\\n  --run_name `date\n", 2, "unterminated backquote"),
    ("X=$(hostname\nmegatron sft\n", 1, "unterminated $("),
    ("megatron sft --lr ${LR:-1e-4\n", 1, "unterminated ${"),
    ("ARGS=(\n --a 1\n", 1, "unterminated array ("),
])
def test_unterminated_constructs_name_their_line(text: str, line: int, what: str) -> None:
    with pytest.raises(InputError) as err:
        parse_launch(text, "run.sh")
    assert (err.value.line, err.value.cause) == (line, what)


def test_no_training_command_says_what_was_looked_for() -> None:
    with pytest.raises(InputError) as err:
        parse_launch("echo hello\n$LAUNCHER pretrain_gpt.py --num-layers 2\n", "run.sh")
    assert "megatron sft|pt|rlhf" in err.value.cause and "torchrun SCRIPT" in err.value.cause
    assert "line 2 runs `$LAUNCHER`" in err.value.cause


@pytest.mark.parametrize("text, syntax", [
    ('[[ -n "$X"\ntorchrun pretrain_gpt.py --num-layers 2\n', True),  # the unclosed test swallows it
    ("echo hello\n", False),  # no error to blame: none named
])
def test_no_training_command_names_the_syntax_error_that_swallowed_it(text: str, syntax: bool) -> None:
    with pytest.raises(InputError) as err:
        parse_launch(text, "run.sh")
    # bash -n rejects the unclosed test: an error at the line that opened it
    assert ("`]]` expected" in err.value.cause and err.value.line == 1) is syntax


FRAGMENTS = [
    "megatron sft", "swift pt", "torchrun", "python -m torch.distributed.run", "pretrain_gpt.py", " ", "\n",
    "\\\n", "\r\n", "\t", "--pipeline_model_parallel_size", "--no-overlap-p2p-communication", "--nnodes=2:4",
    "--nproc_per_node", "4", "gpu", "'", '"', "\\", "${", "}", "$(", ")", "(", "`", "#", "# torch==2.10.0",
    "if [ -z \"$A\" ]; then", "then", "elif", "else", "fi", "for x in 1 2; do", "while true; do", "done",
    "case $A in", "*)", "esac", ";;", "A=", "B+=", "NPROC_PER_NODE=", "export ", "=(", "${A[@]}", "${A:-",
    "${#A}", "$((", "))", "$1", "$@", "<<EOF", "EOF", "<<-X", "&&", "||", "|", ";", "&", "[[", "]]",
    "bash -c ", "srun ", "env ", "f() {", "function g", "{", "$'", ">", "2>&1", "=", "-m",
]


_SHELL_TEXT = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4)), max_size=30).map("".join)
_COMMANDS = ["megatron sft ", "NPROC_PER_NODE=8 megatron pt ", "torchrun --nproc_per_node=2 pretrain_gpt.py ",
             "srun bash -c 'torchrun x.py ", "python -m torch.distributed.launch x.py "]
# Free text rarely holds a training command, so half the inputs wrap one in random text.
_SCRIPTS = st.one_of(_SHELL_TEXT, st.tuples(_SHELL_TEXT, st.sampled_from(_COMMANDS), _SHELL_TEXT).map(
    lambda parts: f"{parts[0]}\n{parts[1]}{parts[2]}"))


@pytest.mark.heavy
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_SCRIPTS)
def test_fuzz_no_input_crashes_the_reader(text: str) -> None:
    try:
        config = parse_launch(text, "run.sh")
    except InputError as err:
        if err.cause.startswith("the training command could not be followed") or isinstance(err, NotAPipelineRun):
            assert err.line is None  # an answer about the whole script (NOT A PIPELINE RUN: runs nothing that trains)
        else:
            assert err.line is not None and 1 <= err.line <= text.count("\n") + 1, err
        return
    assert config.launcher and config.command_line >= 1
    for finding in config.diagnostics:
        assert finding.where.startswith("run.sh:")


@settings(max_examples=100, deadline=None)
@given(raw=st.binary(max_size=200))
def test_fuzz_bytes(raw: bytes, tmp_path_factory: pytest.TempPathFactory) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "run.sh"
    path.write_bytes(b"megatron sft --model m\n" + raw)
    try:
        read_launch(path)
    except InputError as err:
        assert err.line is not None


def test_nesting_is_bounded() -> None:
    deep = "if true; then\n" * 150 + "megatron sft\n" + "fi\n" * 150
    with pytest.raises(InputError) as err:
        parse_launch(deep, "run.sh")
    assert "nested" in err.value.cause and err.value.line is not None


# --- rules: fixit examples and agreement with Megatron-LM's parser ---------------------------------

RULES = rulebook.load("megatron-lm")


def _rule_examples(kind: str) -> list[tuple[dict, str]]:
    return [(entry, example) for table in ("flag", "no_flag") for entry in RULES.data[table]
            for example in entry.get(kind, [])]


@pytest.mark.parametrize("entry, example", _rule_examples("valid"), ids=lambda v: v if isinstance(v, str) else "")
def test_rule_valid_examples(entry: dict, example: str) -> None:
    config = parse_launch(f"torchrun pretrain_gpt.py {example}\n", "run.sh")
    assert kinds(config, "warning", "error") == []
    flag = config.flags[entry["dest"]]
    expected = {"store_true": True, "store_false": False}.get(entry["action"])
    if expected is not None:
        assert flag.value is expected
    else:
        assert flag.values and all(isinstance(v, str) for v in flag.values)


@pytest.mark.parametrize("entry, example", _rule_examples("invalid"), ids=lambda v: v if isinstance(v, str) else "")
def test_rule_invalid_examples(entry: dict, example: str) -> None:
    config = parse_launch(f"torchrun pretrain_gpt.py {example}\n", "run.sh")
    assert kinds(config, "warning", "error")


@pytest.mark.wheels
@pytest.mark.parametrize("version", ["0.17.0", "0.19.0"])
def test_rules_agree_with_megatron_lm_parser(version: str) -> None:
    root = sources.resolve(f"megatron-core=={version}").root
    cli = {spelling: (o.dest, o.action) for spelling, o in megatron_cli(root).items()}
    assert len(cli) > 300  # the extraction found the parser, not a fragment of it
    ruleset = rulebook.load("megatron-lm", version)
    admitted = {e["spelling"]: e for e in ruleset.table("flag")}
    for entry in RULES.data["flag"]:
        if entry["spelling"] in admitted:
            assert cli.get(entry["spelling"]) == (entry["dest"], entry["action"]), entry["spelling"]
        else:
            assert entry["spelling"] not in cli, f"{entry['spelling']} exists in {version}: widen `versions`"
    dests = {e["dest"] for e in admitted.values()}
    for spelling, (dest, _) in cli.items():
        if dest in dests:
            assert spelling in admitted, f"{spelling} (dest {dest}) is missing from rules/megatron-lm.toml"
    for entry in ruleset.table("no_flag"):
        assert not set(entry["spellings"]) & set(cli), entry["spellings"]
        assert entry["dest"] not in {dest for dest, _ in cli.values()}, entry["dest"]


@pytest.mark.wheels
def test_launcher_rules_agree_with_ms_swift(real_sources: dict) -> None:
    root = real_sources["ms-swift"].root
    main = ast.parse((root / "swift/cli/main.py").read_text())
    routes = ast.parse((root / "swift/cli/_megatron/main.py").read_text())
    use_torchrun = next(n for n in ast.walk(main) if isinstance(n, ast.FunctionDef) and n.name == "use_torchrun")
    read = {c.args[0].value for c in ast.walk(use_torchrun) if isinstance(c, ast.Call)
            and getattr(c.func, "attr", "") == "getenv"}
    cli_main = next(n for n in ast.walk(main) if isinstance(n, ast.FunctionDef) and n.name == "cli_main")
    torchrun_for = next({e.value for e in n.elts} for n in ast.walk(cli_main) if isinstance(n, ast.Set))

    def route_keys(tree: ast.Module) -> set[str]:
        node = next(n for n in tree.body if isinstance(n, ast.AnnAssign) and n.target.id == "ROUTE_MAPPING")
        return {k.value for k in node.value.keys}

    launchers = {e["name"]: e for e in rulebook.load("ms-swift").table("launcher")}
    for name, tree in (("megatron", routes), ("swift", main)):
        entry = launchers[name]
        assert {entry["env_nproc"], entry["env_nnodes"]} == read
        assert set(entry["subcommands"]) <= route_keys(tree)
    assert set(launchers["swift"]["torchrun_subcommands"]) == torchrun_for
    # `megatron` (is_megatron=True) starts torchrun for every route it has.
    assert set(launchers["megatron"]["torchrun_subcommands"]) <= route_keys(routes)


def test_launcher_rules_agree_with_torchrun() -> None:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        pytest.skip("torch is not installed")
    run_py = Path(spec.origin).parent / "distributed" / "run.py"
    launch_py = Path(spec.origin).parent / "distributed" / "launch.py"
    options: dict[str, dict] = {}
    for path in (run_py, launch_py):
        for call in ast.walk(ast.parse(path.read_text())):
            if isinstance(call, ast.Call) and getattr(call.func, "attr", "") == "add_argument":
                names = [a.value for a in call.args if isinstance(a, ast.Constant) and str(a.value).startswith("-")]
                info = {k.arg: ast.unparse(k.value) for k in call.keywords}
                options.update({n: {**info, "names": names} for n in names})
    torchrun = next(e for e in RULES.table("launcher") if e["name"] == "torchrun")
    assert set(torchrun["nproc_flags"]) == set(options["--nproc-per-node"]["names"])
    assert options["--nproc-per-node"]["default"] == repr(torchrun["nproc_default"])
    assert options["--nnodes"]["default"] == repr(torchrun["nnodes_default"])
    booleans = {n for n, info in options.items() if info.get("action") in ("check_env", "'store_true'")}
    assert booleans == set(torchrun["boolean_options"])
    compared = {c.comparators[0].value for c in ast.walk(ast.parse(run_py.read_text()))
                if isinstance(c, ast.Compare) and isinstance(c.left, ast.Name) and c.left.id == "nproc_per_node"
                and isinstance(c.comparators[0], ast.Constant)}
    assert set(torchrun["device_count_values"]) <= compared


def test_every_example_script_reads() -> None:
    scripts = sorted(EXAMPLES.glob("*.sh"))
    assert len(scripts) >= 5
    for script in scripts:
        errors = kinds(read_launch(script), "error")
        assert errors == (["launch.broken-continuation"] if script.name == "seed_report_verbatim.sh" else []), script
