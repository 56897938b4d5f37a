"""ChatLearn (alibaba/ChatLearn) as a stack (issue 22 items 5, 9, 11): `python chatlearn/entrypoint.py
grpo --config-file template/grpo_megatron.yaml a.b.c=value ...` loads the YAML from the launch
directory, applies the words with OmegaConf.update and resolves `${...}`; the train backend decides:
fsdp trains no pipeline (NOT A PIPELINE RUN), megatron runs policy_trainer and ref_policy, each
judged as its own configuration on Megatron-LM's front end (rules/chatlearn.toml).
The scripts and YAML reproduce alibaba/ChatLearn at commit b7af31a972eb6c420ef0b5c04ea920820d68f784:
scripts/mcore_vllm/train_mcore_vllm_qwen3_8b_grpo_partial_rollout.sh (`export CHATLEARN=$(pwd)`,
`source scripts/base_env.sh`, the python line with `models.policy_trainer.*` overrides, `2>&1 | tee
${log_file} ; exit ${PIPESTATUS[0]}`), scripts/fsdp_vllm/train_fsdp_vllm_qwen3_8b_grpo.sh, and the
parts of template/grpo_megatron.yaml and template/grpo_fsdp.yaml that decide (ref_policy's sizes
interpolate policy_trainer's, grpo_megatron.yaml:96-97).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from auditor.bash.values import Symbolic
from auditor.config.frontends import for_style
from auditor.config.frontends.chatlearn import DotlistConfigReader
from auditor.config.flags import open_settings
from auditor.config.launch import parse_launch

ROOT = Path(__file__).resolve().parents[2]
RULES = tomllib.loads((ROOT / "rules" / "chatlearn.toml").read_text())

BASE_ENV = """#!/bin/bash
ray stop
export CUDA_DEVICE_MAX_CONNECTIONS=1
[ -z "$WORLD_SIZE" ] && export WORLD_SIZE=1
[ -z "$GPUS_PER_NODE" ] && export GPUS_PER_NODE=${KUBERNETES_CONTAINER_RESOURCE_GPU:-$(python -c "import torch; print(torch.cuda.device_count())")}
if [ -z "$CHATLEARN" ]; then
  echo "please set CHATLEARN path"
  exit 1
fi
export num_device=$(($WORLD_SIZE * $GPUS_PER_NODE))
"""

RUN = """#!/bin/bash
set -x
{pre}
export CHATLEARN=$(pwd)
export PYTHONPATH=${{CHATLEARN}}:${{PYTHONPATH}}
source scripts/base_env.sh
exp_name="test_qwen3_8b"
python chatlearn/entrypoint.py grpo --config-file template/{config}.yaml \\
        runtime_args.exp_name=${{exp_name}} \\
        runtime_args.output_dir=${{CHATLEARN}}/output/${{exp_name}} \\
        models.policy_trainer.num_gpu=${{num_device}} \\
        {overrides} \\
        models.policy.tensor_model_parallel_size=1 \\
        2>&1 | tee log_${{exp_name}}.log ; exit ${{PIPESTATUS[0]}}
"""

MEGATRON = """runtime_args:
  train_backend: megatron
  rollout_backend: vllm
  output_dir: your_output_dir
  data_checkpoint_path: ${runtime_args.output_dir}/data_checkpoint_path/
models:
  policy_trainer:
    num_gpu: 1
    tensor_model_parallel_size: 1
    pipeline_model_parallel_size: 1
    virtual_pipeline_model_parallel_size: null
    sequence_parallel: True
    optimizer:
      lr: 2e-6
  ref_policy:
    tensor_model_parallel_size: ${models.policy_trainer.tensor_model_parallel_size}
    pipeline_model_parallel_size: ${models.policy_trainer.pipeline_model_parallel_size}
    num_gpu: ${models.policy_trainer.num_gpu}
  policy:
    tensor_model_parallel_size: 2
"""

FSDP = """runtime_args:
  train_backend: fsdp
  rollout_backend: vllm
