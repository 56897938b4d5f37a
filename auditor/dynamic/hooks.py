"""Wraps torch.distributed so that every P2P op, collective and group set-up reaches the recorder.

What is wrapped:
- the P2P API of `rules/torch.toml` (`p2p_api`: which functions, which parameter holds the tensor,
  the peer, the group), in `torch.distributed.distributed_c10d` and `torch.distributed` both
  (`P2POp` checks its op against the module's own globals, so the two must stay the same object);
- the collectives: every public function of distributed_c10d taking `group` and `async_op`, read
  from the installed torch so that its own set is what gets covered;
- `init_process_group` and `new_group` (a rank can block in them; they say lazy or eager init);
- `P2POp.__init__` (where each op of a batch was described), `ProcessGroup._start_coalescing` /
  `_end_coalescing` (whether a batch really ran coalesced), `Work.wait` (completion).

A wrapper passes its arguments through untouched, returns what torch returned and re-raises what
torch raised; calls nested in a hooked call (`recv` -> `irecv`) go straight through. In a recorded
process the wrapping happens the moment distributed_c10d has executed, before any other module
can take a reference to the originals.
"""

from __future__ import annotations

import functools
import importlib.abc
import inspect
import sys
import types
from collections.abc import Callable
from typing import Any

from auditor.dynamic.recorder import Recorder

C10D = "torch.distributed.distributed_c10d"
SETUP = ("init_process_group", "new_group")

_installed: list[tuple[Any, str, Any]] = []  # (owner, attribute, original) to undo


def install_on_import(rec: Recorder) -> None:
    """Wrap torch.distributed as soon as it is imported (now, if it already is)."""
    module = sys.modules.get(C10D)
    if module is not None:
        install(rec, module)
    else:
        sys.meta_path.insert(0, _OnImport(rec))


def install(rec: Recorder, c10d: Any) -> None:
    """Wrap everything listed above; all or nothing."""
    # Imported here, not at start-up: a .pth runs before the rest of sys.path is in place.
    from auditor import rulebook

    if _installed:
        return
    torch = sys.modules["torch"]
    version = getattr(torch, "__version__", None) or getattr(
        sys.modules.get("torch.version"), "__version__", None)
    patches: list[tuple[Any, str, Any]] = []
    rec.c10d = c10d
    rec.queued_work = getattr(c10d, "_IllegalWork", ())
    rec.work_type = c10d.Work
    rec.coalescing_queues = c10d._world.pg_coalesce_state
    p2p_names: set[str] = set()
    for entry in rulebook.load("torch", _release(version)).table("p2p_api"):
        name = entry["name"]
        p2p_names.add(name)
        orig = getattr(c10d, name, None)
        if orig is None:
            continue  # not in this build (ring_exchange is in custom builds only)
        issues = entry.get("issues")
        if issues == "op":
            patches.append((c10d, name, _p2p_wrapper(rec, orig, entry)))
        elif issues == "batch":
            patches.append((c10d, name, _batch_wrapper(rec, orig)))
        elif issues == "fused":
            patches.append((c10d, name, _group_op_wrapper(rec, orig, name, "p2p", entry)))
        elif issues == "descriptor" and isinstance(orig, type):
            # `orig` is the class itself (P2POp): its own __init__ is the one wrapped.
            patches.append((orig, "__init__", _descriptor_init(rec, orig.__init__)))  # type: ignore[misc]
    for name in getattr(c10d, "__all__", ()):
        orig = getattr(c10d, name, None)
        # type(), not isinstance(): some names (reduce_op) warn when their attributes are read
        if name in p2p_names or name in SETUP or type(orig) is not types.FunctionType:
            continue
        params = inspect.signature(orig).parameters
        if "group" in params and "async_op" in params:
            patches.append((c10d, name, _group_op_wrapper(rec, orig, name, "collective", {})))
    for name in SETUP:
        patches.append((c10d, name, _setup_wrapper(rec, getattr(c10d, name), name)))
    pg = c10d.ProcessGroup
    patches.append((pg, "_start_coalescing", _start_coalescing(rec, pg._start_coalescing)))
    patches.append((pg, "_end_coalescing", _end_coalescing(rec, pg._end_coalescing)))
    for work_type in _with_own_wait(c10d.Work):
        patches.append((work_type, "wait", _work_wait(rec, work_type.__dict__["wait"])))

    public = sys.modules.get("torch.distributed")
    try:
        for owner, name, wrapper in patches:
            original = owner.__dict__.get(name, getattr(owner, name))
            setattr(owner, name, wrapper)
            _installed.append((owner, name, original))
            if owner is c10d and public is not None and getattr(public, name, None) is original:
                setattr(public, name, wrapper)
                _installed.append((public, name, original))
    except BaseException:
        uninstall()
        raise


