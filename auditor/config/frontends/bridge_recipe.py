"""A Megatron-Bridge recipe function, read statically: the ConfigContainer fields it sets.

`run_recipe.py --recipe NAME` calls the function NAME of the checkout's recipe packages
(`[recipe_runner] recipe_dirs` of rules/megatron-bridge.toml) and applies the command line's
overrides to what it returns. The function is read with the stdlib `ast`, never run: its
straight-line `cfg.model.X = LITERAL` assignments, the base it starts from (`cfg =
_sft_common()`, followed into that function, or `ConfigContainer(comm_overlap=None, ...)`), and
`cfg.model = ...` / `cfg.comm_overlap = ...` replacing a whole part. Fail closed: a field set to
something not a literal, under a condition, in a loop, or by a call handed `cfg` (what the
called function's body may set, param_writes; all of it where that is not read) is unknown (with
where and why), never the default; a field the recipe does not touch keeps the provider's
default (the rules' [[arg]] default). A recipe not found, or defined twice, leaves every field
unknown.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

from auditor.bash.values import Symbolic
from auditor.config.frontends import param_writes

_MAX_DEPTH = 4  # base functions followed (`cfg = _peft_common_vlm()` -> `_peft_common()` -> ...)
_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.Match)


@dataclass(frozen=True)
class RecipeValue:
    value: str | Symbolic  # the literal as override text (`2`, `None`, `true`), or unknown
    where: str  # file:line of the assignment, relative to the checkout


class RecipeReader:
    """Reads recipe functions from one checkout's recipe directories, for `keys` (dotted
    ConfigContainer fields; `comm_overlap` is read as whether one is set)."""

    def __init__(self, root: Path, dirs: list[str], keys: list[str], layout_keys: list[str]) -> None:
        self.root = root
        self.dirs = [root / d for d in dirs]
        self.keys = list(keys)
        self.layout_keys = list(layout_keys)

    def read(self, name: str) -> dict[str, RecipeValue]:
        """key -> the recipe's value (`keys` and `layout_keys`); a key the recipe leaves alone
        is absent."""
        found = self._defs(name)
        if len(found) != 1:
            why = (f"no recipe function {name} in {', '.join(self._shown(d) for d in self.dirs)}" if not found
                   else f"{name} is defined in {len(found)} places ({', '.join(w for _, w in found[:3])})")
            return self.unknown(why)
        (fn, path), _ = found[0]
        state: dict[str, RecipeValue] = {}
        self._run(fn, path, state, 0)
        return state

    def unknown(self, why: str) -> dict[str, RecipeValue]:
        return unknown_fields(self.keys, why)

    # -- finding a function --

    def _shown(self, path: Path) -> str:
        return str(path.relative_to(self.root)) if path.is_relative_to(self.root) else str(path)

    def _defs(self, name: str) -> list[tuple[tuple[ast.FunctionDef, Path], str]]:
        """Where `name` is defined as a function, or re-exported `from M import F as name`."""
        out = []
        needle = f"def {name}("
        for path in self._files():
            text = _text(path)
            if needle in text:
                out += [((fn, path), f"{self._shown(path)}:{fn.lineno}") for fn in _functions(path) if fn.name == name]
        if out:
            return out
        aliases = {(m, f) for path in self._files() if f" as {name}" in _text(path)
                   for m, f in _imports(path).get(name, [])}
        for module, original in sorted(aliases):
            target = self._module(module)
            if target is not None:
                out += [((fn, target), f"{self._shown(target)}:{fn.lineno}")
                        for fn in _functions(target) if fn.name == original]
        return out

    def _files(self) -> list[Path]:
        return [p for d in self.dirs if d.is_dir() for p in sorted(d.rglob("*.py"))]

    def _module(self, module: str) -> Path | None:
        """A dotted module's file under the checkout (`src/` layout or not)."""
        rel = Path(*module.split("."))
        for base in (self.root / "src", self.root):
            for cand in (base / rel.with_suffix(".py"), base / rel / "__init__.py"):
                if cand.is_file():
                    return cand
        return None

    def _callee(self, name: str, path: Path, depth: int = 0) -> tuple[ast.FunctionDef, Path] | None:
        """A function called by name in `path`: defined there or imported into it. Python calls the
        binding in scope (the last one, a nested def before a module one); a name bound more than
        once in the file, or other than by one def or one import, is not read."""
        bound = _bindings(path, name)
        if len(bound) != 1 or bound[0] is None or depth > _MAX_DEPTH:
            return None
        if isinstance(bound[0], ast.FunctionDef):
            return bound[0], path
        target = self._module(bound[0][0])
        return self._callee(bound[0][1], target, depth + 1) if target is not None else None

    # -- reading a function's body --

    def _run(self, fn: ast.FunctionDef, path: Path, state: dict[str, RecipeValue], depth: int) -> None:
        returned = next((s.value.id for s in ast.walk(fn) if isinstance(s, ast.Return)
                         and isinstance(s.value, ast.Name)), None)
        for stmt in fn.body:
            where = f"{self._shown(path)}:{stmt.lineno}"
            if isinstance(stmt, ast.Return):
                if isinstance(stmt.value, ast.Call):
                    self._base(stmt.value, path, state, depth, where)
                return
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if stmt.value is not None and len(targets) == 1:
                    self._assign(targets[0], stmt.value, returned, path, state, depth, where)
                    continue
            self._opaque(stmt, returned, path, state, where)

    def _assign(self, target: ast.expr, value: ast.expr, cfg: str | None, path: Path,
                state: dict[str, RecipeValue], depth: int, where: str) -> None:
        if isinstance(target, ast.Name) and target.id == cfg:
            if isinstance(value, ast.Call):
                self._base(value, path, state, depth, where)
            else:
                self._set_all(state, "", Symbolic(f"{where} sets the config to `{ast.unparse(value)}`"), where)
            return
        dotted = _dotted(target, cfg)
        if dotted is None:
            self._opaque(ast.Expr(value), cfg, path, state, where)
            return
        self._field(dotted, value, state, where)

    def _field(self, dotted: str, value: ast.expr, state: dict[str, RecipeValue], where: str) -> None:
        if dotted in ("model", "comm_overlap"):
            for k in [k for k in state if k.startswith(dotted + ".")]:
                del state[k]  # a new object: its fields are its class's defaults
        if dotted == "comm_overlap":
            if isinstance(value, ast.Constant) and value.value is None:
                state[dotted] = RecipeValue("false", where)
            elif isinstance(value, ast.Call):
                state[dotted] = RecipeValue("true", where)
                for kw in value.keywords:
                    key = f"comm_overlap.{kw.arg}"
                    if key in self.keys:
                        state[key] = self._value(kw.value, where)
            else:
                state[dotted] = RecipeValue(Symbolic(f"{where} sets comm_overlap to `{ast.unparse(value)}`"), where)
        elif dotted in self.keys or dotted in self.layout_keys:
            state[dotted] = self._value(value, where)

    def _value(self, value: ast.expr, where: str) -> RecipeValue:
        if isinstance(value, ast.Constant) and (value.value is None or isinstance(value.value, (bool, int, str))):
            v = value.value
            text = "None" if v is None else ("true" if v is True else "false" if v is False else str(v))
            return RecipeValue(text, where)
        return RecipeValue(Symbolic(f"{where} sets it to `{ast.unparse(value)}`, not a literal"), where)

    def _base(self, call: ast.Call, path: Path, state: dict[str, RecipeValue], depth: int, where: str) -> None:
        """`cfg = helper()` / `return ConfigContainer(...)`: the config the recipe starts from."""
        name = call.func.id if isinstance(call.func, ast.Name) else None
        state.clear()
        if name == "ConfigContainer":
            for kw in call.keywords:
                if kw.arg is not None:
                    self._field(kw.arg, kw.value, state, where)
            return
        callee = self._callee(name, path) if name and depth < _MAX_DEPTH else None
        if callee is None:
            self._set_all(state, "", Symbolic(f"{where} builds the config with `{ast.unparse(call.func)}`, "
                                              "which is not read"), where)
            return
        self._run(callee[0], callee[1], state, depth + 1)

    def _opaque(self, stmt: ast.stmt, cfg: str | None, path: Path, state: dict[str, RecipeValue],
                where: str) -> None:
        """A statement not read as an assignment: whatever of the config it can change is unknown
        (of a function handed the config, what its body may set: param_writes)."""
        if cfg is None:
            return
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call):
                for arg in [*node.args, *(k.value for k in node.keywords)]:
                    part = _dotted(arg, cfg) if not (isinstance(arg, ast.Name) and arg.id == cfg) else ""
                    if part is not None:
                        self._handed(node, arg, part, path, state, where)
                if isinstance(node.func, ast.Attribute):
                    owner = _dotted(node.func.value, cfg)
                    if owner:
                        self._set_all(state, owner, Symbolic(f"{where} calls `{ast.unparse(node.func)}`"), where)
            targets = (node.targets if isinstance(node, ast.Assign) else
                       [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For)) else [])
            for t in targets:
                dotted = "" if isinstance(t, ast.Name) and t.id == cfg else _dotted(t, cfg)
                if dotted is not None and isinstance(stmt, _COMPOUND):
                    self._set_all(state, dotted, Symbolic(f"{where} sets {dotted or 'the config'} under a "
                                                          "condition or in a loop"), where)

    def _handed(self, call: ast.Call, arg: ast.expr, part: str, path: Path, state: dict[str, RecipeValue],
                where: str) -> None:
        """`helper(cfg.model, ...)`: the fields under `part` the helper may set become unknown."""
        func = ast.unparse(call.func)
        found = self._callee(call.func.id, path) if isinstance(call.func, ast.Name) else None
        bound = param_writes.bound(found[0], call, arg) if found else None
        sets = param_writes.writes(found[0], found[1], bound, self._callee) if found and bound else None
        if sets is None:
            self._set_all(state, part, Symbolic(f"{where} hands the config to `{func}`, which is not read"), where)
            return
        for field in sorted(".".join(p for p in (part, s) if p) for s in sets):
            self._set_all(state, field, Symbolic(f"{where} hands the config to `{func}`, which may set "
                                                 f"{field or 'all of it'}"), where)

    def _set_all(self, state: dict[str, RecipeValue], prefix: str, value: Symbolic, where: str) -> None:
        """Every tracked field at, under or above `prefix` ("" for the whole config) becomes `value`
        (`model.a.x = 1` changes what `model.a` is)."""
        for k in [*self.keys, *self.layout_keys]:
            if not prefix or k == prefix or k.startswith(prefix + ".") or prefix.startswith(k + "."):
                state[k] = RecipeValue(value, where)


