"""A run_recipe.py recipe name that no Megatron-Bridge code defines (config/frontends/
bridge_recipe_names.py): the run does not start.

The launch line is written after NVIDIA-NeMo/Megatron-Bridge @ 067f987df03b8355b03192d88d70f1709fedf51a
examples/models/stepfun/step37/slurm_pretrain.sh:136-140 (`run_recipe.py --recipe
step37_flickr8k_sft_smoke_config ... model.pipeline_model_parallel_size=4`), a name that
scripts/training/recipe_runner.py load_recipe (:229-258) does not find (it raises `Recipe '...'
not found` on every rank). The checkout's recipe files after src/megatron/bridge/recipes/stepfun/
{__init__.py,step37.py,h100/__init__.py,h100/step37.py} (:64, :227 define the functions,
step37.py re-exports them under the legacy names step37_sft_flickr8k_*_config).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.config.frontends.bridge_recipe_names import closest, spelt

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("megatron/bridge/recipes", "megatron/bridge/perf_recipes")

H100 = '''
def step37_sft_64gpu_h100_bf16_flickr8k_config() -> ConfigContainer:
    cfg = _sft_common_vlm()
    cfg.model.pipeline_model_parallel_size = 8
    return cfg


def step37_sft_4gpu_h100_bf16_flickr8k_smoke_config() -> ConfigContainer:
    cfg = _sft_common_vlm()
    cfg.model.pipeline_model_parallel_size = 4
    return cfg
'''
ALIASES = '''
from megatron.bridge.recipes.stepfun.h100.step37 import (
    step37_sft_4gpu_h100_bf16_flickr8k_smoke_config as step37_sft_flickr8k_smoke_config,
)
from megatron.bridge.recipes.stepfun.h100.step37 import (
    step37_sft_64gpu_h100_bf16_flickr8k_config as step37_sft_flickr8k_config,
)
'''
LAUNCH = """#!/bin/bash
# torch==2.10.0
cd "${{MEGATRON_BRIDGE_PATH:-.}}"
torchrun --nproc_per_node=8 --nnodes=4 scripts/training/run_recipe.py \\
    --recipe {recipe} \\
    --step_func vlm_step \\
    model.pipeline_model_parallel_size=4 \\
    model.tensor_model_parallel_size=1 \\
    model.expert_model_parallel_size=8
"""


def _checkout(tmp_path: Path) -> Path:
    """A Megatron-Bridge checkout's shape: scripts/training/run_recipe.py and src/.../recipes."""
    (tmp_path / "scripts/training").mkdir(parents=True)
    (tmp_path / "scripts/training/run_recipe.py").write_text("# the recipe runner\n", encoding="utf-8")
    stepfun = tmp_path / "src/megatron/bridge/recipes/stepfun"
    (stepfun / "h100").mkdir(parents=True)
    (tmp_path / "src/megatron/bridge/recipes/__init__.py").write_text(
        "from megatron.bridge.recipes.stepfun import *\n", encoding="utf-8")
    (stepfun / "__init__.py").write_text("from .step37 import (\n    step37_sft_flickr8k_config,\n)\n",
                                         encoding="utf-8")
    (stepfun / "step37.py").write_text(ALIASES, encoding="utf-8")
    (stepfun / "h100/__init__.py").write_text("from megatron.bridge.recipes.stepfun.h100.step37 import *\n",
                                              encoding="utf-8")
    (stepfun / "h100/step37.py").write_text(H100, encoding="utf-8")
    examples = tmp_path / "examples/models/stepfun/step37"
    examples.mkdir(parents=True)
    return examples


def _scan(tmp_path: Path, recipe: str, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    script = _checkout(tmp_path) / "slurm_pretrain.sh"
    script.write_text(LAUNCH.format(recipe=recipe), encoding="utf-8")
    p = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script), "--format", "json",
                        *extra], capture_output=True, text=True, cwd=tmp_path, timeout=600,
                       env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(Path.home())})
    return p, json.loads(p.stdout) if p.stdout.strip() else {}


def _missing(doc: dict) -> list[dict]:
    return [f for f in doc.get("findings", []) if f["kind"] == "launch.recipe-missing"]


def test_a_name_is_spelt_by_a_definition_or_a_re_export(tmp_path):
    _checkout(tmp_path)
    assert spelt(tmp_path, PACKAGES, "step37_sft_4gpu_h100_bf16_flickr8k_smoke_config") is True
    assert spelt(tmp_path, PACKAGES, "step37_sft_flickr8k_smoke_config") is True
    assert spelt(tmp_path, PACKAGES, "step37_flickr8k_sft_smoke_config") is False


