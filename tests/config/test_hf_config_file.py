"""A positional YAML/JSON config file an HfArgumentParser-style entry reads (config/hf_config_file.py).

The construct, after hiyouga/LLaMA-Factory@ff6d4d12ee (PR #9237, examples/megatron/):
`USE_MCA=1 torchrun --nproc_per_node 8 src/train.py examples/megatron/qwen3_moe_full.yaml`.
src/train.py calls run_exp -> get_train_args, which with USE_MCA enabled parses mcore_adapter's
TrainingArguments (src/llamafactory/hparams/parser.py:73-90, :395-397) from read_args
(parser.py:109-124): a first argument ending in .yaml/.yml is loaded with OmegaConf and merged with
`OmegaConf.from_cli(sys.argv[2:])` (`key=value` overrides), the dict then parsed by
HfArgumentParser.parse_dict (parser.py:149-154). examples/megatron/qwen3_moe_full.yaml sets
`pipeline_model_parallel_size: 4`, `tensor_model_parallel_size: 1`, `expert_model_parallel_size: 2`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.bash.values import Symbolic
from auditor.config.derive import derive
from auditor.config.frontends.positional_file import PositionalFileReader
from auditor.config.hf_config_file import SUFFIXES
from auditor.config.launch import parse_launch

# After examples/megatron/qwen3_moe_full.yaml (its parallel settings and a few others).
MOE_YAML = """model_name_or_path: Qwen/Qwen3-30B-A3B-Instruct-2507
do_train: true
stage: sft
finetuning_type: full # only support full for now
bf16: true

# mcore speed up
tensor_model_parallel_size: 1
sequence_parallel: false
pipeline_model_parallel_size: {pp}
use_distributed_optimizer: true
expert_model_parallel_size: 2
"""

# src/train.py: `from llamafactory.train.tuner import run_exp` ... `run_exp()`.
TRAIN_PY = "from llamafactory.train.tuner import run_exp\n\n\ndef main():\n    run_exp()\n\n\nif __name__ == '__main__':\n    main()\n"


def lf_tree(root: Path, command: str, pp: int = 4, yaml: bool = True) -> Path:
    """A LLaMA-Factory checkout's shape: src/train.py, the llamafactory package importing
    mcore_adapter (parser.py:73), the example YAML, and a launch script at the root."""
    (root / "src" / "llamafactory" / "hparams").mkdir(parents=True)
    (root / "src" / "train.py").write_text(TRAIN_PY)
    (root / "src" / "llamafactory" / "__init__.py").write_text("")
    (root / "src" / "llamafactory" / "hparams" / "parser.py").write_text(
        "from mcore_adapter import TrainingArguments as McaTrainingArguments\n")
    if yaml:
        (root / "examples" / "megatron").mkdir(parents=True)
        (root / "examples" / "megatron" / "qwen3_moe_full.yaml").write_text(MOE_YAML.format(pp=pp))
    script = root / "run.sh"
    script.write_text(command + "\n")
    return script


def _read(script: Path):
    return parse_launch(script.read_text(), str(script))


LAUNCH = "torchrun --nproc_per_node 8 src/train.py examples/megatron/qwen3_moe_full.yaml"


@pytest.mark.parametrize("pp", [1, 4])
def test_the_yaml_keys_are_mcore_adapters_flags(tmp_path, pp):
    config = _read(lf_tree(tmp_path, f"USE_MCA=1 {LAUNCH}", pp=pp))
    assert config.launcher == "mca train.py"
    assert config.flags["pipeline_model_parallel_size"].value == str(pp)
    assert config.flags["expert_model_parallel_size"].value == "2"
    eff = derive(config, {"mcore-adapter": "0.10.0.dev0", "megatron-core": "0.15.0"}, torch_version="2.10.0")
    assert eff.values["pipeline_model_parallel_size"].value == pp
    assert eff.values["batch_p2p_comm"].value is True  # no VPP: mcore_adapter turns overlap off


def test_key_value_words_after_the_file_override_it(tmp_path):
    """OmegaConf.merge(dict_config, OmegaConf.from_cli(sys.argv[2:])) (parser.py:112-114)."""
    config = _read(lf_tree(tmp_path, f"export USE_MCA=true\n{LAUNCH} pipeline_model_parallel_size=2"))
    assert config.flags["pipeline_model_parallel_size"].value == "2"


def test_an_option_word_after_the_file_is_not_a_setting_read(tmp_path):
    """OmegaConf.from_cli reads only `key=value`: `--pipeline_model_parallel_size 2` after the file
    is no override of it, so the setting it names is unknown, never the file's."""
    config = _read(lf_tree(tmp_path, f"USE_MCA=1 {LAUNCH} --pipeline_model_parallel_size 2"))
    assert isinstance(config.flags["pipeline_model_parallel_size"].value, Symbolic)


