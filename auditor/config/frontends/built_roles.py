"""Which roles of a composed config the entry's pipeline builds, read from the release's source.

A ROLL entry composes one config for every pipeline (an rlvr yaml names actor_train, actor_infer,
reference, rewards), but the class it instantiates builds a worker cluster only for the roles its
`__init__` names: RLVRRolloutPipeline builds actor_infer and the rewards, never actor_train
(alibaba/ROLL@8eb27cc2dc roll/pipeline/rlvr/rlvr_rollout_pipeline.py:73-90). The rules say what
to read (`[[hydra_compose]] builds`: the packages a pipeline class comes from, the call that
builds a role's workers and its keyword naming the role's config); the checkout says which roles.
A role is `X` where the keyword is an attribute `....X`, and `X.*` (every entry of mapping X)
where it is a loop variable over `....X.items()` / `.values()`. Fail closed (None: every
role may be built): a class not found in the checkout, a building call whose role is anything
else, a called name of those packages that is no class, or no building call at all. Every method
of the class is read, not only `__init__` (a helper it calls may build), and every method of
its bases but an `__init__` that does not run (RLVRRolloutPipeline calls BasePipeline.__init__,
not its parent RLVRPipeline's, which builds actor_train).
"""

from __future__ import annotations

import ast
import builtins
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_MAX_DEPTH = 4


@dataclass(frozen=True)
class Built:
    roles: frozenset[str]  # `actor_infer`, `rewards.*`
    classes: tuple[str, ...]  # the pipeline classes, as `Name (path:line)`

    def names_keys_of(self, data: dict[str, Any]) -> bool:
        """Whether each role it builds is a key of the composed config (`reference_configs`, a
        property the config class derives from other keys, names none: which keys it covers is
        not read)."""
        return all(r.partition(".")[0] in data for r in self.roles)

    def builds(self, role: str) -> bool:
        head = role.partition(".")[0]
        return role in self.roles or f"{head}.*" in self.roles


def built_roles(entry: Path, rule: dict[str, Any]) -> Built | None:
    """The roles the pipeline classes `entry` instantiates build; None where not read. The
    classes are read from the nearest folder above the entry that holds their package."""
    tree = _tree(entry)
    packages = {p.split(".")[0] for p in rule["imports"]}
    root = next((d for d in entry.resolve().parents if any((d / p).is_dir() for p in packages)), None)
    if tree is None or root is None:
        return None
    imported = {alias.asname or alias.name: (node.module, alias.name) for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
                and any(node.module == p or node.module.startswith(p + ".") for p in rule["imports"])
                for alias in node.names}
    modules = {alias.asname or alias.name.partition(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names if any(alias.name == p or alias.name.startswith(p + ".")
                                              or p.startswith(alias.name + ".") for p in rule["imports"])}
    known = {*dir(builtins), *(n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))),
             *(alias.asname or alias.name.partition(".")[0] for node in ast.walk(tree)
               if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names)}
    roles: set[str] = set()
    classes: list[str] = []
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call):
            continue
        if not isinstance(call.func, ast.Name) or call.func.id not in imported:
            if _may_build(call.func, known - imported.keys(), modules | imported.keys()):
                return None
            continue
        found = _class(root, *imported[call.func.id])
        if found is None:
            return None
        got = _class_roles(root, found[0], found[1], rule, 0)
        if got is None:
            return None
        if got:
            roles |= got
            classes.append(f"{found[0].name} ({found[1].relative_to(root)}:{found[0].lineno})")
    return Built(frozenset(roles), tuple(classes)) if classes else None


def _may_build(func: ast.expr, known: set[str], packages: set[str]) -> bool:
    """Whether a call of the entry not to a class read may build a pipeline: a class chosen at
    run time (`safe_import_class(name)(...)`, `pipeline_cls(...)`, a variable), one reached
    through a module of the pipeline packages (`rp.RLVRPipeline(...)`), or one the entry defines.
    A builtin, a function the entry defines (its body is read with it), a name imported from
    elsewhere or a method of a local object builds none."""
    if isinstance(func, ast.Name):
        return func.id not in known
    while isinstance(func, ast.Attribute):
        func = func.value
    return not isinstance(func, ast.Name) or func.id in packages