models:
  policy_trainer:
    num_gpu: 1
    ulysses_sequence_parallel_size: 1
  policy:
    tensor_model_parallel_size: 1
"""


# chatlearn/configs/megatron_config.py's dataclass fields, as the checkout has them (:225, :231, :271-287)
MEGATRON_CONFIG = """from dataclasses import dataclass, field
from typing import Optional

@dataclass
class MegatronModelArchitectureConfig:
    overlap_p2p_comm: bool = field(
        default={overlap}, metadata={{"help": "overlap"}}
    )
    deallocate_pipeline_outputs: bool = field(default=False)

@dataclass
class MegatronConfig:
    tensor_model_parallel_size: int = field(default=1)
    pipeline_model_parallel_size: int = field(default=1)
    virtual_pipeline_model_parallel_size: Optional[int] = field(default=None)
"""


def chatlearn_tree(root: Path, config: str = "grpo_megatron", overrides: str = "runtime_args.num_episode=50",
                   pre: str = "", overlap: str | None = "True") -> Path:
    """A ChatLearn checkout's shape: the run script under scripts/, base_env.sh, the templates."""
    (root / "scripts" / "mcore_vllm").mkdir(parents=True)
    (root / "scripts" / "base_env.sh").write_text(BASE_ENV)
    (root / "template").mkdir()
    (root / "template" / "grpo_megatron.yaml").write_text(MEGATRON)
    (root / "template" / "grpo_fsdp.yaml").write_text(FSDP)
    (root / "chatlearn").mkdir()
    (root / "chatlearn" / "entrypoint.py").write_text("import hydra\n")
    if overlap is not None:
        (root / "chatlearn" / "configs").mkdir()
        (root / "chatlearn" / "configs" / "megatron_config.py").write_text(MEGATRON_CONFIG.format(overlap=overlap))
    script = root / "scripts" / "mcore_vllm" / "run.sh"
    script.write_text(RUN.format(config=config, overrides=overrides, pre=pre))
    return script


def _read(script: Path, which: int = 0):
    return parse_launch(script.read_text(), str(script), which=which)


def test_the_fsdp_backend_trains_no_pipeline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = chatlearn_tree(tmp_path, "grpo_fsdp")
    monkeypatch.chdir(tmp_path)  # run from the checkout's root, as ChatLearn's README does
    config = _read(script)
    assert config.launcher == "python entrypoint.py" and isinstance(for_style(config.style), DotlistConfigReader)
    said = [d.message for d in config.diagnostics if d.kind == "launch.not-pipeline"]
    assert said and "FSDP" in said[0] and "train_backend=fsdp" in said[0]


def test_an_override_picks_the_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = chatlearn_tree(tmp_path, "grpo_megatron", "runtime_args.train_backend=fsdp")
    monkeypatch.chdir(tmp_path)
    assert any(d.kind == "launch.not-pipeline" for d in _read(script).diagnostics)


