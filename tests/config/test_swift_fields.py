"""ms-swift's `megatron sft` flags judged against the fields of its arguments dataclass, read from
the release (config/frontends/swift_fields.py): a flag no field defines stops every rank
(swift/pipelines/base.py:35-40 raises on HfArgumentParser's remaining strings), unless
`--ignore_args_error true`, or a word not known statically may say so.

The mini release reproduces ms-swift 4.6.0 (and modelscope/ms-swift@3602360a56):
swift/megatron/arguments/sft_args.py `@dataclass class MegatronSftArguments(MegatronBaseArguments)`,
megatron_base_args.py `class MegatronBaseArguments(MegatronArguments, BaseArguments)`,
megatron_args.py `pipeline_model_parallel_size: int = 1`, base_args.py `ignore_args_error: bool =
False`; the launch is examples/megatron/sft.sh's `NPROC_PER_NODE=2 megatron sft --model ...` with
`--pipeline_model_parallel_size` misspelt (`--pipline_model_parallel_size`): before, read as
written, PP 1, CLEAN.
"""

from __future__ import annotations

from pathlib import Path

from auditor.bash.values import Symbolic
from auditor.config.frontends.swift_fields import check_swift_flags, dataclass_front_end
from auditor.config.launch import parse_launch
from auditor.config.model import LaunchConfig
from auditor.sources import SourceSet
from tests.launches import SWIFT_SFT

FILES = {
    "swift/megatron/arguments/sft_args.py": '''
from dataclasses import dataclass
from .megatron_base_args import MegatronBaseArguments

@dataclass
class MegatronSftArguments(MegatronBaseArguments):
    add_version: bool = True
''',
    "swift/megatron/arguments/megatron_base_args.py": '''
from dataclasses import dataclass
from swift.arguments import BaseArguments
from .megatron_args import MegatronArguments

@dataclass
class MegatronBaseArguments(MegatronArguments, BaseArguments):
    pass
''',
    "swift/megatron/arguments/megatron_args.py": '''
from dataclasses import dataclass, field
from typing import Optional

@dataclass
class MegatronArguments:
    pipeline_model_parallel_size: int = 1
    virtual_pipeline_model_parallel_size: Optional[int] = None
    tensor_model_parallel_size: int = 1
    train_iters: Optional[int] = None
    mtp_num_layers: Optional[int] = None
    padding_free: bool = field(default=True, metadata={'help': 'x'})
''',
    # ms-swift 4.6.0 swift/megatron/arguments/rlhf_args.py and swift/cli/_megatron/rlhf.py:6-20:
    # `--use_ray [true|false]` is stripped and swift.ray.megatron.pipeline.main reads the rest
    "swift/megatron/arguments/rlhf_args.py": '''
from dataclasses import dataclass
from .megatron_base_args import MegatronBaseArguments

@dataclass
class MegatronRLHFArguments(MegatronBaseArguments):
    rlhf_type: str = 'dpo'
''',
    "swift/cli/_megatron/rlhf.py": '''
import sys

def _use_ray() -> bool:
    if '--use_ray' not in sys.argv:
        return False
    idx = sys.argv.index('--use_ray')
    sys.argv.pop(idx)
    return True
''',
    "swift/arguments/base_args/base_args.py": '''
from dataclasses import dataclass, field

@dataclass
class BaseArguments(BASES):
    model: str = None
    dataset: list = field(default_factory=list)
    ignore_args_error: bool = False
''',
}


def release(tmp_path: Path, bases: str = "", kind: str = "dir", files: dict[str, str] = FILES) -> SourceSet:
    root = tmp_path / "release"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text.replace("BASES", bases))
    return SourceSet("ms-swift", "4.6.0", kind, root, "ms-swift==4.6.0")


def judged(tmp_path: Path, flag: str, more: str = "", bases: str = "", planned: bool = False,
           launch: str = SWIFT_SFT, files: dict[str, str] = FILES) -> LaunchConfig:
    script = tmp_path / "sft.sh"
    script.write_text(launch.replace("FLAG", flag).replace("MORE", more))
    config = parse_launch(script.read_text(), str(script))
    check_swift_flags(config, [release(tmp_path, bases, "wheel" if planned else "dir", files)], planned)
    return config


def said(config: LaunchConfig) -> list[tuple[str, str]]:
    return [(d.severity, d.message) for d in config.diagnostics if d.kind == "launch.megatron-spelling"]