def _class_roles(root: Path, cls: ast.ClassDef, path: Path, rule: dict[str, Any], depth: int,
                 init_runs: bool = True, run: frozenset[str] = frozenset()) -> set[str] | None:
    """Roles the class's methods build, with its bases': a base's `__init__` counts where it runs
    (the class calls it, `super().__init__` or `Base.__init__(self)`, or has none of its own and
    inherits it, or a class below calls it by name: `run`), a base's other methods always (the
    class may call them)."""
    if depth > _MAX_DEPTH:
        return None
    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    called = ([] if init is None else
              [b for node in ast.walk(init) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and node.func.attr == "__init__" for b in _base_called(node.func.value, cls)])
    out: set[str] = set()
    for base in cls.bases:
        if not isinstance(base, ast.Name):
            return None
        if base.id == "object":
            continue
        found = _resolve(root, path, base.id)
        names = run | {c.id for c in called if isinstance(c, ast.Name)} if init_runs else run
        runs = init_runs and (init is None or base.id in names) or base.id in run
        inner = _class_roles(root, found[0], found[1], rule, depth + 1, runs, names) if found else None
        if inner is None:
            return None
        out |= inner
    bodies = [f for f in cls.body if not (f is init and not init_runs)]
    loops = {t.id: it for body in bodies for node in ast.walk(body) if isinstance(node, (ast.For, ast.comprehension))
             for t, it in _targets(node.target, node.iter)}
    for node in (n for body in bodies for n in ast.walk(body)):
        if not isinstance(node, ast.Call):
            continue
        if _hands_self(node, cls):
            return None
        if _name(node.func) == rule["call"] or any(k.arg == rule["keyword"] for k in node.keywords):
            value = next((k.value for k in node.keywords if k.arg == rule["keyword"]), None)
            role = _role(value, loops)
            if role is None:
                return None
            out.add(role)
    return out


def _hands_self(call: ast.Call, cls: ast.ClassDef) -> bool:
    """A call that hands `self` to a function not read with the class (`_build_trainer(self)`
    may build any role); a class's `__init__` (read with the bases: `run`), a base's method and a builtin
    (`getattr(self, ...)`) are read or build nothing."""
    if not any(isinstance(a, ast.Name) and a.id == "self" for a in [*call.args, *(k.value for k in call.keywords)]):
        return False
    func = call.func
    if isinstance(func, ast.Name):
        return not hasattr(builtins, func.id)
    return not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and (
        func.attr == "__init__" or any(isinstance(b, ast.Name) and b.id == func.value.id for b in cls.bases)))


def _base_called(owner: ast.expr, cls: ast.ClassDef) -> list[ast.expr]:
    """`super().__init__` -> the class's bases; `Base.__init__` -> Base."""
    if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
        return list(cls.bases)
    return [owner] if isinstance(owner, ast.Name) else []


def _targets(target: ast.expr, iterable: ast.expr) -> list[tuple[ast.Name, ast.expr]]:
    """The loop's names over `....X.items()` / `.values()`: each bound to that mapping's entries."""
    if not (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute)
            and iterable.func.attr in ("items", "values") and isinstance(iterable.func.value, ast.Attribute)):
        return []
    if iterable.func.attr == "items" and isinstance(target, ast.Tuple) and len(target.elts) == 2:
        target = target.elts[1]
    return [(target, iterable.func.value)] if isinstance(target, ast.Name) else []


def _role(value: ast.expr | None, loops: dict[str, ast.expr]) -> str | None:
    if isinstance(value, ast.Attribute):
        return value.attr
    if isinstance(value, ast.Name) and isinstance(mapping := loops.get(value.id), ast.Attribute):
        return f"{mapping.attr}.*"
    return None


def _name(func: ast.expr) -> str | None:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _class(root: Path, module: str, name: str) -> tuple[ast.ClassDef, Path] | None:
    rel = Path(*module.split("."))
    for base in (root, root / "src"):
        for cand in (base / rel.with_suffix(".py"), base / rel / "__init__.py"):
            tree = _tree(cand) if cand.is_file() else None
            if tree is not None:
                found = next((c for c in tree.body if isinstance(c, ast.ClassDef) and c.name == name), None)
                return (found, cand) if found else _resolve(root, cand, name, own=False)
    return None


def _resolve(root: Path, path: Path, name: str, own: bool = True) -> tuple[ast.ClassDef, Path] | None:
    """A class named in `path`: defined there, or imported into it."""
    tree = _tree(path)
    if tree is None:
        return None
    if own:
        found = next((c for c in tree.body if isinstance(c, ast.ClassDef) and c.name == name), None)
        if found is not None:
            return found, path
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    return _class(root, node.module, alias.name)
    return None


@functools.lru_cache(maxsize=256)
def _tree(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError):
        return None
