"""Which names each module of a target receives from torch through the package's own imports.

A module can call `torch.distributed.send` without importing torch itself: DeepSpeed's
`deepspeed/comm/torch.py` gets `torch` from `from .comm import *`, and `from pkg.aliases import
dist` hands on another module's `import torch.distributed as dist`. The per-file parse cannot see
that, so this pass reads the package's import graph first (with regular expressions over the
texts, no parse: it runs on every file and must cost little next to `ast.parse`; each file's
summary is cached by content) and gives each module its `Routes`: the names star imports bind in
it, and the package attributes that are torch.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from dataclasses import dataclass, field

from auditor.sources import SourceSet
from auditor.static.analyze import FileCache, code_digest
from auditor.static.names import absolute_module

# Patterns start with a literal (the regex engine then skips ahead fast; a leading `^` would make
# it try every position); `_line_start` checks the column. Module-level statements only (column
# 0): an import inside a function binds nothing to export.
TORCH_IMPORT = re.compile(r"import[ \t]+(torch(?:\.[\w.]+)?)(?:[ \t]+as[ \t]+(\w+))?[ \t]*(?:#[^\n]*)?(?=\n|$)")
TORCH_FROM = re.compile(r"from[ \t]+(torch(?:\.[\w.]+)?)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)")
FROM_IMPORT = re.compile(r"from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\*|\([^)]*\)|[^\n#;]*)")
ALIAS = re.compile(
    r"^(\w+)[ \t]*=[ \t]*(?:([\w.]+)|getattr\([ \t]*([\w.]+)[ \t]*,[ \t]*['\"](\w+)['\"][ \t]*\))[ \t]*(?:#.*)?$",
    re.M,
)
ALL = re.compile(r"__all__[ \t]*=[ \t]*[\[(]([^\])]*)[\])]")
STRING = re.compile(r"['\"](\w+)['\"]")


@dataclass
class Routes:
    """What one module receives: `names` its star imports bind (name -> torch qualname), and
    `attributes` of package modules that are torch (`pkg.aliases.dist` -> `torch.distributed`)."""

    names: dict[str, str] = field(default_factory=dict)
    attributes: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.names or self.attributes)

    def qualnames(self) -> set[str]:
        return set(self.names.values()) | set(self.attributes.values())

    def digest(self) -> str:
        data = json.dumps([self.names, self.attributes], sort_keys=True)
        return hashlib.sha1(data.encode()).hexdigest()[:16]


@dataclass
class _ModuleExports:
    own: dict[str, str]  # module-level names bound to torch by its own imports and aliases
    imports: list[tuple[str, list[tuple[str, str]] | None]]  # (module, [(name, as)] | None: *)
    all: list[str] | None  # a literal __all__


def routes(src: SourceSet, texts: dict[str, tuple[str, str]]) -> dict[str, Routes]:
    """Routes of every file (by relpath: its text and digest) that receives torch through the
    package."""
    cache = FileCache.open(src, f"exports:{code_digest(sys.modules[__name__])}")
    modules: dict[str, tuple[str, _ModuleExports]] = {}
    for rel, (text, digest) in texts.items():
        hit, summary = cache.lookup(rel, digest)
        if not hit:
            summary = _summary(src, rel, text)
            cache.put(rel, digest, (summary.own, summary.imports, summary.all))
        else:
            summary = _ModuleExports(*summary)
        modules[src.module_name(rel)] = (rel, summary)
    cache.save()
    exported = _exports({m: s for m, (_, s) in modules.items()})
    out: dict[str, Routes] = {}
    for _module, (rel, summary) in modules.items():
        r = Routes()
        for source, names in summary.imports:
            theirs = exported.get(source, {})
            if names is None:
                visible = modules[source][1].all if source in modules else None
                r.names.update((n, q) for n, q in theirs.items() if star_binds(n, visible))
            else:
                r.attributes.update((f"{source}.{n}", theirs[n]) for n, _ in names if n in theirs)
        for name in summary.own:  # the module's own bindings come after its star imports
            r.names.pop(name, None)
        if r:
            out[rel] = r
    return out


def star_binds(name: str, declared: list[str] | None) -> bool:
    """Does `from m import *` bind `name`: listed in m's `__all__` (`declared`), else not private."""
    return name in declared if declared is not None else not name.startswith("_")


