"""Finds every P2P call site in one module, however the API is spelled.

Spellings covered: `torch.distributed.X`, `import torch.distributed as dist`, `from torch import
distributed`, `from torch.distributed import isend as snd`, `distributed_c10d.X`, names the
package hands on (star imports, re-exports: `exports.py`), simple aliases (`snd = dist.isend`,
`backend = dist`, in several branches), `self.d = torch.distributed`, `getattr(dist, "isend")`,
ops kept in a table (`OPS["send"](...)`), a module's own defs (torch's `send` in torch itself),
`functools.partial(dist.isend, ...)`, ops passed as values (`ops.append(dist.irecv)`), ops in a
coalescing-manager block, and `ProcessGroup.send/recv` where the receiver is known to be a process
group (annotated, or made by a factory such as `dist.new_group`). An op that becomes a `P2POp`
(`P2POp(dist.isend, ...)`, or through a helper's parameter) is part of that descriptor, and a
descriptor is batched where data flow takes it into a batch (`flows.py`); names in comparisons and
type tests are not sites. Which names are APIs is data: `rules/torch.toml`.

The walk that finds them is `finder.py`; here they become `Site`s with stable ids.
"""

from __future__ import annotations

import ast
from dataclasses import asdict, dataclass
from typing import Any

from auditor.rulebook.apis import ApiTable, load_table
from auditor.static.exports import Routes
from auditor.static.sites.finder import Finder
from auditor.static.sites.pending import Pending
from auditor.static.source import Source, parse


@dataclass
class Site:
    id: str
    package: str
    path: str
    line: int
    end_line: int
    function: str
    api: str
    batched: bool
    group: str
    peer: str | None = None
    op: str | None = None  # the op a P2POp describes: "isend", "irecv" or the expression
    form: str = "call"  # "call" | "method" | "partial" | "reference"
    issues: str = "op"  # from the rules: "op" | "descriptor" | "batch" | "fused"
    module: str = ""
    via: str | None = None  # the alias a call went through, e.g. "snd"
    text: str = ""  # first line of the expression, for tables and reports

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def find_sites(
    text: str, relpath: str, module: str, package: str, table: ApiTable,
    received: Routes | None = None,
) -> list[Site]:
    """All sites of one module, in source order, with stable ids. Raises SyntaxError."""
    tree = parse(text)
    return [site for site, _ in sites_with_nodes(Source(text), tree, relpath, module, package,
                                                 table, received)]


def sites_with_nodes(
    source: Source, tree: ast.Module, relpath: str, module: str, package: str, table: ApiTable,
    received: Routes | None = None,
) -> list[tuple[Site, ast.expr]]:
    """Each site with the node it was found at (the call, or the referenced name);
    `received`: what the module gets from torch through its package (`exports.routes`)."""
    finder = Finder(source, module, relpath.endswith("__init__.py"), table, received)
    finder.visit_all(tree.body)
    pending = finder.finish()
    _fill_batch_groups(pending)
    sites: list[tuple[Site, ast.expr]] = []
    ordinals: dict[tuple[str, str], int] = {}
    for p in sorted(pending, key=lambda p: (p.node.lineno, p.node.col_offset)):
        key = (p.function, p.fields["api"])
        ordinal = ordinals.get(key, 0)
        ordinals[key] = ordinal + 1
        sites.append((_site(p, relpath, module, package, ordinal, source), p.node))
    return sites


def _site(p: Pending, relpath: str, module: str, package: str, ordinal: int,
          source: Source) -> Site:
    fields = dict(p.fields)
    first = source.segment(p.node).strip().splitlines()[0]
    return Site(
        id=f"{package}:{module}.{p.function}:{fields['api']}:{ordinal}",
        package=package,
        path=relpath,
        line=p.node.lineno,
        end_line=p.node.end_lineno or p.node.lineno,
        function=p.function,
        module=module,
        text=first,
        **fields,
    )


def _fill_batch_groups(pending: list[Pending]) -> None:
    """A batch takes its group from its descriptors: name it when they agree in the function."""
    groups: dict[str, set[str]] = {}
    for p in pending:
        if p.fields["issues"] == "descriptor":
            groups.setdefault(p.function, set()).add(p.fields["group"])
    for p in pending:
        if p.fields["issues"] == "batch":
            found = groups.get(p.function, set())
            p.fields["group"] = found.pop() if len(found) == 1 else "from ops"


_TABLES: dict[str | None, ApiTable] = {}


def table(version: str | None = None) -> ApiTable:
    """The API table, loaded once per process (workers included)."""
    if version not in _TABLES:
        _TABLES[version] = load_table(version)
    return _TABLES[version]