def test_a_flag_no_field_defines_does_not_start(tmp_path):
    config = judged(tmp_path, "--pipline_model_parallel_size")
    [error] = [d for d in config.diagnostics if d.kind == "launch.megatron-spelling"]
    assert error.severity == "error" and error.detail["category"] == "config"
    assert error.where == f"{tmp_path / 'sft.sh'}:6"
    assert error.detail["closest"] == "--pipeline_model_parallel_size"
    assert "ms-swift raises" in error.message and "MegatronSftArguments" in error.message


def test_a_flag_of_another_release_is_dropped_not_respelt(tmp_path):
    """ms-swift 3.x's `--num_layers` (v3.12.6 swift/megatron/argument/megatron_args.py:495) in a
    4.x run: ms-swift 4.3.0 reads the layer count from config.json and raises on the flag
    (`remaining_argv`); its closest flag, `--mtp_num_layers` (megatron_args.py:603), is another
    setting, so the fix drops it rather than respelling it (before: "write `--mtp_num_layers`")."""
    [error] = [d for d in judged(tmp_path, "--num_layers").diagnostics if d.kind == "launch.megatron-spelling"]
    assert error.severity == "error" and error.detail["closest"] == "--mtp_num_layers"
    assert error.fix == "drop `--num_layers`"


def test_the_fields_spellings_are_accepted(tmp_path):
    for flag in ("--pipeline_model_parallel_size", "--pipeline-model-parallel-size"):
        assert said(judged(tmp_path, flag)) == []
    front = dataclass_front_end(release(tmp_path).root, "MegatronSftArguments", "ms-swift 4.6.0")
    assert front is not None and front.complete
    assert {"--no_padding_free", "--no-padding-free", "--ignore_args_error"} <= set(front.flags)
    assert "--no_train_iters" not in front.flags


def test_a_unique_prefix_is_its_field(tmp_path):
    """HfArgumentParser keeps argparse's allow_abbrev=True: `--pipeline_model_parallel` is
    `--pipeline_model_parallel_size`, read as PP 2, not an unknown flag and PP 1."""
    config = judged(tmp_path, "--pipeline_model_parallel")
    assert said(config) == []
    assert config.flags["pipeline_model_parallel_size"].value == "2"


def test_ignore_args_error_only_warns(tmp_path):
    config = judged(tmp_path, "--pipline_model_parallel_size", more="--ignore_args_error true")
    assert [s for s, _ in said(config)] == ["warning"]
    config = judged(tmp_path, "--pipline_model_parallel_size", more="--ignore_args_error false")
    assert [s for s, _ in said(config)] == ["error"]


def test_an_unknown_word_leaves_the_setting_unknown(tmp_path):
    """`${EXTRA_ARGS}` may give --ignore_args_error true: no DOES NOT START, and the pipeline size
    the misspelt flag meant is unknown, never the default 1."""
    config = judged(tmp_path, "--pipline_model_parallel_size", more="${EXTRA_ARGS}")
    [(severity, message)] = said(config)
    assert severity == "warning" and "${EXTRA_ARGS} (line 7) may give --ignore_args_error" in message
    assert isinstance(config.flags["pipeline_model_parallel_size"].value, Symbolic)


def test_a_base_outside_the_release_leaves_it_incomplete(tmp_path):
    """A base class not in the release (transformers' Seq2SeqTrainingArguments) may define the
    flag: a warning, the near-missed setting unknown."""
    config = judged(tmp_path, "--pipline_model_parallel_size", bases="Seq2SeqTrainingArguments")
    [(severity, message)] = said(config)
    assert severity == "warning" and "Seq2SeqTrainingArguments" in message
    assert isinstance(config.flags["pipeline_model_parallel_size"].value, Symbolic)


