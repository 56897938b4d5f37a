"""Issue 22 items 6, 9, 11: Megatron-Bridge's run_recipe.py front end and its conversion scripts.

`uv run python -m torch.distributed.run --nproc_per_node=8 scripts/training/run_recipe.py --recipe
NAME --mode lora ... model.pipeline_model_parallel_size=$PP` is a Megatron-Bridge run on
megatron-core (rules/megatron-bridge.toml), not Megatron-LM's pretrain_*.py front end: its
settings are the recipe function's ConfigContainer (read from the checkout, never run) under the
command line's KEY=VALUE overrides, and batch_p2p_comm is megatron-core's default unless the
recipe sets comm_overlap (CommOverlapConfig.setup then writes it from PP and VPP).

The launch scripts are written after NVIDIA-NeMo/Megatron-Bridge
examples/models/gemma/gemma3_vl/peft.sh and conversion.sh (commit
067f987df03b8355b03192d88d70f1709fedf51a); the recipe files after
src/megatron/bridge/recipes/gemma3_vl/{gemma3_vl.py,h100/gemma3_vl.py} and recipes/common.py
(`cfg = _peft_common_vlm()`, `cfg.model = AutoBridge...`, `cfg.model.pipeline_model_parallel_size
= 1`, a re-export `... import gemma3_vl_4b_peft_1gpu_h100_bf16_config as gemma3_vl_4b_peft_config`).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from auditor import sources
from auditor.config.derive import derive
from auditor.config.expr import UNKNOWN
from auditor.config.launch import parse_launch

ROOT = Path(__file__).resolve().parents[2]
VERSIONS = {"megatron-bridge": "0.6.2", "megatron-core": "0.17.0"}

LOOP = """#!/usr/bin/env bash
WORKSPACE=${{WORKSPACE:-/workspace}}
MODEL_NAME=gemma3_vl_4b
PARALLELISM_CONFIGS=("2,1" "1,2")
for config in "${{PARALLELISM_CONFIGS[@]}}"; do
    IFS=',' read -r TP PP <<< "$config"
    uv run python -m torch.distributed.run --nproc_per_node=8 scripts/training/run_recipe.py \\
        --recipe ${{MODEL_NAME}}_peft_config \\
        --step_func vlm_step \\
        --mode lora \\
        checkpoint.save=${{WORKSPACE}}/results/${{MODEL_NAME}}_lora_tp${{TP}}_pp${{PP}} \\
        train.train_iters=50 {extra} \\
        model.tensor_model_parallel_size=$TP \\
        model.pipeline_model_parallel_size=$PP
done
"""

COMMON = '''
def _peft_common():
    cfg = ConfigContainer(model=GPTModelProvider(), comm_overlap={comm_overlap})
    return cfg


def _peft_common_vlm():
    cfg = _peft_common()
    cfg.train.train_iters = 300000
    return cfg
'''

RECIPE = '''
from megatron.bridge import AutoBridge
from megatron.bridge.recipes.common import _peft_common_vlm


def gemma3_vl_4b_peft_1gpu_h100_bf16_config(peft_scheme="lora"):
    cfg = _peft_common_vlm()
    if isinstance(peft_scheme, str) and peft_scheme.lower() in ["lora", "dora"]:
        cfg.peft = default_peft_config(peft_scheme)
    cfg.model = AutoBridge.from_hf_pretrained("google/gemma-3-4b-it").to_megatron_provider(load_weights=False)
    cfg.model.tensor_model_parallel_size = 1
    cfg.model.pipeline_model_parallel_size = 1
    cfg.model.virtual_pipeline_model_parallel_size = {vpp}
{body}
    return cfg
'''

EXPORTS = '''
from megatron.bridge.recipes.gemma3_vl.h100.gemma3_vl import (
    gemma3_vl_4b_peft_1gpu_h100_bf16_config as gemma3_vl_4b_peft_config,
)
'''


def _checkout(tmp_path: Path, vpp: str = "None", body: str = "", comm_overlap: str = "None") -> Path:
    """A Megatron-Bridge checkout's shape: scripts/training/run_recipe.py and src/.../recipes."""
    (tmp_path / "scripts/training").mkdir(parents=True)
    (tmp_path / "scripts/training/run_recipe.py").write_text("# the recipe runner\n", encoding="utf-8")
    recipes = tmp_path / "src/megatron/bridge/recipes"
    (recipes / "gemma3_vl/h100").mkdir(parents=True)
    (recipes / "common.py").write_text(COMMON.format(comm_overlap=comm_overlap), encoding="utf-8")
    (recipes / "gemma3_vl/gemma3_vl.py").write_text(EXPORTS, encoding="utf-8")
    (recipes / "gemma3_vl/h100/gemma3_vl.py").write_text(RECIPE.format(vpp=vpp, body=body or "    pass"),
                                                          encoding="utf-8")
    examples = tmp_path / "examples/models/gemma/gemma3_vl"
    examples.mkdir(parents=True)
    return examples


