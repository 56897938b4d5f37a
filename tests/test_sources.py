"""Targets as a new user gives them: releases without a cp312 wheel, unknown projects, git
checkouts (no dist-info), `NAME=PATH`, and trees holding FIFOs or links out of the tree."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from auditor import download, sources
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


SMALL = "mcore-bridge==1.0.0"  # a 107 kB wheel


@pytest.fixture
def own_cache(tmp_path, release, monkeypatch):
    """A cache of its own holding the real wheel of SMALL, as a download leaves it (no record)."""
    release(SMALL)
    wheel = next((sources.cache_dir() / "downloads" / "mcore-bridge-1.0.0").glob("*.whl"))
    folder = tmp_path / "cache" / "downloads" / "mcore-bridge-1.0.0"
    folder.mkdir(parents=True)
    shutil.copy(wheel, folder / wheel.name)
    monkeypatch.setenv("P2PAUDIT_CACHE", str(tmp_path / "cache"))
    return folder / wheel.name


def test_a_cached_release_is_checked_against_the_index_and_recorded(own_cache):
    """VALID: the file the index publishes; its sha256 is recorded for the runs after."""
    src = sources.resolve(SMALL)
    assert (src.name, src.version) == ("mcore-bridge", "1.0.0")
    record = own_cache.with_name(own_cache.name + ".sha256")
    assert record.read_text().strip() == hashlib.sha256(own_cache.read_bytes()).hexdigest()


@pytest.mark.parametrize("damage", ["truncated", "replaced"])
@pytest.mark.parametrize("recorded", [False, True])
def test_a_truncated_or_replaced_cached_release_is_bad_input(own_cache, damage, recorded):
    """INVALID: a cut-off download or another file under the release's name is refused with one
    line naming the file, whether its sha256 was recorded yet or comes from the index now."""
    if recorded:
        sources.resolve(SMALL)
    data = own_cache.read_bytes()
    if damage == "truncated":
        own_cache.write_bytes(data[: len(data) // 2])
    else:  # a valid wheel, but not the published one: the same files, zipped again
        with zipfile.ZipFile(own_cache.with_suffix(".tmp"), "w") as out, zipfile.ZipFile(io.BytesIO(data)) as whl:
            for item in whl.infolist():
                out.writestr(item.filename, whl.read(item))
        own_cache.with_suffix(".tmp").replace(own_cache)
    with pytest.raises(InputError) as exc:
        sources.resolve(SMALL)
    assert exc.value.subject == str(own_cache)
    assert "is not the" in exc.value.cause and "publishes for this file" in exc.value.cause


def test_the_cli_names_a_damaged_cached_file_in_one_line(own_cache):
    own_cache.write_bytes(own_cache.read_bytes()[:-100])
    proc = subprocess.run([sys.executable, "-m", "auditor", "sites", SMALL], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ))
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and str(own_cache) in proc.stderr


def test_a_directory_is_listed_once(tmp_path, monkeypatch):
    """Its files and the metadata naming its release come from one walk: no directory is
    listed twice (a wheel unpacked in the cache is read the same way)."""
    root = tmp_path / "proj"
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "sub" / "mod.py").write_text("")
    (root / "pyproject.toml").write_text('[project]\nname = "proj"\nversion = "1.2"\n')
    listed: list[str] = []
    real = os.scandir

    def scandir(path="."):
        listed.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    src = sources.resolve(str(root))
    assert (src.name, src.version, src.files) == ("proj", "1.2", ["pkg/__init__.py", "pkg/sub/mod.py"])
    assert sorted(listed) == sorted({*listed}) and str(root) in listed


def test_offline_a_recorded_release_is_read_and_an_unrecorded_one_is_bad_input(own_cache):
    """Without network (a proxy nobody listens on): a file checked once is checked against its
    record; a file never checked cannot be, and is refused in one line naming the index."""
    offline = {**os.environ, "https_proxy": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}

    def sites() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "auditor", "sites", SMALL], capture_output=True,
                              text=True, timeout=300, env=offline)

    proc = sites()
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0
    assert f"cannot check {own_cache.name} against the sha256 {download.INDEX}" in proc.stderr
    sources.resolve(SMALL)
    assert sites().returncode == 0


def test_a_download_records_what_pip_checked_so_later_runs_need_no_index(release, tmp_path, monkeypatch):
    """A release downloaded into an empty cache gets its record at download time (pip checked
    the file against its index's hash): read again offline, it is checked, not refused."""
    monkeypatch.setenv("P2PAUDIT_CACHE", str(tmp_path / "cache"))
    sources.resolve(SMALL)
    wheel = next((tmp_path / "cache" / "downloads" / "mcore-bridge-1.0.0").glob("*.whl"))
    record = wheel.with_name(wheel.name + ".sha256")
    assert record.read_text().strip() == hashlib.sha256(wheel.read_bytes()).hexdigest()
    offline = {**os.environ, "https_proxy": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}
    proc = subprocess.run([sys.executable, "-m", "auditor", "sites", SMALL], capture_output=True,
                          text=True, timeout=300, env=offline)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("fragment, ok", [("", True), ("#sha256={good}", True), ("#sha256=" + "0" * 64, False)])
def test_a_fetched_file_is_checked_against_the_hash_its_link_carries(tmp_path, fragment, ok):
    """VALID: no hash in the link, or the right one; INVALID: another file's hash."""
    src = tmp_path / "src" / "pkg-1.0.tar.gz"
    src.parent.mkdir()
    src.write_bytes(b"not really an sdist")
    url = src.as_uri() + fragment.format(good=hashlib.sha256(src.read_bytes()).hexdigest())
    dest = tmp_path / "dest"
    dest.mkdir()
    if ok:  # without a hash in its link, the file is left for the index's check on its read
        assert download._fetch(url, dest, "pkg==1.0") is bool(fragment)
        assert (dest / src.name).read_bytes() == src.read_bytes()
    else:
        with pytest.raises(InputError, match="sha256 is not the index's"):
            download._fetch(url, dest, "pkg==1.0")


@pytest.mark.parametrize("holds", ["nothing", "an archive"])
def test_a_directory_without_python_files_is_bad_input_not_zero_sites(tmp_path, holds):
    """INVALID: a folder with nothing to analyse (an empty checkout, a downloads folder holding
    the wheel) is refused in one line, naming the archive to give instead; never '0 P2P sites'."""
    folder = tmp_path / "downloads"
    folder.mkdir()
    if holds == "an archive":
        (folder / "pkg-1.0-py3-none-any.whl").write_bytes(b"PK")
    with pytest.raises(InputError, match="no Python files under") as exc:
        sources.resolve(str(folder))
    assert ("give the archive itself (pkg-1.0-py3-none-any.whl)" in exc.value.cause) is (holds == "an archive")


@pytest.mark.parametrize("suffix", [".whl", ".zip"])
def test_an_archive_with_a_damaged_central_directory_is_bad_input(tmp_path, monkeypatch, suffix):
    """INVALID: the end record is whole (zipfile.is_zipfile says yes) but the central directory
    it points at is not: refused in one line naming the archive, as any unreadable archive is,
    whether a wheel or a zipped sdist; never a traceback."""
    monkeypatch.setenv("P2PAUDIT_CACHE", str(tmp_path / "cache"))
    archive = tmp_path / f"toyp2p-1.0{'-py3-none-any' if suffix == '.whl' else ''}{suffix}"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("toyp2p/__init__.py", "")
        zf.writestr("toyp2p-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: toyp2p\nVersion: 1.0\n")
    data = bytearray(archive.read_bytes())
    central = data.rindex(b"PK\x01\x02", 0, data.rindex(b"PK\x01\x02"))  # the first central entry
    data[central:central + 4] = b"XXXX"
    archive.write_bytes(bytes(data))
    assert zipfile.is_zipfile(archive)
    with pytest.raises(InputError, match="corrupt or unreadable archive") as exc:
        sources.resolve(str(archive))
    assert exc.value.subject == str(archive)
