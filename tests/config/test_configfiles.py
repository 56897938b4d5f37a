"""auditor.config.configfiles: a config file the trainer reads joins the command's flags, as
rules/ms-swift.toml's `first-argument` [[config_file]] says (modelscope/ms-swift 4.3.0
swift/cli/main.py `parse_yaml_args`: the file's keys as `--KEY VALUE` in its place, its `ENV:`
entries as environment variables the environment lacks) and rules/megatron-lm.toml's
`replaces-flags` (Megatron-LM core_v0.17.0 arguments.py:106 `--yaml-cfg`: every other flag
ignored). A file that cannot be read leaves what it could set unknown, never a default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.bash.values import EnvVar, Field, Symbolic
from auditor.config.configfiles import read_config_files
from auditor.config.model import Flag, LaunchConfig

SWIFT = {"program": "megatron", "env_nproc": "NPROC_PER_NODE", "env_nnodes": "NNODES"}


def swift(tmp_path: Path, name: str, text: str | None, **env: str) -> LaunchConfig:
    if text is not None:
        (tmp_path / name).write_text(text)
    config = LaunchConfig(str(tmp_path / "sft.sh"), "megatron sft", 3, positionals=[name])
    config.env = {k: EnvVar(k, v, 1, "export") for k, v in env.items()}
    config.flags["lr"] = Flag("lr", "2e-5", 4, "--lr")  # given after the file on the command line
    read_config_files(config, [Field(name, 3)], SWIFT, config.path)
    return config


def test_an_ms_swift_json_gives_flags_and_environment_the_command_line_and_caller_win(tmp_path):
    text = json.dumps({"ENV": {"NPROC_PER_NODE": 8, "NNODES": 2}, "pipeline_model_parallel_size": 4,
                       "lr": 1e-4, "dataset": ["a#500", "b#500"], "model_kwargs": {"k": 1}})
    config = swift(tmp_path, "sft.json", text, NNODES="1")
    assert config.positionals == []  # the file is no positional argument of the trainer
    assert config.flags["pipeline_model_parallel_size"].value == "4"
    assert config.flags["pipeline_model_parallel_size"].spelling == "--pipeline_model_parallel_size (from sft.json)"
    assert config.flags["dataset"].values == ("a#500", "b#500")
    assert config.flags["model_kwargs"].value == '{"k": 1}'
    assert config.flags["lr"].value == "2e-5"  # the command line's, after the file
    assert config.env["NPROC_PER_NODE"].value == "8" and config.env["NNODES"].value == "1"
    said = {d.kind: d for d in config.diagnostics}
    assert said["launch.config-file-env"].message.startswith("NNODES=2 in the ENV of ")
    assert said["launch.config-file"].message.endswith("sft.json: 3 setting(s), environment NPROC_PER_NODE, NNODES")


@pytest.mark.parametrize("name, text, why", [
    ("sft.json", None, "not found in "),
    ("sft.json", "{not json", "is not JSON"),
    ("sft.yaml", "- a list\n", "holds no mapping of settings"),
])
def test_a_file_that_cannot_be_read_leaves_what_it_sets_unknown(tmp_path, name, text, why):
    config = swift(tmp_path, name, text)
    [unread] = [d for d in config.diagnostics if d.kind == "launch.config-file-unread"]
    assert unread.severity == "warning" and why in unread.message and name in unread.message
    assert isinstance(config.flags["pipeline_model_parallel_size"].value, Symbolic)
    assert config.flags["lr"].value == "2e-5"  # given: known
    assert isinstance(config.env["NPROC_PER_NODE"].value, Symbolic)  # its ENV could set it


def test_yaml_cfg_replaces_every_other_flag(tmp_path):
    (tmp_path / "gpt_config.yaml").write_text(
        "model_parallel:\n  pipeline_model_parallel_size: 2\n  virtual_pipeline_model_parallel_size: null\n"
        "micro_batch_size: 2\n")
    config = LaunchConfig(str(tmp_path / "run.sh"), "torchrun pretrain_gpt.py", 1)
    config.flags = {"yaml_cfg": Flag("yaml_cfg", "gpt_config.yaml", 2, "--yaml-cfg"),
                    "pipeline_model_parallel_size": Flag("pipeline_model_parallel_size", "8", 3,
                                                         "--pipeline-model-parallel-size")}
    read_config_files(config, [], {}, config.path)
    assert {k: f.value for k, f in config.flags.items()} == {
        "yaml_cfg": "gpt_config.yaml", "micro_batch_size": 2, "pipeline_model_parallel_size": 2,
        "virtual_pipeline_model_parallel_size": "None"}
    [ignored] = [d for d in config.diagnostics if d.kind == "launch.yaml-cfg"]
    assert ignored.message.endswith("ignores the command line's other flags: --pipeline-model-parallel-size")



def test_a_config_larger_than_a_launch_file_is_unread_not_loaded(tmp_path):
    """A `--config` naming a data file by mistake: bounded like a sourced file (bash/textfile),
    its settings unknown, never the whole file in memory."""
    text = json.dumps({"pipeline_model_parallel_size": 4, "pad": "x" * (1 << 21)})
    config = swift(tmp_path, "sft.json", text)
    [unread] = [d for d in config.diagnostics if d.kind == "launch.config-file-unread"]
    assert "larger than" in unread.message
    assert isinstance(config.flags["pipeline_model_parallel_size"].value, Symbolic)
