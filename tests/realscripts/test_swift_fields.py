"""ms-swift's flags are its release's dataclass fields (rules/ms-swift.toml `args_classes`,
[unknown_flags]; config/frontends/swift_fields.py), checked on the releases themselves, and a
flag no field defines is a run that does not start.

The launch reproduces modelscope/ms-swift@3602360a56 examples/megatron/sft.sh (`NPROC_PER_NODE=2
megatron sft --model ... --dataset ...`) with `--pipeline_model_parallel_size 2` misspelt
`--pipline_model_parallel_size 2` and TORCH_DISTRIBUTED_DEBUG=DETAIL exported: ms-swift raises
on the remaining argv (swift/pipelines/base.py:35-40) on every rank before training; before, it
was read as PP 1 and CLEAN, 0 sites, on torch 2.10.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.config.frontends.swift_fields import dataclass_front_end
from auditor.rulebook import files
from tests.launches import SWIFT_SFT

ROOT = Path(__file__).resolve().parents[2]
RULES = files.load("ms-swift").data


@pytest.mark.parametrize("version", RULES["unknown_flags"]["checked"])
def test_each_args_class_is_read_whole_and_the_pipeline_raises(version, release):
    root = release(f"ms-swift=={version}").root
    source, _, line = RULES["unknown_flags"]["source"].partition(":")
    text = (root / source).read_text().splitlines()
    assert RULES["unknown_flags"]["code"] in text[int(line) - 1]
    assert "return_remaining_strings=True" in (root / "swift/utils/utils.py").read_text()
    pipelines = "\n".join(p.read_text() for p in (root / "swift/megatron/pipelines/train").glob("*.py"))
    megatron = next(e for e in RULES["launcher"] if e.get("program") == "megatron")
    for name in megatron["args_classes"].values():
        assert f"args_class = {name}" in pipelines
        front = dataclass_front_end(root, name, f"ms-swift {version}")
        assert front is not None and front.complete, front and front.why_incomplete
        assert {"--pipeline_model_parallel_size", "--ignore_args_error"} <= set(front.flags)
    diverts, _, at = RULES["unknown_flags"]["diverts_source"].partition(":")
    if version != "4.1.0":  # no ray pipeline before 4.3.0
        assert RULES["unknown_flags"]["diverts_code"] in (root / diverts).read_text().splitlines()[int(at) - 1]
        assert f"{megatron['routes']['rlhf'].replace('.', '/')}.py" == diverts


# What HfArgumentParser builds over MegatronSftArguments, counted by running it: ms-swift 4.3.0
# and 4.6.0 from PyPI with transformers 5.9.0, `HfArgumentParser([MegatronSftArguments])
# ._option_string_actions` less -h/--help (the same number for MegatronPretrainArguments and
# MegatronRLHFArguments). The static reading must give exactly as many spellings: a field
# declared again in a subclass is that declaration (4.3.0 swift/megatron/arguments/sft_args.py:16
# `load_args: bool = False` over base_args.py:97's True: no `--no_load_args`), along the MRO
# (MegatronArguments' `padding_free = True` over BaseArguments': `--no_padding_free`).
OPTIONS = {"4.3.0": 811, "4.6.0": 869}


@pytest.mark.parametrize("version", sorted(OPTIONS))
def test_a_base_class_field_is_a_flag_and_num_layers_is_not(version, release):
    """The valid side: a field of a base class is a flag of the class parsed (`--mtp_num_layers`,
    `--recompute_num_layers` of MegatronArguments; `--model` of swift.arguments' ModelArguments, a
    base of BaseArguments); every base of the three classes is in the release (none is imported
    from mcore_bridge or megatron). `--num_layers` is ms-swift 3.x's (v3.12.6 megatron_args.py:495):
    in 4.x a megatron-core TransformerConfig field goes through `--megatron_extra_kwargs` (4.3.0
    swift/megatron/model/utils.py:73, into mcore-bridge's ModelConfig), and the parser leaves
    `--num_layers 28` over, which the pipeline raises on (checked by running the parser)."""
    root = release(f"ms-swift=={version}").root
    megatron = next(e for e in RULES["launcher"] if e.get("program") == "megatron")
    for name in megatron["args_classes"].values():
        front = dataclass_front_end(root, name, f"ms-swift {version}")
        assert front is not None and front.complete, front and front.why_incomplete
        assert len(front.flags) == OPTIONS[version]
        assert {"--mtp_num_layers", "--recompute_num_layers", "--model", "--megatron_extra_kwargs",
                "--no_padding_free"} <= set(front.flags)
        assert not {"--num_layers", "--num-layers", "--no_load_args"} & set(front.flags)


def scan(tmp_path: Path, flag: str, *target: str) -> dict:
    script = tmp_path / "sft.sh"
    script.write_text(SWIFT_SFT.replace("FLAG", flag).replace(" MORE", ""))
    proc = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script), "--torch",
                           "2.10.0", "--format", "json", *target], check=False, capture_output=True, text=True,
                          cwd=ROOT, timeout=600)
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.heavy
@pytest.mark.usefixtures("release")
def test_a_misspelt_pipeline_size_does_not_start(tmp_path):
    doc = scan(tmp_path, "--pipline_model_parallel_size", "--target", "ms-swift==4.6.0")
    assert doc["verdict"]["headline"].startswith("DOES NOT START: `--pipline_model_parallel_size` does not exist")
    [error] = [f for f in doc["findings"] if f["kind"] == "launch.megatron-spelling"]
    assert error["severity"] == "error" and error["where"].endswith("sft.sh:6")
    assert error["detail"]["closest"] == "--pipeline_model_parallel_size"
    # no release stated: ms-swift 3.x (older than the rules cover) may define it
    unstated = scan(tmp_path, "--pipline_model_parallel_size")
    head = unstated["verdict"]["headline"]
    assert head.startswith("INCONCLUSIVE") and "--pipline_model_parallel_size" in head, head
    assert "--target ms-swift==VERSION" in head
    right = scan(tmp_path, "--pipeline_model_parallel_size")
    assert not [f for f in right["findings"] if f["kind"] == "launch.megatron-spelling"]
    assert right["verdict"]["headline"].startswith("FINDINGS")


@pytest.mark.heavy
@pytest.mark.usefixtures("release")
def test_an_abbreviated_ignore_args_error_is_that_field(tmp_path):
    """HfArgumentParser is argparse with allow_abbrev left True (transformers hf_argparser.py):
    `--ignore_args true` is the unique prefix of `--ignore_args_error` (4.6.0 swift/arguments/
    base_args.py), so ms-swift only warns on the left-over `--num_layers 2` (swift/pipelines/
    base.py `_parse_args`). Before, the field was looked up as written and the run read as one
    that does not start."""
    doc = scan(tmp_path, "--ignore_args true --num_layers", "--target", "ms-swift==4.6.0")
    [said] = [f for f in doc["findings"] if f["kind"] == "launch.megatron-spelling"]
    assert said["severity"] == "warning" and "--ignore_args_error true" in said["message"], said
    assert not doc["verdict"]["headline"].startswith("DOES NOT START"), doc["verdict"]["headline"]


@pytest.mark.parametrize("version", sorted(OPTIONS))
def test_the_fields_read_are_what_hfargumentparser_accepts(version, release):
    """The static reading against the release's own parser, where the release imports (it needs
    transformers, torch and megatron-core: skipped where they are not installed, as in CI)."""
    pytest.importorskip("transformers")
    root = release(f"ms-swift=={version}").root
    sys.path.insert(0, str(root))
    try:
        from transformers import HfArgumentParser
        arguments = pytest.importorskip("swift.megatron.arguments")
    finally:
        sys.path.remove(str(root))
    megatron = next(e for e in RULES["launcher"] if e.get("program") == "megatron")
    for name in megatron["args_classes"].values():
        accepted = set(HfArgumentParser([getattr(arguments, name)])._option_string_actions) - {"-h", "--help"}
        front = dataclass_front_end(root, name, f"ms-swift {version}")
        assert front is not None and set(front.flags) == accepted
