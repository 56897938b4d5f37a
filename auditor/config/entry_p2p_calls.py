"""Whether the entry calls a framework's P2P functions itself (rules `[p2p_functions]`): an
evaluation loop that runs `recv_forward` / `send_forward` between its stages outside any schedule
(Pai-Megatron-Patch a098ca5acb examples/bloom/evaluate_megatron_bloom.py:22-23, :73, :84).

The scan's call graph starts from the framework's entry points (rules `[[entry_point]]`: the
training schedule); what only the entry's own calls reach (megatron-core's inference
communication_utils, outside every schedule) would be no call path's, never judged. Such an entry
is therefore walked too, run as `__main__` beside the framework's entry points, as an entry
issuing torch P2P itself is (config.pipelining_script.own_entry). Only the entry's own file is
read here: a local module calling them is reached only where a source holds it.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from auditor import rulebook
from auditor.config.entry_stack import entry_read, read_as_guess
from auditor.config.model import LaunchConfig
from auditor.config.pipelining_script import entry_text
from auditor.rulebook.frameworks import frameworks

TABLE = "p2p_functions"


def direct_entry(launch: LaunchConfig) -> tuple[str, str, str] | None:
    """(what runs, its module as the entry's file names it, its text) of an entry read as a
    Megatron-LM front end only as a guess that imports a `[p2p_functions]` module; else None."""
    if not read_as_guess(launch) or entry_read(launch, _imports_p2p) is None:
        return None
    read = entry_text(launch)
    return None if read is None else (read[0], Path(read[1]).stem, read[2])


@functools.lru_cache(maxsize=32)
def _imports_p2p(path: str, mtime_ns: int, size: int) -> int | None:
    """The line of the file's first import of (or from) a `[p2p_functions]` module, or None."""
    modules = _modules()
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        else:
            continue
        if any(n == m or n.startswith(f"{m}.") for n in names for m in modules):
            return node.lineno
    return None


@functools.cache
def _modules() -> tuple[str, ...]:
    """Every framework's `[p2p_functions]` modules (one list per rules file that has them)."""
    return tuple(m for f in frameworks() for m in rulebook.load(f.name).data.get(TABLE, {}).get("modules", []))
