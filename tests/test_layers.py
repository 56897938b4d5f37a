"""The package's imports follow the pipeline: sources -> bash -> config -> static (floor -> ir ->
sites -> parsed -> interp) -> dynamic -> analysis -> report -> the pipelines commands run ->
commands/cli. No module imports a later layer and no
import circle exists, deferred imports (inside a function) included, since a deferred import
only hides a circle."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "auditor"

# In pipeline order; a module belongs to the layer of its longest matching prefix.
LAYERS: list[tuple[str, ...]] = [
    ("auditor", "auditor.errors", "auditor.findings", "auditor.progress"),  # shared by every layer
    ("auditor.sources", "auditor.download", "auditor.rulebook"),  # the rules are read below every stage
    ("auditor.bash",),  # the shell language alone: no launcher, flag or framework in it
    ("auditor.config",),  # bash is how config reads a launch script
    # static/: a shared floor, the IR and sites wings over it, the one-parse task that runs
    # both, then the interpreter, which reads modules through that task's results.
    ("auditor.static", "auditor.static.source", "auditor.static.names", "auditor.static.analyze",
     "auditor.static.exports"),
    ("auditor.static.ir",),
    ("auditor.static.sites",),
    ("auditor.static.parsed", "auditor.static.inventory"),
    ("auditor.static.interp",),
    ("auditor.dynamic",),
    ("auditor.analysis",),
    ("auditor.report",),
    ("auditor.scan", "auditor.simulate", "auditor.repro", "auditor.doctor", "auditor.fix"),
    ("auditor.commands", "auditor.cli", "auditor.__main__"),
]



def module_names(package: Path) -> dict[str, Path]:
    names = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def imports(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    """Each module's imports of the package's own modules (`from a.b import c` is `a.b.c` when
    that is a module, else `a.b`)."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                raise AssertionError(f"{path}: relative import; write the absolute name")
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "auditor":
                found |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules
                          else node.module for a in node.names}
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.split(".")[0] == "auditor"}
        graph[name] = found
    return graph


def layer(module: str) -> int:
    matches = [(len(prefix), i) for i, group in enumerate(LAYERS) for prefix in group
               if module == prefix or module.startswith(prefix + ".")]
    if not matches:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS")
    return max(matches)[1]


def upward(graph: Mapping[str, set[str]]) -> list[str]:
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets if layer(b) > layer(a))


def circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return imports(module_names(PACKAGE))


def test_every_module_has_a_layer(graph):
    for module in graph:
        layer(module)


# The upward imports still to remove, each with its issue: a new one fails the test, and an entry
# here that no longer happens fails it too (so the list only shrinks).
# Debt (turn 20): "does this entry issue torch P2P" has one reader, config.own_p2p, and its
# answer is the site finder's (static.sites), so config reaches up into static. Next step: the
# finder's name tables below config, or the question asked after static. Listed so it is seen.
KNOWN_UPWARD: set[str] = {
    "auditor.config.own_p2p -> auditor.static.sites.sites",
    "auditor.config.own_p2p -> auditor.static.source",
}


def test_no_import_runs_up_the_layers(graph):
    assert sorted(set(upward(graph)) - KNOWN_UPWARD) == []


def test_known_upward_imports_still_happen(graph):
    assert sorted(KNOWN_UPWARD - set(upward(graph))) == []


# What every command shares: its options and how it emits. Anything else a command needs is a layer's.
COMMAND_SHARED = {"auditor.commands", "auditor.commands.options", "auditor.commands.output"}


def command_imports(graph: Mapping[str, set[str]]) -> list[str]:
    """Imports of a command module by anything but the CLI and the commands, and imports of one
    command by another (a command parses options, calls the layers and emits: it is no library)."""
    command = lambda m: m == "auditor.commands" or m.startswith("auditor.commands.")  # noqa: E731
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                  if command(b) and not (a == "auditor.cli" or (command(a) and b in COMMAND_SHARED)))


def test_only_the_cli_imports_commands(graph):
    assert command_imports(graph) == []


def test_command_imports_checker():
    g = {"auditor.cli": {"auditor.commands.scan"}, "auditor.commands.scan": {"auditor.commands.options",
         "auditor.commands.output", "auditor.commands.report"}, "auditor.__main__": {"auditor.commands"},
         "auditor.report.formats": {"auditor.commands.options"}}
    assert command_imports(g) == ["auditor.__main__ -> auditor.commands",
                                  "auditor.commands.scan -> auditor.commands.report",
                                  "auditor.report.formats -> auditor.commands.options"]


def wing_imports(graph: Mapping[str, set[str]], wing: str, other: str) -> list[str]:
    """The imports from one wing of static/ into another."""
    inside = lambda m, w: m == f"auditor.static.{w}" or m.startswith(f"auditor.static.{w}.")  # noqa: E731
    return sorted(f"{a} -> {b}" for a, targets in graph.items() if inside(a, wing)
                  for b in targets if inside(b, other))


@pytest.mark.parametrize("wing, other", [("sites", "ir"), ("ir", "sites"), ("interp", "sites")])
def test_static_wings_stay_apart(graph, wing, other):
    """The IR and sites wings share only the floor below them, and the interpreter reads sites
    only as the ids `parsed` put in the IR: a wing can be read (and changed) on its own."""
    assert wing_imports(graph, wing, other) == []


def test_no_import_circle(graph):
    found = circles(graph)
    assert found == [], f"import circle(s): {found}"


# The checker on small graphs: VALID (down the layers, no circle) and INVALID ones.
def test_checker_valid():
    g = {"auditor.commands.scan": {"auditor.scan"}, "auditor.scan": {"auditor.static.sites"},
         "auditor.static.sites": {"auditor.sources", "auditor.errors"},
         "auditor.config.launch": {"auditor.bash.walk"},
         "auditor.static.interp.program": {"auditor.static.parsed", "auditor.static.ir.codec"},
         "auditor.static.sites.finder": {"auditor.static.exports", "auditor.static.ir.ir"}}
    assert upward(g) == [] and circles(g) == []
    assert wing_imports(g, "sites", "ir") == ["auditor.static.sites.finder -> auditor.static.ir.ir"]


@pytest.mark.parametrize("g, up, circle", [
    ({"auditor.static.sites": {"auditor.report.text"}}, ["auditor.static.sites -> auditor.report.text"], []),
    ({"auditor.sources": {"auditor.config.model"}}, ["auditor.sources -> auditor.config.model"], []),
    ({"auditor.bash.walk": {"auditor.config.model"}}, ["auditor.bash.walk -> auditor.config.model"], []),
    ({"auditor.static.ir.build": {"auditor.static.interp.values"}},
     ["auditor.static.ir.build -> auditor.static.interp.values"], []),
    ({"auditor.static.exports": {"auditor.static.sites.scope"}},
     ["auditor.static.exports -> auditor.static.sites.scope"], []),
    ({"auditor.report.html": {"auditor.commands.output"}},
     ["auditor.report.html -> auditor.commands.output"], []),
    ({"auditor.static.a": {"auditor.static.b"}, "auditor.static.b": {"auditor.static.c"},
      "auditor.static.c": {"auditor.static.a"}},
     [], [["auditor.static.a", "auditor.static.b", "auditor.static.c"]]),
])
def test_checker_invalid(g, up, circle):
    assert upward(g) == up
    assert circles(g) == circle
