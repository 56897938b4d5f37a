"""A torchtitan launch from its clone (`cd torchtitan && CONFIG_FILE=... ./run_train.sh`, its
README) is judged on the release the clone states, not on releases chosen for an unstated one.

The checkouts below are built here in torchtitan's layout (pytorch/torchtitan v0.2.2 73a0e697:
pyproject.toml `[tool.setuptools.dynamic] version = {file = "assets/version.txt"}`,
assets/version.txt `0.2.2`, torchtitan/__init__.py asking importlib.metadata for its version,
run_train.sh's torchrun line); their .git is written as git writes a clone's (HEAD, packed-refs
with a lightweight release tag), since git is read from its files, not run."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor import sources
from auditor.config.launch import read_launch
from auditor.scan import ScanInputs, run_scan
from tests.titan.test_titan_scan import RUN_TRAIN_022, script
from tests.test_checkout_version import PYPROJECT
from tests.titan.test_titan_scan_decided import LLAMA3_8B_TOML, PIPELINING

# torchtitan/__init__.py (v0.2.2): no literal version, so it states none by itself.
INIT = """\
from importlib.metadata import version
try:
    __version__ = version("torchtitan")
except Exception:
    __version__ = "0.0.0+unknown"
"""
TAGGED = "73a0e6979dd10b6b1904098eb3c8f62c18ab87ce"  # v0.2.2
LATER = "b5bcd76c66d0f5ef7f0d1d8f0a7a9f1c2b3d4e5f"  # a commit on main after it


def checkout(root: Path, *, version: str | None = "0.2.2", head: str | None = None) -> str:
    """A torchtitan clone at `root` with PP 2 on run_train.sh's command line; its launch script."""
    (root / "torchtitan").mkdir(parents=True)
    (root / "torchtitan/__init__.py").write_text(INIT)
    if version is not None:
        (root / "pyproject.toml").write_text(PYPROJECT)
        (root / "assets").mkdir()
        (root / "assets/version.txt").write_text(version + "\n")
    if head is not None:
        (root / ".git/refs/tags").mkdir(parents=True)
        (root / ".git/HEAD").write_text("ref: refs/heads/main\n")
        (root / ".git/packed-refs").write_text(
            f"# pack-refs with: peeled fully-peeled sorted \n{head} refs/heads/main\n"
            f"{TAGGED} refs/tags/v0.2.2\n4f9e9a47d49dfbcac960857dd67748c67aecd2e5 refs/tags/ciflow/rocm/1\n")
    toml = root / "torchtitan/models/llama3/train_configs/llama3_8b.toml"
    toml.parent.mkdir(parents=True)
    toml.write_text(LLAMA3_8B_TOML)
    return script(root, RUN_TRAIN_022, "--parallelism.pipeline_parallel_degree 2")


def _said(launch, kind: str) -> list:
    return [d for d in launch.diagnostics if d.kind == kind]


def test_a_clone_s_version_file_is_the_release_judged(tmp_path):
    launch = read_launch(checkout(tmp_path))
    assert launch.pins["torchtitan"] == "0.2.2"
    said = _said(launch, "launch.checkout-release")
    assert len(said) == 1 and "assets/version.txt" in said[0].message and said[0].severity == "info"


def test_git_head_at_the_release_tag_is_that_release(tmp_path):
    launch = read_launch(checkout(tmp_path, head=TAGGED))
    assert launch.pins["torchtitan"] == "0.2.2"
    assert "tag v0.2.2" in _said(launch, "launch.checkout-release")[0].message


@pytest.mark.parametrize("version,head", [(None, None), ("0.2.2", LATER)])
def test_a_clone_that_states_no_release_leaves_it_undecided(tmp_path, version, head):
    """No version anywhere, or a version file left at 0.2.2 by a HEAD past the v0.2.2 tag (main
    b5bcd76c's assets/version.txt says 0.2.2 while it is 0.3.0's code): unknown, with --target."""
    launch = read_launch(checkout(tmp_path, version=version, head=head))
    assert "torchtitan" not in launch.pins
    said = _said(launch, "launch.checkout-unversioned")
    assert len(said) == 1 and said[0].detail["decide"] == "--target torchtitan==VERSION"
    assert ("no release tag" in said[0].message) == (head is not None)


