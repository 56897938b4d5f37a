"""`p2paudit export`: recorded traces (real 4-rank gloo runs: tests/record_fixtures) as Parquet,
checked against what the trace reader makes of the same files, and the README's cluster-scale
queries run by DuckDB on the exported files."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from auditor.cli import main as cli_main
from auditor.report.parquet import convert_rank_file
from auditor.dynamic.trace import read_trace_dir
from auditor.errors import InputError
from tests.dynamic.test_record_unit import recorded  # noqa: F401  (the fixture: a 1-rank gloo world, recorded)

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "record_fixtures"


def export(trace: Path, out: Path, *extra: str) -> tuple[list[dict], list[dict]]:
    assert cli_main(["export", str(trace), "--format", "parquet", "-o", str(out), *extra]) == 0
    return (pq.read_table(out / "ops.parquet").to_pylist(),
            pq.read_table(out / "groups.parquet").to_pylist())


def site(row: dict, prefix: str = "site") -> tuple | None:
    if row[f"{prefix}_path"] is None:
        return None
    return tuple(row[f"{prefix}_{k}"] for k in ("path", "line", "end_line", "function"))


@pytest.mark.parametrize("name", ["pipeline", "hang", "killed", "megatron_pp4"])
def test_export_holds_every_op_the_reader_counts(name: str, tmp_path: Path) -> None:
    assert_export_reads_as_the_reader(FIXTURES / name, tmp_path / "out")


def test_ends_a_start_line_carries_are_exported_as_the_reader_reads_them(recorded, tmp_path):
    """A Work freed unwaited ends on the next start line (`ends`): its row gets that end."""
    import torch
    import torch.distributed as dist

    t = torch.ones(2)
    dist.broadcast(t, src=0, async_op=True)  # the Work is freed at once, never waited on
    dist.all_reduce(t)
    recorded.close()
    ops = assert_export_reads_as_the_reader(recorded.directory, tmp_path / "out")
    dropped, carrier = [r for r in ops if r["kind"] == "collective"]
    assert (dropped["api"], dropped["how"], dropped["end_seq"], dropped["end_t"]) == (
        "broadcast", "dropped", carrier["seq"], carrier["t"])
    assert carrier["extra"] is None  # `ends` is not a field of the carrying op


def test_a_hand_edited_ends_is_refused_by_export_as_by_the_reader(recorded, tmp_path):
    """INVALID: `ends` entries must be [seq, how]; export refuses what the reader refuses."""
    import torch
    import torch.distributed as dist

    t = torch.ones(2)
    dist.broadcast(t, src=0, async_op=True)
    dist.all_reduce(t)
    recorded.close()
    (file,) = recorded.directory.glob("rank-*.jsonl")
    lines = file.read_text().splitlines(keepends=True)
    n = next(i for i, line in enumerate(lines) if '"ends"' in line)
    event = json.loads(lines[n])
    event["ends"] = [[str(event["ends"][0][0]), "dropped"]]
    lines[n] = json.dumps(event) + "\n"
    file.write_text("".join(lines))
    with pytest.raises(InputError, match="not a trace line \\(ends"):
        read_trace_dir(recorded.directory)
    with pytest.raises(InputError, match="not a trace line \\(ends"):
        convert_rank_file(file, 0)


def assert_export_reads_as_the_reader(directory: Path, out: Path) -> list[dict]:
    ops, groups = export(directory, out, "--jobs", "2")
    trace = read_trace_dir(directory)
    for rank, rt in trace.ranks.items():
        mine = [r for r in ops if r["rank"] == rank]
        assert {r["file"] for r in mine} == {rt.path.name}
        assert [r["seq"] for r in mine] == sorted(r["seq"] for r in mine)
        # the reader's usage: ops per (kind, api, site, op_site, group, batched, via, peer)
        names = {g["name"]: i for i, g in enumerate(rt.groups)}
        usage = Counter((r["kind"], r["api"], site(r), site(r, "op_site"),
                         names[r["group"]] if r["group"] is not None else -1,
                         r["batched"], r["via"], r["peer"], r["batch"] is not None)
                        for r in mine if r["kind"] != "setup")
        assert usage == Counter({tuple(use): n for use, n in rt.usage.items()})
        # pending: the same ops, in the same order
        assert [r["seq"] for r in mine if r["how"] is None] == [e["seq"] for e in rt.pending()]
        ended = {e["seq"]: e["end"] for e in rt.head if e.get("phase") == "start" and e["end"]}
        for r in mine:
            if r["seq"] in ended:
                assert (r["end_seq"], r["how"]) == (ended[r["seq"]]["seq"], ended[r["seq"]]["how"])
        # groups: one row per group the process declared, with its members
        declared = [g for g in groups if g["rank"] == rank]
        assert [(g["name"], g["ranks"], g["size"]) for g in declared] == \
            [(g["name"], g["ranks"], g["size"]) for g in rt.groups]
        assert all(r["host"] == rt.meta["host"] and r["wall0"] == rt.meta["wall0"] for r in mine)
    return ops


def test_setup_calls_keep_their_arguments_in_extra(tmp_path: Path) -> None:
    ops, _ = export(FIXTURES / "pipeline", tmp_path / "out")
    init = next(r for r in ops if r["rank"] == 0 and r["api"] == "init_process_group")
    assert init["kind"] == "setup" and json.loads(init["extra"]) == {"backend": "gloo",
                                                                      "device_id": None}
    assert init["how"] == "return"


def test_a_killed_rank_exports_up_to_its_last_line_and_says_so(tmp_path: Path, capsys) -> None:
    trace = tmp_path / "trace"
    shutil.copytree(FIXTURES / "pipeline", trace)
    whole = (trace / "rank-1.jsonl").read_bytes()
    lines = whole.splitlines(keepends=True)
    cut = b"".join(lines[:20]) + lines[20][:15]  # a kill in the middle of line 21 ...
    (trace / "rank-1.jsonl").write_bytes(cut + bytes(4096))  # ... and the map's zeros after it
    ops, _ = export(trace, tmp_path / "out")
    err = capsys.readouterr().err
    assert "rank-1.jsonl:21: truncated last line (cut by a kill?), skipped" in err
    starts = [json.loads(x) for x in lines[:20] if b'"phase":"start"' in x]
    assert [r["seq"] for r in ops if r["rank"] == 1] == [e["seq"] for e in starts]


@pytest.mark.parametrize("damage, says", [
    (lambda text: re.sub(r'("seq":5,"t":[^,]*,"rank":)2', r"\g<1>3", text),
     "rank-2.jsonl:6: the trace is inconsistent: a line of rank 3 in the file of rank 2"),
    (lambda text: text.replace('"rank":2,', '"rank":3,', 1), "it holds the trace of rank 3"),
    (lambda text: text.replace('"phase":"end"', '"phase":"finish"', 1),
     "not a trace line (phase 'finish')"),
    (lambda text: text.replace('"group":"0"', '"group":"no-such"', 1),
     "group 'no-such' is named before any line describes it"),
    (lambda text: text.replace('"peer":1', '"peer":"one"', 1), "not a trace line (peer 'one')"),
])
def test_a_trace_that_contradicts_itself_is_exit_2(damage, says, tmp_path: Path, capsys) -> None:
    trace = tmp_path / "trace"
    shutil.copytree(FIXTURES / "pipeline", trace)
    path = trace / "rank-2.jsonl"
    text = path.read_text()
    assert damage(text) != text
    path.write_text(damage(text))
    assert cli_main(["export", str(trace), "-o", str(tmp_path / "out"), "--jobs", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "rank-2.jsonl" in err[0] and says in err[0], err
    assert not (tmp_path / "out").exists()  # ranks 0 and 1 were written, then removed, and the folder export made


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "file").write_text("x")
    assert cli_main(["export", str(tmp_path / "nope"), "-o", str(tmp_path / "o")]) == 2
    assert cli_main(["export", str(tmp_path / "empty"), "-o", str(tmp_path / "o")]) == 2
    assert cli_main(["export", str(FIXTURES / "pipeline"), "-o", str(tmp_path / "file")]) == 2
    assert cli_main(["export", str(FIXTURES / "pipeline" / "rank-0.jsonl"), "-o",
                     str(tmp_path / "o")]) == 2
    assert cli_main(["export", str(FIXTURES / "pipeline"), "-o", str(tmp_path / "o"),
                     "--jobs", "0"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 5 and all(line.startswith("p2paudit export: error: ") for line in err)
    assert "no such trace directory" in err[0] and "no rank-N.jsonl trace files" in err[1]
    assert "is not a directory" in err[2] and "--jobs: must be at least 1" in err[4]
    assert f"a file, not a trace directory: give {FIXTURES / 'pipeline'}" in err[3]
    with pytest.raises(SystemExit):
        cli_main(["export", str(FIXTURES / "pipeline"), "--format", "Parquet", "-o", "x"])


def test_without_pyarrow_it_says_what_to_install(tmp_path: Path) -> None:
    # pyarrow made unimportable in a fresh process, the way a missing package fails
    code = ("import sys; sys.modules['pyarrow'] = None\n"
            "from auditor.cli import main\n"
            f"sys.exit(main(['export', {str(FIXTURES / 'pipeline')!r}, '-o', "
            f"{str(tmp_path / 'out')!r}]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert out.returncode == 2
    assert out.stderr.strip() == ("p2paudit export: error: --format parquet: needs pyarrow: "
                                  "pip install 'p2paudit[parquet]'")
    assert not (tmp_path / "out").exists()


def readme_queries() -> list[str]:
    text = (ROOT / "docs" / "traces.md").read_text()
    section = text[text.index("## At cluster scale"):]
    block = re.search(r"```sql\n(.*?)```", section, re.S).group(1)
    return [q.strip() for q in block.split(";") if q.strip()]


def test_readme_queries_answer_what_the_reader_says(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    out = tmp_path / "out"
    export(FIXTURES / "hang", out)
    trace = read_trace_dir(FIXTURES / "hang")
    fired, pending = readme_queries()
    con = duckdb.connect()
    con.execute(f"SET file_search_path = '{tmp_path}'")
    rows = con.execute(fired).fetchall()
    counted: Counter = Counter()
    for rank, rt in trace.ranks.items():
        for use, n in rt.usage.items():
            counted[(rank, use.site[0], use.site[1], use.api, rt.groups[use.group]["name"],
                     use.batched, use.via, use.peer)] += n
    assert Counter({row[:-1]: row[-1] for row in rows}) == counted
    rows = con.execute(pending).fetchall()
    want = [(rank, e["seq"], e["api"], e["peer"], e["group"]["desc"] if e["group"] else None,
             e["group"]["ranks"] if e["group"] else None, e["site"]["path"], e["site"]["line"])
            for rank, rt in trace.ranks.items() for e in rt.pending()]
    assert rows == want and len(want) == 3


@pytest.mark.parametrize("edit", ["peer outside its group", "world of another size"])
def test_a_trace_the_reader_refuses_is_not_exported(tmp_path: Path, capsys, edit: str) -> None:
    """INVALID: a line that contradicts the trace (a peer its group does not hold; a rank file
    of a run of another world size) is refused by export as by `report`, exit 2, no table."""
    trace = tmp_path / "trace"
    shutil.copytree(FIXTURES / "pipeline", trace)
    rank0 = trace / "rank-0.jsonl"
    lines = rank0.read_text().splitlines(keepends=True)
    for n, line in enumerate(lines):
        event = json.loads(line)
        if edit == "peer outside its group" and event.get("phase") == "start" and \
                type(event.get("peer")) is int:
            event["peer"] = 99
        elif edit == "world of another size" and event.get("phase") == "meta":
            event["world_size"] = 64
        else:
            continue
        lines[n] = json.dumps(event) + "\n"
        break
    rank0.write_text("".join(lines))
    with pytest.raises(InputError):
        read_trace_dir(trace)
    assert cli_main(["export", str(trace), "-o", str(tmp_path / "out")]) == 2
    assert "the trace is inconsistent" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # the tables written, then removed, and the folder export made
