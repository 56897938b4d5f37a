"""`p2paudit export -o DIR` renames its tables into DIR: a table there that is a link or a device
is never replaced (issue 28 item 1, as for -o of every other command), and the JSON that `scan
--matrix` writes refuses a non-finite number as every other JSON writer does."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from auditor import jsonio
from auditor.cli import main as cli_main
from auditor.errors import EXIT_INPUT, InputError

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "record_fixtures" / "pipeline"


def test_export_never_replaces_a_linked_table(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    keep = tmp_path / "keep.parquet"
    keep.write_bytes(b"the user's own table")
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(keep, out / "ops.parquet")
    assert cli_main(["export", str(FIXTURE), "--format", "parquet", "-o", str(out)]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert "ops.parquet" in err and "not a regular file" in err and len(err.strip().splitlines()) == 1
    assert (out / "ops.parquet").is_symlink() and keep.read_bytes() == b"the user's own table"
    assert not list(out.glob(".*partial"))


@pytest.mark.parametrize("where", ["existing", "new", "nested"])
def test_export_that_cannot_write_is_one_line_and_leaves_nothing(tmp_path, where):
    """A file size limit (as a full disk or a read-only folder: the tables cannot be written).
    Before: "internal error: OSError: [Errno 27] ..." (a 64 KiB tmpfs: [Errno 28], a read-only
    bind mount: [Errno 30]), the folder made left behind. Now exit 2, one line naming the folder,
    the tables already there intact, no partial table, no folder made (nested: before turn 23
    the parents export made, new/a/b, were left)."""
    pytest.importorskip("pyarrow")
    out = tmp_path / "new" / "a" / "b" / "out" if where == "nested" else tmp_path / "out"
    if where == "existing":
        out.mkdir()
        (out / "ops.parquet").write_bytes(b"the last export")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    done = subprocess.run([sys.executable, "-m", "auditor", "export", str(FIXTURE), "-o", str(out)],
                          preexec_fn=limit, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == EXIT_INPUT, done.stderr
    assert done.stderr.strip() == (f"p2paudit export: error: {out}: cannot write the tables: File "
                                   "too large; nothing written, tables there left as they were")
    if where == "existing":
        assert sorted(p.name for p in out.iterdir()) == ["ops.parquet"]
        assert (out / "ops.parquet").read_bytes() == b"the last export"
    else:
        assert not (tmp_path / "new").exists() and not out.exists()


def test_an_export_refused_for_its_trace_makes_no_folder(tmp_path, capsys):
    """The trace is judged after -o is made (a folder that cannot be made is said before the
    long read); a trace refused then takes the folders export made away again."""
    pytest.importorskip("pyarrow")
    trace = tmp_path / "trace"
    trace.mkdir()
    (trace / "rank-0.jsonl").write_text("not a trace line\n")
    out = tmp_path / "new" / "out"
    assert cli_main(["export", str(trace), "-o", str(out)]) == EXIT_INPUT
    assert "rank-0.jsonl" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()


def test_the_json_writers_refuse_nan():
    with pytest.raises(InputError, match="NaN"):
        jsonio.dumps({"matrix": "k", "scans": {"1": {"t": float("nan")}}}, indent=2)


def test_a_failed_fix_apply_leaves_the_script_and_no_backup(tmp_path, monkeypatch):
    """`fix --apply` writes a backup, then the patched script as -o writes a file; when that
    write fails (a full filesystem), the script is as it was, no temporary file is left, and the
    backup goes too, so the next `fix` is not refused for an earlier backup."""
    from auditor.commands import fix, output

    script = tmp_path / "run.sh"
    script.write_text("export TORCH_DISTRIBUTED_DEBUG=DETAIL\n")

    def full(text, target, given, st):
        raise InputError(given, "cannot write the output: No space left on device")

    monkeypatch.setattr(fix, "replace_file", full)
    with pytest.raises(InputError, match="No space left"):
        fix._write(str(script), script.read_text(), "\n")
    assert script.read_text() == "export TORCH_DISTRIBUTED_DEBUG=DETAIL\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.sh"]
    monkeypatch.setattr(fix, "replace_file", output.replace_file)
    assert fix._write(str(script), script.read_text(), "\n") == str(script) + ".p2paudit-bak"
    assert script.read_text() == "\n"
