"""A training script a command opens after its own `cd` to a directory of this checkout, where the
file is not: NVIDIA/NeMo@8cfedd7203462cb251a914e700e5605444277561 scripts/dit/dit_train.sh sets
DIR=`pwd` (:26) and runs `srun -l --container-image nvcr.io/nvidia/nemo:dev --container-mounts
"/home:/home" ... bash -c "cd ${DIR} ; python -u nemo/collections/diffusion/train.py --yes $*"`
(:28); 066e4b4f1b deleted that train.py, so every task exits 2. The `cd` names the directory the
command runs in, so the container's image (another root file system) is no other directory; a
working-directory option (`--container-workdir`, `#SBATCH --chdir`) or a scan standing outside
the checkout leaves it undecided.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.config.launch import parse_launch

DIT = """# Copyright header
#!/bin/bash
HEADER
#SBATCH -p your_partition --nodes=16 --gpus-per-node 8 --ntasks-per-node=8

export CUDA_DEVICE_MAX_CONNECTIONS=1

DIR=`pwd`

srun -l --container-image nvcr.io/nvidia/nemo:dev --container-mounts "/home:/home" \
--no-container-mount-home --mpi=pmix bash -c "cd ${DIR} ; python -u nemo/collections/diffusion/train.py --yes $*"
"""


def _checkout(root: Path, header: str = "", present: bool = False) -> Path:
    """NeMo's shape: setup.py at the root, nemo/collections/diffusion/ holding Python files, the
    launch script in scripts/dit/ beside the recipes' dit_train.py."""
    (root / "nemo" / "collections" / "diffusion").mkdir(parents=True)
    (root / "scripts" / "dit").mkdir(parents=True)
    (root / "setup.py").write_text("")
    (root / "nemo" / "collections" / "diffusion" / "__init__.py").write_text("")
    (root / "nemo" / "collections" / "diffusion" / "utils.py").write_text("")
    (root / "scripts" / "dit" / "dit_train.py").write_text("")
    if present:
        (root / "nemo" / "collections" / "diffusion" / "train.py").write_text(
            "from megatron.training import pretrain\nif __name__ == '__main__':\n    pretrain()\n")
    script = root / "scripts" / "dit" / "dit_train.sh"
    script.write_text(DIT.replace("HEADER", header))
    return script


def _errors(script: Path, monkeypatch: pytest.MonkeyPatch, cwd: Path) -> list:
    monkeypatch.chdir(cwd)
    config = parse_launch(script.read_text(), str(script))
    return [d for d in config.diagnostics if d.kind == "launch.entry-missing"]


def test_an_entry_absent_where_the_cd_moves_does_not_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    script = _checkout(tmp_path)
    [error] = _errors(script, monkeypatch, tmp_path)
    assert error.severity == "error" and error.detail["category"] == "config"
    assert error.detail["looked_for"] == str(tmp_path / "nemo/collections/diffusion/train.py")
    assert "where the script's `cd` moves it" in error.message and "can't open file" in error.message


def test_the_entry_there_is_no_stop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    assert _errors(_checkout(tmp_path, present=True), monkeypatch, tmp_path) == []


@pytest.mark.parametrize("header", ["#SBATCH --chdir=/lustre/nemo", "# srun --container-workdir=/opt/NeMo"])
def test_a_working_directory_given_leaves_it_undecided(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, header: str):
    assert _errors(_checkout(tmp_path, header), monkeypatch, tmp_path) == []


def test_a_scan_from_outside_the_checkout_says_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    script = _checkout(tmp_path / "nemo")
    (tmp_path / "elsewhere").mkdir()
    assert _errors(script, monkeypatch, tmp_path / "elsewhere") == []


# Review r45-scan: a pyxis mount whose destination may be the `cd` target (`${DIR}`, a directory
# above or under it) shows other files there than the checkout's: the directory is the mount's.


@pytest.mark.parametrize("mounts", ['"/lustre/nemo_src:${DIR}"', "/lustre/nemo_src:/", "$MOUNTS",
                                    '"/home:/home,/lustre/src:TARGET/nemo"', "/lustre/src:TARGET"])
def test_a_mount_over_the_cd_target_leaves_it_undecided(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mounts: str):
    script = _checkout(tmp_path)
    script.write_text(DIT.replace("HEADER", "").replace('"/home:/home"', mounts.replace("TARGET", str(tmp_path))))
    assert _errors(script, monkeypatch, tmp_path) == []


def test_a_mount_elsewhere_still_does_not_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    script = _checkout(tmp_path)
    script.write_text(DIT.replace("HEADER", "").replace('"/home:/home"', '"/home:/home,/lustre/data:/data:ro"'))
    assert len(_errors(script, monkeypatch, tmp_path)) == 1