def uninstall() -> None:
    """Put every original back (benchmarks and tests compare against the unhooked calls)."""
    while _installed:
        owner, name, original = _installed.pop()
        setattr(owner, name, original)


def _with_own_wait(base: type) -> list[type]:
    """Work and its bound subclasses that define their own `wait` (FakeWork, ...)."""
    found, todo = [], [base]
    while todo:
        cls = todo.pop()
        if "wait" in cls.__dict__:
            found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def _call_inside(rec: Recorder, op: Any, orig: Callable[..., Any], args: tuple,
                 kwargs: dict[str, Any]) -> Any:
    """Calls torch with this thread marked as inside a recorded op, so a nested call (`recv`
    calling `irecv`) is not a second event; an exception is recorded and re-raised untouched."""
    state = rec.tls.state
    state.depth += 1
    try:
        return orig(*args, **kwargs)
    except BaseException as exc:
        rec.raised(op, exc)
        raise
    finally:
        state.depth -= 1


def _release(version: str | None) -> str | None:
    return version.split("+")[0] if version else None


class _OnImport(importlib.abc.MetaPathFinder):
    """Finds distributed_c10d like everyone else, then runs `install` right after it executed."""

    def __init__(self, rec: Recorder) -> None:
        self.rec = rec

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != C10D:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        sys.meta_path.remove(self)
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        exec_module = loader.exec_module
        rec = self.rec

        def exec_then_install(module: Any) -> None:
            exec_module(module)
            try:
                install(rec, module)
            except Exception as exc:
                rec.fail(exc)

        # This loader instance serves this module only: wrapping its method is the point.
        loader.exec_module = exec_then_install  # type: ignore[method-assign]
        return spec


def _index(orig: Callable[..., Any]) -> dict[str, int]:
    """Positions of the parameters of the installed torch's function."""
    names = list(inspect.signature(orig).parameters)
    return {name: i for i, name in enumerate(names)}


def _p2p_wrapper(rec: Recorder, orig: Callable[..., Any], entry: dict[str, Any]) -> Callable:
    api = entry["name"]
    pos = _index(orig)
    t_name = entry["params"][0]
    peer_name, group_peer_name = (list(entry.get("peer", [])) + [None, None])[:2]
    g_name = entry.get("group", "group")
    t_i = pos.get(t_name, 10**6)
    p_i = pos.get(peer_name, 10**6)
    gp_i = pos.get(group_peer_name, 10**6)
    g_i = pos.get(g_name, 10**6)
    tls = rec.tls

    @functools.wraps(orig)
    def hooked(*args: Any, **kwargs: Any) -> Any:
        state = tls.state
        if state.depth or not rec.on:
            return orig(*args, **kwargs)
        n = len(args)
        op = rec.begin_p2p(
            api,
            args[t_i] if n > t_i else kwargs.get(t_name),
            args[p_i] if n > p_i else kwargs.get(peer_name),
            args[gp_i] if n > gp_i else kwargs.get(group_peer_name),
            args[g_i] if n > g_i else kwargs.get(g_name),
            state,
        )
        state.depth += 1  # _call_inside, inlined on the hottest path
        try:
            result = orig(*args, **kwargs)
        except BaseException as exc:
            rec.raised(op, exc)
            raise
        finally:
            state.depth -= 1
        rec.finish(op, result)
        return result

    return hooked


