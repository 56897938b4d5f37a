"""A cached module IR that does not read back (a cache is data that may come from a shared or CI
cache) is a miss: the file is parsed again and the analysis is the same, never a traceback."""

from __future__ import annotations

import json

import pytest

from auditor.errors import InputError
from auditor.static.analyze import FileCache, _entries_text
from tests.static.interp.test_callgraph import COMM, analyse

FILES = {"pkg/comm.py": COMM, "pkg/step.py": '''
    from pkg import comm
    def step(t):
        comm.unbatched(tensor=t, peer=1, group=None)
'''}
ENTRY = "from pkg.step import step\nstep(DATA)\n"


@pytest.mark.parametrize("broken", [
    "not json",  # not JSON
    "[1, 2]",  # JSON, not a module record
    ["a", "list"],  # not a text
    '{"functions": 1}',
])
def test_a_cached_ir_that_does_not_read_is_parsed_again(tmp_path, monkeypatch, broken):
    monkeypatch.setenv("P2PAUDIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(FileCache, "_open", {})
    fresh = analyse(tmp_path, FILES, ENTRY, {})
    planted = 0
    for path in (tmp_path / "cache" / "analysis").glob("*.json"):
        data = json.loads(path.read_text())
        for entry in data["entries"].values():
            if isinstance(entry[1], dict) and "ir" in entry[1]:
                entry[1]["ir"] = broken
                planted += 1
        path.write_text(json.dumps(data))
    assert planted
    monkeypatch.setattr(FileCache, "_open", {})
    assert analyse(tmp_path, FILES, ENTRY, {}) == fresh


@pytest.mark.parametrize("text", ['["unknown tag"]', "[1,"])
def test_a_cached_function_that_does_not_read_is_bad_input_never_a_function_skipped(
        tmp_path, monkeypatch, text):
    """INVALID: one function's text inside a readable module IR (read when first called) that does
    not read back stops the scan in one line naming the cache; before, an unknown tag made the
    function look absent (its calls and sites unreached) and a cut text raised a traceback."""
    monkeypatch.setenv("P2PAUDIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(FileCache, "_open", {})
    analyse(tmp_path, FILES, ENTRY, {})
    opened = dict(FileCache._open)
    planted = 0
    for path in (tmp_path / "cache" / "analysis").glob("*.json"):
        data = json.loads(path.read_text())
        for entry in data["entries"].values():
            if isinstance(entry[1], dict) and "ir" in entry[1]:
                module = json.loads(entry[1]["ir"])
                for functions in (f for f in module if isinstance(f, dict) and "step" in f):
                    functions["step"] = text
                    entry[1]["ir"] = json.dumps(module)
                    planted += 1
        # Sealed again as p2paudit itself would write it (an edit that is not resealed is a
        # miss: tests/hostile/test_cache_integrity.py): the reader of the IR is what is tested.
        data["seal"] = opened[str(path)]._seal(_entries_text(data["entries"]))
        path.write_text(json.dumps(data))
    assert planted == 1
    monkeypatch.setattr(FileCache, "_open", {})
    with pytest.raises(InputError, match="the analysis cache's IR of step does not read back"):
        analyse(tmp_path, FILES, ENTRY, {})