def _launch(examples: Path, extra: str = "", text: str = LOOP):
    path = examples / "peft.sh"
    path.write_text(text.format(extra=extra), encoding="utf-8")
    return parse_launch(path.read_text(encoding="utf-8"), str(path), which=1), path


def _effective(launch):
    return derive(launch, dict(VERSIONS), torch_version="2.10.0").values


def test_run_recipe_is_a_megatron_bridge_run(tmp_path):
    launch, _ = _launch(_checkout(tmp_path))
    assert launch.launcher == "python -m torch.distributed.run run_recipe.py"
    assert [f.name for f in launch.stack.chain] == ["megatron-bridge", "megatron-core"]
    values = _effective(launch)
    assert values["pipeline_model_parallel_size"].value == 2  # the loop's second command
    assert values["virtual_pipeline_model_parallel_size"].value is None  # the recipe's
    assert values["batch_p2p_comm"].value is True  # megatron-core's default: no comm_overlap
    assert values["init_device_id_given"].value is False
    assert values["distributed_backend"].value == "nccl"


def test_the_recipe_virtual_size_and_comm_overlap_turn_batching_off(tmp_path):
    launch, _ = _launch(_checkout(tmp_path, vpp="2", comm_overlap="CommOverlapConfig(tp_comm_overlap=False)"))
    values = _effective(launch)
    assert values["virtual_pipeline_model_parallel_size"].value == 2
    assert values["batch_p2p_comm"].value is False
    assert "comm_overlap.py" in values["batch_p2p_comm"].source


def test_a_command_line_override_wins_over_the_recipe(tmp_path):
    launch, _ = _launch(_checkout(tmp_path, vpp="2", comm_overlap="CommOverlapConfig(tp_comm_overlap=False)"),
                        extra="-vp 1 model.virtual_pipeline_model_parallel_size=None")
    values = _effective(launch)
    assert values["virtual_pipeline_model_parallel_size"].value is None
    assert values["batch_p2p_comm"].value is True


def test_a_field_set_under_a_condition_is_unknown(tmp_path):
    body = "    if peft_scheme == 'dora':\n        cfg.model.virtual_pipeline_model_parallel_size = 4"
    launch, _ = _launch(_checkout(tmp_path, body=body, comm_overlap="CommOverlapConfig(tp_comm_overlap=False)"))
    values = _effective(launch)
    assert values["virtual_pipeline_model_parallel_size"].value is UNKNOWN
    assert values["batch_p2p_comm"].value is UNKNOWN
    assert any(d.kind == "launch.recipe-unread" for d in launch.diagnostics)


def test_a_recipe_not_in_the_checkout_leaves_its_fields_unknown(tmp_path):
    examples = _checkout(tmp_path)
    launch, _ = _launch(examples, text=LOOP.replace("${{MODEL_NAME}}_peft_config", "no_such_recipe"))
    values = _effective(launch)
    assert values["pipeline_model_parallel_size"].value == 2  # the override still holds
    assert values["virtual_pipeline_model_parallel_size"].value is UNKNOWN


CONVERSION = """WORKSPACE=${WORKSPACE:-/workspace}
./scripts/conversion/convert.sh import --hf-model google/gemma-3-4b-it --megatron-path ${WORKSPACE}/models/g
uv run python -m torch.distributed.run --nproc_per_node=8 examples/conversion/hf_megatron_roundtrip_multi_gpu.py \\
      --hf-model-id google/gemma-3-4b-it --tp 2 --pp 2
"""


# The roundtrip script's shape (Megatron-Bridge@067f987df0 examples/conversion/
# hf_megatron_roundtrip_multi_gpu.py): it names no pipeline schedule entry. The name rule calls a
# conversion NOT A PIPELINE RUN only for a file read (config/entry_schedule.py names_no_schedule).
ROUNDTRIP = """from megatron.bridge import AutoBridge


def main(args):
    bridge = AutoBridge.from_hf_pretrained(args.hf_model_id)
    model = bridge.to_megatron_model(wrap_with_ddp=False)
    bridge.save_hf_pretrained(model, args.output_dir)
"""


def _roundtrip(root: Path) -> None:
    (root / "examples/conversion").mkdir(parents=True, exist_ok=True)
    (root / "examples/conversion/hf_megatron_roundtrip_multi_gpu.py").write_text(ROUNDTRIP, encoding="utf-8")


def _scan(path: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(path), *extra],
                          capture_output=True, text=True, cwd=path.parent, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(Path.home())})


