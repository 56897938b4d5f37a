"""The analysed program: which module lives in which target, and its IR, loaded on demand.

Only modules the interpreter actually reaches are parsed; their IR (with the sites found in the
same parse) is cached per file content. Files are parsed in the background as soon as an import
names them, so that on a cold cache parsing overlaps interpretation.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from auditor.sources import SourceSet
from auditor.static.analyze import FileCache, FileError, read_source, run_one
from auditor.static.parsed import module_task, task_key


class Program:
    def __init__(self, srcs: list[SourceSet], jobs: int | None = None) -> None:
        self.srcs = srcs
        key = task_key()
        self.caches = {s.name: FileCache.open(s, key) for s in srcs}
        self.where: dict[str, tuple[SourceSet, str]] = {}
        for s in srcs:
            for rel in s.files:
                self.where.setdefault(s.module_name(rel), (s, rel))
        self.loaded: dict[str, dict[str, Any] | None] = {}
        self.errors: list[tuple[str, FileError]] = []
        self.parsed = 0
        self.cached = 0
        self.workers = jobs if jobs is not None else (os.cpu_count() or 1)
        self.pool: ProcessPoolExecutor | None = None  # started by the first file to parse
        self.pending: dict[str, tuple[Future, str]] = {}  # module -> (parse, file digest)

    def has_module(self, module: str) -> bool:
        return module in self.where

    def prefetch(self, module: str) -> None:
        """Start parsing a module that an import names, unless it is cached or under way."""
        if self.workers <= 0 or module in self.loaded or module in self.pending:
            return
        loc = self.where.get(module)
        if loc is None:
            return
        src, rel = loc
        text, digest, _ = read_source(src, rel)
        if text is None or self.caches[src.name].lookup(rel, digest)[1] is not None:
            return
        if self.pool is None:
            self.pool = ProcessPoolExecutor(max_workers=self.workers)
        future = self.pool.submit(run_one, module_task, rel, text, module, src.name)
        self.pending[module] = (future, digest)

    def module(self, module: str) -> dict[str, Any] | None:
        """The IR of a module, or None when it is not part of the analysed sources."""
        if module in self.loaded:
            return self.loaded[module]
        loc = self.where.get(module)
        if loc is None:
            self.loaded[module] = None
            return None
        src, rel = loc
        cache = self.caches[src.name]
        text, digest, error = read_source(src, rel)
        hit, result = cache.lookup(rel, digest)
        if hit and result is not None:  # None: the inventory skipped it unparsed
            self.cached += 1
        elif text is None:
            self.errors.append((src.name, FileError(rel, error or "unreadable")))
        else:
            future = self.pending.pop(module, (None, ""))[0]
            _, result, err = future.result() if future else run_one(module_task, rel, text, module, src.name)
            self.parsed += 1
            if err is not None:  # not cached: the next run must report it again
                self.errors.append((src.name, FileError(rel, err)))
                result = None
            else:
                cache.put(rel, digest, result)
        self.loaded[module] = result["ir"] if result else None
        return self.loaded[module]

    def close(self) -> None:
        """Stops parsing; what was parsed ahead and never asked for is cached all the same, so a
        later run does not parse it again."""
        if self.pool is not None:
            for future, _ in self.pending.values():
                future.cancel()
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None
        for module, (future, digest) in self.pending.items():
            if future.done() and not future.cancelled():
                rel, result, err = future.result()
                if err is None:
                    self.caches[self.where[module][0].name].put(rel, digest, result)
        self.pending.clear()
        for cache in self.caches.values():
            cache.save()