def test_a_module_getattr_or_an_unfound_star_import_decides_nothing(tmp_path):
    star = "from megatron.bridge.elsewhere import *\n"
    for sub, init, elsewhere, want in (("unfound", star, None, None), ("found", star, "def other_config():\n", False),
                                       ("getattr", "def __getattr__(name):\n    return _lazy(name)\n", None, None)):
        _checkout(tmp_path / sub)
        (tmp_path / sub / "src/megatron/bridge/recipes/__init__.py").write_text(init, encoding="utf-8")
        if elsewhere:
            (tmp_path / sub / "src/megatron/bridge/elsewhere.py").write_text(elsewhere, encoding="utf-8")
        assert spelt(tmp_path / sub, PACKAGES, "step37_flickr8k_sft_smoke_config") is want, sub
    assert spelt(tmp_path / "found", PACKAGES, "other_config") is True


def test_the_closest_names_are_the_public_recipes(tmp_path):
    _checkout(tmp_path)
    near = closest(tmp_path, PACKAGES, "step37_flickr8k_sft_smoke_config")
    assert near[0] == "step37_sft_flickr8k_smoke_config"
    assert "step37_sft_4gpu_h100_bf16_flickr8k_smoke_config" in near


@pytest.mark.wheels
def test_a_recipe_no_release_defines_does_not_start_on_every_release(tmp_path):
    p, doc = _scan(tmp_path, "step37_flickr8k_sft_smoke_config")
    assert p.returncode == 1, p.stderr
    headline = doc["verdict"]["headline"]
    assert headline.startswith("DOES NOT START"), headline
    assert "step37_flickr8k_sft_smoke_config" in headline and "step37_sft_flickr8k_smoke_config" in headline
    basis = doc["config"]["release_basis"]["combinations"]
    assert len(basis) == 2 and all(c["headline"].startswith("DOES NOT START") for c in basis)


@pytest.mark.heavy
@pytest.mark.wheels
def test_a_recipe_the_checkout_defines_is_read_as_before(tmp_path):
    _, doc = _scan(tmp_path, "step37_sft_flickr8k_smoke_config")
    assert not _missing(doc) and not doc["verdict"]["headline"].startswith("DOES NOT START")


@pytest.mark.heavy
@pytest.mark.wheels
def test_a_recipe_only_some_releases_define_names_them(tmp_path):
    # megatron-bridge 0.5.0 defines qwen2_audio_7b_finetune_config (recipes/qwen_audio/), 0.6.x do not
    _, doc = _scan(tmp_path, "qwen2_audio_7b_finetune_config")
    assert not doc["verdict"]["headline"].startswith("DOES NOT START")
    undecided = [u for u in doc["verdict"]["undecided"] if "qwen2_audio_7b_finetune_config" in u["what"]]
    assert undecided and "0.5.0" in undecided[0]["what"] and "megatron-bridge==" in undecided[0]["decide"]
    _, stated = _scan(tmp_path / "t", "qwen2_audio_7b_finetune_config", "--target", "megatron-bridge==0.6.2")
    assert stated["verdict"]["headline"].startswith("DOES NOT START")


@pytest.mark.parametrize("made", [
    # names a loop registers on the package module (after the review repro of h33-review2: a fork's
    # recipes/__init__.py registering gemma3_vl_4b_sft_{8,32}k_config with setattr(sys.modules[...]))
    'import sys\nfor _k in (8, 32):\n    setattr(sys.modules[__name__], f"step37_{_k}k_config", _make(_k))\n',
    "import sys\n_mod = sys.modules[__name__]\n_mod.step37_long_config = _make(32)\n",
    'for _k in (8, 32):\n    vars()["step37_%dk_config" % _k] = _make(_k)\n',
    'for _k in (8, 32):\n    locals()["step37_{}k_config".format(_k)] = _make(_k)\n',
    "__dict__ = {}\n",
    'exec("def step37_long_config(): pass")\n',
])
def test_names_registered_at_run_time_decide_nothing(tmp_path, made):
    _checkout(tmp_path)
    init = tmp_path / "src/megatron/bridge/recipes/__init__.py"
    init.write_text(init.read_text(encoding="utf-8") + made, encoding="utf-8")
    assert spelt(tmp_path, PACKAGES, "step37_flickr8k_sft_smoke_config") is None


