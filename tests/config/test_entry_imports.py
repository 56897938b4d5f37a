"""A training script that imports a module its run cannot find does not start (issue 22), and
only where the copy Python imports is certain.

NVIDIA/NeMo@8cfedd7203 nemo/collections/diffusion/vae/train_vae.sh runs `python -u
nemo/collections/diffusion/vae/train_vae.py`, whose line 37 imports
`nemo.collections.diffusion.train`, a module the checkout no longer holds. `python SCRIPT` puts
the script's directory first on sys.path, not the working directory, so `nemo` comes from an
installed copy (nemo_toolkit 2.1.0's wheel still ships nemo/collections/diffusion/train.py): an
undecided start-up check. Where the package sits beside the script (Megatron-LM's
pretrain_*.py next to megatron/), or on a PYTHONPATH the script sets, the copy is that one, and a
submodule it lacks stops every rank: DOES NOT START naming the import and its line.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from auditor import cli
from auditor.analysis.undecided import undecided_inputs
from auditor.config.launch import read_launch

VAE_SH = """#!/bin/bash
#SBATCH --nodes=16 --ntasks-per-node=8
DIR=`pwd`
srun --container-image ${{IMAGE}} bash -c "{cd}{pythonpath}python -u nemo/collections/diffusion/vae/train_vae.py --yes $*"
"""

TRAIN_VAE = """
import torch
from autovae import VAEGenerator
from nemo.collections.diffusion.train import pretrain
from nemo.lightning.io.mixin import IOMixin
"""


def nemo_checkout(tmp_path: Path, pythonpath: str = "", train_vae: str = TRAIN_VAE,
                  cd: str = "cd ${{DIR}} ; ") -> Path:
    """A NeMo-shaped checkout (setup.py, nemo/ a regular package without diffusion/train.py) and
    its launch script; the launch script's path."""
    files = {
        "setup.py": "",
        "nemo/__init__.py": "",
        "nemo/collections/__init__.py": "",
        "nemo/collections/diffusion/__init__.py": "",
        "nemo/collections/diffusion/vae/__init__.py": "",
        "nemo/collections/diffusion/vae/autovae.py": "class VAEGenerator: ...\n",
        "nemo/collections/diffusion/vae/train_vae.py": train_vae,
        "nemo/lightning/__init__.py": "",
        "nemo/lightning/io/__init__.py": "",
        "nemo/lightning/io/mixin.py": "class IOMixin: ...\n",
        "nemo/collections/diffusion/vae/train_vae.sh": VAE_SH.format(pythonpath=pythonpath, cd=cd.format()),
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path / "nemo/collections/diffusion/vae/train_vae.sh"


def errors(config) -> list:
    return [d for d in config.diagnostics if d.kind == "launch.import-missing"]


def startup_undecided(config) -> list:
    doc = {"findings": [d.to_json() for d in config.diagnostics]}
    return [u for u in undecided_inputs(doc) if u.aside == "startup"]


def test_an_installed_copy_leaves_a_module_the_checkout_lacks_undecided(tmp_path, monkeypatch):
    """train_vae.py's directory holds no `nemo`; nothing else is on sys.path before the installed
    packages: never DOES NOT START, an undecided start-up check naming the import and line."""
    launch = nemo_checkout(tmp_path)
    monkeypatch.chdir(tmp_path)
    config = read_launch(launch)
    assert errors(config) == []
    [u] = startup_undecided(config)
    assert "nemo.collections.diffusion.train" in u.what and "train_vae.py:4" in u.what
    assert "import nemo.collections.diffusion.train" in u.decide


def test_a_pythonpath_the_script_sets_to_the_checkout_makes_it_certain(tmp_path, monkeypatch):
    """`PYTHONPATH=<the checkout>` before python: `nemo` is the checkout's, which lacks the
    module: an error naming the import and its line."""
    launch = nemo_checkout(tmp_path, pythonpath=f"PYTHONPATH={tmp_path} ", cd="")
    monkeypatch.chdir(tmp_path)
    config = read_launch(launch)
    [error] = errors(config)
    assert error.severity == "error" and error.detail["category"] == "config"
    assert "nemo.collections.diffusion.train" in error.message and "train_vae.py:4" in error.message
    assert startup_undecided(config) == []


def test_an_unknown_pythonpath_entry_first_leaves_it_undecided(tmp_path, monkeypatch):
    """`PYTHONPATH=$EXTRA:<the checkout>`: $EXTRA is not known and may hold another `nemo`."""
    launch = nemo_checkout(tmp_path, pythonpath=f"PYTHONPATH=$EXTRA:{tmp_path} ")
    monkeypatch.chdir(tmp_path)
    config = read_launch(launch)
    assert errors(config) == []
    assert len(startup_undecided(config)) == 1


def test_an_import_under_try_is_not_read(tmp_path, monkeypatch):
    """`try: from nemo...train import pretrain` / `except ImportError`: the run goes on."""
    guarded = TRAIN_VAE.replace("from nemo.collections.diffusion.train import pretrain",
                                "try:\n    from nemo.collections.diffusion.train import pretrain\n"
                                "except ImportError:\n    pretrain = None")
    launch = nemo_checkout(tmp_path, pythonpath=f"PYTHONPATH={tmp_path} ", train_vae=guarded)
    monkeypatch.chdir(tmp_path)
    config = read_launch(launch)
    assert errors(config) == [] and startup_undecided(config) == []


def megatron_checkout(tmp_path: Path, pretrain: str, extra: dict[str, str] | None = None) -> Path:
    """A Megatron-LM-shaped checkout: pretrain_gpt.py beside megatron/ (sys.path[0] holds it)."""
    files = {
        "setup.py": "",
        "megatron/__init__.py": "",
        "megatron/training/__init__.py": "from .training import pretrain\n",
        "megatron/training/training.py": "from megatron.core import mpu\ndef pretrain(*a): ...\n",
        "megatron/core/__init__.py": "",
        "megatron/core/mpu.py": "",
        "pretrain_gpt.py": pretrain,
        "examples/run.sh": "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2\n",
        **(extra or {}),
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path / "examples/run.sh"


def test_a_package_beside_the_script_is_the_copy_it_imports(tmp_path, monkeypatch):
    """pretrain_gpt.py imports `megatron.legacy.model` (moved away): megatron/ beside it is the
    copy, which has no legacy/: DOES NOT START at that line."""
    launch = megatron_checkout(tmp_path, "from megatron.training import pretrain\n"
                                         "from megatron.legacy.model import GPTModel\n")
    monkeypatch.chdir(tmp_path)
    [error] = errors(read_launch(launch))
    assert "megatron.legacy.model" in error.message and "pretrain_gpt.py:2" in error.message


def test_a_module_the_package_imports_at_load_is_followed(tmp_path, monkeypatch):
    """megatron/training/training.py (loaded by the script's import) imports a module its copy
    lacks: the run stops there too, and the error names that file's line."""
    launch = megatron_checkout(tmp_path, "from megatron.training import pretrain\n", {
        "megatron/training/training.py": "from megatron.core import mpu\nfrom megatron.core.gone import x\n"})
    monkeypatch.chdir(tmp_path)
    [error] = errors(read_launch(launch))
    assert "megatron.core.gone" in error.message and "training.py:2" in error.message


def test_what_a_build_may_make_or_an_attribute_is_not_missing(tmp_path, monkeypatch):
    """`from megatron.core import helpers` beside helpers.cpp (a build makes the extension), and
    `from megatron.core import mpu_name` an attribute of the package: nothing is said."""
    launch = megatron_checkout(tmp_path, "from megatron.core import helpers, mpu_name\n"
                                         "import megatron.core.mpu\n", {
                                   "megatron/core/helpers.cpp": "", "megatron/core/__init__.py": "mpu_name = 1\n"})
    monkeypatch.chdir(tmp_path)
    assert errors(read_launch(launch)) == []


def test_a_sys_path_insert_before_the_import_leaves_it_open(tmp_path, monkeypatch):
    """`sys.path.insert(0, ...)` may put another `megatron` first (Megatron-LM's tools do so)."""
    launch = megatron_checkout(tmp_path, "import sys\nsys.path.insert(0, '/opt/Megatron-LM')\n"
                                         "from megatron.legacy.model import GPTModel\n")
    monkeypatch.chdir(tmp_path)
    assert errors(read_launch(launch)) == []


def test_an_entry_read_in_place_of_the_cluster_s_file_decides_nothing(tmp_path, monkeypatch):
    """bigcode-project/Megatron-LM@7c325cd34a examples/finetune_starcoderplus.slurm runs
    `$SCRIPT_REPO/pretrain_gpt.py` (SCRIPT_REPO=/fsx/leandro/git/Megatron-LM-BC), read from the
    local checkout at the same tail path: the cluster's copy beside it may differ."""
    launch = megatron_checkout(tmp_path, "from megatron.legacy.model import GPTModel\n")
    launch.write_text("torchrun --nproc_per_node 8 /fsx/someone/git/Megatron-LM/pretrain_gpt.py --num-layers 2\n")
    monkeypatch.chdir(tmp_path)
    config = read_launch(launch)
    assert config.script_read.endswith("pretrain_gpt.py")
    assert errors(config) == []


def test_a_cd_the_walk_cannot_place_leaves_the_copy_undecided(tmp_path, monkeypatch):
    """train_vae.sh's `bash -c "cd ${DIR} ; ..."`, where DIR is a directory the walk does not know
    (the caller's): the train_vae.py that runs there may be another file than the one read:
    undecided, not an error. (train_vae.sh's own DIR=`pwd` is read as this audit's directory, as
    a `cd` outside `bash -c` is.)"""
    launch = nemo_checkout(tmp_path, pythonpath=f"PYTHONPATH={tmp_path} ", cd="cd ${{WORKDIR}} ; ")
    monkeypatch.chdir(tmp_path)
    config = read_launch(launch)
    assert errors(config) == []
    assert any("nemo.collections.diffusion.train" in u.what for u in startup_undecided(config))


def test_a_pythonpath_root_that_is_no_directory_here_may_hold_it(tmp_path, monkeypatch):
    """`PYTHONPATH=/opt/NeMo:<checkout>` (a container's copy) or `<checkout>/deps.zip:<checkout>`:
    the first root is not read, and may hold another `nemo`."""
    for first in ("/opt/NeMo-in-the-container", f"{tmp_path}/deps.zip"):
        launch = nemo_checkout(tmp_path, pythonpath=f"PYTHONPATH={first}:{tmp_path} ", cd="")
        (tmp_path / "deps.zip").write_bytes(b"PK")
        monkeypatch.chdir(tmp_path)
        assert errors(read_launch(launch)) == [], first


MISSING = "from megatron.legacy.model import GPTModel\n"


def scan(tmp_path, monkeypatch, pretrain: str, extra: dict[str, str] | None = None, run: str = ""):
    launch = megatron_checkout(tmp_path, pretrain, extra)
    if run:
        launch.write_text(run)
    monkeypatch.chdir(tmp_path)
    return read_launch(launch)


def test_a_cd_to_another_checkout_leaves_the_copy_undecided(tmp_path, monkeypatch):
    """Megatron-DeepSpeed-shaped `cd ${MDS_DIR:-/workspace/Megatron-DeepSpeed}` then `torchrun
    pretrain_gpt.py`: the job runs the copy there, not the one read here."""
    for cd in ("cd /workspace/Megatron-DeepSpeed\n", "cd $MEGATRON_PATH\n"):
        config = scan(tmp_path, monkeypatch, MISSING,
                      run=cd + "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2\n")
        assert errors(config) == [], cd
        assert startup_undecided(config), cd


def test_a_container_workdir_moves_the_script(tmp_path, monkeypatch):
    """pyxis `srun --container-workdir=/opt/Megatron-DeepSpeed python pretrain_gpt.py` (as NeMo's
    and Megatron-DeepSpeed's SLURM examples run in a container): the script is the container's."""
    config = scan(tmp_path, monkeypatch, MISSING,
                  run="srun --container-image=img --container-workdir=/opt/Megatron-DeepSpeed "
                      "python pretrain_gpt.py --num-layers 2\n")
    assert config.workdir == "/opt/Megatron-DeepSpeed"
    assert errors(config) == []


def test_interpreter_options_change_the_search_path(tmp_path, monkeypatch):
    """`python -P`/`-I` (no script directory on sys.path), `-E` (no PYTHONPATH), PYTHONSAFEPATH:
    the roots read are not the run's."""
    runs = ["python -P pretrain_gpt.py --num-layers 2\n", "python -I pretrain_gpt.py --num-layers 2\n",
            "python -E pretrain_gpt.py --num-layers 2\n",
            "export PYTHONSAFEPATH=1\ntorchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2\n"]
    for run in runs:
        config = scan(tmp_path, monkeypatch, MISSING, run=run)
        assert errors(config) == [], run
        assert startup_undecided(config), run
    assert errors(scan(tmp_path, monkeypatch, MISSING, run="python -u pretrain_gpt.py --num-layers 2\n"))


def test_modules_a_build_writes_may_be_there(tmp_path, monkeypatch):
    """setuptools_scm `write_to = 'megatron/_version.py'`, setup.py `CUDAExtension('megatron.core._C',
    ...)` (an in-place `pip install -e .`), a path .gitignore keeps out of the checkout."""
    cases = [({"pyproject.toml": "[tool.setuptools_scm]\nwrite_to = 'megatron/_version.py'\n"},
              "from megatron._version import __version__\n"),
             ({"setup.py": "setup(ext_modules=[CUDAExtension('megatron.core._C', ['csrc/ops.cu'])])\n"},
              "import megatron.core._C\n"),
             ({".gitignore": "megatron/core/fused_kernels.py\n"}, "import megatron.core.fused_kernels\n")]
    for extra, pretrain in cases:
        assert errors(scan(tmp_path, monkeypatch, pretrain, extra)) == [], pretrain
        for name in extra:
            (tmp_path / name).unlink()
        assert errors(scan(tmp_path, monkeypatch, pretrain)), pretrain


def test_imports_that_do_not_run_at_start_or_after_unread_code_decide_nothing(tmp_path, monkeypatch):
    """An import after the main block (it runs once training is over); after `from sys import
    path; path.insert(...)`; after a helper that may edit sys.path (rootutils.setup_root(...,
    pythonpath=True), a namespace module's function); after a module that sets
    `sys.modules[...]` or a `sys.meta_path` finder."""
    cases = [("from megatron.training import pretrain\nif __name__ == '__main__':\n    pretrain()\n"
              "    raise SystemExit(0)\n" + MISSING, {}),
             ("from sys import path\npath.insert(0, '/opt/Megatron-LM')\n" + MISSING, {}),
             ("import rootutils\nrootutils.setup_root(__file__, indicator='.project-root', pythonpath=True)\n"
              + MISSING, {}),
             ("from tools.paths import use\nuse()\n" + MISSING,
              {"tools/paths.py": "import sys\ndef use():\n    sys.path.insert(0, '/opt/Megatron-LM')\n"}),
             ("import megatron.compat\n" + MISSING,
              {"megatron/compat.py": "import sys\nimport megatron.core.mpu as m\nsys.modules['megatron.legacy'] = m\n"}),
             ("import megatron.shim\n" + MISSING,
              {"megatron/shim.py": "import sys\nclass F:\n    pass\nsys.meta_path.insert(0, F())\n"})]
    for pretrain, extra in cases:
        assert errors(scan(tmp_path, monkeypatch, pretrain, extra)) == [], pretrain


ARGUMENTS = """import argparse
def parse_args(extra_args_provider=None, ignore_unknown_args=False):
    parser = argparse.ArgumentParser(description='Megatron-LM Arguments', allow_abbrev=False)
    parser = _add_network_size_args(parser)
    return parser.parse_args()
def _add_network_size_args(parser):
    group = parser.add_argument_group(title='network size')
    group.add_argument('--num-layers', type=int, default=None)
    group.add_argument('--pipeline-model-parallel-size', type=int, default=1)
    return parser
"""


def test_the_parser_read_whole_is_the_moved_script_s(tmp_path, monkeypatch):
    """Megatron-DeepSpeed examples/finetune_race_distributed.sh passes a flag its
    megatron/arguments.py lacks (argparse exits). After `cd $SOMEWHERE` the script and parser
    that run are another checkout's: the flag is undecided, not a certain error."""
    flags = "--num-layers 2 --pipeline-model-parallel-size 2 --activations-checkpoint-method uniform\n"
    extra = {"megatron/arguments.py": ARGUMENTS}
    script = "from megatron.training import pretrain\nif __name__ == '__main__':\n    pretrain()\n"
    here = scan(tmp_path, monkeypatch, script, extra,
                run="torchrun --nproc_per_node 8 pretrain_gpt.py " + flags)
    assert any(d.severity == "error" and d.kind == "launch.megatron-spelling" for d in here.diagnostics)
    moved = scan(tmp_path, monkeypatch, script, extra,
                 run="cd $SOMEWHERE\ntorchrun --nproc_per_node 8 pretrain_gpt.py " + flags)
    assert [d.kind for d in moved.diagnostics if d.severity == "error"] == []
    assert any(d.kind == "launch.front-end-unread" for d in moved.diagnostics)


def test_missing_imports_names_the_module_the_package_lacks(tmp_path: Path):
    """The reader itself: the entry's own package copy lacks `pkg.gone` (NeMo train_vae.py:37's
    shape, a module moved away), found beside the entry as Python's sys.path[0] finds it."""
    from auditor.config.entry_imports import entry_roots, import_gaps

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    entry = tmp_path / "train.py"
    entry.write_text("import os\nfrom pkg.gone import thing\n")
    [miss] = import_gaps(entry, entry_roots(entry, {})).missing
    assert "pkg.gone" in str(miss)


# NVIDIA/Megatron-LM@d98e8a64dd examples/multimodal/run_text_generation.py: megatron/ at the root
# is a namespace folder (no __init__.py); the entry appends the root to sys.path (:11-13), after
# the installed packages, and imports megatron.inference.text_generation.api (:26), which the
# tree no longer has (megatron/inference/ holds __init__.py and utils.py).
TEXTGEN = """import os
import sys
from typing import TYPE_CHECKING

# Add megatron to the path.
sys.path.append(
    os.path.abspath(os.path.join(os.path.dirname(__file__), os.path.pardir, os.path.pardir))
)

import torch
from megatron.core import parallel_state
IMPORT
"""
GONE = "from megatron.inference.text_generation.api import generate_and_post_process\n"


def textgen_checkout(tmp_path: Path, entry: str, namespace: bool = True) -> Path:
    """A Megatron-LM-shaped tree: megatron/ (a namespace folder unless told), megatron/core/,
    megatron/inference/ without text_generation/, and the VLM generator under examples/."""
    files = {
        "setup.py": "",
        "pretrain_gpt.py": "",
        "megatron/core/__init__.py": "",
        "megatron/core/parallel_state.py": "",
        "megatron/inference/__init__.py": "",
        "megatron/inference/utils.py": "",
        "examples/multimodal/run_text_generation.py": entry,
        "examples/multimodal/text_generation.sh":
            "TP=4\ntorchrun --nproc_per_node ${TP} examples/multimodal/run_text_generation.py --tensor-model-parallel-size ${TP}\n",
        **({} if namespace else {"megatron/__init__.py": ""}),
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path / "examples/multimodal/text_generation.sh"


def undecided(config) -> list:
    doc = {"findings": [d.to_json() for d in config.diagnostics]}
    return [u for u in undecided_inputs(doc) if not u.aside]


def test_a_subpackage_only_the_appended_checkout_holds_does_not_start(tmp_path, monkeypatch):
    """The entry appends its own tree to sys.path and imports what the tree lacks. megatron is a
    namespace package in every wheel (rules/megatron-core.toml [namespace_portions]: megatron-core
    ships megatron/core and megatron/training, megatron-bridge megatron/bridge), none of which
    holds megatron/inference: whatever is installed, Python takes megatron.inference from the
    tree, which has no text_generation, and every rank stops (was INCONCLUSIVE, then NOT A
    PIPELINE RUN for the text-generation entry: mlm-nemotron-nano-vl-8b-textgen)."""
    from auditor.analysis.verdict import launcher_refuses
    launch = textgen_checkout(tmp_path, TEXTGEN.replace("IMPORT\n", GONE))
    monkeypatch.chdir(tmp_path)
    config = read_launch(launch)
    [error] = errors(config)
    assert "megatron.inference.text_generation" in error.message and "ModuleNotFoundError" in error.message
    assert "examples/multimodal/run_text_generation.py:12" in error.message and str(tmp_path) not in error.message
    said = launcher_refuses(config, None) or ""
    assert said.endswith("(examples/multimodal/text_generation.sh:2)") and "cannot be imported" in said, said


def test_a_module_an_installed_portion_may_hold_stays_undecided(tmp_path, monkeypatch):
    """megatron.core comes from an installed megatron-core first (site-packages precede the
    appended tree): a module the tree's megatron/core lacks may be in that release, so the verdict
    is undecided (INCONCLUSIVE) naming the import, never DOES NOT START nor CLEAN."""
    gone = "from megatron.core.inference.gone import Thing\n"
    launch = textgen_checkout(tmp_path, TEXTGEN.replace("IMPORT\n", gone))
    monkeypatch.chdir(tmp_path)
    config = read_launch(launch)
    assert errors(config) == []
    [u] = undecided(config)
    assert "megatron.core.inference" in u.what and "run_text_generation.py:12" in u.what
    assert "import megatron.core.inference" in u.decide


@pytest.mark.parametrize("change", [
    ("TP=4\n", "TP=4\nexport PYTHONPATH=$EXTRA:$PYTHONPATH\n"),  # a root not known here comes first
    ("import torch\n", "import torch\nimport helpers\n"),  # a module of its own that edits sys.path
])
def test_another_copy_that_may_come_first_leaves_it_undecided(tmp_path, monkeypatch, change):
    entry = TEXTGEN.replace("IMPORT\n", GONE)
    launch = textgen_checkout(tmp_path, entry.replace(*change) if change[0] != "TP=4\n" else entry)
    if change[0] == "TP=4\n":
        launch.write_text(launch.read_text().replace(*change))
    (tmp_path / "examples/multimodal/helpers.py").write_text("import sys\nsys.path.insert(0, '/opt/megatron-lm')\n")
    monkeypatch.chdir(tmp_path)
    assert errors(read_launch(launch)) == []


@pytest.mark.parametrize("before", [
    "source /opt/env.sh\n",  # a file not read here may set PYTHONPATH to another Megatron-LM tree
    "cd /opt/megatron-lm\n",  # the entry path, and the root it appends, then point into another tree
    "pip install -e /opt/megatron-lm\n",  # an editable install of another tree may hold megatron.inference
    "pip install git+https://github.com/NVIDIA/Megatron-LM.git@core_r0.10.0\n",  # a release not read here
    'eval "$SETUP"\n',
])
def test_what_runs_unread_before_the_command_leaves_it_undecided(tmp_path, monkeypatch, capsys, before):
    """NVIDIA/Megatron-LM@d98e8a64dd examples/multimodal/llama_3p1_nemotron_nano_vl_8b_v1/
    text_generation.sh runs run_text_generation.py, whose megatron.inference.text_generation (:26)
    the tree lacks. With a command before torchrun that runs code not read here, moves the run or
    installs another copy, the tree may not be the copy imported: never DOES NOT START (was, for
    the `cd` and `pip install` lines: review r47-moved, inputs b9, b10, b16)."""
    engine = "from megatron.core.inference.engines import StaticInferenceEngine\n"  # :30
    launch = textgen_checkout(tmp_path, TEXTGEN.replace("IMPORT\n", GONE + engine))
    command = launch.read_text().split("\n")[1]  # in its partition loop, as upstream's :96-:98
    launch.write_text(f"TP=4\nSTART=0\nEND=0\n{before}for PARTITION_ID in $( eval echo {{$START..$END}} )\n"
                      f"do\n    {command}\ndone\n")
    monkeypatch.chdir(tmp_path)
    cli.main(["scan", "--config", "examples/multimodal/text_generation.sh", "--format", "json"])
    verdict = json.loads(capsys.readouterr().out)["verdict"]
    # NOT A PIPELINE RUN (what the code read does) or INCONCLUSIVE (what ran before is not read)
    assert verdict["status"] in ("not-pipeline", "inconclusive"), verdict["headline"]


def test_an_argument_loop_before_the_command_still_does_not_start(tmp_path, monkeypatch):
    """text_generation.sh (as above, :16-:78) reads its options in `while [[ $# -gt 0 ]]; case
    ... shift ... exit 1`: builtins that run nothing, so the tree stays the only copy."""
    launch = textgen_checkout(tmp_path, TEXTGEN.replace("IMPORT\n", GONE))
    loop = ('while [[ $# -gt 0 ]]; do\n  case $1 in\n    --tp) TP="$2"; shift; shift ;;\n'
            '    -*|--*) echo "Invalid option $1"; exit 1 ;;\n  esac\ndone\n')
    launch.write_text(launch.read_text().replace("TP=4\n", "TP=4\n" + loop))
    monkeypatch.chdir(tmp_path)
    [error] = errors(read_launch(launch))
    assert "megatron.inference.text_generation" in error.message


def test_imports_that_may_not_run_leave_the_appended_tree_unjudged(tmp_path, monkeypatch):
    """try/except ImportError, `if TYPE_CHECKING:`, a function body: not every start reads them."""
    for guarded in ("try:\n    " + GONE + "except ImportError:\n    pass\n",
                    "if TYPE_CHECKING:\n    " + GONE,
                    "def generate():\n    " + GONE):
        launch = textgen_checkout(tmp_path, TEXTGEN.replace("IMPORT\n", guarded))
        monkeypatch.chdir(tmp_path)
        config = read_launch(launch)
        assert errors(config) == [] and undecided(config) == [], guarded


def test_without_the_entry_s_own_path_edit_the_installed_copy_stays_aside(tmp_path, monkeypatch):
    """No append: `megatron` comes from an installed copy, which is not read: a start-up check
    aside, as for NeMo's train_vae.py."""
    entry = TEXTGEN.replace("IMPORT\n", GONE).replace("sys.path.append(", "print(")
    launch = textgen_checkout(tmp_path, entry)
    monkeypatch.chdir(tmp_path)
    config = read_launch(launch)
    assert errors(config) == [] and undecided(config) == []
    assert any("megatron.inference.text_generation" in u.what for u in startup_undecided(config))


INSERT = TEXTGEN.replace("sys.path.append(", "sys.path.insert(0,")


def test_a_regular_package_the_entry_puts_first_is_the_copy(tmp_path, monkeypatch):
    """`sys.path.insert(0, <the tree's root>)` before every import, megatron/ a regular package:
    it comes before the caller's PYTHONPATH and the installed packages, so the import fails on
    every rank: DOES NOT START naming the import and its line."""
    launch = textgen_checkout(tmp_path, INSERT.replace("IMPORT\n", GONE), namespace=False)
    (tmp_path / "examples/multimodal/text_generation.sh").write_text(
        "export PYTHONPATH=/opt/other-megatron:$PYTHONPATH\n"
        "torchrun --nproc_per_node 4 examples/multimodal/run_text_generation.py\n")
    monkeypatch.chdir(tmp_path)
    [error] = errors(read_launch(launch))
    assert "megatron.inference.text_generation" in error.message and "run_text_generation.py:12" in error.message


def test_a_namespace_folder_put_first_may_be_shadowed(tmp_path, monkeypatch):
    """A namespace folder first on sys.path does not shadow a regular `megatron` later on it
    (an installed copy): undecided, never DOES NOT START."""
    launch = textgen_checkout(tmp_path, INSERT.replace("IMPORT\n", GONE))
    monkeypatch.chdir(tmp_path)
    config = read_launch(launch)
    assert errors(config) == []
    assert any("megatron.inference.text_generation" in u.what for u in undecided(config))


def test_an_insert_after_an_import_is_not_read_as_certain(tmp_path, monkeypatch):
    """The first import ran on another sys.path: the insert decides nothing (as before)."""
    entry = INSERT.replace("import os\nimport sys\n", "import os\nimport sys\nimport megatron.core\n")
    launch = textgen_checkout(tmp_path, entry.replace("IMPORT\n", GONE), namespace=False)
    monkeypatch.chdir(tmp_path)
    assert errors(read_launch(launch)) == []


# Review r40-missing, hole 4 (the shape of NVIDIA/Megatron-LM examples/inference/run_server.py):
# a local module imported before the insert may import the package first, from another copy,
# which then stays cached for the imports after the insert.
RUN_SERVER = """import os
import sys
from server_utils import add_server_args
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), os.path.pardir, os.path.pardir)))
from megatron.training import get_args
from megatron.core.pipeline_parallel import get_forward_backward_func
"""


def test_an_insert_after_a_local_module_s_import_is_not_first(tmp_path, monkeypatch):
    textgen_checkout(tmp_path, TEXTGEN, namespace=False)
    (tmp_path / "examples/inference").mkdir(parents=True)
    (tmp_path / "examples/inference/server_utils.py").write_text("from megatron.training.arguments import parse_args\n")
    (tmp_path / "examples/inference/run_server.py").write_text(RUN_SERVER)
    launch = tmp_path / "examples/inference/run_server.sh"
    launch.write_text("torchrun --nproc_per_node 8 examples/inference/run_server.py --pipeline-model-parallel-size 2\n")
    monkeypatch.chdir(tmp_path)
    assert errors(read_launch(launch)) == []


# Review r40-missing, hole 5: the root appended through a module-level name, as
# NVIDIA/Megatron-LM@d98e8a64dd examples/post_training/modelopt/quantize.py:21 appends
# `os.path.abspath(os.path.join(_SCRIPT_DIR, "../../../"))`.
THROUGH_NAME = TEXTGEN.replace("sys.path.append(\n", "ROOT = (\n").replace(
    "\nimport torch\n", "sys.path.append(ROOT)\nimport torch\n")


def test_a_root_appended_through_a_name_is_followed(tmp_path, monkeypatch):
    launch = textgen_checkout(tmp_path, THROUGH_NAME.replace("IMPORT\n", GONE))
    monkeypatch.chdir(tmp_path)
    [error] = errors(read_launch(launch))
    assert "megatron.inference.text_generation" in error.message


def test_a_root_appended_that_is_not_known_here_is_undecided(tmp_path, monkeypatch):
    entry = THROUGH_NAME.replace("ROOT = (", "ROOT = os.environ.get('MEGATRON', '/opt/megatron') or (")
    launch = textgen_checkout(tmp_path, entry.replace("IMPORT\n", GONE))
    monkeypatch.chdir(tmp_path)
    config = read_launch(launch)
    assert errors(config) == []
    assert any("megatron.inference.text_generation" in u.what for u in undecided(config))


# Review r40-missing, hole 6: apex/ is a submodule checkout (NVIDIA/apex: setup.py at its top,
# the package in apex/apex/), not a namespace copy of the library the run imports.
def test_a_project_folder_is_no_namespace_copy(tmp_path, monkeypatch):
    entry = TEXTGEN.replace("IMPORT\n", "from apex.optimizers import FusedAdam\n")
    launch = textgen_checkout(tmp_path, entry)
    (tmp_path / "apex/apex/optimizers").mkdir(parents=True)
    (tmp_path / "apex/setup.py").write_text("")
    (tmp_path / "apex/apex/optimizers/__init__.py").write_text("")
    monkeypatch.chdir(tmp_path)
    config = read_launch(launch)
    assert errors(config) == [] and undecided(config) == []


def test_only_sys_path_s_own_insert_adds_a_root(tmp_path, monkeypatch):
    """A bare `insert(0, X)` (any list's, any function's) puts nothing on sys.path."""
    entry = INSERT.replace("sys.path.insert(0,", "insert(0,").replace("import os\n", "import os\nfrom bisect import insort as insert\n")
    launch = textgen_checkout(tmp_path, entry.replace("IMPORT\n", GONE), namespace=False)
    monkeypatch.chdir(tmp_path)
    assert errors(read_launch(launch)) == []


# NVIDIA/Megatron-LM@d98e8a64dd examples/multimodal/run_text_generation.py imports ForwardStep
# (:27) and subclasses it at module level (:458, `class VLMForwardStep(ForwardStep):`); the
# variant guards the import as optional dependencies are (`except ImportError: ForwardStep = None`).
# Where the import surely fails the class statement raises TypeError on every rank.
FORWARD_STEP = "from megatron.inference.text_generation.forward_step import ForwardStep\n"
SUBCLASS = "\n\nclass VLMForwardStep(ForwardStep):\n    pass\n"
GUARDED = ("import torch\ntry:\n    " + FORWARD_STEP + "except ImportError:\n    ForwardStep = None\n"
           + SUBCLASS + "\n\nif __name__ == '__main__':\n    main()\n")


def test_a_fallback_of_none_subclassed_does_not_start(tmp_path, monkeypatch):
    """Was CLEAN (an import under try not read): the class statement names its line."""
    launch = megatron_checkout(tmp_path, GUARDED)
    monkeypatch.chdir(tmp_path)
    [error] = errors(read_launch(launch))
    assert "megatron.inference.text_generation.forward_step" in error.message
    assert "`class VLMForwardStep(ForwardStep)`" in error.message and "pretrain_gpt.py:8" in error.message
    assert "TypeError" in error.message


@pytest.mark.parametrize("change", [
    ("ForwardStep = None", "ForwardStep = object"),  # a real class
    ("ForwardStep = None", "from megatron.core import ForwardStep"),
    ("except ImportError:", "except AttributeError:\n    raise\nexcept errors:"),  # a handler type not read
    (SUBCLASS, "\n\ndef make():\n    class VLMForwardStep(ForwardStep):\n        pass\n"),  # never called
    ("\n\nclass VLMForwardStep", "\n\nif TYPE_CHECKING:\n  class VLMForwardStep"),
    ("try:\n    " + FORWARD_STEP + "except ImportError:\n    ForwardStep = None\n",  # a version check
     "if sys.version_info >= (3, 8):\n    try:\n        " + FORWARD_STEP + "    except ImportError:\n"
     "        ForwardStep = None\nelse:\n    ForwardStep = object\n"),
    ("\n\nclass VLMForwardStep", "\nmain()\n\nclass VLMForwardStep"),  # after code not read
    ("\n\nclass VLMForwardStep", "\nfrom megatron.core.mpu import *\n\nclass VLMForwardStep"),
    ("(ForwardStep):", "(ForwardStep, metaclass=Meta):"),
    ("ForwardStep = None\n", "ForwardStep = None\nfinally:\n    setup()\n"),
    # review r41-interp 4: a binding that does not write the name
    ("\n\nclass VLMForwardStep", "\nsetattr(sys.modules[__name__], 'ForwardStep', object)\n\nclass VLMForwardStep"),
    ("\n\nclass VLMForwardStep", "\nglobals()['ForwardStep'] = object\n\nclass VLMForwardStep"),
])
def test_a_fallback_that_may_not_fail_decides_nothing(tmp_path, monkeypatch, change):
    entry = GUARDED.replace(*change)
    assert entry != GUARDED and ast.parse(entry)
    launch = megatron_checkout(tmp_path, entry)
    monkeypatch.chdir(tmp_path)
    assert errors(read_launch(launch)) == []


def test_a_guarded_import_the_present_copy_holds_decides_nothing(tmp_path, monkeypatch):
    launch = megatron_checkout(tmp_path, GUARDED.replace(FORWARD_STEP, "from megatron.core.mpu import ForwardStep\n"))
    monkeypatch.chdir(tmp_path)
    assert errors(read_launch(launch)) == []


def test_a_fallback_subclassed_in_the_appended_tree_is_undecided(tmp_path, monkeypatch):
    """The upstream shape (its own tree appended, megatron/ a namespace folder): another copy may
    come first, so INCONCLUSIVE naming the import and the class, never DOES NOT START."""
    launch = textgen_checkout(tmp_path, TEXTGEN.replace("IMPORT\n", GUARDED.replace("import torch\n", "")))
    monkeypatch.chdir(tmp_path)
    config = read_launch(launch)
    assert errors(config) == []
    [u] = undecided(config)
    assert "megatron.inference.text_generation" in u.what and "run_text_generation.py:13" in u.what
    [finding] = [d for d in config.diagnostics if d.kind == "launch.import-unread-copy"]
    assert "class VLMForwardStep(ForwardStep)" in finding.message


# The same guarded shape (NVIDIA/Megatron-LM@d98e8a64dd examples/multimodal/run_text_generation.py
# :27, :458) on an import of torch: `try: from torch.distributed.X import Y` / `except ImportError:
# Y = None`, then a module-level `class (Y)`. No root read here holds torch: the job's torch
# decides whether the class statement raises, never this machine's. Was CLEAN.
TORCH_GUARDED = ("import torch\ntry:\n    from torch.distributed.no_such_mod import Stage\nexcept ImportError:\n"
                 "    Stage = None\n\n\nclass MyStage(Stage):\n    pass\n\n\nif __name__ == '__main__':\n    main()\n")


def test_a_fallback_subclassed_of_an_installed_package_is_undecided(tmp_path, monkeypatch):
    launch = megatron_checkout(tmp_path, TORCH_GUARDED)
    monkeypatch.chdir(tmp_path)
    config = read_launch(launch)
    assert errors(config) == []
    [u] = undecided(config)
    assert "torch.distributed.no_such_mod" in u.what and "pretrain_gpt.py:3" in u.what
    assert u.decide == "python -c 'import torch.distributed.no_such_mod' in the job's environment"
    [finding] = [d for d in config.diagnostics if d.kind == "launch.import-unread-copy"]
    assert "class MyStage(Stage)" in finding.message


@pytest.mark.parametrize("change", [
    ("    Stage = None\n", "    Stage = object\n"),  # a real class: the statement runs either way
    ("class MyStage(Stage):", "class MyStage:"),  # the fallback is not subclassed
    ("from torch.distributed.no_such_mod import Stage", "from megatron.core.mpu import Stage"),  # a copy read
    # in every torch the rules judge (rules/torch.toml [released_modules]): the class statement runs
    ("from torch.distributed.no_such_mod import Stage", "from torch.distributed.fsdp import Stage"),
    ("from torch.distributed.no_such_mod import Stage", "from torch.distributed.fsdp.wrap import Stage"),
])
def test_a_fallback_that_cannot_stop_the_run_decides_nothing(tmp_path, monkeypatch, change):
    launch = megatron_checkout(tmp_path, TORCH_GUARDED.replace(*change))
    monkeypatch.chdir(tmp_path)
    config = read_launch(launch)
    assert errors(config) == [] and undecided(config) == []


def test_the_released_torch_modules_are_in_the_installed_torch():
    """rules/torch.toml [released_modules] against a real release (the installed torch)."""
    import importlib.util

    from auditor import rulebook

    listed = rulebook.load("torch").data["released_modules"]["modules"]
    assert [m for m in listed if importlib.util.find_spec(m) is None] == []


@pytest.mark.wheels
@pytest.mark.parametrize("version", ["0.9.0", "0.12.0", "0.15.0", "0.17.0", "0.19.2"])
def test_the_namespace_portions_are_what_megatron_core_wheels_ship(version):
    """rules/megatron-core.toml [namespace_portions]: no wheel makes megatron a regular package,
    and every folder one puts inside it is listed (a portion not listed would let an installed
    copy hold what the tree lacks, a false DOES NOT START)."""
    from auditor import rulebook, sources
    table = rulebook.load("megatron-core").data["namespace_portions"]
    megatron = Path(sources.resolve(f"megatron-core=={version}").root) / table["package"]
    assert not (megatron / "__init__.py").exists()
    shipped = {p.name for p in megatron.iterdir() if p.is_dir() and not p.name.startswith("__")}
    assert shipped and shipped <= set(table["portions"]), shipped
