"""Spike: tree-sitter-bash as the front end of auditor.bash (issue 15, item 3), against ours.

A front end turns script text into what `auditor.bash.walk.Shell` walks: the nodes of
`auditor.bash.parser` (Cmd, Branches, Loop, Group, AndOr, Pipeline, Function) whose words are
`auditor.bash.lexer.Word`s, plus the comments (the `# torch==X` pins). Ours is `Lexer` + `ShellParser`;
the spike (bench_bash_treesitter.py) converts tree-sitter's syntax tree into the same nodes. Three
measures:

1. agreement: every shipped script (examples/, tests/launch_scripts/, benchmarks/ppbugs/,
   reports/, ci/) parsed by both, the trees compared node by node and word by word, and the
   launch reading (`parse_launch`: flags, environment, world size, diagnostics) compared;
2. speed: the median time to parse all of them with each front end, and the ratio;
3. `--tests`: tests/config/test_launch.py (the differential tests against real bash, the fuzz tests,
   the fail-closed ones) and tests/bash/test_bash_oracle.py (the walk against real bash) run with the
   tree-sitter front end in place of ours.

The decision and the numbers are in docs/findings.md ("tree-sitter-bash as the bash front end").
Needs `pip install tree-sitter tree-sitter-bash`; without them it says so and stops.

    python benchmarks/bench_bash_frontend.py [--repeat 31] [--fuzz 2000] [--tests]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import fields, is_dataclass
from pathlib import Path

from bench_bash_treesitter import CRASHER, Comments, TreeSitterFrontEnd, crashes, tree_sitter

from auditor.bash.lexer import Lexer, Part, Word
from auditor.bash.parser import Node, ShellParser
from auditor.config import launch
from auditor.errors import InputError
from auditor.findings import Finding

REPO = Path(__file__).resolve().parent.parent
SCRIPT_DIRS = ["examples", "tests/launch_scripts", "benchmarks/ppbugs", "reports", "ci"]
TESTS = ["config/test_launch.py", "bash/test_bash_oracle.py"]  # run with tree-sitter by `--tests`


def scripts() -> list[Path]:
    return sorted(p for d in SCRIPT_DIRS for p in (REPO / d).rglob("*.sh"))


def ours(text: str, path: str, diagnostics: list[Finding], line_base: int = 0) -> tuple[list[Node], Comments]:
    lexer = Lexer(text, path, line_base)
    nodes = ShellParser(lexer.tokens(), path, diagnostics).parse()
    return nodes, lexer.comments


# --- agreement ---------------------------------------------------------------------------------


def normal(value: object) -> object:
    """A node as nested tuples, with adjacent literal parts of one quoting merged (`A=` `1` and
    `A=1` are the same word) and empty literals dropped where other parts remain."""
    if isinstance(value, Word):
        parts: list[Part] = []
        for p in value.parts:
            if parts and p.kind == parts[-1].kind == "lit" and p.quoted == parts[-1].quoted:
                parts[-1] = Part("lit", parts[-1].text + p.text, p.quoted, parts[-1].line)
            else:
                parts.append(p)
        if len(parts) > 1:
            parts = [p for p in parts if p.kind != "lit" or p.text]
        return ("Word", value.raw, value.line, tuple(normal(p) for p in parts))
    if isinstance(value, Part):
        return (value.kind, value.text, value.quoted, value.src, tuple(normal(w) for w in value.elements))
    if is_dataclass(value):
        return (type(value).__name__,) + tuple(normal(getattr(value, f.name)) for f in fields(value))
    if isinstance(value, (list, tuple)):
        return tuple(normal(v) for v in value)
    return value


def first_difference(a: object, b: object, where: str = "") -> str | None:
    if isinstance(a, tuple) and isinstance(b, tuple):
        if a and b and a[0] == "Word" and b[0] == "Word" and a != b:
            return f"{where}: ours {a[1]!r} line {a[2]} {a[3]} / tree-sitter {b[1]!r} line {b[2]} {b[3]}"
        for k, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{where}/{a[0] if a and isinstance(a[0], str) else k}")
            if found:
                return found
        if len(a) != len(b):
            return f"{where}: ours {len(a)} items, tree-sitter {len(b)}: {str(a)[:200]} / {str(b)[:200]}"
        return None
    return None if a == b else f"{where}: ours {a!r} / tree-sitter {b!r}"


def launch_reading(text: str, path: str) -> object:
    try:
        config = launch.parse_launch(text, path)
    except InputError as err:
        return ("InputError", str(err))
    return (config.launcher, {k: f.values for k, f in config.flags.items()},
            {k: (str(v.value), v.how) for k, v in config.env.items()},
            config.nproc_per_node, config.nnodes, config.world_size, config.pins.get("torch"),
            sorted((d.kind, d.where) for d in config.diagnostics))


class _Swapped:
    """The tree-sitter front end in place of `Lexer` + `ShellParser` in `modules` (by default
    auditor.config.launch: the launch reading)."""

    def __init__(self, front_end: TreeSitterFrontEnd, modules: list | None = None) -> None:
        self.front_end = front_end
        self.saved = [(module, name, getattr(module, name)) for module in modules or [launch]
                      for name in ("Lexer", "ShellParser") if hasattr(module, name)]

    def __enter__(self) -> None:
        front_end = self.front_end

        class SwappedLexer:
            def __init__(self, text: str, path: str, line_base: int = 0) -> None:
                self.args = (text, path, line_base)
                self.comments: Comments = []

            def tokens(self) -> list:
                return [self]

        class SwappedParser:
            def __init__(self, tokens: list, path: str, diagnostics: list[Finding]) -> None:
                self.lexer, self.diagnostics = tokens[0], diagnostics

            def parse(self) -> list[Node]:
                text, path, base = self.lexer.args
                nodes, self.lexer.comments[:] = front_end(text, path, self.diagnostics, base)
                return nodes

        swapped = {"Lexer": SwappedLexer, "ShellParser": SwappedParser}
        for module, name, _ in self.saved:
            setattr(module, name, swapped[name])

    def __exit__(self, *exc: object) -> None:
        for module, name, original in self.saved:
            setattr(module, name, original)


def agreement(front_end: TreeSitterFrontEnd) -> int:
    """Print every script where the two front ends disagree; how many do."""
    disagreeing = 0
    for script in scripts():
        text, rel = script.read_text(), str(script.relative_to(REPO))
        try:
            a = normal(ours(text, rel, []))
        except InputError as err:
            a = ("InputError", str(err))
        b = normal(front_end(text, rel, []))
        tree = first_difference(a, b)
        mine = launch_reading(text, rel)
        with _Swapped(front_end):
            theirs = launch_reading(text, rel)
        reading = None if mine == theirs else f"ours {str(mine)[:300]}\n      tree-sitter {str(theirs)[:300]}"
        if tree or reading:
            disagreeing += 1
            print(f"  {rel}\n    tree: {tree or 'same'}\n    launch reading: {reading or 'same'}")
    return disagreeing


def fuzz(front_end: TreeSitterFrontEnd, examples: int) -> None:
    """The launch reading of both front ends on the inputs of tests/config/test_launch.py's fuzz test."""
    from hypothesis import HealthCheck, given, settings
    sys.path.insert(0, str(REPO))
    from tests.config.test_launch import _SCRIPTS

    same, diagnostics_only, different, skipped = [], [], [], []

    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(_SCRIPTS)
    def compare(text: str) -> None:
        brace = text.find("{")
        if brace >= 0 and any(ord(c) > 0xFFFF for c in text[brace:]):  # might crash like CRASHER
            skipped.append(text)
            return
        mine = launch_reading(text, "run.sh")
        with _Swapped(front_end):
            theirs = launch_reading(text, "run.sh")
        if mine == theirs:
            same.append(text)
        elif mine[:-1] == theirs[:-1] and mine[0] != "InputError":
            diagnostics_only.append(text)
        else:
            different.append((text, mine, theirs))

    compare()
    print(f"fuzz: {len(same) + len(diagnostics_only) + len(different)} inputs; same reading {len(same)}, "
          f"same but for the diagnostics {len(diagnostics_only)}, different {len(different)} "
          f"({len(skipped)} more with `{{` then a character beyond U+FFFF left out)")
    # Where they differ, `bash -n` says whether bash itself accepts the text; a front end that
    # refuses (InputError naming a line) what bash accepts is wrong, one that reads on is lenient.
    refuses = {"ours": 0, "tree-sitter": 0}
    accepted = []
    for text, mine, theirs in different:
        if shutil.which("bash") and subprocess.run(["bash", "-n"], input=text.encode(), capture_output=True).returncode == 0:
            accepted.append((text, mine, theirs))
            for name, reading in (("ours", mine), ("tree-sitter", theirs)):
                refuses[name] += reading[0] == "InputError" and "no training command" not in reading[1]
    print(f"  of the {len(different)}, bash -n accepts {len(accepted)}; of those ours refuses {refuses['ours']}, "
          f"tree-sitter {refuses['tree-sitter']}; the shortest {min(len(accepted), 8)}:")
    for text, mine, theirs in sorted(accepted, key=lambda d: len(d[0]))[:8]:
        print(f"  {text!r}\n    ours        {str(mine)[:200]}\n    tree-sitter {str(theirs)[:200]}")


