"""auditor.config.flags: a training command's words read as Megatron-LM's argparse parser
(allow_abbrev=False) reads them, against rules/megatron-lm.toml when the parser itself was not
read: what it would reject is an error with its line (a start-up failure), what it reads
otherwise than written is said. The words are those of NVIDIA/Megatron-LM core_v0.17.0
examples/gpt3/train_gpt3_175b_distributed.sh's GPT_MODEL_ARGS, one mistake at a time."""

from __future__ import annotations

from auditor.bash.values import Field, Partial, Symbolic
from auditor.config.flags import is_option, listed, normalise, read_flags
from auditor.config.model import LaunchConfig
from auditor.rulebook.launchers import Spelling


def read(*words: str | Symbolic, checked: bool = True, unsplit: bool = False) -> LaunchConfig:
    config = LaunchConfig("run.sh", "torchrun pretrain_gpt.py", 10)
    fields = [Field(w, 10 + n, unsplit=unsplit and isinstance(w, Symbolic)) for n, w in enumerate(words)]
    read_flags(config, fields, Spelling.load(None), "run.sh", checked)
    return config


def kinds(config: LaunchConfig) -> list[tuple[str, str, str]]:
    return [(d.kind, d.severity, d.where) for d in config.diagnostics]


def test_flags_read_by_their_dest_with_their_values():
    config = read("--num-layers", "96", "--pipeline-model-parallel-size", "8", "--lr", "-1e-4", "--mtp-standalone")
    assert {n: f.value for n, f in config.flags.items()} == {
        "num_layers": "96", "pipeline_model_parallel_size": "8", "lr": "-1e-4", "mtp_standalone": True}
    assert config.flags["pipeline_model_parallel_size"].spelling == "--pipeline-model-parallel-size"
    assert config.flags["pipeline_model_parallel_size"].line == 12
    assert config.diagnostics == []


def test_what_argparse_rejects_is_an_error_with_its_line():
    assert kinds(read("--num-layers", "96", "12")) == [("launch.extra-argument", "error", "run.sh:12")]
    assert kinds(read("--mtp-standalone", "true")) == [("launch.flag-takes-no-value", "error", "run.sh:10")]
    assert kinds(read("--num-layers")) == [("launch.flag-needs-value", "error", "run.sh:10")]
    [said] = read("--account-for-loss-in-pipeline-split=false").diagnostics
    assert said.kind == "launch.flag-takes-no-value" and "as an explicit argument" in said.message
    assert said.fix.endswith("(or drop it to keep the default)")


def test_spellings_the_rules_say_megatron_lacks_are_warnings_without_its_parser():
    """Only the rules were read (no checkout, no release parser): never an error."""
    [under] = read("--pipeline_model_parallel_size", "2").diagnostics
    assert (under.kind, under.severity) == ("launch.megatron-spelling", "warning")
    assert "Megatron-LM spells it `--pipeline-model-parallel-size`" in under.message
    [none] = read("--no-batch-p2p-comm").diagnostics
    assert none.detail == {"dest": "batch_p2p_comm"} and "no `--no-batch-p2p-comm` flag" in none.message


def test_the_last_of_a_repeated_flag_wins_and_is_said():
    config = read("--num-layers", "96", "--num-layers", "48")
    assert config.flags["num_layers"].value == "48"
    [repeated] = config.diagnostics
    assert (repeated.kind, repeated.severity) == ("launch.repeated-flag", "warning")
    assert "the last value, `48`, wins over `96`" in repeated.message


def test_an_unknown_word_may_hide_flags_that_override_those_before_it():
    config = read("--num-layers", "96", Symbolic("$EXTRA_ARGS"), unsplit=True)
    [hidden] = config.diagnostics
    assert (hidden.kind, hidden.severity, hidden.where) == ("launch.unresolved-args", "warning", "run.sh:12")
    assert hidden.detail == {"values": ["$EXTRA_ARGS"], "before": ["--num-layers"], "adds": "flags",
                             "open": ["$EXTRA_ARGS"]}
    assert config.positionals == [Symbolic("$EXTRA_ARGS")]


def test_unchecked_front_ends_read_flags_as_written():
    config = read("--model_type", "qwen2", "--train-iters=10", "--", "rest", checked=False)
    assert {n: f.value for n, f in config.flags.items()} == {"model_type": "qwen2", "train_iters": "10"}
    assert config.positionals == ["rest"] and config.diagnostics == []


def test_the_word_helpers():
    assert normalise("--pipeline-model-parallel-size") == "pipeline_model_parallel_size"
    assert is_option("--bf16") and is_option("-h")
    assert not any(is_option(v) for v in ("-1", "-.5", "-", "--", "96", Symbolic("$X")))
    assert listed(["--a", "--b"]) == "`--a`, `--b`"
    assert listed([f"--f{i}" for i in range(10)], most=2) == "`--f0`, `--f1` and 8 more"


def test_a_flag_and_its_unknown_value_in_one_word_are_that_flag():
    """`--deepspeed=$DS_CFG` (DeepSpeedExamples@83757d9c93 training/MoQ/run.sh:40 spells it so):
    argparse splits it at its first `=`. Read as a positional word, it set no flag, and the
    option before it took it as one more value (`--output_dir` 'out --deepspeed=$DS';
    review r48-conv 3)."""
    eq = Partial("--deepspeed=$DS", (("--deepspeed=", False), ("$DS", True)))
    config = read("--output_dir", "out", eq, checked=False)
    assert config.flags["output_dir"].value == "out"
    assert config.flags["deepspeed"].value == Symbolic("$DS") and config.flags["deepspeed"].spelling == "--deepspeed"
    assert config.positionals == []
    config = read(Partial("--pipeline-model-parallel-size=${PP}",
                          (("--pipeline-model-parallel-size=", False), ("${PP}", True))))
    assert config.flags["pipeline_model_parallel_size"].value == Symbolic("${PP}") and config.positionals == []
