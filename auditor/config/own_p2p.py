"""Whether a file of the entry's own code issues torch's P2P itself: the one reader of it.

The entry's readers (config.entry_stack: no pipeline, an unknown stack; analysis.schedule_reach:
no schedule reached; config.pipelining_script: the entry's own ops as sites the scan judges)
ask here, and the answer is the site finder's (static/sites, the one that makes the scan's
sites): a file "issues" P2P where it holds a site (`dist.send(t, 1)`, `from torch.distributed
import *` then `isend(...)`, a process group's `g.send([t], 1, 0)`, `getattr(dist, "send")`),
so what is said to be its own P2P is what the scan judges. Two things it does not decide, kept
apart as `unsure` (never read as "no P2P"):
- `getattr(dist, NAME)` on torch.distributed with a name not known statically;
- a P2P API or process-group method name called on an object the finder cannot type
  (`group.send([t], 1)` on a group handed in as an argument), which may be torch's.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

from auditor.config.entry_script import dotted, iter_closure, names
from auditor.static.sites.sites import sites_with_nodes, table
from auditor.static.source import Source

# (file, line, the code as written)
Use = tuple[str, int, str]


@dataclass(frozen=True)
class OwnP2P:
    """The P2P a file (or an entry's closure) issues: `sites`, decided; `unsure`, what may be."""

    sites: tuple[Use, ...] = ()
    unsure: tuple[Use, ...] = ()
    computed: tuple[Use, ...] = ()  # of `unsure`: getattr(torch.distributed, NAME not known)

    @property
    def issues(self) -> bool:
        """Whether the code issues torch P2P, or calls torch.distributed by a name not known:
        not a `conn.send(...)` of an object not typed here (a socket's, a pipe's)."""
        return bool(self.sites or self.computed)

    @property
    def may(self) -> bool:
        """Whether the code may issue P2P (a site, or any use not decided)."""
        return bool(self.sites or self.unsure)

    def __add__(self, other: OwnP2P) -> OwnP2P:
        return OwnP2P(self.sites + other.sites, self.unsure + other.unsure, self.computed + other.computed)


@functools.lru_cache(maxsize=512)
def read(text: str, path: str) -> OwnP2P:
    """The P2P of one file: its text (`path`, as shown). Cached: the entry's readers
    (config.entry_stack twice, analysis.schedule_reach, `closure`) each ask of the same files."""
    tree = ast.parse(text)
    api = table()
    found = sites_with_nodes(Source(text), tree, path, Path(path).stem, "entry", api)
    sites = tuple(dict.fromkeys((path, s.line, s.text) for s, _ in found))
    decided = {s.line for s, _ in found}
    short = {q.rsplit(".", 1)[-1] for q in api.by_qualname} | set(api.pg_methods)
    bound = names(tree)
    unsure: list[Use] = []
    computed: list[Use] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _on_torch_distributed(node, bound):
            use = (path, node.lineno, ast.unparse(node)[:80])
            computed.append(use)
            unsure.append(use)
        elif isinstance(node, ast.Attribute) and node.attr in short and node.lineno not in decided:
            unsure.append((path, node.lineno, ast.unparse(node)[:80]))
    return OwnP2P(sites, tuple(unsure), tuple(computed))


def _on_torch_distributed(node: ast.Call, bound: dict[str, str]) -> bool:
    """`getattr(dist, name)` on torch.distributed (or its distributed_c10d), `name` not a literal."""
    if not (isinstance(node.func, ast.Name) and node.func.id == "getattr" and len(node.args) >= 2):
        return False
    if isinstance(node.args[1], ast.Constant):
        return False  # `getattr(dist, "send")`: the finder reads it
    written = dotted(node.args[0])
    head, _, rest = written.partition(".")
    target = bound.get(head, head) + (f".{rest}" if rest else "")
    return target in ("torch.distributed", "torch.distributed.distributed_c10d")


def of_tree(tree: ast.Module) -> OwnP2P:
    """`read` of a tree whose text is not at hand (its lines are the unparsed code's)."""
    return read(ast.unparse(tree), "<code>")


@functools.lru_cache(maxsize=16)
def closure(path: str, mtime_ns: int, size: int, stop: frozenset[str]) -> tuple[OwnP2P, list[Path]]:
    """The P2P the entry at `path` and its local modules (entry_script.iter_closure) issue, and
    the closure's files (MAX_MODULES of them where it was cut: what was not read is unknown).
    `stop`: the import
    packages of the stacks the rules model (a Megatron-LM checkout's megatron/ beside the entry):
    their P2P is the framework's, judged from its release, not the entry's own. Shown relative to
    the entry's folder."""
    script = Path(path)
    out = OwnP2P()
    files = []
    for module, _ in iter_closure(script, stop):
        files.append(module)
        shown = str(module.relative_to(script.parent)) if module.is_relative_to(script.parent) else str(module)
        out += read(module.read_text(encoding="utf-8"), shown)
    return out, files
