"""One process's recording: turns intercepted calls into trace lines and knows what is pending.

Crash contract: a SIGKILL loses at most the op in flight. An op's start line is written BEFORE the
op is handed to torch, so a rank blocked inside torch (a lazily created communicator, a peer that
never comes) still shows the op it is blocked in. Its end line is written as the call returns
(no Work) or as its Work's wait returns or raises, before the program's own code runs on: a rank
killed anywhere in its own code has on file the end of every op it saw end. Two ends are learnt
later, where they cost no extra work: a Work freed without a wait ("dropped": the ref's callback
only queues it, and the next start line carries its end in `ends`, written in the same locked
section in which a line of its own used to be written just before that start line), and a Work
the hang watcher found complete ("polled"). Lines are copied into a shared memory map of the rank
file (`mapped.MappedFile`): once copied, a line is in the kernel's page cache, which outlives this
process, so a SIGKILL loses at most the line being copied (with the ends it carries), and the hot
path makes no system call per line (one per 1 MiB: the map grows).

The hot path is measured by benchmarks/bench_record.py: one lock acquisition per line written,
per-thread state read once, call sites cached by code id and tensor fragments by (dtype, shape),
`t` formatted from integer microseconds, one weak reference per Work with a shared callback, the
copy into the map by `mmap.write`. A group's ranks are written once, in a `phase: "group"` line
before its first op; op lines name the group. `batched` is what happened, not what was asked
for: an op is batched when a coalescing window (`ProcessGroup._start_coalescing` ..
`_end_coalescing`) was open on its group when it was issued. Any internal error turns recording
off with one line on stderr; the program's own calls go on untouched.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections import deque
from pathlib import Path
from collections.abc import Callable
from typing import Any

from auditor.dynamic import callsite
from auditor.dynamic.opstate import (
    Batch, TracedGroup, TracedOp, PerThread, ThreadState, Window, WorkRef, fields_json, tensor_json,
)
from auditor.dynamic.writer import TraceWriter, env_int

SITE_ATTR = "_p2paudit_site"  # set on each P2POp: where it was built


class Recorder(TraceWriter):
    """The state of one process's recording; `hooks` calls it, `hang` reads it."""

    def __init__(self, directory: Path, hang_after: float) -> None:
        super().__init__(directory, hang_after)
        self.tls = PerThread()
        self.c10d: Any = None  # torch.distributed.distributed_c10d, set by hooks.install
        # The placeholder Work a coalescing manager returns for a queued collective: not a Work
        # anyone can wait on (set by hooks.install where torch has it).
        self.queued_work: type | tuple[()] = ()
        self.work_type: type | tuple[()] = ()  # torch's Work
        self.is_work: dict[type, bool] = {}  # a call's result type -> a Work to track
        # torch's per-group queues of collectives inside a coalescing manager (set by install).
        self.coalescing_queues: dict[Any, Any] = {}
        self.batches = 0
        self.works: dict[int, tuple[WorkRef, list[TracedOp]]] = {}  # id(Work) -> (ref, ops)
        # Works freed (their refs, queued by the refs' shared callback), to reap.
        self.freed: deque[WorkRef] = deque()
        self.on_freed = self.freed.append
        self.windows: dict[Any, Window] = {}  # process group -> its open coalescing window
        self.groups: dict[int, tuple[weakref.ref, TracedGroup]] = {}  # id(process group) -> ...
        self.world: Any = None  # the default process group, once known
        self.last_done: dict[str, str] = {}  # group name -> start line of its last completed op
        self.waited: deque[tuple[weakref.ref, str]] = deque(maxlen=64)
        # Where each P2POp was built: an attribute of the P2POp (`SITE_ATTR`) where it takes one,
        # here otherwise (a WeakKeyDictionary costs a weakref and Python-level code per op).
        self.p2pop_sites: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.on_init: list[Callable[[int], None]] = []  # called with the rank once it is known

    # --- process groups ------------------------------------------------------------------------

    def group(self, pg: Any) -> tuple[Any, TracedGroup | None]:
        """(the process group an op runs on, what to say about it); None means the default."""
        if pg is None:
            pg = self.world
            if pg is None:
                pg = self.world = self.c10d.GroupMember.WORLD
                if pg is None:
                    return None, None
        entry = self.groups.get(id(pg))
        if entry is not None and entry[0]() is pg:
            return pg, entry[1]
        try:
            g = TracedGroup(pg, self.c10d)
            self.groups[id(pg)] = (weakref.ref(pg), g)
        except (TypeError, ValueError, RuntimeError, KeyError, AttributeError):
            return pg, None  # not a process group (a non-member sentinel): torch will say so
        self._emit(f'"api":"group","phase":"group","group":{g.json}')
        return pg, g

    def _known_group(self, pg: Any) -> tuple[Any, TracedGroup | None]:
        """`group`, with its common case (a group seen before) inlined for the hot path."""
        known = pg if pg is not None else self.world
        entry = self.groups.get(id(known)) if known is not None else None
        if entry is not None and entry[0]() is known:
            return known, entry[1]
        return self.group(pg)

    # --- ops -----------------------------------------------------------------------------------

    def begin_p2p(self, api: str, tensor: Any, peer: Any, group_peer: Any, pg: Any,
                  state: ThreadState) -> TracedOp | None:
        lock = self.lock
        lock.acquire()
        try:
            pg, g = self._known_group(pg)
            batch = state.batch
            window = self.windows.get(pg) if self.windows else None
            extra = ""
            if g is not None:
                if peer is None and group_peer is not None:
                    peer = g.ranks[group_peer] if 0 <= group_peer < len(g.ranks) else None
                if not (g.eager or (g.whole if window is not None else peer in g.paired)):
                    extra = g.comm_mark(window is not None, peer)
            if batch is not None:
                extra += f',"via":"batch_isend_irecv","batch":{batch.id}'
                p2p_op = batch.take(tensor)
                op_site = None if p2p_op is None else getattr(
                    p2p_op, SITE_ATTR, None) or self.p2pop_sites.get(p2p_op)
                if op_site:
                    extra += f',"op_site":{op_site}'
            elif window is not None:
                extra += f',"batch":{window.batch}'
            site, chosen = callsite.caller_sites(2)
            return self._started_locked(api, "p2p", window is not None,
                                        peer if type(peer) is int else "null", g, state,
                                        site, tensor, extra + chosen, window)
        except Exception as exc:
            self.fail(exc)
            return None
        finally:
            lock.release()

    def begin_group_op(self, api: str, kind: str, tensor: Any, pg: Any,
                       state: ThreadState) -> TracedOp | None:
        """A collective, or a fused P2P op on a whole group (ring_exchange in custom builds)."""
        lock = self.lock
        lock.acquire()
        try:
            pg, g = self._known_group(pg)
            window = self.windows.get(pg) if self.windows else None
            # The collectives' own fast path: queued in the coalescing manager, issued at its exit.
            queued = bool(self.coalescing_queues) and pg in self.coalescing_queues
            batched = window is not None or queued
            extra = "" if g is None or g.eager or g.whole else g.comm_mark(True, None)
            if window is not None:
                extra += f',"batch":{window.batch}'
            site, chosen = callsite.caller_sites(2)
            return self._started_locked(api, kind, batched, "null", g, state,
                                        site, tensor, extra + chosen, window)
        except Exception as exc:
            self.fail(exc)
            return None
        finally:
            lock.release()

    def _started_locked(self, api: str, kind: str, batched: bool, peer: Any, g: TracedGroup | None,
                        state: ThreadState, site: str, tensor: Any, extra: str,
                        window: Window | None) -> TracedOp:
        """Writes the op's start line, with the ends of the Works freed since the last line (taken
        here, when nothing can fail before the line is written), and joins the op to its window.
        `site`: the caller's, taken by the begin_ method the hook called (a fixed depth); `extra`
        ends with the frame that chose the op where that is another (`callsite.caller_sites`)."""
        op = TracedOp(api, g, state.ident, window is not None)
        body = (f'"api":"{api}","phase":"start","kind":"{kind}",'
                f'"batched":{"true" if batched else "false"},"peer":{peer},'
                f'"group":{g.ref if g is not None else "null"},'
                f'"site":{site},{tensor_json(tensor)}{extra}')
        if self.freed:
            body += self._freed_ends_locked()
        self._emit_locked(body, op)
        if window is not None:
            window.ops.append(op)
        return op

    def begin_setup(self, api: str, details: dict[str, Any]) -> TracedOp | None:
        """init_process_group / new_group: not ops on a group, but a rank can block in them."""
        try:
            op = TracedOp(api, None, threading.get_ident(), False)
            site, chosen = callsite.caller_sites(2)
            self._emit(f'"api":"{api}","phase":"start","kind":"setup",'
                       f'"site":{site}{fields_json(details)}{chosen}', op)
            return op
        except Exception as exc:
            self.fail(exc)
            return None

    def finish(self, op: TracedOp | None, result: Any) -> None:
        """The call returned: a Work means completion comes later (its wait), else it is done."""
        if op is None or not self.on:
            return
        try:
            if op.in_window:
                return  # completes with the window's Work (see close_window)
            is_work = self.is_work.get(type(result))
            if is_work is None:
                is_work = self.is_work[type(result)] = (
                    isinstance(result, self.work_type) and not isinstance(result, self.queued_work))
            if is_work:
                self._track(op, result)
            else:
                self.end(op, "return")
        except Exception as exc:
            self.fail(exc)

    def expect_rank(self, rank: Any) -> None:
        """Before init_process_group: open the file now if the rank is already known (argument or
        launcher's RANK), so a rank stuck in the rendezvous leaves a trace."""
        try:
            if not isinstance(rank, int) or rank < 0:
                rank = env_int("RANK")
            if rank is not None and rank >= 0:
                self.open(rank)
        except Exception as exc:
            self.fail(exc)

    def initialised(self, op: TracedOp | None) -> None:
        """After init_process_group returned: this process is a rank from now on."""
        if not self.on:
            return
        try:
            rank = self.c10d.get_rank()
            if self.file is None:
                self.open(rank)
            self.world = None  # a new default group (init after destroy): look it up again
            _, world = self.group(None)
            if op is not None:
                self.end(op, "return", {
                    "world_size": self.c10d.get_world_size(),
                    "group": json.loads(world.json) if world else None,
                })
            for callback in self.on_init:
                callback(rank)
        except Exception as exc:
            self.fail(exc)

    def group_created(self, op: TracedOp | None, pg: Any) -> None:
        def details() -> dict[str, Any]:
            g = self.group(pg)[1] if pg is not None else None
            return {"group": json.loads(g.json) if g else None}
        self._end_reporting(op, "return", details)

    def raised(self, op: TracedOp | None, exc: BaseException) -> None:
        self._end_reporting(op, "raise", lambda: _error(exc))

    def _end_reporting(self, op: TracedOp | None, how: str, details: Callable[[], dict[str, Any]]) -> None:
        """Ends `op` with what `details` says; an error of our own turns recording off."""
        if op is None or not self.on:
            return
        try:
            self.end(op, how, details())
        except Exception as err:
            self.fail(err)

    def end(self, op: TracedOp, how: str, details: dict[str, Any] | None = None) -> None:
        lock = self.lock
        lock.acquire()
        try:
            self._end_locked(op, how, details)
        finally:
            lock.release()

    def _end_locked(self, op: TracedOp, how: str, details: dict[str, Any] | None = None) -> None:
        if self._ended_locked(op):
            self._emit_locked(f'"api":"{op.api}","phase":"end","of":{op.seq},"how":"{how}"'
                              + (fields_json(details) if details else ""))

    def _ended_locked(self, op: TracedOp) -> bool:
        """The op is no longer pending; False where it already was not (ended twice)."""
        if self.pending.pop(op.seq, None) is None:
            return False
        if op.group is not None:
            self.last_done[op.group.name] = op.line
        return True

    # --- completion through Work objects -------------------------------------------------------

    def _track(self, op: TracedOp, work: Any) -> None:
        """Without the lock: each step is one dict operation, atomic on its own, on a key no
        other thread touches (a Work just returned to this thread; an id is reused only after
        its Work died, and `_freed_locked` checks the ref before it deletes). Readers of `works`
        copy it in one step (`poll`)."""
        key = id(work)
        entry = self.works.get(key)
        if entry is not None and entry[0]() is work:
            entry[1].append(op)
            op.work = entry[0]
            return
        # The callback runs wherever the Work dies (even inside a garbage collection in the
        # middle of our own code): it only queues the ref; the next start line, or `_reap`,
        # ends its ops.
        ref = WorkRef(work, self.on_freed)
        ref.key = key
        self.works[key] = (ref, [op])
        op.work = ref

    def work_waited(self, work: Any, exc: BaseException | None) -> None:
        """From the patched `Work.wait`, after torch's wait returned or raised."""
        lock = self.lock
        try:
            lock.acquire()
            try:
                entry = self.works.get(id(work))
                if entry is None or entry[0]() is not work:
                    return
                del self.works[id(work)]
                for op in entry[1]:
                    if exc is None:
                        self._end_locked(op, "wait")
                        self.waited.append((entry[0], op.line))
                    else:
                        self._end_locked(op, "raise", _error(exc))
            finally:
                lock.release()
        except Exception as err:
            self.fail(err)

    def _reap(self) -> None:
        """End lines, now, for the ops of Works freed without a wait (the watchdog's poll, a
        hang report)."""
        with self.lock:
            for op in self._freed_locked():
                self._end_locked(op, "dropped")

    def _freed_ends_locked(self) -> str:
        """`,"ends":[[seq,"dropped"],...]` for the start line this locked section writes: the ops
        of Works freed without a wait (completion unknown). They end on the file at the moment
        a line of their own used to be written, just before that start line."""
        ops = self._freed_locked()  # mostly none: the freed Works were waited on
        if not ops:
            return ""
        ends = [f'[{op.seq},"dropped"]' for op in ops if self._ended_locked(op)]
        return f',"ends":[{",".join(ends)}]' if ends else ""

    def _freed_locked(self) -> list[TracedOp]:
        """The ops of the Works freed since the last call, which no wait has ended."""
        freed, ops = self.freed, []
        while freed:
            ref = freed.popleft()
            ops += self._take_locked(ref.key, ref)
        return ops

    def _take_locked(self, key: int, ref: WorkRef) -> list[TracedOp]:
        """The ops of the Work `ref` tracks under `key`, tracked no longer; none where the key
        now tracks another Work (an id is reused once its Work died) or none at all."""
        entry = self.works.get(key)
        if entry is None or entry[0] is not ref:
            return []
        del self.works[key]
        return entry[1]

    def poll(self) -> None:
        """Ask each pending op's Work whether it completed (`is_completed` never blocks)."""
        self._reap()
        entries = list(self.works.items())  # one C-level copy: `_track` adds without the lock
        for key, (ref, _) in entries:
            work = ref()
            try:
                done = work is not None and work.is_completed()
            except Exception:
                continue  # a failed Work: its wait will raise; leave it pending
            if done:
                with self.lock:
                    for op in self._take_locked(key, ref):
                        self._end_locked(op, "polled")

    # --- coalescing windows --------------------------------------------------------------------

    def open_window(self, pg: Any) -> None:
        try:
            batch = self.tls.state.batch
            if batch is None:
                self.batches += 1
            self.windows[pg] = Window(batch.id if batch is not None else self.batches)
        except Exception as exc:
            self.fail(exc)

    def close_window(self, pg: Any, work: Any, exc: BaseException | None) -> None:
        try:
            window = self.windows.pop(pg, None)
            if window is None or not self.on:
                return
            for op in window.ops:
                op.in_window = False
                if exc is not None:
                    self.raised(op, exc)
                elif isinstance(work, self.work_type):
                    self._track(op, work)
                else:
                    self.end(op, "return")
        except Exception as err:
            self.fail(err)

    def begin_batch(self, p2p_op_list: Any) -> Batch | None:
        if not isinstance(p2p_op_list, list):
            return None  # torch rejects it with its own error right after
        self.batches += 1
        return Batch(p2p_op_list, self.batches)

    def note_p2pop(self, p2p_op: Any) -> None:
        try:
            site = callsite.caller_site(2)
            try:
                setattr(p2p_op, SITE_ATTR, site)
            except (AttributeError, TypeError):  # a P2POp with __slots__
                self.p2pop_sites[p2p_op] = site
        except Exception as exc:
            self.fail(exc)

    # --- state for hang reports ----------------------------------------------------------------

    def snapshot(self) -> tuple[list[tuple[TracedOp, Any]], dict[str, str], list[str]]:
        """(pending ops with their Work if any, last completed per group, waited-on ops whose
        Work is not complete: for NCCL, wait() only orders the stream, the GPU may still be
        stuck in them)."""
        self._reap()
        with self.lock:
            pending = [(op, op.work() if op.work is not None else None)
                       for op in self.pending.values()]
            last = dict(self.last_done)
            waited = list(self.waited)
        unfinished = []
        for ref, line in waited:
            work = ref()
            try:
                if work is not None and not work.is_completed():
                    unfinished.append(line)
            except Exception:
                unfinished.append(line)
        return pending, last, unfinished


def _error(exc: BaseException) -> dict[str, Any]:
    """What an op's end line says of the exception that ended it."""
    return {"error": f"{type(exc).__name__}: {exc}"[:500]}
