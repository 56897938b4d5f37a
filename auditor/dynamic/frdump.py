"""Flight Recorder dump files read as plain data: one file per rank (JSON, or a pickle unpickled
with nothing but plain types allowed, so a dump cannot run code), its rank from its name, its
version checked against the format this package knows."""

from __future__ import annotations

import io
import json
import os
import pickle
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from auditor import reads
from auditor.errors import InputError

SUFFIXES = (".json", ".pkl", ".pickle")
RANK_AT_END = re.compile(r"(\d+)$")
KNOWN_MAJOR = "2"


@dataclass
class Dump:
    """One rank's file, as read."""

    rank: int
    path: Path
    version: str
    entries: list[dict[str, Any]]
    pg_config: dict[str, Any] = field(default_factory=dict)
    pg_status: dict[str, Any] = field(default_factory=dict)
    comm_lib_version: str = ""


class _Refused(pickle.UnpicklingError):
    pass


class _PlainData(pickle.Unpickler):
    """Admits only what the pickle opcodes build themselves (dicts, lists, tuples, str, bytes,
    numbers, bool, None): dumps come from other machines, and a pickle naming any class or
    function could run code on this one."""

    def find_class(self, module: str, name: str) -> Any:
        raise _Refused(f"it names {module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        raise _Refused("it holds a persistent id")


PLAIN = (dict, list, tuple, str, bytes, int, float, bool, type(None))


def _check_plain(value: Any, path: Path) -> None:
    """Each object once, by identity: a pickle can make a list hold itself, or share one list a
    billion ways in a few hundred bytes."""
    todo = [value]
    seen: set[int] = set()
    while todo:
        item = todo.pop()
        if not isinstance(item, PLAIN):
            raise InputError(str(path), f"pickle holds a {type(item).__name__}, not plain data: refused")
        if isinstance(item, (dict, list, tuple)):
            if id(item) in seen:
                continue
            seen.add(id(item))
        if isinstance(item, dict):
            todo.extend(item.keys())
            todo.extend(item.values())
        elif isinstance(item, (list, tuple)):
            todo.extend(item)


def load_dump_file(path: Path) -> Any:
    """The file's data: JSON, or a pickle read through `_PlainData`; InputError for anything else."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror or exc}") from None
    head = raw.lstrip()[:1]
    if head == b"{":
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise InputError(str(path), f"not a JSON Flight Recorder dump: {exc}") from None
        except RecursionError:
            raise InputError(str(path), "JSON nested too deeply: not a Flight Recorder dump") \
                from None
    if head == b"\x80":
        try:
            data = _PlainData(io.BytesIO(raw)).load()
        except _Refused as exc:
            raise InputError(str(path), f"pickle refused: {exc} (a Flight Recorder dump holds "
                                        "only plain data)") from None
        except (pickle.UnpicklingError, EOFError, ValueError, IndexError, TypeError,
                AttributeError, MemoryError) as exc:
            raise InputError(str(path), f"unreadable pickle ({type(exc).__name__}: {exc}); "
                                        "cut short?") from None
        _check_plain(data, path)
        return data
    raise InputError(str(path), "neither JSON nor a pickle: not a Flight Recorder dump")


def _rank_of(name: str) -> int | None:
    stem = name
    for suffix in SUFFIXES:
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    match = RANK_AT_END.search(stem)
    return int(match.group(1)) if match else None


def read_dumps(path: str | os.PathLike[str]) -> tuple[list[Dump], list[str]]:
    """Every rank's dump in a directory (the rank is the number that ends the file name, as
    torch's own reader takes it), and notes on the files skipped."""
    root = Path(path)
    if root.is_file():
        raise InputError(str(root), "a file: give the directory that holds the dumps (one per rank)")
    if not root.is_dir():
        raise InputError(str(root), "no such Flight Recorder dump directory")
    dumps: dict[int, Dump] = {}
    notes: list[str] = []
    reads.note_folder(root, deep=True)  # every file below it is read: nothing may be written there
    for file in sorted(root.rglob("*")):  # torch's reader walks subdirectories too
        name = file.relative_to(root).as_posix()
        if any(part.startswith(".") for part in file.relative_to(root).parts) or not file.is_file():
            continue
        rank = _rank_of(file.name)
        if rank is None:
            notes.append(f"{name}: no rank number at the end of its name, not read as a dump")
            continue
        data = load_dump_file(file)
        if not isinstance(data, dict) or not isinstance(data.get("entries"), list) \
                or "version" not in data:
            raise InputError(str(file), "not a Flight Recorder dump (no 'version' and 'entries')")
        if rank in dumps:
            raise InputError(str(file), f"a second dump for rank {rank} (also "
                                        f"{dumps[rank].path.relative_to(root)}): keep one per rank")
        _check_fields(data, file)
        version = str(data["version"])
        _check_version(version, file)
        dumps[rank] = Dump(rank, file, version, data["entries"],
                           data["pg_config"] if isinstance(data.get("pg_config"), dict) else {},
                           data["pg_status"] if isinstance(data.get("pg_status"), dict) else {},
                           str(data.get("comm_lib_version") or ""))
    if not dumps:
        raise InputError(str(root), "no Flight Recorder dumps (files named <prefix><rank>, "
                                    "JSON or pickle)")
    return [dumps[r] for r in sorted(dumps)], notes


# The fields this package reads, and the types torch writes them with (FlightRecorder.hpp);
# a field another type is refused, never carried on into a report (a list where a number
# belongs can be shared a billion ways).
_INT = (int,)
_ENTRY_SCALARS: dict[str, tuple[type, ...]] = {
    "profiling_name": (str,), "state": (str,), "retired": (bool,), "is_p2p": (bool,),
    "record_id": _INT, "pg_id": _INT, "collective_seq_id": _INT, "p2p_seq_id": _INT,
    "op_id": _INT, "time_created_ns": _INT, "time_discovered_started_ns": _INT,
    "time_discovered_completed_ns": _INT,
}
_SIZES = ("input_sizes", "output_sizes")
_DTYPES = ("input_dtypes", "output_dtypes")
_FRAME = {"filename": (str,), "line": _INT, "name": (str,)}


def _check_fields(data: dict[str, Any], file: Path) -> None:
    """InputError naming the file, the entry and the field where a field this package reads is
    not of the type a Flight Recorder dump gives it."""
    def bad(where: str, value: Any, want: str) -> InputError:
        return InputError(str(file), f"{where} is a {type(value).__name__}, not {want}: not a "
                                     f"Flight Recorder dump")
    if not isinstance(data["version"], (str, int, float)):
        raise bad("version", data["version"], "a version string")
    if not isinstance(data.get("comm_lib_version", ""), (str, type(None))):
        raise bad("comm_lib_version", data["comm_lib_version"], "a string")
    for key in ("pg_config", "pg_status"):
        groups = data.get(key)
        if isinstance(groups, dict) and not all(type(k) is str for k in groups):
            raise bad(f"a key of {key}", next(k for k in groups if type(k) is not str), "a string")
    for name, info in (data.get("pg_config") or {}).items():
        if isinstance(info, dict):
            for key, types in (("name", (str,)), ("desc", (str,)), ("ranks", (str, list, tuple))):
                if info.get(key) is not None and not isinstance(info[key], types):
                    raise bad(f"pg_config[{name!r}].{key}", info[key], types[0].__name__)
    for i, e in enumerate(data["entries"]):
        if not isinstance(e, dict):
            raise bad(f"entry {i}", e, "an object")
        for field_, want in _ENTRY_SCALARS.items():
            value = e.get(field_)
            if value is not None and type(value) not in want:  # bool is not int here
                raise bad(f"entry {i} field {field_}", value, want[0].__name__)
        pg = e.get("process_group")
        if pg is not None and not (isinstance(pg, (list, tuple)) and
                                   all(isinstance(x, str) for x in pg)):
            raise bad(f"entry {i} field process_group", pg, "a (name, desc) pair")
        for field_ in _SIZES:
            sizes = e.get(field_)
            if sizes is not None and not (isinstance(sizes, (list, tuple)) and all(
                    isinstance(t, (list, tuple)) and all(type(d) is int for d in t)
                    for t in sizes)):
                raise bad(f"entry {i} field {field_}", sizes, "a list of shapes")
        for field_ in _DTYPES:
            dtypes = e.get(field_)
            if dtypes is not None and not (isinstance(dtypes, (list, tuple)) and
                                           all(isinstance(d, str) for d in dtypes)):
                raise bad(f"entry {i} field {field_}", dtypes, "a list of dtype names")
        frames = e.get("frames")
        if frames is not None and not (isinstance(frames, (list, tuple)) and all(
                isinstance(f, dict) and all(f.get(k) is None or type(f[k]) in want
                                            for k, want in _FRAME.items()) for f in frames)):
            raise bad(f"entry {i} field frames", frames, "a list of frames (filename, line, name)")


def _check_version(version: str, file: Path) -> None:
    major, _, minor = version.partition(".")
    if major != KNOWN_MAJOR or not minor.isdigit():
        raise InputError(str(file), f"Flight Recorder dump version {version!r}: this reader "
                                    f"knows 2.x (torch 2.11-2.13 write 2.10)")
