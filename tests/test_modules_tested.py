"""Every module of the package is imported by some test (issue 26 item 5), or is listed below with
the reason it has none. Read statically from tests/: `import auditor.x.y`, `from auditor.x import y`
(y a module), `from auditor.x.y import ...`; a package counts as imported when any of its modules
is. The list is held to the truth both ways: a listed module that gains a test, or is gone, fails
until its line is removed."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = "runs only in a child process that a test starts (a rank, an entry point, sitecustomize): {}"
CLI = "a command's module: run through auditor.cli.main by {}"
INNER = "an inner module of its layer, tested through {}"

# Module -> why no test imports it. Keep it short: a module with a contract of its own gets a test.
UNTESTED: dict[str, str] = {
    "auditor.__main__": CHILD.format("`python -m auditor` in tests/hostile/test_output_errors.py"),
    "auditor.dynamic.bootstrap.sitecustomize": CHILD.format("P2PAUDIT_TRACE runs, tests/dynamic/test_record_runs.py"),
    "auditor.dynamic.session": CHILD.format("the recorded ranks, tests/dynamic/test_record_runs.py"),
    "auditor.dynamic.hang": CHILD.format("the recorded ranks' hang files, tests/dynamic/test_record_runs.py"),
    "auditor.repro.rank": CHILD.format("repro's gloo ranks, tests/repro/test_repro.py"),
    "auditor.simulate.rank": CHILD.format("simulate's ranks, tests/simulate/test_simulate.py"),
    "auditor.simulate.forked": CHILD.format("simulate's ranks, tests/simulate/test_simulate.py"),
    "auditor.simulate.standins": CHILD.format("simulate's ranks, tests/simulate/test_simulate_standins.py"),
    "auditor.commands.diff": CLI.format("tests/analysis/test_diff.py"),
    "auditor.commands.export": CLI.format("tests/e2e/test_export.py"),
    "auditor.commands.doctor": CLI.format("tests/e2e/test_doctor.py"),
    "auditor.commands.gate": CLI.format("tests/analysis/test_gate.py"),
    "auditor.commands.options": CLI.format("tests/e2e/test_cli_options.py (every command's options)"),
    "auditor.commands.record": CLI.format("tests/dynamic/test_record_runs.py"),
    "auditor.commands.report": CLI.format("tests/report/test_formats.py"),
    "auditor.commands.scan": CLI.format("tests/e2e/test_scan.py"),
    "auditor.commands.sites": CLI.format("tests/e2e/test_sites_cli.py"),
    "auditor.simulate.run": CLI.format("tests/simulate/test_simulate.py (simulate's orchestration)"),
    "auditor.config.titan": INNER.format("scan: tests/titan/test_titan_config.py"),
    "auditor.config.entry_absent": INNER.format("config.launch: tests/realscripts/test_entry_absent.py"),
    "auditor.config.trains_nothing": INNER.format("config.launch: tests/realscripts/test_trains_nothing.py"),
    "auditor.simulate.titan_plan": INNER.format("simulate: tests/titan/test_titan_simulate.py"),
    "auditor.dynamic.linecov": INNER.format("dynamic.record: `record --coverage`, tests/dynamic/test_record_runs.py"),
    "auditor.dynamic.opstate": INNER.format("dynamic.recorder: tests/dynamic/test_record_unit.py"),
    "auditor.dynamic.writer": INNER.format("dynamic.recorder: tests/dynamic/test_record_unit.py"),
    "auditor.static.exports": INNER.format("static.inventory: tests/static/sites/test_spellings_package.py"),
    "auditor.static.names": INNER.format("static.inventory: tests/static/sites/test_spellings_package.py"),
    "auditor.static.interp.graph": INNER.format("the Interpreter: tests/static/interp/test_callgraph.py"),
    "auditor.static.sites.aliases": INNER.format("sites.find_sites: tests/static/sites/test_spellings.py"),
    "auditor.static.sites.finder": INNER.format("sites.find_sites: tests/static/sites/test_spellings.py"),
    "auditor.static.sites.flows": INNER.format("sites.find_sites: tests/static/sites/test_spellings.py"),
    "auditor.static.sites.pending": INNER.format("sites.find_sites: tests/static/sites/test_spellings.py"),
    "auditor.static.sites.pgroups": INNER.format("sites.find_sites: tests/static/sites/test_spellings.py"),
    "auditor.static.sites.scope": INNER.format("sites.find_sites: tests/static/sites/test_spellings.py"),
    "auditor.static.sites.valueflow": INNER.format("sites.find_sites: tests/static/sites/test_spellings.py"),
}


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its __init__.py)."""
    found = {}
    for path in sorted((ROOT / "auditor").rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported_by_tests() -> set[str]:
    """Every dotted name a test file imports from the package (with each `from X import y`'s X.y)."""
    names: set[str] = set()
    for path in (ROOT / "tests").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names if alias.name.split(".")[0] == "auditor")
            elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "auditor":
                names.add(node.module)
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def has_test(name: str, path: Path, imported: set[str]) -> bool:
    if path.name == "__init__.py":
        return any(i == name or i.startswith(name + ".") for i in imported)
    return name in imported


def test_every_module_is_imported_by_a_test_or_listed_with_why() -> None:
    imported = imported_by_tests()
    untested = sorted(name for name, path in modules().items()
                      if not has_test(name, path, imported) and name not in UNTESTED)
    assert not untested, (f"no test imports {untested}: write one (tests/<layer>/ mirrors auditor/), "
                          "or list the module in UNTESTED with the reason")


def test_the_list_names_only_modules_that_exist_without_a_test() -> None:
    imported, found = imported_by_tests(), modules()
    gone = sorted(name for name in UNTESTED if name not in found)
    now_tested = sorted(name for name in UNTESTED if name in found and has_test(name, found[name], imported))
    assert not gone, f"UNTESTED lists modules that no longer exist: {gone}"
    assert not now_tested, f"UNTESTED lists modules a test now imports (remove their lines): {now_tested}"


def test_the_reasons_name_a_test_file_that_exists() -> None:
    """Each reason names where the module is exercised; the file it names is there."""
    missing = {}
    for name, reason in UNTESTED.items():
        files = [word.strip("(),:`") for word in reason.split() if word.startswith("tests/")]
        if not files or not all((ROOT / f).is_file() for f in files):
            missing[name] = reason
    assert not missing, missing
