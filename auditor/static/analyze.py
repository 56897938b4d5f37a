"""Runs a per-file analysis over a SourceSet: prefiltered, in parallel, cached by content hash.

A task parses and walks a file (several times the cost of `ast.parse` alone), so the three levers
are: skip files that cannot matter (a cheap text test), spread the rest over the cores, and never
parse the same bytes twice (results are kept per source tree, keyed by each file's SHA-1; a warm
run only reads and hashes).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import io
import json
import os
import shutil
import stat
import sys
import time
import tokenize
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from auditor.errors import InputError
from auditor.progress import Progress
from auditor.sources import SourceSet, cache_dir

# A task analyses one file: (text, relpath, module, package, context) -> JSON-able result; the
# context is what the file gets from the rest of its package (None: nothing), and a task's dict
# result names the digest of the context it was made with under "context".
Task = Callable[..., Any]
# What each file gets from its package, computed from all (text, digest) before any file is
# analysed.
Context = Callable[[SourceSet, dict[str, tuple[str, str]]], dict[str, Any]]



def code_digest(*modules: ModuleType | Path) -> str:
    """Digest of the analyzer's own source (modules, or their files): a changed analyzer never
    reuses old results."""
    h = hashlib.sha1()
    for m in modules:
        h.update((m if isinstance(m, Path) else Path(m.__file__ or "")).read_bytes())
    return h.hexdigest()[:16]


@dataclass
class FileError:
    path: str
    cause: str


@dataclass
class FileResults:
    """Results per file (only files that passed the prefilter), and what could not be read."""

    results: dict[str, Any] = field(default_factory=dict)
    errors: list[FileError] = field(default_factory=list)
    files_total: int = 0
    files_analyzed: int = 0
    cache_hits: int = 0
    seconds: float = 0.0


def _task_error(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        # Syntax newer than the running Python reads as an error too: it names the line.
        where = f" at line {exc.lineno}" if exc.lineno else ""
        return f"syntax error{where}: {exc.msg} (as Python {sys.version_info[0]}." \
               f"{sys.version_info[1]} reads it)"
    return f"{type(exc).__name__}: {exc}"


def run_one(task: Task, relpath: str, text: str, module: str, package: str,
            context: Any = None) -> tuple[str, Any, str | None]:
    try:
        with collector_paused():
            return relpath, task(text, relpath, module, package, context), None
    except Exception as exc:  # one unreadable file must not end the scan
        return relpath, None, _task_error(exc)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """One file's task allocates some 10^5 objects (ast nodes, the IR) and leaves no cycles, and
    so does reading a file's IR back into records; with the cycle collector on, those allocations
    start collections that also walk every result kept so far (~25% of a cold scan). Garbage is
    freed by reference counting all the same."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class FileCache:
    """Results of one task over one source tree, keyed by each file's path and SHA-1.

    Stored as JSON: a cache is data only, so one restored from a shared or CI cache cannot run
    code when read (pickle could). Tuples come back as lists; readers of the results index
    them, never compare them to tuples. A cache file that does not read as this format is a
    miss, rewritten on save; a cache that cannot be written is bad input (exit 2).

    `FileCache.open` shares one instance per file within a process: the inventory and the call
    graph read the same results, and the file is loaded once."""

    FORMAT = "p2paudit-analysis-3"  # 3: a module's IR as JSON text, each function a text in it
    _open: dict[str, FileCache] = {}

    @classmethod
    def open(cls, src: SourceSet, task_key: str) -> FileCache:
        cache = cls(src, task_key, load=False)
        if cache.path not in cls._open:
            cache.entries = cache._load()
            cls._open[cache.path] = cache
        return cls._open[cache.path]

    def __init__(self, src: SourceSet, task_key: str, load: bool = True) -> None:
        self.src = src
        ident = f"{src.root}|{src.name}|{src.version}|{task_key}"
        self.ident = ident  # the tree (an unpacked archive's folder names its digest), the analyzer
        digest = hashlib.sha1(ident.encode()).hexdigest()[:20]
        self.path = os.path.join(cache_dir(), "analysis", f"{digest}.json")
        self.entries: dict[str, list] = self._load() if load else {}
        self.dirty = False
        # Files parsed by this process (an inventory before the call graph): not "from cache".
        self.fresh: set[str] = set()

    def _load(self) -> dict[str, list]:
        try:
            with open(self.path, "rb") as f:
                data = json.loads(f.read())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):  # unreadable or not JSON: parse again, rewrite on save
            return {}
        if not isinstance(data, dict) or data.get("format") != self.FORMAT:
            return {}
        entries = data.get("entries")
        if not isinstance(entries, dict) or data.get("seal") != self._seal(_entries_text(entries)):
            return {}  # edited since it was written, or written for another tree or analyzer
        return {rel: e for rel, e in entries.items()
                if isinstance(e, list) and len(e) == 2 and isinstance(e[0], str)}

    def _seal(self, entries: str) -> str:
        """Binds the entries to the tree and the analyzer they were made for: an entry edited in
        place (a module's sites set to none) no longer matches and the file is a miss."""
        return hashlib.sha256(f"{self.FORMAT}|{self.ident}|".encode() + entries.encode()).hexdigest()

    def lookup(self, rel: str, digest: str) -> tuple[bool, Any]:
        hit = self.entries.get(rel)
        if hit is not None and hit[0] == digest:
            return True, hit[1]
        return False, None

    def put(self, rel: str, digest: str, result: Any) -> None:
        self.entries[rel] = [digest, result]
        self.dirty = True
        self.fresh.add(rel)

    def save(self) -> None:
        if not self.dirty:
            return
        tmp = f"{self.path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            entries = _entries_text(self.entries)
            text = (f'{{"format":"{self.FORMAT}","seal":"{self._seal(entries)}",'
                    f'"entries":{entries}}}')
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(text)
            if os.path.isdir(self.path) and not os.path.islink(self.path):
                shutil.rmtree(self.path)  # a folder where the cache file goes: not ours to keep
            os.replace(tmp, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise InputError(exc.filename or self.path,
                             f"cannot write the analysis cache ($P2PAUDIT_CACHE): "
                             f"{exc.strerror or exc}") from None
        self.dirty = False


def _entries_text(entries: dict[str, list]) -> str:
    # json.dumps, not json.dump: only the one-shot encoder is the C one (~10x faster).
    return json.dumps(entries, separators=(",", ":"))


def read_source(src: SourceSet, rel: str) -> tuple[str | None, str, str | None]:
    """(text, digest, error) of one file; text is None when it cannot be read as UTF-8 (or as the
    encoding its coding line declares, as Python reads it), or when
    it is not one of the target's regular files (a FIFO would block the read, a device or a link
    out of the tree would read what is not the target): those are skipped, never opened."""
    path = src.root / rel
    try:
        mode = os.lstat(path).st_mode
        if stat.S_ISLNK(mode):
            real = path.resolve()
            if not real.is_relative_to(src.root.resolve()):
                return None, "", f"skipped: a symbolic link that leaves the target (to {real})"
            mode = os.stat(real).st_mode
        if not stat.S_ISREG(mode):
            return None, "", "skipped: not a regular file (a FIFO, socket or device), not read"
        raw = path.read_bytes()
    except (OSError, RuntimeError) as exc:
        return None, "", f"unreadable: {(exc.strerror if isinstance(exc, OSError) else None) or exc}"
    digest = hashlib.sha1(raw).hexdigest()
    try:
        return raw.decode("utf-8-sig"), digest, None  # a byte-order mark is no code
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        error = f"not UTF-8 at line {line}: {exc.reason}"
    try:  # a PEP 263 `# -*- coding: latin-1 -*-` line: Python reads the file in that encoding
        encoding = tokenize.detect_encoding(io.BytesIO(raw).readline)[0]
        return (None, digest, error) if encoding.startswith("utf-8") else (raw.decode(encoding), digest, None)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return None, digest, error


def analyze(
    src: SourceSet,
    task: Task,
    task_key: str,
    wanted: Callable[[str], bool] | None = None,
    files: list[str] | None = None,
    jobs: int | None = None,
    progress: bool = False,
    context: Context | None = None,
) -> FileResults:
    """Run `task` on the files of `src` (or `files`) whose text `wanted` accepts, and on every
    file that gets something from its package (`context`: the text alone cannot tell).

    `task_key` names the task and everything its output depends on (the rules digest, the
    `code_digest` of the task's modules). A cached result made under another context is stale;
    results stay keyed by the file's own digest, so that a reader of the same cache that knows
    no context (the call graph's `Program`) finds them.
    """
    started = time.perf_counter()
    out = FileResults()
    cache = FileCache.open(src, task_key)
    read = {rel: read_source(src, rel) for rel in (files if files is not None else src.files)}
    contexts = context(src, {r: (t, d) for r, (t, d, _) in read.items() if t is not None}) \
        if context else {}
    todo: list[tuple[str, str, str]] = []  # relpath, text, digest
    for rel, (text, digest, error) in read.items():
        out.files_total += 1
        received = contexts.get(rel)
        hit, result = cache.lookup(rel, digest)
        made_under = result.get("context", "") if isinstance(result, dict) else ""
        if hit and made_under == (received.digest() if received else "") and \
                (result is not None or received is None):
            out.cache_hits += 1
            if result is not None:
                out.results[rel] = result
            continue
        if text is None:
            out.errors.append(FileError(rel, error or "unreadable"))
            continue
        if received is None and wanted is not None and not wanted(text):
            cache.put(rel, digest, None)
            continue
        todo.append((rel, text, digest))
    digests = {rel: d for rel, _, d in todo}
    if progress and todo:
        print(f"p2paudit: parsing {len(todo)} of {out.files_total} files of {src.name}",
              file=sys.stderr)
    with Progress(f"parsing {src.name}", total=len(todo), unit="files") as bar:
        for rel, result, error in _run_all(src, task, todo, jobs, contexts):
            bar.advance()
            out.files_analyzed += 1
            if error is not None:
                out.errors.append(FileError(rel, error))
                continue
            out.results[rel] = result
            cache.put(rel, digests[rel], result)
    cache.save()
    out.seconds = time.perf_counter() - started
    return out


def usable_cpus() -> int:
    """The cores this process may run on (a CI runner's or taskset's share, not the host's)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def idle_cpus() -> int:
    """The usable cores that others leave free (the 1-minute load average, less this process),
    at least one. A worker on a busy core gains no time and costs CPU: it starts, loads the
    rules and sends its results back (a cold scan at load 12 on 2 cores: 2.4-3.1 s of CPU with
    workers, 1.9-2.2 s without, and no faster)."""
    usable = usable_cpus()
    try:
        busy = max(0.0, os.getloadavg()[0] - 1)
    except OSError:  # no load average (not on Unix)
        busy = 0.0
    return max(1, min(usable, round(usable - busy)))


def _run_all(src: SourceSet, task: Task, todo: list[tuple[str, str, str]], jobs: int | None,
             contexts: dict[str, Any]):
    args = [(task, rel, text, src.module_name(rel), src.name, contexts.get(rel))
            for rel, text, _ in todo]
    # Largest files first so one big file does not finish last on its own.
    args.sort(key=lambda a: -len(a[2]))
    workers = min(jobs or idle_cpus(), len(args))
    if workers <= 1 or sum(len(a[2]) for a in args) < 200_000:
        yield from (run_one(*a) for a in args)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(run_one, *zip(*args), chunksize=1)
