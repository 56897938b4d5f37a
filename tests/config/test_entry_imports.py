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

from pathlib import Path

from auditor.analysis.undecided import undecided_inputs
from auditor.config.launch import read_launch

VAE_SH = """#!/bin/bash
#SBATCH --nodes=16 --ntasks-per-node=8
DIR=`pwd`
srun --container-image ${{IMAGE}} bash -c "cd ${{DIR}} ; {pythonpath}python -u nemo/collections/diffusion/vae/train_vae.py --yes $*"
"""

TRAIN_VAE = """
import torch
from autovae import VAEGenerator
from nemo.collections.diffusion.train import pretrain
from nemo.lightning.io.mixin import IOMixin
"""


def nemo_checkout(tmp_path: Path, pythonpath: str = "", train_vae: str = TRAIN_VAE) -> Path:
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
        "nemo/collections/diffusion/vae/train_vae.sh": VAE_SH.format(pythonpath=pythonpath),
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
    launch = nemo_checkout(tmp_path, pythonpath=f"PYTHONPATH={tmp_path} ")
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
