"""The cache and the sources it holds are checked, never trusted (issue 28 items 9, 10 and the
cache's low items).

Before: a directory named `NAME==VERSION` in the cwd was analysed (and imported by simulate)
instead of the release; an edited unpacked tree, an analysis-cache entry set to no sites, or an
archive repacked together with its `.sha256` record changed results silently; a 612 KB zip bomb
put 601 MB in the cache; ENOSPC while unpacking read "corrupt archive"; RECORD entries outside
the install folder were read; a folder where an analysis-cache file goes failed every later run;
interrupted runs left `unpacked/.tmp-*` and `p2paudit-dl-*` behind forever.

The packages here are ones this file writes: a module that calls `dist.send` the way
megatron-core's p2p_communication.py does (megatron/core/pipeline_parallel/p2p_communication.py,
NVIDIA/Megatron-LM core_v0.17.0), packed as a wheel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MODULE = "import torch.distributed as dist\n\n\ndef send_forward(t, peer):\n    dist.send(t, peer)\n"


def p2paudit(cache: Path, *args: str, cwd: Path = REPO, env: dict | None = None):
    full = {**os.environ, "PYTHONPATH": str(REPO), "P2PAUDIT_CACHE": str(cache), **(env or {})}
    return subprocess.run([sys.executable, "-m", "auditor", *args], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=300, check=False)


def sites_count(done: subprocess.CompletedProcess) -> int:
    assert done.returncode == 0, done.stderr
    return len(json.loads(done.stdout)["sites"])


def wheel(where: Path, name: str = "toyp2p", extra: dict[str, bytes] | None = None) -> Path:
    path = where / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"{name}/__init__.py", "")
        zf.writestr(f"{name}/p2p.py", MODULE)
        zf.writestr(f"{name}-1.0.dist-info/METADATA",
                    f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        for member, data in (extra or {}).items():
            zf.writestr(member, data)
    return path


@pytest.mark.wheels
def test_a_pin_is_a_release_even_where_a_folder_has_its_name(tmp_path: Path) -> None:
    """A clone saved as `megatron-core==0.17.0/` in the cwd is not the release."""
    shadow = tmp_path / "megatron-core==0.17.0" / "megatron" / "core"
    shadow.mkdir(parents=True)
    (shadow / "package_info.py").write_text("MAJOR, MINOR, PATCH = 0, 17, 0\n")
    (shadow / "evil.py").write_text(MODULE)
    done = p2paudit(Path.home() / ".cache" / "p2paudit", "sites", "megatron-core==0.17.0",
                    "--format", "json", cwd=tmp_path)
    doc = json.loads(done.stdout)
    assert done.returncode == 0, done.stderr
    assert doc["targets"][0]["source"] == "wheel"
    assert not any("evil.py" in s["path"] for s in doc["sites"]) and len(doc["sites"]) == 53


def test_an_edited_unpacked_tree_is_unpacked_again(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    whl = wheel(tmp_path)
    assert sites_count(p2paudit(cache, "sites", str(whl), "--format", "json")) == 1
    (tree,) = (cache / "unpacked").iterdir()
    (tree / "toyp2p" / "p2p.py").write_text("def send_forward(t, peer):\n    pass\n")
    (tree / "toyp2p" / "added.py").write_text(MODULE)
    done = p2paudit(cache, "sites", str(whl), "--format", "json")
    assert sites_count(done) == 1 and "no longer matches the archive" in done.stderr
    assert (tree / "toyp2p" / "p2p.py").read_text() == MODULE
    assert not (tree / "toyp2p" / "added.py").exists()


def test_an_edited_analysis_cache_entry_is_not_read(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    src = tmp_path / "src"
    src.mkdir()
    (src / "p2p.py").write_text(MODULE)
    assert sites_count(p2paudit(cache, "sites", str(src), "--format", "json")) == 1
    for entry_file in (cache / "analysis").iterdir():
        data = json.loads(entry_file.read_text())
        for entry in data["entries"].values():
            if isinstance(entry[1], dict) and entry[1].get("sites"):
                entry[1]["sites"] = []
        entry_file.write_text(json.dumps(data))
    assert sites_count(p2paudit(cache, "sites", str(src), "--format", "json")) == 1


def test_a_folder_where_an_analysis_cache_file_goes_is_replaced(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    src = tmp_path / "src"
    src.mkdir()
    (src / "p2p.py").write_text(MODULE)
    assert sites_count(p2paudit(cache, "sites", str(src), "--format", "json")) == 1
    for entry_file in list((cache / "analysis").iterdir()):
        entry_file.unlink()
        (entry_file / "nested").mkdir(parents=True)
    (src / "p2p2.py").write_text(MODULE)  # a change, so the cache is written again
    for _ in range(2):
        assert sites_count(p2paudit(cache, "sites", str(src), "--format", "json")) == 2


@pytest.mark.wheels
def test_a_record_beside_a_repacked_archive_does_not_vouch_for_it(tmp_path: Path) -> None:
    """The megatron-core 0.17.0 wheel with a module added and its `.sha256` rewritten to match:
    the package index is asked, and the file is refused."""
    real = Path.home() / ".cache" / "p2paudit" / "downloads" / "megatron-core-0.17.0"
    archives = list(real.glob("*.whl")) if real.is_dir() else []
    if not archives:  # download it once into the shared cache
        p2paudit(Path.home() / ".cache" / "p2paudit", "sites", "megatron-core==0.17.0")
        archives = list(real.glob("*.whl"))
    cache = tmp_path / "cache"
    folder = cache / "downloads" / "megatron-core-0.17.0"
    folder.mkdir(parents=True)
    copy = folder / archives[0].name
    shutil.copy(archives[0], copy)
    with zipfile.ZipFile(copy, "a") as zf:
        zf.writestr("megatron/core/injected.py", MODULE)
    from auditor.download import sha256
    (folder / (copy.name + ".sha256")).write_text(sha256(copy) + "\n")
    done = p2paudit(cache, "sites", "megatron-core==0.17.0")
    assert done.returncode == 2
    assert "is not the" in done.stderr and "the package index publishes" in done.stderr


def test_a_zip_bomb_is_not_unpacked(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    whl = wheel(tmp_path, extra={"toyp2p/zeros.py": b"#" + b"0" * (60 << 20)})
    assert whl.stat().st_size < 1 << 20
    done = p2paudit(cache, "sites", str(whl))
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert whl.name in done.stderr and "would expand" in done.stderr
    stored = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file()) if cache.exists() else 0
    assert stored < 1 << 20


@pytest.fixture
def small_fs(tmp_path: Path):
    if os.geteuid() != 0:
        pytest.skip("mounting a 256 KiB tmpfs needs root")
    where = tmp_path / f"small-{uuid.uuid4().hex[:6]}"
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(where)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_full_disk_while_unpacking_is_not_a_corrupt_archive(tmp_path: Path,
                                                              small_fs: Path) -> None:
    body = "".join(f"X{i} = {os.urandom(24).hex()!r}\n" for i in range(12_000)).encode()
    whl = wheel(tmp_path, extra={"toyp2p/big.py": body})  # ~800 KB that does not compress 100x
    done = p2paudit(small_fs / "cache", "sites", str(whl))
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "disk full while unpacking" in done.stderr and "corrupt" not in done.stderr


def test_record_entries_outside_the_install_folder_are_not_read(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "toyinst").mkdir(parents=True)
    (site / "toyinst" / "__init__.py").write_text("")
    outside = tmp_path / "outside.py"
    outside.write_text(MODULE)
    info = site / "toyinst-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toyinst\nVersion: 1.0\n")
    (info / "RECORD").write_text(f"toyinst/__init__.py,,\n{outside},,\n"
                                 f"toyinst/../../outside.py,,\ntoyinst-1.0.dist-info/RECORD,,\n")
    done = p2paudit(tmp_path / "cache", "sites", "toyinst", "--format", "json",
                    env={"PYTHONPATH": f"{REPO}{os.pathsep}{site}"})
    doc = json.loads(done.stdout)
    assert done.returncode == 0, done.stderr
    assert doc["sites"] == [] and doc["files"]["total"] == 1


def test_what_interrupted_runs_left_is_removed(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    temp = tmp_path / "tmp"
    old = time.time() - 7200
    leftovers = [cache / "unpacked" / ".tmp-abc123", temp / "p2paudit-dl-xyz"]
    fresh = cache / "unpacked" / ".tmp-running"
    for folder in [*leftovers, fresh]:
        folder.mkdir(parents=True)
        (folder / "part.py").write_text("x = 1\n")
    for folder in leftovers:
        os.utime(folder, (old, old))
    whl = wheel(tmp_path)
    assert sites_count(p2paudit(cache, "sites", str(whl), "--format", "json")) == 1
    assert not leftovers[0].exists() and fresh.exists()
    done = p2paudit(cache, "sites", "toyp2p==1.0", env={"TMPDIR": str(temp),
                                                        "PIP_INDEX_URL": "http://127.0.0.1:9/"})
    assert done.returncode == 2  # no such index: nothing downloaded, the old folder removed
    assert not leftovers[1].exists()
