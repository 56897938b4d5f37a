"""Shared fixtures: the real framework releases the tests are written against.

They are fetched once with pip into the p2paudit cache (`$P2PAUDIT_CACHE`), exactly as
`p2paudit sites NAME==VERSION` does, and never imported. A test gets them through a fixture here
(`real_sources`, `release`), and every test that asks for one, directly or through another
fixture, is marked `wheels`.

Two more markers are set here, from what a test's code says (its function, the fixtures and
helpers of its module it uses, one level deep): `network` where it names a release to fetch by
pin (`megatron-core==0.17.0` and the like) or builds a wheel (pip fetches the build backend), and
`torch` where its module imports torch (itself or through the modules it imports) or it reads
the installed one. `pytest -m "not wheels and not network"` is the offline run; `-m "not torch"`
runs without torch installed.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import inspect
import os
import re
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from auditor import sources

REAL = {
    "megatron-core": "megatron-core==0.17.0",
    "ms-swift": "ms-swift==4.3.0",
    "mcore-bridge": "mcore-bridge==1.4.1",
}


@pytest.fixture(scope="session")
def real_sources() -> dict[str, sources.SourceSet]:
    return {name: sources.resolve(pin) for name, pin in REAL.items()}


@pytest.fixture(scope="session")
def release() -> Callable[[str], sources.SourceSet]:
    """Any release by NAME==VERSION (or a wheel, sdist or directory), downloaded once."""
    return sources.resolve


DOWNLOADING = frozenset({"real_sources", "release"})



@pytest.fixture(scope="session", autouse=True)
def wide_terminal() -> Iterator[None]:
    """Text output wraps at the terminal's width ($COLUMNS, else 80 off a terminal): the tests
    read whole lines, as on a wide terminal (tests/report/test_first_screen.py renders at 80 columns).
    Restored before pytest prints its own summary."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "1000"
    yield
    if before is None:
        del os.environ["COLUMNS"]
    else:
        os.environ["COLUMNS"] = before


# A string that is a release's pin (as sources.resolve and the CLI's targets take it; a pin inside
# a script's text, `pip install torch==2.10.0`, is only read), or a wheel built
# with pip (which fetches the build backend into an isolated environment).
ASKS_INDEX = re.compile(r"(?<=[\"'])(megatron-core|ms-swift|mcore-bridge|deepspeed|torch|six)==[0-9{]|\"pip\", \"wheel\"")
# The installed torch read without importing it in the test module (a launch script's `torchrun`
# is only text to the tests that parse it).
RUNS_TORCH = re.compile(r"""distribution\("torch"\)""")


def _code_of(item: pytest.Item) -> str:
    """The source of a test function and of the module-level functions, fixtures and constants
    it names (one level deep): where a test's pins and subprocess command lines are written."""
    function = getattr(item, "function", None)
    module = getattr(item, "module", None)
    if function is None or module is None:
        return ""
    names = set(function.__code__.co_names) | set(getattr(item, "fixturenames", ()))
    parts = [_source(function)]
    for name in names:
        value = getattr(module, name, None)
        if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
            parts.append(_source(value))
        elif hasattr(value, "_get_wrapped_function"):  # a fixture of the module (pytest >= 8.4)
            parts.append(_source(value._get_wrapped_function()))
        elif isinstance(value, (str, list, tuple)):
            parts.append(repr(value))
    return "\n".join(parts)


@functools.cache
def _source(function: Callable[..., object]) -> str:
    """Cached: a parametrized test's items and the helpers many tests name share one source."""
    try:
        return inspect.getsource(function)
    except (OSError, TypeError):
        return ""


def _imports_torch(item: pytest.Item) -> bool:
    return _loads_torch(Path(str(item.path)))


REPO = Path(__file__).resolve().parent.parent
OURS = ("auditor", "tests")


@functools.cache
def _loads_torch(path: Path) -> bool:
    """Whether importing the module at PATH imports torch: its imports outside functions, followed
    through this repository's modules (a test module imported by another, `auditor.doctor`), so
    that `-m "not torch"` deselects every test whose module cannot be collected without torch."""
    seen, todo = {path}, [path]
    while todo:
        for name in _imports_of(todo.pop()):
            if name.split(".")[0] == "torch":
                return True
            if name.split(".")[0] in OURS:
                new = [f for f in _files_of(name) if f not in seen]
                seen.update(new)
                todo.extend(new)
    return False


@functools.cache
def _imports_of(path: Path) -> tuple[str, ...]:
    try:
        return tuple(_top_level_imports(ast.parse(path.read_text())))
    except (OSError, SyntaxError):
        return ()


def _top_level_imports(tree: ast.Module) -> Iterator[str]:
    """Modules named by the imports that run when the module is imported (not in a function); for
    `from a.b import c` both a.b and a.b.c (c may be a module)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(child, ast.Import):
                yield from (alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module and not child.level:
                yield child.module
                yield from (f"{child.module}.{alias.name}" for alias in child.names)
            stack.append(child)


@functools.cache
def _files_of(name: str) -> list[Path]:
    """The files importing NAME runs: its packages' __init__.py and its own file, where they exist
    (cached: each test module's walk meets the same names)."""
    parts = name.split(".")
    files = [REPO.joinpath(*parts[:n], "__init__.py") for n in range(1, len(parts) + 1)]
    files.append(REPO.joinpath(*parts[:-1], parts[-1] + ".py"))
    return [f for f in files if f.is_file()]


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Without torch, `-m "not torch"` (alone or joined by `and`) leaves out the modules that
    import it, which could not even be collected: those whose tests are all marked `torch`."""
    expression = config.getoption("markexpr") or ""
    if (collection_path.suffix == ".py" and re.search(r"\bnot\s+torch\b", expression)
            and not re.search(r"\bor\b", expression) and not _torch_installed()):
        return _loads_torch(collection_path) or None
    return None


@functools.cache
def _torch_installed() -> bool:
    try:
        return importlib.util.find_spec("torch") is not None
    except ImportError:
        return False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if DOWNLOADING & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.wheels)
        code = _code_of(item)
        if ASKS_INDEX.search(code):
            item.add_marker(pytest.mark.network)
        if _imports_torch(item) or RUNS_TORCH.search(code):
            item.add_marker(pytest.mark.torch)