def test_a_conversion_is_not_a_pipeline_run(tmp_path):
    path = tmp_path / "roundtrip.sh"
    path.write_text("\n".join(line for line in CONVERSION.splitlines() if "convert.sh" not in line), encoding="utf-8")
    _roundtrip(tmp_path)
    done = _scan(path)
    assert done.returncode == 0, done.stderr
    headline = next(line for line in done.stdout.splitlines() if line[:1].isupper() and ":" in line)
    assert headline.startswith("NOT A PIPELINE RUN: Megatron-Bridge checkpoint conversion"), done.stdout
    assert "hf_megatron_roundtrip_multi_gpu.py" in " ".join(done.stdout.split())


def test_a_training_command_after_a_conversion_is_the_run(tmp_path, monkeypatch):
    examples = _checkout(tmp_path)
    _roundtrip(tmp_path)
    monkeypatch.chdir(tmp_path)  # run from the checkout's root, as its README says
    text = CONVERSION.replace("{", "{{").replace("}", "}}") + LOOP.split("\n", 1)[1]
    launch, _ = _launch(examples, text=text)
    assert launch.launcher == "python -m torch.distributed.run run_recipe.py"
    assert launch.commands == 2  # the loop's two; the conversion is not counted


@pytest.mark.wheels
def test_no_model_provider_sets_the_p2p_switches():
    """The rules' premise: megatron-core's batch_p2p_comm/overlap_p2p_comm defaults hold unless the
    recipe, an override or comm_overlap sets them (rules/megatron-bridge.toml)."""
    for version in ("0.5.0", "0.6.2"):
        root = sources.resolve(f"megatron-bridge=={version}").root
        setters = [p for p in (root / "megatron/bridge/models").rglob("*.py")
                   if "batch_p2p_comm" in p.read_text(encoding="utf-8")
                   or "overlap_p2p_comm" in p.read_text(encoding="utf-8")]
        assert setters == [], f"megatron-bridge {version}: {setters}"


def test_a_recipe_layout_rebuilt_after_the_pp_override_leaves_virtual_stages_unknown(tmp_path):
    # recipe_runner.py sync_model_pipeline_layout (Megatron-Bridge@067f987df0 scripts/training/recipe_runner.py:373)
    body = "    cfg.model.num_layers_in_first_pipeline_stage = 3"
    launch, _ = _launch(_checkout(tmp_path, body=body))
    assert _effective(launch)["virtual_pipeline_model_parallel_size"].value is UNKNOWN
    launch, _ = _launch(_checkout(tmp_path / "b", body=body), extra="model.pipeline_model_parallel_layout=None")
    assert _effective(launch)["virtual_pipeline_model_parallel_size"].value is None


def test_the_conversion_wrapper_alone_is_not_a_pipeline_run(tmp_path):
    # Megatron-Bridge@067f987df0 scripts/conversion/convert.sh (`exec uv run ... setup_conversion.py "$@"`)
    path = tmp_path / "import.sh"
    path.write_text(CONVERSION.splitlines()[0] + "\n" + CONVERSION.splitlines()[1] + "\n", encoding="utf-8")
    done = _scan(path)
    assert done.returncode == 0, done.stdout + done.stderr
    headline = next(line for line in done.stdout.splitlines() if line[:1].isupper() and ":" in line)
    assert headline.startswith("NOT A PIPELINE RUN: `convert.sh import` (Megatron-Bridge) imports"), done.stdout


def bridge_checks() -> list:
    import tomllib
    data = tomllib.loads((ROOT / "rules" / "megatron-bridge.toml").read_text(encoding="utf-8"))
    return [pytest.param(e["id"], example, kind == "invalid", id=f"{e['id']}:{kind}{n}")
            for e in data.get("check", []) for kind in ("valid", "invalid")
            for n, example in enumerate(e.get(kind, []))]


@pytest.mark.parametrize("rule_id,example,fires", bridge_checks())
def test_megatron_bridge_check_examples(tmp_path, rule_id, example, fires):
    """Each check's `valid` example leaves it quiet and its `invalid` one fires it, as a trailing
    override of a run_recipe.py command."""
    launch, _ = _launch(_checkout(tmp_path), extra=example)
    config = derive(launch, dict(VERSIONS), torch_version="2.10.0")
    fired = [f for f in config.findings if f.detail.get("rule") == rule_id]
    assert bool(fired) is fires, [f.message for f in config.findings]


def test_a_recipe_layout_of_none_is_no_layout(tmp_path):
    """`cfg.model.pipeline_model_parallel_layout = None`, as Megatron-Bridge's recipes write it
    (src/megatron/bridge/recipes/llama/h100/llama3.py:67 @ 067f987df0): the field is
    `Optional[str]`, so None is no layout, not the string "None" (which megatron-core's layout
    parser rejects: a false "does not start")."""
    body = "    cfg.model.pipeline_model_parallel_layout = None"
    launch, _ = _launch(_checkout(tmp_path, body=body))
    values = _effective(launch)
    assert values["pipeline_model_parallel_layout"].value is None
    assert values["batch_p2p_comm"].value is True