def unknown_fields(keys: list[str], why: str) -> dict[str, RecipeValue]:
    """Every field unknown, saying why (a recipe not found, not named, not in a checkout)."""
    return {k: RecipeValue(Symbolic(f"the recipe's {k} ({why})"), "") for k in keys}


def _dotted(node: ast.expr, cfg: str | None) -> str | None:
    """`cfg.model.x` -> "model.x"; None for anything not rooted at `cfg`."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not parts or not isinstance(node, ast.Name) or node.id != cfg:
        return None
    return ".".join(reversed(parts))


@functools.lru_cache(maxsize=4096)
def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


@functools.lru_cache(maxsize=512)
def _tree(path: Path) -> ast.Module | None:
    try:
        return ast.parse(_text(path))
    except SyntaxError:
        return None


def _functions(path: Path) -> list[ast.FunctionDef]:
    tree = _tree(path)
    return [n for n in tree.body if isinstance(n, ast.FunctionDef)] if tree else []


def _bindings(path: Path, name: str) -> list[ast.FunctionDef | tuple[str, str] | None]:
    """Every binding of `name` anywhere in the file: a def, a `from M import N [as name]`
    (M, N), or anything else (None: an assignment, a parameter, a class, a loop variable)."""
    tree = _tree(path)
    out: list[ast.FunctionDef | tuple[str, str] | None] = []
    for node in ast.walk(tree) if tree else []:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            out.append(node)
        elif isinstance(node, (ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            out.append(None)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out += [(node.module, a.name) if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
                    else None for a in node.names if (a.asname or a.name.partition(".")[0]) == name]
        elif isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load) \
                or isinstance(node, ast.arg) and node.arg == name:
            out.append(None)
    return out


def _imports(path: Path) -> dict[str, list[tuple[str, str]]]:
    """local name -> [(module, name imported)] of the file's `from M import N [as L]`."""
    tree = _tree(path)
    out: dict[str, list[tuple[str, str]]] = {}
    for node in tree.body if tree else []:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                out.setdefault(alias.asname or alias.name, []).append((node.module, alias.name))
    return out