def test_a_folder_without_init_is_no_checkout(tmp_path):
    """A namespace folder (job configs only) does not shadow the installed release."""
    path = checkout(tmp_path)
    (tmp_path / "torchtitan/__init__.py").unlink()
    launch = read_launch(path)
    assert "torchtitan" not in launch.pins and not _said(launch, "launch.checkout-release")


def test_a_comment_pin_wins_over_the_clone(tmp_path):
    path = Path(checkout(tmp_path))
    path.write_text("# torchtitan==0.1.0\n" + path.read_text())
    launch = read_launch(str(path))
    assert launch.pins["torchtitan"] == "0.1.0" and not _said(launch, "launch.checkout-release")


@pytest.mark.wheels
def test_readme_launch_from_a_clone_without_target_reaches_the_schedule(tmp_path):
    doc = run_scan(ScanInputs(checkout(tmp_path, head=TAGGED), torch_version="2.13.0", jobs=1))
    assert {(t["name"], t["version"]) for t in doc["targets"]} >= {("torchtitan", "0.2.2")}
    assert "release_basis" not in doc["config"]  # one release, not newest and oldest
    torch_sites = [s for s in doc["sites"] if s["package"] == "torch"]
    assert torch_sites and all(s["path"].startswith(PIPELINING) and s["reachable"] == "yes" for s in torch_sites)
    assert "the order of the stage ops is left to `p2paudit simulate" in doc["verdict"]["headline"]


@pytest.mark.parametrize("head,version", [(None, "0.2.2"), (TAGGED, "0.2.2"), (LATER, None)])
def test_a_clone_given_as_target_is_read_at_the_release_it_states(tmp_path, head, version):
    """`--target .` and `--target torchtitan` (the package folder) in the clone: the release its
    pyproject's dynamic version file states, unless git's HEAD is no release tag."""
    checkout(tmp_path, head=head)
    for target in (tmp_path, tmp_path / "torchtitan"):
        src = sources.resolve(str(target))
        assert (src.name, src.version, src.recognised) == ("torchtitan", version, True)


def test_a_release_target_settles_what_the_clone_says(tmp_path):
    """--target torchtitan==X decides the release: the clone's word is not the run's."""
    from auditor.scan import read_config
    launch, _ = read_config(checkout(tmp_path, head=LATER), ["torchtitan==0.2.2"])
    assert not _said(launch, "launch.checkout-unversioned") and not _said(launch, "launch.checkout-release")


def test_the_package_folder_as_target_reads_the_job_config(tmp_path):
    """The TOML job config's defaults are read from the release's torchtitan/config/job_config.py,
    relative to the folder holding `torchtitan/`, also where the target is that package folder."""
    from auditor.scan import read_config
    path = checkout(tmp_path)
    (tmp_path / "torchtitan/config").mkdir()
    # torchtitan v0.2.2 torchtitan/config/job_config.py: its sections' dataclasses, a field each.
    (tmp_path / "torchtitan/config/job_config.py").write_text(
        "from dataclasses import dataclass\n"
        + "".join(f"\n@dataclass\nclass {c}:\n    {f}\n" for c, f in [
            ("Job", "config_file: str | None = None"), ("Model", 'name: str = "llama3"'),
            ("Training", "local_batch_size: int = 8"), ("Comm", 'mode: str = "default"'),
            ("Parallelism", 'pipeline_parallel_schedule: str = "1F1B"')]))
    launch, _ = read_config(path, [str(tmp_path / "torchtitan")])
    assert not _said(launch, "launch.config-file-unread"), _said(launch, "launch.config-file-unread")
    assert launch.flags["parallelism.pipeline_parallel_schedule"].value == "1F1B"


@pytest.mark.wheels
def test_a_clone_past_its_tag_scanned_without_target_says_which_release_is_unknown(tmp_path):
    """The releases judged in its place (newest and oldest verified) do not settle it: the
    verdict names the checkout's release as undecided, with --target as the step."""
    doc = run_scan(ScanInputs(checkout(tmp_path, head=LATER), torch_version="2.13.0", jobs=1))
    assert "release_basis" in doc["config"]
    undecided = [u for u in doc["verdict"]["undecided"] if u["decide"] == "--target torchtitan==VERSION"]
    assert len(undecided) == 1 and "no release tag" in undecided[0]["what"], doc["verdict"]["undecided"]
