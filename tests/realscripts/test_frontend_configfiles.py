"""Config files the trainer reads (issue 22, item 5).

Upstream constructs reproduced here:
- modelscope/ms-swift (commit 3602360a562313afbf2ef6065fdf61f271a2c5b9)
  examples/yaml/megatron/sft.sh: `NPROC_PER_NODE=4 CUDA_VISIBLE_DEVICES=0,1,2,3 megatron sft
  examples/yaml/megatron/sft.yaml`, run from the repository root, and sft.yaml: an `ENV:` block
  (PYTORCH_CUDA_ALLOC_CONF, MAX_PIXELS, ...), settings as keys, `dataset:` as a list,
  `lr: 1e-4`; read by swift/cli/main.py `parse_yaml_args` (ENV entries the environment already
  has are kept; keys become `--KEY VALUE` in the file's place);
- NVIDIA/Megatron-LM core_v0.17.0 (9539a12e1b04) examples/gpt3/gpt_config.yaml, read by
  `--yaml-cfg` (megatron/training/arguments.py:106, yaml_arguments.py:416 `load_yaml`: "argparse
  arguments will be ignored"), with `model_parallel:` and `language_model:` sections.
"""

from __future__ import annotations

from pathlib import Path

from auditor.bash.values import Symbolic
from auditor.config.derive import derive
from auditor.config.expr import UNKNOWN
from auditor.config.launch import read_launch

SFT_YAML = """ENV:
  PYTORCH_CUDA_ALLOC_CONF: 'expandable_segments:True'
  NPROC_PER_NODE: 8
  NNODES: 2

# model args
model: "Qwen/Qwen3.5-35B-A3B"
tuner_type: lora
dataset:
  - 'AI-ModelScope/alpaca-gpt4-data-zh#500'
  - 'swift/self-cognition#500'
micro_batch_size: 1
global_batch_size: 4
lr: 1e-4
expert_model_parallel_size: 4
pipeline_model_parallel_size: 4
sequence_parallel: true
"""

SFT_SH = """NPROC_PER_NODE=4 \\
CUDA_VISIBLE_DEVICES=0,1,2,3 \\
megatron sft \\
    examples/yaml/megatron/{name} {extra}
"""

SWIFT = {"ms-swift": "4.3.0", "megatron-core": "0.17.0", "mcore-bridge": "1.4.1"}


def repo(tmp_path: Path, name: str = "sft.yaml", text: str | None = SFT_YAML, extra: str = "") -> Path:
    """ms-swift's layout: the script and its YAML under examples/yaml/megatron/, run from the root."""
    here = tmp_path / "examples" / "yaml" / "megatron"
    here.mkdir(parents=True)
    if text is not None:
        (here / name).write_text(text)
    (here / "sft.sh").write_text(SFT_SH.format(name=name, extra=extra))
    return here / "sft.sh"


def test_ms_swift_yaml_gives_flags_and_environment(tmp_path):
    launch = read_launch(repo(tmp_path))
    assert launch.flags["pipeline_model_parallel_size"].value == "4"
    assert launch.flags["sequence_parallel"].value == "True"  # str(True), as ms-swift passes it
    assert launch.flags["lr"].value == "1e-4"  # YAML 1.1: a string, passed as written
    assert launch.flags["dataset"].values == ("AI-ModelScope/alpaca-gpt4-data-zh#500", "swift/self-cognition#500")
    # NPROC_PER_NODE=4 on the command line wins over the file's 8; its NNODES=2 applies.
    assert (launch.nproc_per_node, launch.nnodes) == (4, 2)
    assert launch.env["PYTORCH_CUDA_ALLOC_CONF"].value == "expandable_segments:True"
    assert not launch.positionals
    effective = derive(launch, SWIFT, torch_version="2.10.0")
    assert effective.values["pipeline_model_parallel_size"].value == 4
    assert "sft.yaml" in effective.values["pipeline_model_parallel_size"].provenance


def test_a_flag_after_the_file_wins(tmp_path):
    launch = read_launch(repo(tmp_path, extra="--pipeline_model_parallel_size 2"))
    assert launch.flags["pipeline_model_parallel_size"].value == "2"
    assert not [d for d in launch.diagnostics if d.kind == "launch.repeated-flag"]


def test_json_config(tmp_path):
    launch = read_launch(repo(tmp_path, "sft.json", '{"pipeline_model_parallel_size": 2, '
                                                   '"megatron_extra_kwargs": {"a": 1}}'))
    assert launch.flags["pipeline_model_parallel_size"].value == "2"
    assert launch.flags["megatron_extra_kwargs"].value == '{"a": 1}'


def test_an_unreadable_file_is_unknown_not_defaults(tmp_path):
    for text in (None, "ENV: [unclosed\n", "- a list\n"):
        launch = read_launch(repo(tmp_path / str(len(str(text))), text=text))
        assert isinstance(launch.flags["pipeline_model_parallel_size"].value, Symbolic)
        (unread,) = [d for d in launch.diagnostics if d.kind == "launch.config-file-unread"]
        assert unread.severity == "warning" and "sft.yaml" in unread.message
        effective = derive(launch, SWIFT, torch_version="2.10.0")
        assert effective.values["pipeline_model_parallel_size"].value is UNKNOWN
        # NNODES could come from the file's ENV: the world size is not 4 x 1.
        assert launch.world_size is None


GPT_CONFIG = """# WARNING: Yaml configs is currently an experimental feature
language_model:
  num_layers: 24
  hidden_size: 1024
  num_attention_heads: 16
model_parallel:
  tensor_model_parallel_size: 1
  context_parallel_size: 1
  pipeline_model_parallel_size: 2
  virtual_pipeline_model_parallel_size: null
  sequence_parallel: True
micro_batch_size: 2
global_batch_size: 128
distributed_backend: nccl
"""


def test_megatron_lm_yaml_cfg_replaces_the_command_line(tmp_path):
    (tmp_path / "examples" / "gpt3").mkdir(parents=True)
    (tmp_path / "examples" / "gpt3" / "gpt_config.yaml").write_text(GPT_CONFIG)
    script = tmp_path / "examples" / "gpt3" / "run.sh"
    script.write_text("torchrun --nproc_per_node 8 pretrain_gpt.py --yaml-cfg "
                      "examples/gpt3/gpt_config.yaml --pipeline-model-parallel-size 8\n")
    launch = read_launch(script)
    assert launch.flags["pipeline_model_parallel_size"].value == 2
    assert launch.flags["num_layers"].value == 24
    (ignored,) = [d for d in launch.diagnostics if d.kind == "launch.yaml-cfg"]
    assert "--pipeline-model-parallel-size" in ignored.message
