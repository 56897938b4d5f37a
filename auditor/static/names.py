"""Scope-aware resolution of names to dotted qualified names through imports and aliases.

A light replacement for libcst's QualifiedNameProvider, which costs about 2 s on one 4,000-line
megatron file: we only need what imports and simple aliases (`snd = dist.isend`) bind, walked
once in source order over the stdlib `ast` tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import ast


@dataclass
class _Frame:
    kind: str  # "module" | "class" | "function"
    names: dict[str, str | None] = field(default_factory=dict)  # None: a local shadows it


def dotted(node: ast.AST) -> str | None:
    """`a.b.c` as text when the expression is a plain Name/Attribute chain."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


def qualname(stack: list[tuple[str, str]]) -> str:
    """Python's `__qualname__` for a stack of ("class" | "function", name) scopes, the way the
    runtime's `co_qualname` spells it (so static sites and recorded frames meet)."""
    if not stack:
        return "<module>"
    parts: list[str] = []
    for i, (kind, name) in enumerate(stack):
        parts.append(name)
        if kind == "function" and i < len(stack) - 1:
            parts.append("<locals>")
    return ".".join(parts)


def import_bindings(node: ast.Import | ast.ImportFrom, module: str,
                    is_package: bool) -> list[tuple[str, str, bool]]:
    """(local name, qualified target, is a module import) for each name an import binds.
    `import a.b` binds `a` (target `a.b`: importing it is a side effect)."""
    if isinstance(node, ast.Import):
        return [(alias.asname, alias.name, True) if alias.asname else
                (alias.name.split(".")[0], alias.name, True) for alias in node.names]
    base = import_target(module, is_package, node)
    if base is None or node.names[0].name == "*":
        return []
    return [(alias.asname or alias.name, f"{base}.{alias.name}", False) for alias in node.names]


def import_target(module: str, is_package: bool, node: ast.ImportFrom) -> str | None:
    """The absolute module a `from X import ...` names, resolving relative dots."""
    return absolute_module(node.level, node.module or "", module, is_package)


def absolute_module(level: int, mod: str, module: str, is_package: bool) -> str | None:
    """`from <level dots><mod> import ...` written in `module`, as an absolute module name."""
    if level == 0:
        return mod
    parts = module.split(".") if module else []
    if not is_package:
        parts = parts[:-1]
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join([*base, mod] if mod else base) or None


def getattr_constant(node: ast.AST) -> tuple[ast.expr, str] | None:
    """(object, attribute) of `getattr(object, "attribute")` (a default value allowed)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"):
        return None
    if len(node.args) not in (2, 3) or node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
        return None
    name = node.args[1]
    if isinstance(name, ast.Constant) and isinstance(name.value, str) and name.value.isidentifier():
        return node.args[0], name.value
    return None


class Scopes:
    """The binding frames of the walk; visitors push/pop around classes and functions.

    `received` are the names the module's star imports bind before its first line, `attributes`
    package attributes that are really torch (`pkg.aliases.dist` -> `torch.distributed`): both
    come from the package's import graph (`exports.routes`)."""

    def __init__(self, module: str, is_package: bool, received: dict[str, str] | None = None,
                 attributes: dict[str, str] | None = None) -> None:
        self.module = module
        self.is_package = is_package
        self.frames: list[_Frame] = [_Frame("module", dict(received or {}))]
        self.attributes = attributes or {}

    def push(self, kind: str) -> None:
        self.frames.append(_Frame(kind))

    def pop(self) -> None:
        self.frames.pop()

    def bind(self, name: str, target: str | None) -> None:
        self.frames[-1].names[name] = target

    def frame_of(self, name: str) -> _Frame | None:
        """The frame whose binding of `name` is visible here."""
        innermost = True
        for frame in reversed(self.frames):
            # Class bodies are not enclosing scopes for the methods inside them.
            if frame.kind == "class" and not innermost:
                continue
            if name in frame.names:
                return frame
            innermost = False
        return None

    def lookup(self, name: str) -> str | None:
        frame = self.frame_of(name)
        return frame.names[name] if frame is not None else None

    def resolve(self, node: ast.AST) -> str | None:
        """Qualified name of a Name/Attribute chain whose head is bound by an import/alias;
        `getattr(x, "name")` is `x.name`."""
        text = dotted(node)
        if text is not None:
            head, _, rest = text.partition(".")
            target = self.lookup(head)
            if target is None:
                return None
            return self._rewrite(f"{target}.{rest}" if rest else target)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return self._rewrite(f"{base}.{node.attr}") if base else None
        attr = getattr_constant(node)
        if attr is not None and self.frame_of("getattr") is None:  # the builtin
            base = self.resolve(attr[0])
            return self._rewrite(f"{base}.{attr[1]}") if base else None
        return None

    def _rewrite(self, qualname: str) -> str:
        """A package attribute that is torch, by its torch name."""
        if not self.attributes:
            return qualname
        parts = qualname.split(".")
        for i in range(len(parts), 1, -1):
            hit = self.attributes.get(".".join(parts[:i]))
            if hit is not None:
                return ".".join([hit, *parts[i:]])
        return qualname

    def bind_import(self, node: ast.Import | ast.ImportFrom) -> None:
        for local, target, is_module in import_bindings(node, self.module, self.is_package):
            head = target.split(".")[0]
            self.bind(local, head if is_module and local == head else target)
