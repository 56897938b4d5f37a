"""A recorded trace as two Parquet tables (`p2paudit export`), for an engine (DuckDB, Spark SQL,
pandas) where one machine cannot run `report` on it.

`OUT/ops.parquet`: one row per op (a start line, with its end line's fields when it has one):
  rank, file (the rank file: a restarted rank has several), host, pid, wall0 (time.time() when
  the process started recording: `wall0 + t` aligns ranks), seq, t (seconds), api, kind (p2p,
  collective, setup), batched, peer (global rank), group (its name: a row of groups.parquet with
  the same file and name), site_path, site_line, site_end_line, site_function (the call), the
  same four op_site_* (where a batched op's P2POp was built), via, batch, shape, dtype,
  comm_init_kind, comm_init_key (the op that creates a communicator under lazy init),
  end_seq, end_t, how (return, wait, polled, dropped, raise; null: the op never ended; an end a
  later line carries has that line's seq and t),
  end_error, extra (any other fields of the start line, as JSON; setup calls' arguments).
`OUT/groups.parquet`: one row per process group a process declared: rank, file, name, desc,
  backend, eager, size, ranks.

Lines are read as `report` reads them (auditor.dynamic.trace): a killed rank's file up to its
last whole line, with a note on stderr; a line that contradicts its file is exit 2. Files are
converted by worker processes and written by one, with pyarrow (the `parquet` extra). DuckDB's
read_ndjson writes the same tables in about half the time on a clean trace
(benchmarks/bench_export.py) but refuses the file of a killed rank (the zeros after its last
line, a cut last line) unless told to skip every malformed line of every file: the trace that
most needs reading would be refused, or silently shortened. Hang files are not exported.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from auditor.dynamic.rankfile import (
    KINDS,
    carried_ends,
    checked_lines,
    inconsistent,
    json_lines,
)
from auditor.dynamic.trace import per_rank_file, rank_files, read_trace_dir
from auditor.errors import InputError

SITE = ("path", "line", "end_line", "function")
# Start-line keys that have columns of their own; any other key goes to `extra`.
COLUMNS = {"seq", "t", "rank", "api", "phase", "kind", "batched", "peer", "group", "site",
           "op_site", "via", "batch", "shape", "dtype", "comm_init", "ends"}


def write_tables(trace: str, out: Path, jobs: int | None, note: Callable[[str], None],
                 refuse: Callable[[str], None]) -> tuple[int, int]:
    """OUT/ops.parquet and OUT/groups.parquet of the trace directory; each rank file's notes
    (a cut last line, a stopped recorder) go to `note`; `refuse` raises for a table path that is
    an input (inside the trace folder, once listed). Returns (ops, rank files)."""
    pa, pq = _pyarrow()
    files = sorted(rank_files(Path(trace)), key=lambda entry: (entry[1], entry[0].name))
    for name in ("ops.parquet", "groups.parquet"):
        refuse(str(out / name))
    if jobs is not None and jobs < 1:
        raise InputError("--jobs", f"must be at least 1, not {jobs}")
    if out.exists() and not out.is_dir():
        raise InputError(str(out), "exists and is not a directory")
    made = _missing(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _remove_empty(made)
        raise InputError(str(out), f"cannot make the output directory: {_cause(exc)}") from None
    for name in ("ops.parquet", "groups.parquet"):  # renamed over below: only a regular file
        target = out / name
        if target.is_symlink() or (target.exists() and not target.is_file()):
            raise InputError(str(target), "exists and is not a regular file (a link, a device, a "
                                          "folder): not replaced; give another -o directory")
    # Written under temporary names, renamed once whole: a failed export leaves no table that
    # looks complete.
    partial = {name: out / f".{name}.partial" for name in ("ops.parquet", "groups.parquet")}
    writers: list[Any] = []
    ops = 0
    try:
        # The one reader judges the trace first (every line, peers in their groups, one world,
        # one run), so that export refuses what `report` refuses, with the same line.
        read_trace_dir(trace, head_ops=0, jobs=jobs)
        workers = min(jobs or os.cpu_count() or 1, len(files))
        for *pair, notes in per_rank_file(convert_rank_file, files, workers):
            for line in notes:
                note(line)
            if not writers:
                writers = [pq.ParquetWriter(path, table.schema, compression="zstd")
                           for path, table in zip(partial.values(), pair)]
            for writer, table in zip(writers, pair):
                writer.write_table(table)
            ops += pair[0].num_rows
        while writers:
            writers.pop().close()  # flushes: a full disk may first show here
        for name, path in partial.items():
            os.replace(path, out / name)
    except BaseException as exc:
        for writer in writers:
            with contextlib.suppress(OSError):
                writer.close()
        with contextlib.suppress(OSError):  # a read-only folder refuses even to unlink nothing
            for path in partial.values():
                path.unlink(missing_ok=True)
        _remove_empty(made)
        if isinstance(exc, OSError):  # a read-only folder, a full disk, a file size limit
            raise InputError(str(out), f"cannot write the tables: {_cause(exc)}; nothing "
                                       "written, tables there left as they were") from None
        raise
    return ops, len(files)


def _missing(out: Path) -> list[Path]:
    """`out` and each of its parents that does not exist yet, innermost first: what export
    makes, and so what a failed export takes away again."""
    missing: list[Path] = []
    folder = out.absolute()
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def _remove_empty(folders: list[Path]) -> None:
    """Remove the folders export made (innermost first), each only while it is empty."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return


