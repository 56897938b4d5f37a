"""Every class name of the package has one home (issue 26 item 6): four `Group`s, three `Op`s and
two `Site`s meant a reader had to look at the import to know which record a line held, and a
file needing two of them had to alias one. Nested and private classes count too: a traceback or
a `repr` names the class, not its module."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "auditor"


def class_homes(package: Path) -> dict[str, list[str]]:
    """Each class name defined in more than one module, with those modules (relative paths)."""
    homes: dict[str, set[str]] = defaultdict(set)
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ClassDef):
                homes[node.name].add(path.relative_to(package.parent).as_posix())
    return {name: sorted(paths) for name, paths in sorted(homes.items()) if len(paths) > 1}


def test_no_class_name_is_defined_in_two_modules() -> None:
    assert class_homes(PACKAGE) == {}


def test_a_second_home_is_found(tmp_path: Path) -> None:
    """The check sees a name defined twice, at any depth, and not one defined twice in one module."""
    pkg = tmp_path / "auditor"
    (pkg / "a").mkdir(parents=True)
    (pkg / "a" / "x.py").write_text("class Group:\n    pass\n\nclass Once:\n    pass\n")
    (pkg / "y.py").write_text("def f():\n    class Group:\n        pass\n")
    (pkg / "z.py").write_text("if True:\n    class Twice: pass\nelse:\n    class Twice: pass\n")
    assert class_homes(pkg) == {"Group": ["auditor/a/x.py", "auditor/y.py"]}
