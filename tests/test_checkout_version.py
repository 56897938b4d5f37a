"""auditor.checkout_version: the release a source checkout states about itself, read from its
files (never imported, git never run). The checkouts are written here in the shape of
pytorch/torchtitan v0.2.2 (73a0e697): pyproject.toml's `dynamic = ["version"]` with
`[tool.setuptools.dynamic] version = {file = "assets/version.txt"}`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from auditor.checkout_version import stated_release

PYPROJECT = """\
[project]
name = "torchtitan"
dynamic = ["version"]

[tool.setuptools.dynamic]
version = {file = "assets/version.txt"}
"""


def titan(root: Path, version_file: str | None = "0.2.2\n") -> Path:
    (root / "torchtitan").mkdir(parents=True)
    (root / "torchtitan" / "__init__.py").write_text("")
    (root / "pyproject.toml").write_text(PYPROJECT)
    if version_file is not None:
        (root / "assets").mkdir()
        (root / "assets" / "version.txt").write_text(version_file)
    return root


def test_the_version_file_the_pyproject_names(tmp_path):
    stated = stated_release(titan(tmp_path), "torchtitan", "torchtitan")
    assert stated.version == "0.2.2" and "assets/version.txt" in stated.how


def test_a_literal_dunder_version_when_the_pyproject_names_another_project(tmp_path):
    root = titan(tmp_path, version_file=None)
    (root / "pyproject.toml").write_text('[project]\nname = "other"\nversion = "9.0"\n')
    (root / "torchtitan" / "__init__.py").write_text('__version__ = "0.3.0"\n')
    assert stated_release(root, "torchtitan", "torchtitan").version == "0.3.0"


def test_nothing_stated_is_none(tmp_path):
    root = titan(tmp_path, version_file=None)
    assert stated_release(root, "torchtitan", "torchtitan").version is None


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root,
                   check=True, capture_output=True)


@pytest.mark.parametrize("tagged", [True, False])
def test_git_decides_only_at_a_release_tag(tmp_path, tagged):
    """A version file stays until the next release is cut: a HEAD past the tag is not 0.2.2."""
    root = titan(tmp_path)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "release")
    _git(root, "tag", "v0.2.2")
    if not tagged:
        (root / "torchtitan" / "train.py").write_text("# newer code\n")
        _git(root, "add", "-A")
        _git(root, "commit", "-qm", "after the release")
    stated = stated_release(root, "torchtitan", "torchtitan")
    assert stated.version == ("0.2.2" if tagged else None), stated.how