def _cause(exc: OSError) -> str:
    """The system's words for an OSError (pyarrow's add its own text around the errno)."""
    return os.strerror(exc.errno) if exc.errno else str(exc)


def _pyarrow() -> tuple[Any, Any]:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise InputError("--format parquet", "needs pyarrow: pip install 'p2paudit[parquet]'") \
            from None
    return pyarrow, pyarrow.parquet


def convert_rank_file(file: Path, rank: int) -> tuple[Any, Any, list[str]]:
    """One rank file as (ops table, groups table, notes). InputError where a line contradicts
    the file (another rank's line, a line that is not a trace line, an unknown group)."""
    pa, _ = _pyarrow()
    notes: list[str] = []
    rows: list[list[Any]] = []  # one per op, in START_COLUMNS + END_COLUMNS order
    by_seq: dict[int, list[Any]] = {}  # seq of a start not yet ended -> its row
    groups: list[list[Any]] = []  # GROUP_FIELDS of each group line
    named: set[str] = set()
    meta: dict[str, Any] = {}
    for number, event in checked_lines(file, rank, json_lines(file, notes), notes, meta):
        phase = event.get("phase")
        try:
            for of, how in carried_ends(event):  # ends carried by the line: its seq and t
                row = by_seq.pop(of, None)
                if row is not None:
                    row[-4:] = event["seq"], float(event["t"]), how, None
            if phase == "start":
                row = _start_row(event, named)
                rows.append(row)
                by_seq[row[0]] = row
            elif phase == "end":
                row = by_seq.pop(event["of"], None)
                if row is not None:
                    row[-4:] = event["seq"], float(event["t"]), event.get("how"), \
                        event.get("error")
            elif phase == "group":
                group = event["group"]
                named.add(str(group["name"]))
                groups.append([group.get(key) for key in GROUP_FIELDS])
            elif phase == "off":
                notes.append(f"{file.name}:{number}: the recorder stopped in this process "
                             f"({event.get('error')}): later ops are not in the trace")
            elif phase == "exception":  # how the process ended: no op (dynamic/ending.py)
                if event.get("main"):
                    notes.append(f"{file.name}:{number}: the process died of {event['error']}")
            elif phase != "exit":
                raise ValueError(f"phase {phase!r}")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise inconsistent(file, f"not a trace line ({exc})", number) from None
        except LookupError as exc:
            raise inconsistent(file, str(exc), number) from None
    process = {"rank": rank, "file": file.name, "host": meta.get("host"), "pid": meta.get("pid"),
               "wall0": meta.get("wall0")}
    op_columns = dict(zip(START_COLUMNS + END_COLUMNS, zip(*rows))) if rows else {}
    group_columns = dict(zip(GROUP_FIELDS, zip(*groups))) if groups else {}
    try:
        return (_table(pa, ops_schema(pa), op_columns, process, len(rows)),
                _table(pa, groups_schema(pa), group_columns, process, len(groups)), notes)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        raise inconsistent(file, f"a field of the wrong type ({exc})") from None