def test_a_file_that_is_not_there_is_unknown_not_default(tmp_path):
    config = _read(lf_tree(tmp_path, f"USE_MCA=1 {LAUNCH}", yaml=False))
    assert isinstance(config.flags["pipeline_model_parallel_size"].value, Symbolic)
    assert any(d.kind == "launch.config-file-unread" and "qwen3_moe_full.yaml" in d.message
               for d in config.diagnostics)


def test_without_use_mca_the_file_is_unknown_not_megatron_defaults(tmp_path):
    """No USE_MCA: the entry is not read as mcore_adapter's trainer, and no rule reads its
    positional file for the front end it is read as: what the file sets is unknown, not PP=1."""
    config = _read(lf_tree(tmp_path, LAUNCH))
    assert config.launcher == "torchrun train.py"
    assert isinstance(config.flags["pipeline_model_parallel_size"].value, Symbolic)
    unread = [d for d in config.diagnostics if d.kind == "launch.config-file-unread"]
    assert unread and "qwen3_moe_full.yaml" in unread[0].message
    assert "megatron_extra_kwargs" not in config.flags  # ms-swift's: not this front end's keys
    eff = derive(config, {"megatron-core": "0.15.0"}, torch_version="2.10.0")
    assert eff.values["pipeline_model_parallel_size"].value != 1


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_positional_config_of_an_unknown_entry_is_unknown(tmp_path, suffix):
    """Any torch-launched entry read as a guess with a positional config file it is given: unknown."""
    (tmp_path / "pretrain.py").write_text("import megatron.core\n")
    (tmp_path / f"cfg{suffix}").write_text('{"pipeline_model_parallel_size": 4}')
    script = tmp_path / "run.sh"
    script.write_text(f"torchrun --nproc_per_node 8 pretrain.py cfg{suffix}\n")
    config = _read(script)
    assert isinstance(config.flags["pipeline_model_parallel_size"].value, Symbolic)
    assert any(d.kind == "launch.config-file-unread" and f"cfg{suffix}" in d.message for d in config.diagnostics)


def test_the_console_script_reads_the_file_too(tmp_path):
    """`USE_MCA=1 llamafactory-cli train X.yaml`: launcher.py (launcher.py:56-121) restarts itself
    under torchrun with the same arguments, parsed by read_args as src/train.py's are."""
    script = lf_tree(tmp_path, "export USE_MCA=1 NPROC_PER_NODE=8\nllamafactory-cli train examples/megatron/qwen3_moe_full.yaml")
    config = _read(script)
    assert config.style == PositionalFileReader.style
    assert config.launcher == "mca train"
    assert config.flags["pipeline_model_parallel_size"].value == "4"
    assert config.world_size == 8


def test_the_console_script_without_use_mca_is_unknown(tmp_path):
    """Without USE_MCA LLaMA-Factory trains with its Hugging Face trainer, unless the job's own
    environment sets it: what the file sets is unknown, not megatron-core's defaults."""
    config = _read(lf_tree(tmp_path, "llamafactory-cli train examples/megatron/qwen3_moe_full.yaml"))
    assert isinstance(config.flags["pipeline_model_parallel_size"].value, Symbolic)