def test_each_megatron_role_is_a_configuration_with_interpolations_resolved(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = chatlearn_tree(tmp_path, overrides="models.policy_trainer.pipeline_model_parallel_size=4 \\\n"
                                                "        models.policy_trainer.tensor_model_parallel_size=2")
    monkeypatch.chdir(tmp_path)
    trainer, ref = _read(script, 0), _read(script, 1)
    assert (trainer.commands, trainer.case_name, ref.case_name) == (2, "policy_trainer", "ref_policy")
    assert ref.flags["pipeline_model_parallel_size"].value == "4"  # ${models.policy_trainer.pipeline...}
    assert ref.flags["tensor_model_parallel_size"].value == "2"
    assert trainer.flags["lr"].value == "2e-6"  # a nested config's field, set by its own name
    assert trainer.flags["overlap_p2p_comm"].value == "true"  # ChatLearn's default, not in the YAML
    assert not any(d.kind == "launch.not-pipeline" for d in trainer.diagnostics)


@pytest.mark.parametrize("overlap,expected", [("True", "true"), ("False", "false"), (None, None)])
def test_chatlearns_defaults_are_read_from_the_runs_checkout(
        overlap: str | None, expected: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checkout the rules quote defaults overlap_p2p_comm to True, pai-chatlearn 1.2.0 to
    False: the run's own tree decides; without it the default is unknown."""
    script = chatlearn_tree(tmp_path, overlap=overlap)
    monkeypatch.chdir(tmp_path)
    value = _read(script).flags["overlap_p2p_comm"].value
    assert value == expected if expected is not None else isinstance(value, Symbolic)


def test_a_backend_not_known_statically_is_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = chatlearn_tree(tmp_path, overrides="runtime_args.train_backend=${BACKEND}")
    monkeypatch.chdir(tmp_path)
    config = _read(script)
    assert not any(d.kind == "launch.not-pipeline" for d in config.diagnostics)
    assert isinstance(config.flags["pipeline_model_parallel_size"].value, Symbolic)
    assert any(d.kind == "launch.config-file-unread" for d in config.diagnostics)


@pytest.mark.parametrize("template", ["grpo_fsdp", "grpo_megatron"])
@pytest.mark.parametrize("words", ["${EXTRA_ARGS}", "${KEY}=fsdp"])
def test_a_word_not_statically_an_override_is_an_unknown_word(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, template: str, words: str) -> None:
    """The one rule of config.flags.open_settings: the word may set the backend (so fsdp is not
    NOT A PIPELINE RUN) and the settings the verdict rests on; the Megatron reading holds."""
    script = chatlearn_tree(tmp_path, template, f"runtime_args.num_episode=50 {words}")
    monkeypatch.chdir(tmp_path)
    config = _read(script)
    assert not any(d.kind == "launch.not-pipeline" for d in config.diagnostics)
    assert [w.text for w in config.unknown_words] == [words]
    if template == "grpo_megatron":
        assert config.flags["pipeline_model_parallel_size"].value == "1"  # the file's, as written
        assert {"pipeline_model_parallel_size", "batch_p2p_comm"} <= set(open_settings(config))
    else:
        assert isinstance(config.flags["pipeline_model_parallel_size"].value, Symbolic)  # backend unknown


@pytest.mark.parametrize("template", ["grpo_fsdp", "grpo_megatron"])
def test_the_scripts_own_arguments_add_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               template: str) -> None:
    """`bash train.sh` as written, with no arguments: `"$@"` adds nothing."""
    script = chatlearn_tree(tmp_path, template, 'runtime_args.num_episode=50 "$@"')
    monkeypatch.chdir(tmp_path)
    config = _read(script)
    assert not config.unknown_words and "launch.script-arguments" in {d.kind for d in config.diagnostics}
    assert any(d.kind == "launch.not-pipeline" for d in config.diagnostics) == (template == "grpo_fsdp")


def test_the_config_file_is_opened_from_the_launch_directory(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """From another directory python finds no template/grpo_fsdp.yaml: unknown, not fsdp."""
    script = chatlearn_tree(tmp_path / "checkout", "grpo_fsdp")
    monkeypatch.chdir(tmp_path)
    config = _read(script)
    assert not any(d.kind == "launch.not-pipeline" for d in config.diagnostics)
    assert any(d.kind == "launch.config-file-unread" for d in config.diagnostics)


def _scan(script: Path, *extra: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "auditor", "scan", "--config", str(script), "--format", "json", *extra],
        capture_output=True, text=True, cwd=script.parents[2], timeout=300, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    return json.loads(proc.stdout)


def test_the_fsdp_scan_says_not_a_pipeline_run(tmp_path: Path) -> None:
    doc = _scan(chatlearn_tree(tmp_path, "grpo_fsdp"))
    assert doc["verdict"]["exit_code"] == 0 and "not a pipeline" in doc["verdict"]["headline"].lower()


@pytest.mark.wheels
def test_megatron_at_pp1_is_clean_and_at_pp2_batches_by_megatron_lm(tmp_path: Path) -> None:
    """PP=1 on both roles: no pipeline P2P. PP=2 without VPP: Megatron-LM's validate_args turns
    ChatLearn's overlap_p2p_comm=True off, so the P2P is batched and DETAIL on torch 2.10 un-batches it."""
    one = _scan(chatlearn_tree(tmp_path / "a", overrides="models.policy_trainer.pipeline_model_parallel_size=1"),
                "--target", "megatron-core==0.17.0")
    assert one["verdict"]["status"] == "clean", one["verdict"]["headline"]
    two = chatlearn_tree(tmp_path / "b", overrides="models.policy_trainer.pipeline_model_parallel_size=2",
                         pre="export TORCH_DISTRIBUTED_DEBUG=DETAIL")
    assert _scan(two, "--target", "megatron-core==0.17.0", "--torch", "2.10.0")["verdict"]["status"] == "findings"


# --- the rules against the ChatLearn code they quote --------------------------------------------

CHECKOUT = Path(os.environ.get("P2PAUDIT_CHATLEARN_CHECKOUT",
                               "/work/upstream/real_scripts/alibaba+ChatLearn@b7af31a972"))
QUOTED = [RULES["launcher"][0], RULES["dotlist_config"], *RULES["role_default"], RULES["model_config"],
          *RULES["model_setting"]]


def _defaults(module: Path) -> dict[str, object]:
    """Every dataclass field's `field(default=...)` of the module, by field name."""
    out: dict[str, object] = {}
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.AnnAssign) and isinstance(node.value, ast.Call) and isinstance(node.target, ast.Name):
            given = [k.value for k in node.value.keywords if k.arg == "default"]
            if given and isinstance(given[0], ast.Constant):
                out[node.target.id] = given[0].value
    return out


def _agree(tree: Path, exact_lines: bool) -> dict[str, object]:
    """`exact_lines` off (the PyPI release): the same code at other lines; a `[[model_setting]]`
    for one architecture may be absent (the reader confirms each in the run's checkout)."""
    for e in (QUOTED if exact_lines else [e for e in QUOTED if "architecture" not in e]):
        path, line = e["source"].split()[1].rsplit(":", 1)
        lines = (tree / path).read_text().splitlines()
        if exact_lines:
            assert e["code"].strip() in lines[int(line) - 1], (e["source"], lines[int(line) - 1])
        else:
            assert any(e["code"].strip() in text for text in lines), e["source"]
    defaults = _defaults(tree / "chatlearn/configs/megatron_config.py")
    assert {e["key"] for e in RULES["role_default"]} <= set(defaults)
    return defaults


@pytest.mark.skipif(not (CHECKOUT / "chatlearn/entrypoint.py").is_file(),
                    reason="the ChatLearn checkout (benchmarks/real_scripts/fetch.py) is not here")
def test_the_rules_quote_the_chatlearn_checkout() -> None:
    """Every `code` is at the line its `source` names; each default is the dataclass field's."""
    defaults = _agree(CHECKOUT, exact_lines=True)
    assert all(str(defaults[e["key"]]).lower() == e["value"].lower() for e in RULES["role_default"])
    assert "1.2.0" in (CHECKOUT / "chatlearn/utils/version.py").read_text()


def test_the_rules_hold_on_the_pypi_release(release) -> None:
    """pai-chatlearn 1.2.0 on PyPI: the same code at other lines, but overlap_p2p_comm defaults to
    False there (True in the checkout): why the reader takes the defaults from the run's tree."""
    defaults = _agree(Path(release("pai-chatlearn==1.2.0").root), exact_lines=False)
    assert defaults["overlap_p2p_comm"] is False and defaults["pipeline_model_parallel_size"] == 1
    assert "update_qwen3_next_cfg" not in (Path(release("pai-chatlearn==1.2.0").root)
                                           / "chatlearn/utils/megatron_utils.py").read_text()