def _table(pa: Any, schema: Any, columns: dict[str, Any], process: dict[str, Any],
           rows: int) -> Any:
    """The columns as a table of `schema`; a column of the process (rank, file...) repeated."""
    arrays = [pa.array(columns[f.name], f.type) if f.name in columns
              else pa.array([process.get(f.name)] * rows, f.type) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)


# The columns read from a start line, then those from its end line (ops_schema has them all).
START_COLUMNS = ("seq", "t", "api", "kind", "batched", "peer", "group",
                 *(f"{prefix}_{k}" for prefix in ("site", "op_site") for k in SITE),
                 "via", "batch", "shape", "dtype", "comm_init_kind", "comm_init_key", "extra")
END_COLUMNS = ("end_seq", "end_t", "how", "end_error")
GROUP_FIELDS = ("name", "desc", "backend", "eager", "size", "ranks")
_NO_SITE = dict.fromkeys(SITE)
_NO_COMM: dict[str, Any] = {}


def _start_row(event: dict[str, Any], named: set[str]) -> list[Any]:
    kind = event.get("kind", "p2p")
    seq = event["seq"]
    api = event.get("api")
    if kind not in KINDS or type(api) is not str or type(seq) is not int:
        raise ValueError(f"kind {kind!r}, api {api!r}, seq {seq!r}")
    group = event.get("group")
    if type(group) is dict:  # traces of earlier recorders: the whole group in every op line
        group = str(group["name"])
    elif group is not None and group not in named:
        raise LookupError(f"group {group!r} is named before any line describes it")
    site = event.get("site") or _NO_SITE
    op_site = event.get("op_site") or _NO_SITE
    comm = event.get("comm_init") or _NO_COMM
    rest = {k: v for k, v in event.items() if k not in COLUMNS}
    return [seq, float(event["t"]), api, kind, event.get("batched"), event.get("peer"), group,
            site.get("path"), site.get("line"), site.get("end_line"), site.get("function"),
            op_site.get("path"), op_site.get("line"), op_site.get("end_line"),
            op_site.get("function"), event.get("via"), event.get("batch"), event.get("shape"),
            event.get("dtype"), comm.get("kind"), comm.get("key"),
            json.dumps(rest, separators=(",", ":")) if rest else None, None, None, None, None]


def ops_schema(pa: Any) -> Any:
    """The columns of ops.parquet (the module docstring says what each holds)."""
    string, i64, i32 = pa.string(), pa.int64(), pa.int32()
    sites = [(f"{prefix}_{k}", string if k in ("path", "function") else i32)
             for prefix in ("site", "op_site") for k in SITE]
    return pa.schema(
        [("rank", i32), ("file", string), ("host", string), ("pid", i64),
         ("wall0", pa.float64()), ("seq", i64), ("t", pa.float64()), ("api", string),
         ("kind", string), ("batched", pa.bool_()), ("peer", i32), ("group", string)]
        + sites
        + [("via", string), ("batch", i64), ("shape", pa.list_(i64)), ("dtype", string),
           ("comm_init_kind", string), ("comm_init_key", string), ("end_seq", i64),
           ("end_t", pa.float64()), ("how", string), ("end_error", string), ("extra", string)])


def groups_schema(pa: Any) -> Any:
    return pa.schema([("rank", pa.int32()), ("file", pa.string()), ("name", pa.string()),
                      ("desc", pa.string()), ("backend", pa.string()), ("eager", pa.bool_()),
                      ("size", pa.int32()), ("ranks", pa.list_(pa.int32()))])
