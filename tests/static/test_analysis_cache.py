"""The per-file analysis cache holds data only (JSON), and a cache that cannot be used is bad
input: exit 2 with one line, never a traceback."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest

from auditor import sources
from auditor.errors import InputError
from auditor.static.analyze import FileCache
from auditor.static.parsed import task_key
from auditor.static.inventory import inventory

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "examples" / "glm5_1_lora_pp4.sh"

COMM = '''
import torch.distributed as dist

def unbatched(tensor, peer, group=None):
    if group is not None:
        return dist.isend(tensor, peer, group=group)
'''


@pytest.fixture
def project(tmp_path, monkeypatch) -> sources.SourceSet:
    """A one-file project, and an empty cache of its own."""
    monkeypatch.setenv("P2PAUDIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(FileCache, "_open", {})  # what this process loaded before: not ours
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "comm.py").write_text(dedent(COMM))
    return sources.resolve(str(root))


class _Planted:
    """Unpickling this creates a file: what a poisoned shared cache would do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_the_cache_is_json_and_a_planted_pickle_never_runs(project, tmp_path, monkeypatch):
    first = inventory(project, jobs=1)
    assert [s.api for s in first.sites] == ["isend"]
    path = Path(FileCache.open(project, task_key()).path)
    data = json.loads(path.read_text())
    assert data["format"] == FileCache.FORMAT and "pkg/comm.py" in data["entries"]

    monkeypatch.setattr(FileCache, "_open", {})
    marker = tmp_path / "pwned"
    path.write_bytes(pickle.dumps({"pkg/comm.py": _Planted(marker)}))
    again = inventory(project, jobs=1)
    assert not marker.exists()
    assert [s.api for s in again.sites] == ["isend"]
    assert again.analysis.cache_hits == 0  # not JSON of this format: a miss, parsed again
    assert json.loads(path.read_text())["format"] == FileCache.FORMAT  # and rewritten

    monkeypatch.setattr(FileCache, "_open", {})
    warm = inventory(project, jobs=1)
    assert warm.analysis.cache_hits == 2 and [s.to_json() for s in warm.sites] == [s.to_json() for s in first.sites]


def test_an_unwritable_analysis_dir_is_bad_input_naming_it(project, tmp_path):
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "analysis").write_text("a file where the cache wants a directory")
    with pytest.raises(InputError) as exc:
        inventory(project, jobs=1)
    assert "analysis" in exc.value.subject and "cannot write the analysis cache" in exc.value.cause


@pytest.mark.parametrize("cache", ["/dev/null", "/dev/null/p2paudit"])
def test_cli_with_a_cache_that_is_not_a_directory_exits_2_with_one_line(cache):
    proc = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(SEED)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "P2PAUDIT_CACHE": cache})
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert cache in proc.stderr and "/dev/null is not a directory" in proc.stderr


def test_the_interpreter_reads_the_ir_back_from_json_with_the_same_results(tmp_path, monkeypatch):
    from tests.static.interp.test_callgraph import COMM as CALLGRAPH_COMM, PATCH_TO_DEFAULT_GROUP, analyse

    monkeypatch.setenv("P2PAUDIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(FileCache, "_open", {})
    files = {"pkg/comm.py": CALLGRAPH_COMM, "pkg/patch.py": PATCH_TO_DEFAULT_GROUP, "pkg/step.py": '''
        from pkg import comm
        def step(config, t):
            for _ in range(2):
                if config.batch_p2p_comm and t is not None:
                    comm.batched(tensor=t, peer=1, group=None)
                else:
                    comm.unbatched(tensor=t, peer=1, group=None)
    '''}
    entry = "from pkg.patch import install\nfrom pkg.step import step\ninstall()\nstep(DATA, DATA)\n"
    fresh = analyse(tmp_path, files, entry, {"batch_p2p_comm": True})
    monkeypatch.setattr(FileCache, "_open", {})  # the next run loads the IR from the JSON file
    assert list((tmp_path / "cache" / "analysis").glob("*.json"))
    assert analyse(tmp_path, files, entry, {"batch_p2p_comm": True}) == fresh
