"""What torch's own launcher refuses, or hands the training script, before any worker trains
(issue 22): DeepSpeedExamples' compression/bert/bash_script/XTC/quant_1bit.sh runs
`python -m torch.distributed.launch --master_port 66664`, a port the rendezvous refuses, and its
run_glue_no_trainer.py knows only `--local_rank` while the launcher passes `--local-rank=0`.

Facts are rules/torch.toml [[launcher_option]] and [[launcher_handoff]], each for a range of torch
releases; a run is judged on each release it may use: a refusal on all of them stops the run at
start-up, on some only it is undecided naming them, on none it is nothing."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from auditor.config.entry_script import argparse_options, calls, dotted
from auditor.config.flags import normalise
from auditor.config.frontend_parser import at_build, locate
from auditor.config.lightning_entry import script_file
from auditor.config.script_run import always_runs, exit_caught, reached, writes_argv
from auditor.config.model import LaunchConfig
from auditor.config.torch_version import span
from auditor.findings import Finding
from auditor.rulebook import files

KIND = "launch.launcher-refuses"


def check(launch: LaunchConfig, releases: tuple[str, ...]) -> list[Finding]:
    """The launcher's refusals of this run, judged on each torch release in `releases`."""
    words = set(launch.launcher.split())
    rules = files.load("torch")
    out: list[Finding] = []
    for entry in rules.data.get("launcher_option", []):
        if words & set(entry["launchers"]):
            refused = _option_refused(launch, entry)
            if refused:
                out += _judged(entry, releases, *refused)
    for entry in rules.data.get("launcher_handoff", []):
        if words & set(entry["launchers"]) and not _given(launch, entry.get("unless", ())):
            handed = _handoff_refused(launch, entry)
            if handed:
                what, fix, where, runs = handed
                out += (_judged if runs else _if_parsed)(entry, releases, what, fix, where)
    return out


def _given(launch: LaunchConfig, options: Any) -> bool:
    return any(normalise(o) in launch.launcher_flags for o in options)


def _option_refused(launch: LaunchConfig, entry: dict[str, Any]) -> tuple[str, str, str] | None:
    """(what is refused, the fix, where) for an option value the launcher rejects."""
    flag = next((launch.launcher_flags[normalise(o)] for o in entry["options"]
                 if normalise(o) in launch.launcher_flags), None)
    if flag is None or not isinstance(flag.value, str):
        return None  # not given, or not known statically
    where = f"{launch.path}:{flag.line}"
    if entry.get("type") != "int":
        return None
    try:
        value = int(flag.value)
    except ValueError:
        return (f"`{flag.spelling} {flag.value}`: torch's launcher parses {flag.spelling} as an integer "
                f"({entry['parsed_at']}: `type=int`) and argparse exits on `{flag.value}`",
                f"give {flag.spelling} an integer", where)
    low, high = entry.get("range", (None, None))
    if low is None or low <= value <= high or _given(launch, entry.get("unless", ())):
        return None
    return (f"`{flag.spelling} {flag.value}` is not a TCP port ({low}..{high}): torch's launcher refuses "
            f"the rendezvous endpoint before any worker starts ({entry['source']}:{entry['line']}: "
            f"`{entry['code']}`)", f"give {flag.spelling} a free port in {low}..{high} (e.g. 29500)", where)


def _handoff_refused(launch: LaunchConfig, entry: dict[str, Any]) -> tuple[str, str, str, bool] | None:
    """Where the training script's parser rejects what the launcher appends: the script's own
    argparse (one parser, parse_args() of sys.argv), or the Megatron-LM parser of the checkout
    around it (read complete, without ignore_unknown_args)."""
    script = launch.script_read or launch.script  # a `-m` module's file (config.entry_module)
    path = script_file(script, launch.path) if isinstance(script, str) else None
    if path is None:
        return None  # the script is not read: nothing is said about its parser
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None
    name = Path(path).name
    if writes_argv(tree):
        return None  # the command line parsed is not the one the launcher passes
    parse = _rejecting_parse(tree, set(entry.get("helpers", ())))
    runs = True  # the checkout's front end: its parse runs (frontend_parser)
    if parse is not None:
        line, runs = parse
        spellings = {s for o in argparse_options(tree).values() for s in o["spellings"]}
        at = f"{name}:{line} parse_args"
    else:
        front = locate(launch.path, str(script))
        if front is None or front.root is None or not front.complete or front.accepts_unknown:
            return None
        spellings, at = set(front.flags), f"{front.path}: parse_args"
    passes = entry["passes"]
    if any(s.startswith(passes) for s in spellings):  # argparse takes it, or an abbreviation of it
        return None
    other = "--" + passes[2:].replace("-", "_")
    has = f"knows only `{other}`" if other in spellings else f"has no `{passes}`"
    return (f"torch's launcher passes `{passes}=N` to {name}, whose parser {has} and exits: "
            f"unrecognized arguments ({at}; {entry['source']}:{entry['line']}: `{entry['code']}`)",
            f"accept `{passes}` in {name}'s parser" + (f" beside `{other}`" if other in spellings else "")
            + ", or pass --use-env to the launcher and read LOCAL_RANK, or use torchrun",
            f"{launch.path}:{launch.launcher_line}", runs)


