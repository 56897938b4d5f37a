"""Megatron-LM's command line, read statically from a megatron-core wheel's megatron/training.

Shared by the tests that hold rules/megatron-lm.toml to the real parser: its flag spellings
(test_launch.py) and its defaults (test_megatron_lm_frontend.py). Nothing is imported.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, NamedTuple


class Opaque(NamedTuple):
    """A default that is not a literal (a call, a name): compared by its source text."""

    text: str


class Option(NamedTuple):
    dest: str
    action: str  # "store", "store_true", "store_false", ...
    default: Any  # a literal, or Opaque


def _literal(node: ast.expr | None) -> Any:
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except ValueError:
        return Opaque(ast.unparse(node))


def megatron_cli(root: Path) -> dict[str, Option]:
    """spelling -> Option of Megatron-LM's parser.

    Explicit `add_argument` calls in megatron/training/arguments.py, plus the flags that
    ArgumentGroupFactory generates from config dataclasses (argument_utils.py): `--name` for a
    store_true bool, `--no-name` and `--disable-name` for a default-True bool, argparse_meta's
    arg_names and default overriding both; the default is the field's unless argparse_meta
    gives one, and a store_true/store_false flag without one defaults to False/True.
    """
    texts = {p: p.read_text(encoding="utf-8", errors="replace") for p in (root / "megatron").rglob("*.py")}

    def find_class(name: str) -> ast.ClassDef | None:
        for text in texts.values():
            if f"class {name}(" in text or f"class {name}:" in text:
                for node in ast.parse(text).body:
                    if isinstance(node, ast.ClassDef) and node.name == name:
                        return node
        return None

    def strings(nodes: list[ast.expr]) -> list[str]:
        return [n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)]

    def keyword(call: ast.Call, name: str) -> ast.expr | None:
        return next((k.value for k in call.keywords if k.arg == name), None)

    def fields(name: str) -> list[tuple[str, str, ast.expr | None]]:
        cls = find_class(name)
        assert cls is not None, name
        base = cls.bases[0] if cls.bases else None
        base_name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", None)
        out = fields(base_name) if base_name and find_class(base_name) else []
        for st_ in cls.body:
            if isinstance(st_, ast.AnnAssign) and isinstance(st_.target, ast.Name):
                out = [f for f in out if f[0] != st_.target.id]
                if not ast.unparse(st_.annotation).startswith("ClassVar"):
                    out.append((st_.target.id, ast.unparse(st_.annotation), st_.value))
        return out

    table: dict[str, Option] = {}
    tree = ast.parse(texts[root / "megatron/training/arguments.py"])
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef):
            continue
        lists = {n.targets[0].id: strings(n.value.elts) for n in ast.walk(func) if isinstance(n, ast.Assign)
                 and isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.List)}
        for call in ast.walk(func):
            if not isinstance(call, ast.Call):
                continue
            called = getattr(call.func, "attr", getattr(call.func, "id", None))
            if called == "add_argument":
                names = [s for s in strings(call.args) if s.startswith("-")]
                if not names:
                    continue
                dest, action = keyword(call, "dest"), keyword(call, "action")
                dest = dest.value if isinstance(dest, ast.Constant) else next(
                    (s for s in names if s.startswith("--")), names[0]).lstrip("-").replace("-", "_")
                action = action.value if isinstance(action, ast.Constant) else "store"
                given = keyword(call, "default")
                default = _literal(given) if given is not None else (
                    {"store_true": False, "store_false": True}.get(action))
                table.update({s: Option(dest, action, default) for s in names})
            elif called == "ArgumentGroupFactory":
                exclude = keyword(call, "exclude")
                excluded = set(lists.get(exclude.id, [])) if isinstance(exclude, ast.Name) else (
                    set(strings(exclude.elts)) if isinstance(exclude, ast.List) else set())
                cls_name = call.args[0].id if isinstance(call.args[0], ast.Name) else call.args[0].attr
                for name, annotation, value in fields(cls_name):
                    default, meta, init = value, None, None
                    if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "field":
                        default, init = keyword(value, "default"), keyword(value, "init")
                        if default is None and keyword(value, "default_factory") is not None:
                            default = ast.Call(keyword(value, "default_factory"), [], [])
                        metadata = keyword(value, "metadata")
                        if isinstance(metadata, ast.Dict):
                            meta = next((v for k, v in zip(metadata.keys, metadata.values)
                                         if isinstance(k, ast.Constant) and k.value == "argparse_meta"), None)
                    if name in excluded or (isinstance(init, ast.Constant) and init.value is False):
                        continue
                    dash = name.replace("_", "-")
                    action, names = "store", [f"--{dash}"]
                    if annotation in ("bool", "Optional[bool]", "bool | None"):
                        default_false = isinstance(default, ast.Constant) and default.value is False
                        action = "store_true" if default_false else "store_false"
                        names = [f"--{dash}"] if default_false else [f"--no-{dash}", f"--disable-{dash}"]
                    if isinstance(meta, ast.Dict):
                        for k, v in zip(meta.keys, meta.values):
                            if isinstance(k, ast.Constant) and k.value == "arg_names" and isinstance(v, ast.List):
                                names = strings(v.elts)
                            if isinstance(k, ast.Constant) and k.value == "action" and isinstance(v, ast.Constant):
                                action = v.value
                            if isinstance(k, ast.Constant) and k.value == "default":
                                default = v
                    table.update({s: Option(name, action, _literal(default)) for s in names})
    return table