# --- speed -------------------------------------------------------------------------------------


def timing(parsers: dict[str, object], texts: list[tuple[str, str]], repeat: int) -> dict[str, float]:
    """Median CPU seconds of each parser over all texts; runs interleaved, so that a load
    change on a shared machine falls on all of them alike."""
    runs: dict[str, list[float]] = {name: [] for name in parsers}
    for _ in range(repeat):
        for name, parse in parsers.items():
            start = time.process_time()
            for rel, text in texts:
                try:
                    parse(text, rel, [])
                except InputError:
                    pass
            runs[name].append(time.process_time() - start)
    return {name: statistics.median(r) for name, r in runs.items()}


def pytest_collection_finish(session) -> None:
    """As a pytest plugin (`--tests`): the launch reading, and the test modules that call Lexer
    and ShellParser themselves, use tree-sitter for the whole session."""
    tests = {item.module for item in session.items if hasattr(getattr(item, "module", None), "Lexer")}
    _Swapped(TreeSitterFrontEnd(), [launch, *tests]).__enter__()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=31)
    parser.add_argument("--fuzz", type=int, default=0, metavar="N",
                        help="compare the launch reading of both on N inputs of test_launch's fuzz strategy")
    parser.add_argument("--tests", action="store_true",
                        help="also run tests/config/test_launch.py and tests/bash/test_bash_oracle.py with the tree-sitter front end")
    args = parser.parse_args()
    if tree_sitter is None:
        print("tree-sitter and tree-sitter-bash are not installed (pip install tree-sitter tree-sitter-bash); "
              "nothing measured")
        return 2
    front_end = TreeSitterFrontEnd()
    texts = [(str(p.relative_to(REPO)), p.read_text()) for p in scripts()]
    lines = sum(t.count("\n") for _, t in texts)
    print(f"tree-sitter {tree_sitter.__version__ if hasattr(tree_sitter, '__version__') else '?'}, "
          f"{len(texts)} scripts, {lines} lines")
    print("disagreements (tree, then the launch reading):")
    n = agreement(front_end)
    print(f"{n} of {len(texts)} scripts disagree; grammar nodes with no auditor.bash node: "
          f"{front_end.unhandled or 'none'}")
    print(f"{CRASHER!r} ({len(CRASHER.encode())} bytes) killed the tree-sitter process in {crashes(CRASHER)} of 10 runs")
    if args.fuzz:
        fuzz(front_end, args.fuzz)
    times = timing({"ours": ours, "tree-sitter": front_end,
                    "parse only": lambda text, rel, d: front_end.parser.parse(text.encode())}, texts, args.repeat)
    base = times["ours"]
    print(f"CPU time to parse all {len(texts)} scripts, median of {args.repeat} interleaved runs:")
    print(f"  ours (Lexer + ShellParser)     {base * 1e3:8.2f} ms")
    print(f"  tree-sitter (parse + convert)  {times['tree-sitter'] * 1e3:8.2f} ms  "
          f"{times['tree-sitter'] / base:5.2f}x ours")
    print(f"    of which tree-sitter's parse {times['parse only'] * 1e3:8.2f} ms  "
          f"{times['parse only'] / base:5.2f}x ours")
    if args.tests:
        import pytest
        sys.path.insert(0, str(Path(__file__).parent))
        return pytest.main(["-q", "-p", "no:cacheprovider", "-p", "bench_bash_frontend", "--tb=line", "-rf",
                            *(str(REPO / "tests" / name) for name in TESTS)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
