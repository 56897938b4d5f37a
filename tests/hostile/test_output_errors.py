"""Issue 28's Low items about what reaches the user: control characters from inputs shown, never
obeyed; NaN/Infinity never written as "JSON"; bad input (a deeply nested document, a bad flag)
one line naming it, not an internal error or a usage block; SARIF URIs valid whatever a script's
path holds; SIGTERM unwinds like Ctrl-C.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from auditor import cli
from auditor.errors import EXIT_INPUT
from auditor.report.sarif import to_sarif

ROOT = Path(__file__).resolve().parents[2]
TOY = ROOT / "tests" / "record_fixtures" / "toy_pipeline.py"
PIPELINE = ROOT / "tests" / "record_fixtures" / "pipeline"
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def strict(text: str):
    """JSON as every reader but Python's reads it: no NaN, no Infinity."""
    def refuse(name: str):
        raise ValueError(f"{name} is not JSON")
    return json.loads(text, parse_constant=refuse)


def test_an_escape_in_a_target_path_is_shown_not_obeyed(tmp_path, capsys):
    """A directory name that erases the line and prints CLEAN, as a cloned repo can hold."""
    evil = tmp_path / "x\x1b[2K\rCLEAN\x07"
    evil.mkdir()
    shutil.copy(TOY, evil / TOY.name)
    assert cli.main(["sites", str(evil)]) == 0
    out, err = capsys.readouterr()
    assert "\\x1b[2K\\rCLEAN\\x07" in out + err
    assert not CONTROL.search(out) and not CONTROL.search(err)


def test_an_escape_in_an_error_line_is_shown_not_obeyed(tmp_path, capsys):
    script = str(tmp_path / "run\x1b]0;pwned\x07\x9b.sh")
    assert cli.main(["scan", "--config", script, "--torch", "2.10.0"]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert "run\\x1b]0;pwned\\x07\\x9b.sh" in err and not CONTROL.search(err)


@pytest.fixture
def nan_trace(tmp_path: Path) -> tuple[Path, Path]:
    """The recorded toy pipeline with one op's time NaN (Python's json reads it, writes it)."""
    trace = Path(shutil.copytree(PIPELINE, tmp_path / "trace"))
    rank = trace / "rank-1.jsonl"
    lines = rank.read_text().splitlines()
    i = next(i for i, ln in enumerate(lines) if '"api":"recv"' in ln and '"phase":"start"' in ln)
    lines[i] = re.sub(r'"t":[0-9.]+', '"t":NaN', lines[i], count=1)
    rank.write_text("\n".join(lines) + "\n")
    doc = tmp_path / "sites.json"
    assert cli.main(["sites", str(TOY), "--format", "json", "-o", str(doc)]) == 0
    return doc, trace


@pytest.mark.parametrize("fmt", ["json", "perfetto"])
def test_nan_never_reaches_a_json_file(tmp_path, nan_trace, capsys, fmt):
    doc, trace = nan_trace
    out = tmp_path / f"out.{fmt}"
    capsys.readouterr()
    code = cli.main(["report", "--scan", str(doc), "--trace", str(trace), "--format", fmt,
                     "-o", str(out)])
    err = capsys.readouterr().err
    if code == EXIT_INPUT:  # refused: one line, naming the value, nothing written
        assert "NaN" in err and "internal error" not in err and not out.exists()
    else:
        strict(out.read_text())


def test_a_deeply_nested_document_is_one_input_line(tmp_path, capsys):
    deep = tmp_path / "deep.json"
    deep.write_text('{"sites": [], "targets": [], "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert cli.main(["diff", str(deep), str(deep)]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(deep) in err and "internal error" not in err


def test_nan_in_a_document_is_refused_by_name(tmp_path, capsys):
    doc = tmp_path / "nan.json"
    doc.write_text('{"sites": [], "targets": [], "x": NaN}')
    assert cli.main(["diff", str(doc), str(doc)]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert str(doc) in err and "NaN" in err and "internal error" not in err


@pytest.mark.parametrize("argv", [["scan"], ["scan", "--config"], ["sites", "--format", "xml", "x"],
                                  ["report", "--bogus"]])
def test_a_usage_error_is_one_line(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == EXIT_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"p2paudit {argv[0]}: error: "), err


def test_sarif_uris_are_valid_whatever_a_path_holds():
    """Paths a script or trace names (spaces, '#', '%', a scheme-like 'javascript:', an absolute
    path, an escape) become RFC 3986 URI references that decode back to the path."""
    from urllib.parse import unquote, urlsplit
    odd = ["run dir/train #1.sh", "javascript:alert(1).sh", "100%.sh", "a\x1b[2Kb.sh", "/abs/x y.sh"]
    doc = {"sites": [{"id": "s1", "path": "pkg dir/p2p#x.py", "line": 3, "api": "send",
                      "function": "f", "package": "megatron-core"}],
           "findings": [{"kind": "k", "severity": "error", "message": "m", "site_ids": [],
                         "where": f"{p}:7"} for p in odd]
           + [{"kind": "k", "severity": "error", "message": "m", "site_ids": ["s1"]}],
           "targets": []}
    sarif = to_sarif(doc)
    uri_chars = re.compile(r"^[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+$")
    locations = [r["locations"][0]["physicalLocation"]["artifactLocation"]
                 for r in sarif["runs"][0]["results"]]
    for path, loc in zip([*odd, "pkg dir/p2p#x.py"], locations):
        uri = loc["uri"]
        assert uri_chars.match(uri), uri
        if path.startswith("/"):
            assert uri.startswith("file:///") and "uriBaseId" not in loc
            assert unquote(urlsplit(uri).path) == path
        else:
            assert urlsplit(uri).scheme == "" and unquote(uri) == path, uri


def test_sigterm_unwinds_as_ctrl_c(tmp_path):
    """A run ended by SIGTERM (a CI timeout, a job scheduler) says so and exits 143, its
    cleanups run, rather than vanishing with its temporary files left."""
    (tmp_path / "tgt").mkdir()
    shutil.copy(TOY, tmp_path / "tgt")
    proc = subprocess.Popen([sys.executable, "-m", "auditor", "scan", "--config", "/dev/stdin",
                             "--torch", "2.10.0", "--target", str(tmp_path / "tgt")],
                            stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    wchan = Path(f"/proc/{proc.pid}/wchan")
    deadline = time.monotonic() + 30
    while "pipe" not in wchan.read_text() and time.monotonic() < deadline:  # reading the script
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM
    assert err == "p2paudit scan: terminated\n"
