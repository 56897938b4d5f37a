"""Targets as a new user gives them: releases without a cp312 wheel, unknown projects, git
checkouts (no dist-info), `NAME=PATH`, and trees holding FIFOs or links out of the tree."""

from __future__ import annotations

import os
import shutil

import pytest

from auditor import sources
from auditor.errors import InputError
from auditor.static.inventory import inventory


def test_release_without_a_cp312_wheel_falls_back_to_another_wheel_tag(release):
    src = release("megatron-core==0.9.0")
    assert (src.kind, src.name, src.version) == ("wheel", "megatron-core", "0.9.0")


def test_release_with_only_an_sdist_falls_back_to_it(release):
    src = release("colossalai==0.4.9")
    assert (src.kind, src.name, src.version) == ("sdist", "colossalai", "0.4.9")


def test_unknown_project_says_so(release):
    with pytest.raises(InputError) as exc:
        release("p2paudit-no-such-project-zz9==1.0")
    assert exc.value.cause == "no such project on the package index"


def test_unknown_release_of_a_known_project_says_so(release):
    with pytest.raises(InputError) as exc:
        release("deepspeed==0.16.99")
    assert exc.value.cause.startswith("no such release on the package index")


@pytest.fixture
def checkout(tmp_path, release):
    """A Megatron-LM checkout: the megatron/ tree of the 0.17.0 release, no dist-info."""
    tree = release("megatron-core==0.17.0").root / "megatron"
    root = tmp_path / "Megatron-LM"
    shutil.copytree(tree / "core" / "pipeline_parallel", root / "megatron/core/pipeline_parallel")
    shutil.copy(tree / "core" / "package_info.py", root / "megatron/core/package_info.py")
    return root


def test_checkout_is_recognised_from_its_version_file(checkout):
    src = sources.resolve(str(checkout))
    assert (src.kind, src.name, src.version) == ("dir", "megatron-core", "0.17.0")
    assert src.label == f"megatron-core 0.17.0 at {checkout}"


def test_named_path_target(checkout, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.py").write_text("import torch.distributed as dist\ndist.send(t, 1)\n")
    unknown = sources.resolve(str(plain))
    assert unknown.label == f"{plain} (not recognised: no dist-info, PKG-INFO, pyproject or version file)"
    named = sources.resolve(f"ms-swift={plain}")
    assert (named.name, named.version, named.label) == ("ms-swift", None, f"ms-swift (version unknown) at {plain}")
    assert sources.resolve(f"megatron-core={checkout}").version == "0.17.0"
    with pytest.raises(InputError, match="no such file or directory"):
        sources.resolve(f"megatron-core={tmp_path / 'missing'}")


def test_fifos_devices_and_links_out_of_the_tree_are_skipped_unread(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.py").write_text("import torch.distributed as dist\ndist.send(t, 1)\n")
    os.mkfifo(root / "fifo.py")  # reading it would block forever
    outside = tmp_path / "secret.py"
    outside.write_text("import torch.distributed as dist\ndist.recv(t, 0)\n")
    (root / "leak.py").symlink_to(outside)
    (root / "inside.py").symlink_to(root / "a.py")
    (root / "null.py").symlink_to("/dev/null")
    inv = inventory(sources.resolve(str(root)))
    assert sorted((s.path, s.api) for s in inv.sites) == [("a.py", "send"), ("inside.py", "send")]
    skipped = {e.path: e.cause for e in inv.analysis.errors}
    assert skipped["fifo.py"] == "skipped: not a regular file (a FIFO, socket or device), not read"
    assert skipped["leak.py"].startswith("skipped: a symbolic link that leaves the target")
    assert skipped["null.py"].startswith("skipped: a symbolic link that leaves the target")
