"""The analysed program: which module lives in which target, and its IR, loaded on demand.

Only modules the interpreter actually reaches are parsed; their IR (with the sites found in the
same parse) is cached per file content. On a cold cache, modules that imports name are parsed
ahead in worker processes while the interpreter runs, a few at a time and the most recently named
first (the interpreter goes depth first, so those are the ones it asks for next); a module asked
for before a worker started on it is parsed right away in this process, never queued behind
guesses. Most named modules are never used, so guessing more only takes cores from the parses
that are waited for.
"""

from __future__ import annotations

from concurrent.futures import Future, ProcessPoolExecutor

from auditor.sources import SourceSet
from auditor.static.ir import codec, ir
from auditor.static.analyze import FileCache, FileError, collector_paused, idle_cpus, read_source, run_one
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
        self.loaded: dict[str, ir.ModuleIR | None] = {}
        self.errors: list[tuple[str, FileError]] = []
        self.parsed = 0
        self.cached = 0
        self.fresh = 0  # of `cached`: entries this process wrote (not from an earlier run)
        # By default the interpreter keeps one of the idle cores busy; parses ahead take the rest.
        self.workers = jobs if jobs is not None else idle_cpus() - 1
        self.pool: ProcessPoolExecutor | None = None  # started by the first file to parse
        self.pending: dict[str, tuple[Future, str]] = {}  # module -> (parse, file digest)
        self.wanted: dict[str, None] = {}  # named by an import, not started: newest last

    def has_module(self, module: str) -> bool:
        return module in self.where

    def prefetch(self, module: str) -> None:
        """Note a module an import names, to parse ahead unless it is cached or under way."""
        if self.workers <= 0 or module in self.loaded or module in self.pending or module not in self.where:
            return
        self.wanted.pop(module, None)
        self.wanted[module] = None
        self._start()

    def _start(self) -> None:
        """Keeps `workers` parses running, the most recently named module first."""
        running = sum(1 for future, _ in self.pending.values() if not future.done())
        while running < self.workers and self.wanted:
            module = next(reversed(self.wanted))
            del self.wanted[module]
            src, rel = self.where[module]
            text, digest, _ = read_source(src, rel)
            if text is None or self.caches[src.name].lookup(rel, digest)[1] is not None:
                continue
            if self.pool is None:
                self.pool = ProcessPoolExecutor(max_workers=self.workers)
            future = self.pool.submit(run_one, module_task, rel, text, module, src.name)
            self.pending[module] = (future, digest)
            running += 1

    def module(self, module: str) -> ir.ModuleIR | None:
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
        # None: the inventory skipped it unparsed; an entry that does not read is parsed again.
        mod_ir = _read_ir(result) if hit and result is not None else None
        if mod_ir is not None:
            self.cached += 1
            self.fresh += rel in cache.fresh  # parsed earlier in this run (the site inventory)
        elif text is None:
            self.errors.append((src.name, FileError(rel, error or "unreadable")))
        else:
            self.wanted.pop(module, None)
            future = self.pending.pop(module, (None, ""))[0]
            if future is not None and future.cancel():  # queued, not started: no wait behind it
                future = None
            _, result, err = future.result() if future else run_one(module_task, rel, text, module, src.name)
            self._start()
            self.parsed += 1
            if err is not None:  # not cached: the next run must report it again
                self.errors.append((src.name, FileError(rel, err)))
                result = None
            else:
                cache.put(rel, digest, result)
                mod_ir = _read_ir(result)
        self.loaded[module] = mod_ir
        return mod_ir

    def close(self) -> None:
        """Stops parsing; what was parsed ahead and never asked for is cached all the same, so a
        later run does not parse it again."""
        self.wanted.clear()
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


def _read_ir(result: dict) -> ir.ModuleIR | None:
    """A module's IR from its cache entry; None when the entry is not one (a cache is data that
    may come from elsewhere: it is a miss, never a crash)."""
    try:
        with collector_paused():
            return codec.loads(result["ir"])
    except (TypeError, KeyError, IndexError, ValueError):
        return None