def _exports(summaries: dict[str, _ModuleExports]) -> dict[str, dict[str, str]]:
    """Module -> its globals that are torch, through chains of star imports and re-exports."""
    exported = {m: dict(s.own) for m, s in summaries.items()}
    changed = True
    while changed:
        changed = False
        for module, s in summaries.items():
            mine = exported[module]
            for source, names in s.imports:
                theirs = exported.get(source)
                if not theirs:
                    continue
                if names is None:
                    visible = summaries[source].all
                    pairs = [(n, n, q) for n, q in theirs.items() if star_binds(n, visible)]
                else:
                    pairs = [(n, alias, theirs[n]) for n, alias in names if n in theirs]
                for _, local, q in pairs:
                    if local not in s.own and mine.get(local) != q:
                        mine[local] = q
                        changed = True
    return exported


def _summary(src: SourceSet, rel: str, text: str) -> _ModuleExports:
    # The patterns read lines ending in \n: a Windows-built wheel's \r\n (deepspeed 0.14.5's
    # win_amd64 wheel) otherwise hides every `import torch` and star import it has.
    text = text.replace("\r\n", "\n")
    own: dict[str, str] = {}
    if "torch" in text:
        for m in TORCH_IMPORT.finditer(text):
            if not _line_start(text, m.start(), indented=False):
                continue
            target, alias = m.group(1), m.group(2)
            if alias:
                own[alias] = target
            else:
                own.setdefault("torch", "torch")
        for m in TORCH_FROM.finditer(text):
            if not _line_start(text, m.start(), indented=False):
                continue
            for name, alias in _names(m.group(2)) or []:
                own[alias] = f"{m.group(1)}.{name}"
        for m in ALIAS.finditer(text) if "distributed" in text else ():
            local, value = m.group(1), m.group(2) or f"{m.group(3)}.{m.group(4)}"
            head, _, rest = value.partition(".")
            if head in own:
                own[local] = f"{own[head]}.{rest}" if rest else own[head]
    imports: list[tuple[str, list[tuple[str, str]] | None]] = []
    if "import" in text:
        module = src.module_name(rel)
        is_package = rel.endswith("__init__.py")
        for m in FROM_IMPORT.finditer(text):
            if not _line_start(text, m.start(), indented=True):
                continue
            spec = m.group(1)
            level = len(spec) - len(spec.lstrip("."))
            base = absolute_module(level, spec[level:], module, is_package)
            if base is not None and not base.startswith("torch"):
                imports.append((base, _names(m.group(2))))
    declared = next((m for m in ALL.finditer(text) if _line_start(text, m.start(), indented=False)),
                    None) if "__all__" in text else None
    return _ModuleExports(own, imports, STRING.findall(declared.group(1)) if declared else None)


def _line_start(text: str, pos: int, indented: bool) -> bool:
    """Whether `pos` begins a statement: at column 0, or after indentation only."""
    line = text.rfind("\n", 0, pos) + 1
    return line == pos or (indented and not text[line:pos].strip(" \t"))


def _names(spec: str) -> list[tuple[str, str]] | None:
    """`a, b as c` (or the parenthesised form) as [(name, local)]; None for `*`."""
    spec = spec.strip()
    if spec == "*":
        return None
    out = []
    for part in spec.strip("()").replace("\\\n", " ").split(","):
        words = part.split("#", 1)[0].split()
        if len(words) == 1 and words[0].isidentifier():
            out.append((words[0], words[0]))
        elif len(words) == 3 and words[1] == "as":
            out.append((words[0], words[2]))
    return out
