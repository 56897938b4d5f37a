"""Each [[parser_helper]] of the rules (a library call a Megatron-LM parser is handed to, such as
Megatron-DeepSpeed's `deepspeed.add_config_arguments(parser)`) lists the flags the call adds in
every release it names in `checked`, read from that release's sdist (never imported): its flags
are the union of theirs, each with the action argparse gives it, and its `code` is at its
`source` line. A flag list that missed one would make a run using it read as DOES NOT START."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from auditor import rulebook, sources
from auditor.config.frontend_parser import _Reader, parser_helpers

CASES = [pytest.param(h, v, id=f"{h['call']}@{v}") for h in parser_helpers() for v in h["checked"]]


def _added(root: Path, helper: dict) -> dict[str, str]:
    """The flags the helper's function adds in the release at `root`: its module's add_argument
    calls in the functions the helper reaches by name."""
    module, _, name = helper["call"].rpartition(".")
    tree = ast.parse((root / module.replace(".", "/") / "__init__.py").read_text(encoding="utf-8"))
    funcs = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    todo, seen = [name], {}
    while todo:
        fn = funcs.get(todo.pop())
        if fn is None or fn.name in seen:
            continue
        seen[fn.name] = fn
        todo += [c.func.id for c in ast.walk(fn) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)]
    reader = _Reader(root)
    reader.read_tree(ast.Module(body=list(seen.values()), type_ignores=[]))
    assert not reader.missing, reader.missing
    return {s: e["action"] for s, e in reader.flags.items()}


@pytest.mark.parametrize(("helper", "version"), CASES)
def test_the_release_adds_only_listed_flags(helper, version):
    root = sources.resolve(f"{helper['module']}=={version}").root
    added = _added(root, helper)
    assert added, "the helper adds no flag: not read as written"
    assert {s: helper["flags"].get(s) for s in added} == added


@pytest.mark.parametrize("helper", parser_helpers(), ids=lambda h: h["call"])
def test_the_listed_flags_are_the_union_and_the_code_is_at_its_line(helper):
    union: dict[str, str] = {}
    for version in helper["checked"]:
        union.update(_added(sources.resolve(f"{helper['module']}=={version}").root, helper))
    assert union == helper["flags"]
    release, path_line = helper["source"].split(" ", 2)[1:]
    path, line = path_line.rsplit(":", 1)
    text = (sources.resolve(f"{helper['module']}=={release}").root / path).read_text(encoding="utf-8")
    assert text.splitlines()[int(line) - 1].strip() == helper["code"]


def test_the_rules_file_declares_the_table():
    assert any(h["call"] == "deepspeed.add_config_arguments"
               for h in rulebook.load("deepspeed").data.get("parser_helper", []))