def test_a_relative_star_import_is_followed_from_the_package(tmp_path):
    # h33-review2 repro: recipes/__init__.py gains `from ..models.custom.my_recipes import *`
    for sub, here in (("absent", False), ("present", True), ("self", True)):
        _checkout(tmp_path / sub)
        init = tmp_path / sub / "src/megatron/bridge/recipes/__init__.py"
        init.write_text(init.read_text(encoding="utf-8") + "from ..models.custom.my_recipes import *\n",
                        encoding="utf-8")
        if here:
            custom = tmp_path / sub / "src/megatron/bridge/models/custom"
            custom.mkdir(parents=True)
            (custom / "my_recipes.py").write_text("def mycorp_vl_sft_config():\n    pass\n", encoding="utf-8")
        if sub == "self":
            (tmp_path / sub / "src/megatron/bridge/recipes/stepfun/h100/__init__.py").write_text(
                "from . import *\nfrom .step37 import *\n", encoding="utf-8")
        assert spelt(tmp_path / sub, PACKAGES, "mycorp_vl_sft_config") is (True if here else None), sub
    assert spelt(tmp_path / "present", PACKAGES, "step37_flickr8k_sft_smoke_config") is False


def test_a_name_built_by_formatting_alone_registers_nothing(tmp_path):
    # recipes/utils/naming.py @ 067f987 builds a name to look up (recipe_function_name), not to define
    _checkout(tmp_path)
    (tmp_path / "src/megatron/bridge/recipes/naming.py").write_text(
        'def recipe_function_name(model, task):\n    return f"{model}_{task}_config"\n'
        # prose, as megatron-bridge 0.5.0 recipes/utils/determinism_utils.py has it: no call
        '"""requires runtime env vars\n    (``NCCL_ALGO=Ring``)"""\n', encoding="utf-8")
    assert spelt(tmp_path, PACKAGES, "step37_flickr8k_sft_smoke_config") is False


@pytest.mark.heavy
@pytest.mark.wheels
def test_the_tree_the_command_cds_to_is_the_one_judged(tmp_path):
    """h33-review2 p9_cd.sh, after slurm_pretrain.sh:52,136-139 (`cd "${MEGATRON_BRIDGE_PATH:-
    /opt/Megatron-Bridge}"` then run_recipe.py): the run imports the recipes of the tree it cds to."""
    other = tmp_path / "other"
    _checkout(other)
    (other / "src/megatron/bridge/recipes/mine.py").write_text("def step37_flickr8k_sft_smoke_config():\n"
                                                               "    pass\n", encoding="utf-8")
    script = _checkout(tmp_path / "here") / "slurm_pretrain.sh"
    script.write_text(LAUNCH.replace("${{MEGATRON_BRIDGE_PATH:-.}}", str(other)).format(
        recipe="step37_flickr8k_sft_smoke_config"), encoding="utf-8")
    p = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script), "--format", "json"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=600,
                       env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(Path.home())})
    moved = json.loads(p.stdout)
    assert not _missing(moved), moved["verdict"]["headline"]


@pytest.mark.wheels
def test_a_tree_not_here_is_said_to_be_read_as_a_verified_release(tmp_path):
    script = _checkout(tmp_path) / "slurm_pretrain.sh"
    script.write_text(LAUNCH.replace("${{MEGATRON_BRIDGE_PATH:-.}}", "/opt/Megatron-Bridge").format(
        recipe="step37_flickr8k_sft_smoke_config"), encoding="utf-8")
    p = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script), "--format", "json"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=600,
                       env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(Path.home())})
    doc = json.loads(p.stdout)
    headline = doc["verdict"]["headline"]
    assert headline.startswith("DOES NOT START") and "/opt/Megatron-Bridge" in headline, headline
    assert "megatron-bridge==VERSION" in _missing(doc)[0]["message"]


@pytest.mark.heavy
@pytest.mark.wheels
@pytest.mark.parametrize("given, said", [("${RECIPE:-step37_flickr8k_sft_smoke_config}", "RECIPE"),
                                         ("${1:-step37_flickr8k_sft_smoke_config}", "$1")])
def test_a_recipe_from_a_default_says_it_assumes_the_variable_unset(tmp_path, given, said):
    """h33-review2 p4_env.sh / p8_pos.sh: `RECIPE=${RECIPE:-...}` (or `${1:-...}`) then `--recipe $RECIPE`:
    the caller may give another recipe; the verdict holds for the script's own default."""
    script = _checkout(tmp_path) / "slurm_pretrain.sh"
    script.write_text(LAUNCH.format(recipe="$RECIPE").replace("#!/bin/bash\n", f"#!/bin/bash\nRECIPE={given}\n"),
                      encoding="utf-8")
    p = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script), "--format", "json"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=600,
                       env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(Path.home())})
    headline = json.loads(p.stdout)["verdict"]["headline"]
    assert headline.startswith("DOES NOT START") and f"{said} unset" in headline, headline
