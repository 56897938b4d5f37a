"""`p2paudit sites` as a user runs it: output formats, and bad input naming the bad target."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

CONTRACT_SITE_FIELDS = {"id", "package", "path", "line", "function", "api", "batched", "group"}


def p2paudit(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None):
    return subprocess.run(
        [sys.executable, "-m", "auditor", *args],
        capture_output=True, text=True, env={**os.environ, **(env or {})}, cwd=cwd, timeout=300,
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    pkg = tmp_path / "proj" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "comm.py").write_text(
        "import torch.distributed as dist\n\n\ndef ping(t):\n    dist.send(t, 1)\n"
        "    dist.batch_isend_irecv([dist.P2POp(dist.irecv, t, 1)])\n"
    )
    (pkg / "broken.py").write_text("import torch.distributed as dist\ndef f(:\n    dist.send(t, 1)\n")
    (pkg / "latin1.py").write_bytes(b"import torch.distributed as dist\n# caf\xe9\ndist.send(t, 1)\n")
    return tmp_path / "proj"


def test_text_table_groups_by_file_with_counts(tree):
    proc = p2paudit("sites", str(tree))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "pkg/comm.py  (3 sites: 2 batched, 1 unbatched)" in out
    assert "UNBATCHED  group=default" in out
    assert "not analysed: proj pkg/broken.py: syntax error at line 2" in out
    assert "not analysed: proj pkg/latin1.py: not UTF-8 at line 2" in out
    assert "3 P2P sites (2 batched, 1 unbatched)" in out and "2 not analysable" in out


def test_a_file_in_the_encoding_its_coding_line_declares_is_analysed(tmp_path):
    """Python reads a `# -*- coding: latin-1 -*-` file in latin-1 (PEP 263), so its sites are
    the target's code, not 'not UTF-8' (h-explore found one missed)."""
    pkg = tmp_path / "proj" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "old.py").write_bytes(b"# -*- coding: latin-1 -*-\nimport torch.distributed as dist\n"
                                 b"# caf\xe9\ndef ping(t):\n    dist.send(t, 1)  # \xe9t\xe9\n")
    proc = p2paudit("sites", str(tmp_path / "proj"))
    assert proc.returncode == 0, proc.stderr
    assert "pkg/old.py  (1 site: 0 batched, 1 unbatched)" in proc.stdout, proc.stdout
    assert "0 not analysable" in proc.stdout


def test_json_follows_the_contract(tree, tmp_path):
    out_file = tmp_path / "sites.json"
    proc = p2paudit("sites", str(tree), "--format", "json", "-o", str(out_file))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out_file.read_text())
    assert doc["tool"]["name"] == "p2paudit"
    assert doc["targets"] == [{
        "name": "proj", "version": None, "source": "dir", "origin": str(tree),
        "label": f"{tree} (not recognised: no dist-info, PKG-INFO, pyproject or version file)",
        "roots": ["pkg"],
    }]
    assert len(doc["sites"]) == 3
    for site in doc["sites"]:
        assert CONTRACT_SITE_FIELDS <= set(site)
    first = doc["sites"][0]
    assert (first["id"], first["path"], first["line"], first["batched"]) == (
        "proj:pkg.comm.ping:send:0", "pkg/comm.py", 5, False,
    )
    assert len(doc["files"]["errors"]) == 2


def test_missing_path_is_one_line_and_exit_2(tmp_path):
    proc = p2paudit("sites", str(tmp_path / "nope"))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"p2paudit sites: error: {tmp_path / 'nope'}: no such file or directory"
    ]


def test_corrupt_wheel(tmp_path):
    bad = tmp_path / "megatron_core-0.17.0-py3-none-any.whl"
    bad.write_bytes(b"this is not a zip")
    proc = p2paudit("sites", str(bad))
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"p2paudit sites: error: {bad}: corrupt wheel: not a zip archive"


def test_truncated_wheel(tmp_path, real_sources):
    wheel = next((Path(real_sources["mcore-bridge"].root).parent.parent / "downloads").rglob("mcore_bridge-*.whl"))
    cut = tmp_path / wheel.name
    data = wheel.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    proc = p2paudit("sites", str(cut), env={"P2PAUDIT_CACHE": str(tmp_path / "cache")})
    assert proc.returncode == 2
    assert str(cut) in proc.stderr and "corrupt" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_unknown_release(tmp_path, release):  # asks the package index, as `release` does
    proc = p2paudit("sites", "megatron-core==0.0.999", env={"P2PAUDIT_CACHE": str(tmp_path)})
    assert proc.returncode == 2
    assert "megatron-core==0.0.999: no such release on the package index" in proc.stderr