def test_a_base_imported_from_another_distribution_is_not_read(tmp_path):
    """A base class the module imports from another distribution is that package's class, even
    where the release has a class of the same name. mcore-bridge 1.4.1 mcore_bridge/config/
    model_config.py:116 `class ModelConfig(TransformerConfig)` defines `num_layers` (:125); ms-swift
    4.3.0 forwards it only through `--megatron_extra_kwargs` (swift/megatron/model/utils.py:73),
    but an arguments class written `class MegatronArguments(ModelConfig)` over `from
    mcore_bridge.config import ModelConfig` would take `--num_layers`: mcore-bridge is not read
    here, so the flag is undecided (a warning), never DOES NOT START, though ms-swift 4.0.0 has a
    ModelConfig of its own without it (swift/megatron/model/model_config.py:93). Before, the
    base was looked up by name in the release: complete, an error."""
    files = dict(FILES)
    files["swift/megatron/arguments/megatron_args.py"] = files["swift/megatron/arguments/megatron_args.py"] \
        .replace("from typing import Optional", "from typing import Optional\nfrom mcore_bridge.config import ModelConfig") \
        .replace("class MegatronArguments:", "class MegatronArguments(ModelConfig):")
    files["swift/megatron/model/model_config.py"] = "from dataclasses import dataclass\n\n" \
        "@dataclass\nclass ModelConfig:\n    hidden_size: int = None\n"
    config = judged(tmp_path, "--num_layers", files=files)
    [(severity, message)] = said(config)
    assert severity == "warning" and "ModelConfig (mcore_bridge.config)" in message, message
    front = dataclass_front_end(release(tmp_path, files=files).root, "MegatronSftArguments", "ms-swift")
    assert front is not None and not front.complete and "--pipeline_model_parallel_size" in front.flags


def test_a_flag_a_base_class_defines_is_accepted(tmp_path):
    """The valid side: a field of a base class in another module of the release is a flag of
    the class the subcommand parses (ms-swift v3.12.6 swift/megatron/argument/megatron_args.py:495
    `num_layers: Optional[int] = None` in a base of MegatronArguments), spelt either way."""
    files = dict(FILES)
    files["swift/megatron/arguments/model_args.py"] = "from dataclasses import dataclass\n" \
        "from typing import Optional\n\n@dataclass\nclass ExtraMegatronArguments:\n" \
        "    num_layers: Optional[int] = None\n"
    files["swift/megatron/arguments/megatron_args.py"] = files["swift/megatron/arguments/megatron_args.py"] \
        .replace("from typing import Optional", "from typing import Optional\nfrom .model_args import ExtraMegatronArguments") \
        .replace("class MegatronArguments:", "class MegatronArguments(ExtraMegatronArguments):")
    for flag in ("--num_layers", "--num-layers"):
        config = judged(tmp_path, flag, files=files)
        assert said(config) == [] and config.flags["num_layers"].value == "2"


def test_use_ray_hands_the_command_line_to_another_reader(tmp_path):
    """modelscope/ms-swift@3602360a56 examples/ray/grpo/multi_turn/frozen_lake_colocate.sh:
    `megatron rlhf --use_ray --config X.yaml`: the release's rlhf.py strips `--use_ray` and runs
    the ray pipeline, which reads `--config` itself; MegatronRLHFArguments never parses it."""
    ray = "megatron rlhf --use_ray FLAG --config frozen_lake_colocate.yaml\n"
    assert said(judged(tmp_path, "", launch=ray)) == []
    assert said(judged(tmp_path, "true", launch=ray)) == []
    errors = said(judged(tmp_path, "false", launch=ray))
    assert any(s == "error" and "`--config`" in m for s, m in errors)


def test_an_unstated_release_may_be_older_than_the_rules_cover(tmp_path):
    """No release stated (`# ms-swift==`, a pin, --target): ms-swift 3.x (v3.12.6
    examples/megatron/lora/dense.sh `--load_safetensors true`) defines flags 4.x lacks, so a flag
    the covered releases lack is undecided, naming the --target that decides it; one spelt like
    a field leaves that field's setting unknown."""
    config = judged(tmp_path, "--pipline_model_parallel_size", planned=True)
    [finding] = [d for d in config.diagnostics if d.kind == "launch.megatron-spelling"]
    assert finding.severity != "error"
    assert "--pipline_model_parallel_size" in finding.detail["undecided"]
    assert finding.detail["decide"].startswith("--target ms-swift==VERSION")
    assert isinstance(config.flags["pipeline_model_parallel_size"].value, Symbolic)
    config = judged(tmp_path, "--load_safetensors", planned=True)
    [finding] = [d for d in config.diagnostics if d.kind == "launch.megatron-spelling"]
    assert finding.severity == "warning" and "--target ms-swift==VERSION" in str(finding.fix)
    assert "undecided" not in (finding.detail or {})