def _group_op_wrapper(rec: Recorder, orig: Callable[..., Any], api: str, kind: str,
                      entry: dict[str, Any]) -> Callable:
    pos = _index(orig)
    g_name = entry.get("group", "group")
    g_i = pos.get(g_name, 10**6)
    tls = rec.tls

    @functools.wraps(orig)
    def hooked(*args: Any, **kwargs: Any) -> Any:
        state = tls.state
        if state.depth or not rec.on:
            return orig(*args, **kwargs)
        first = args[0] if args else next(iter(kwargs.values()), None)
        op = rec.begin_group_op(api, kind, first,
                                args[g_i] if len(args) > g_i else kwargs.get(g_name), state)
        result = _call_inside(rec, op, orig, args, kwargs)
        rec.finish(op, result)
        return result

    return hooked


def _batch_wrapper(rec: Recorder, orig: Callable[..., Any]) -> Callable:
    """No line of its own: each op torch issues from the batch is one, tagged with the batch."""
    tls = rec.tls

    @functools.wraps(orig)
    def hooked(p2p_op_list: Any, *args: Any, **kwargs: Any) -> Any:
        state = tls.state
        if state.depth or not rec.on:
            return orig(p2p_op_list, *args, **kwargs)
        outer = state.batch
        state.batch = rec.begin_batch(p2p_op_list)
        try:
            return orig(p2p_op_list, *args, **kwargs)
        finally:
            state.batch = outer

    return hooked


def _descriptor_init(rec: Recorder, orig: Callable[..., Any]) -> Callable:
    tls = rec.tls

    @functools.wraps(orig)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        orig(self, *args, **kwargs)
        if rec.on and not tls.state.depth:
            rec.note_p2pop(self)

    return __init__


def _setup_wrapper(rec: Recorder, orig: Callable[..., Any], api: str) -> Callable:
    signature = inspect.signature(orig)
    tls = rec.tls

    @functools.wraps(orig)
    def hooked(*args: Any, **kwargs: Any) -> Any:
        if tls.state.depth or not rec.on:
            return orig(*args, **kwargs)
        op = rec.begin_setup(api, _setup_details(rec, api, signature, args, kwargs))
        result = _call_inside(rec, op, orig, args, kwargs)
        if api == "init_process_group":
            rec.initialised(op)
        else:
            rec.group_created(op, result)
        return result

    return hooked


def _setup_details(rec: Recorder, api: str, signature: inspect.Signature, args: tuple,
                   kwargs: dict[str, Any]) -> dict[str, Any]:
    try:
        bound = signature.bind_partial(*args, **kwargs).arguments
    except TypeError:
        return {}  # torch raises the caller's error itself
    if api == "new_group":
        ranks = bound.get("ranks")
        return {"ranks": sorted(ranks) if ranks is not None else None,
                "desc": bound.get("group_desc")}
    rec.expect_rank(bound.get("rank"))
    device = bound.get("device_id")
    return {"backend": bound.get("backend"),
            "device_id": str(device) if device is not None else None}


def _start_coalescing(rec: Recorder, orig: Callable[..., Any]) -> Callable:
    @functools.wraps(orig)
    def _start_coalescing(self: Any, *args: Any, **kwargs: Any) -> Any:
        if rec.on:
            rec.open_window(self)
        try:
            return orig(self, *args, **kwargs)
        except BaseException as exc:
            rec.close_window(self, None, exc)
            raise

    return _start_coalescing


def _end_coalescing(rec: Recorder, orig: Callable[..., Any]) -> Callable:
    @functools.wraps(orig)
    def _end_coalescing(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            work = orig(self, *args, **kwargs)
        except BaseException as exc:
            rec.close_window(self, None, exc)
            raise
        rec.close_window(self, work, None)
        return work

    return _end_coalescing


def _work_wait(rec: Recorder, orig: Callable[..., Any]) -> Callable:
    works = rec.works

    @functools.wraps(orig)
    def wait(self: Any, *args: Any, **kwargs: Any) -> Any:
        if id(self) not in works:
            return orig(self, *args, **kwargs)
        try:
            result = orig(self, *args, **kwargs)
        except BaseException as exc:
            rec.work_waited(self, exc)
            raise
        rec.work_waited(self, None)
        return result

    return wait