def test_no_network(tmp_path):
    env = {
        "P2PAUDIT_CACHE": str(tmp_path),
        "PIP_CONFIG_FILE": os.devnull,  # no extra indexes or local wheel folders from pip.conf
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
        "PIP_FIND_LINKS": "",
        "PIP_EXTRA_INDEX_URL": "",
        "PIP_RETRIES": "0",
    }
    proc = p2paudit("sites", "mcore-bridge==1.4.1", env=env)
    assert proc.returncode == 2
    assert "mcore-bridge==1.4.1: no network: pip could not reach the package index" in proc.stderr


def test_unknown_installed_name():
    proc = p2paudit("sites", "no-such-distribution-xyz")
    assert proc.returncode == 2
    assert "no-such-distribution-xyz: not a path, not NAME==VERSION" in proc.stderr


def test_installed_distribution_target():
    # torch is installed here; its own distributed package names the P2P APIs it defines.
    proc = p2paudit("sites", "libcst", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["targets"][0]["source"] == "installed" and doc["sites"] == []


def test_wheel_is_never_imported(tmp_path):
    """A target whose import would fail loudly is still scanned: nothing of it is executed."""
    wheel = tmp_path / "boom-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("boom/__init__.py", "raise SystemExit('imported!')\nimport torch.distributed as d\nd.isend(t, 1)\n")
        zf.writestr("boom-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: boom\nVersion: 1.0\n")
    proc = p2paudit("sites", str(wheel), "--format", "json", env={"P2PAUDIT_CACHE": str(tmp_path / "c")})
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [(s["package"], s["path"], s["api"]) for s in doc["sites"]] == [("boom", "boom/__init__.py", "isend")]
    assert doc["targets"][0]["version"] == "1.0"


def test_a_syntax_error_is_reported_again_on_the_next_run(tree, tmp_path, monkeypatch):
    """Found in review: a file that failed to parse must not be cached as 'nothing here'."""
    from auditor.sources import resolve
    from auditor.static.interp.program import Program
    from auditor.static.inventory import inventory

    monkeypatch.setenv("P2PAUDIT_CACHE", str(tmp_path / "cache"))
    src = resolve(str(tree))
    program = Program([src], jobs=0)
    assert program.module("pkg.broken") is None  # the call graph meets it first
    program.close()
    for _ in range(2):
        assert "pkg/broken.py" in [e.path for e in inventory(src, jobs=1).analysis.errors]


def test_a_byte_order_mark_is_read_and_newer_syntax_is_named(tmp_path):
    """A BOM is valid source; syntax the running Python cannot parse is not analysed, with the
    Python that read it (the parse is the interpreter's own `ast`)."""
    pkg = tmp_path / "proj" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "bom.py").write_bytes(b"\xef\xbb\xbfimport torch.distributed as dist; dist.send(t, 1)\n")
    (pkg / "generic.py").write_text("import torch.distributed as dist\ntype Peer = int\n"
                                    "def f(t):\n    dist.send(t, 1)\n")
    proc = p2paudit("sites", str(tmp_path / "proj"))
    assert proc.returncode == 0, proc.stderr
    assert "pkg/bom.py  (1 site: 0 batched, 1 unbatched)" in proc.stdout
    if sys.version_info >= (3, 12):
        assert "pkg/generic.py  (1 site:" in proc.stdout
    else:
        assert (f"not analysed: proj pkg/generic.py: syntax error at line 2: invalid syntax "
                f"(as Python 3.{sys.version_info[1]} reads it)") in proc.stdout


def test_the_targets_compile_warnings_are_not_printed(tmp_path):
    """A target's invalid escape sequence (`"\\."` in ColossalAI 0.4.9, for one) is its own
    warning: the code is read, never run, and nothing of it reaches the user's stderr."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "comm.py").write_text('import torch.distributed as dist\nPATTERN = "a\\.b"\n'
                                 "def go(t):\n    dist.send(t, 1)\n")
    proc = p2paudit("sites", str(pkg), env={"P2PAUDIT_CACHE": str(tmp_path / "cache"),
                                             "PYTHONWARNINGS": "default"})
    assert proc.returncode == 0, proc.stderr
    assert "comm.py" in proc.stdout and "send" in proc.stdout
    assert "Warning" not in proc.stderr, proc.stderr