def _rejecting_parse(tree: ast.Module, helpers: set[str]) -> tuple[int, bool] | None:
    """(line, whether it runs on every path) of the file's one `parse_args()` of sys.argv, where
    its one argparse parser reaches no code that could add or tolerate other options and no
    handler around it catches argparse's exit; else None (not decided). A parse that may not run
    (script_run.always_runs, h33-review6 H4) leaves the refusal undecided, never definite."""
    parsers, parses, other = [], [], False
    built = {id(n) for n in at_build(tree)} & reached(tree)
    for node, _, callee in calls(tree):
        if id(node) not in built:
            continue  # an argparse action's code, run while parsing: it adds no option
        if isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument" and not all(
                isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args):
            other = True  # a spelling not written literally: the parser's options are not all read
        elif callee == "argparse.ArgumentParser":
            parsers.append(node)
            other = other or any(k.arg in ("parents", None) for k in node.keywords)  # options it inherits
        elif isinstance(node.func, ast.Attribute) and node.func.attr == "parse_args":
            parses.append(node)
        elif isinstance(node.func, ast.Attribute) and node.func.attr in ("parse_known_args", "parse_intermixed_args"):
            other = True
        elif callee not in helpers and any(isinstance(a, ast.Name) and a.id in _parser_names(tree)
                                           for a in [*node.args, *(k.value for k in node.keywords)]):
            other = True  # the parser handed to code not read: its options are unknown
    if other or len(parsers) != 1 or len(parses) != 1 or parses[0].args or parses[0].keywords:
        return None  # (a parse in code the script never runs is not counted: not decided either)
    if exit_caught(tree, parses[0]):
        return None  # a bare except / SystemExit / BaseException handler: the run goes on
    return parses[0].lineno, always_runs(tree, parses[0])


def _parser_names(tree: ast.Module) -> set[str]:
    """Names bound to an `ArgumentParser(...)` call."""
    return {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            and dotted(node.value.func).endswith("ArgumentParser")
            for t in node.targets if isinstance(t, ast.Name)}


def _if_parsed(entry: dict[str, Any], releases: tuple[str, ...], what: str, fix: str, where: str) -> list[Finding]:
    """A refusal by a parse that runs on some paths only (under a condition, a loop, a try, after a
    return, or through a call that is): whether the run starts is undecided."""
    if releases and not any(files.version_in(r, entry.get("versions", "*")) for r in releases):
        return []
    return [Finding(KIND, "info", f"where its parse runs: {what}", fix=fix, where=where,
                    detail={"rule": entry["id"], "source": f"{entry['source']}:{entry['line']}",
                            "undecided": "whether the run starts: the script's parse_args runs on some paths only "
                                         "(a condition, loop, try or early return on the way to it)",
                            "decide": fix.split(", or ")[0] + " (then it starts on every path)"})]


def _judged(entry: dict[str, Any], releases: tuple[str, ...], what: str, fix: str, where: str) -> list[Finding]:
    """The refusal as a start-up error where every judged release refuses, undecided where some do."""
    on = [r for r in releases if files.version_in(r, entry.get("versions", "*"))]
    detail: dict[str, Any] = {"rule": entry["id"], "source": f"{entry['source']}:{entry['line']}"}
    if not releases:
        return [Finding(KIND, "info", f"on torch {entry.get('versions')}: {what}", fix=fix, where=where,
                        detail={**detail, "undecided": f"whether torch's launcher refuses the run ({entry['id']})",
                                "decide": "--torch X.Y.Z"})]
    if not on:
        return []
    if len(on) == len(releases):
        return [Finding(KIND, "error", what, fix=fix, where=where,
                        detail={**detail, "category": "config", "torch": span(tuple(on))})]
    return [Finding(KIND, "info", f"on torch {span(tuple(on))} only: {what}", fix=fix, where=where,
                    detail={**detail, "undecided": f"whether the run starts: torch {span(tuple(on))} refuses "
                                                   f"it ({entry['id']}), the other judged releases do not",
                            "decide": "--torch X.Y.Z"})]
