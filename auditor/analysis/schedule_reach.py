"""Whether a torch-launched entry script can reach a pipeline schedule at all, from the call
graph: the script run as `__main__`, with its local modules, its checkout's src/ package and the
framework releases the scan reads, walked by the interpreter with every setting unknown (so at
any pipeline size).

A conversion or inference script that imports megatron (FlagScale's hf2mcore_qwen2.5_vl.py,
Megatron-Bridge's text_generation.py) reaches none of the schedule entries of rules/stacks.toml
`[[schedule_entry]]`: such a run is NOT A PIPELINE RUN (analysis/verdict.py), where the reading
is certain: no budget cut, no module that failed to parse, every call into code not read is
into the standard library or a package that builds no pipeline (rules/stacks.toml
`[no_pipeline]` `packages` and `modules`), no pipeline builder is imported (its `except_*`), the
script's own code runs nothing dynamically (`dynamic`), and no call the walk could not resolve
bears a schedule entry's name (`engine.train_batch()` on an engine it lost), the entry's own
code hands no class to code not read and calls no `getattr` of a computed name (a function
handed out, `mp.spawn(worker)`, is walked with its arguments unknown: interp/calls.py), and the walk meets
no P2P site (megatron-core's pipelined inference sends activations between stages itself,
megatron/core/inference/communication_utils.py, at PP > 1: not "no pipeline at any size"). Where
the settings the run states (a flag of its launch line, `--set`; never a rules default) are those under which the rules' stage predicates answer (rules/*.toml
`[[stage_predicate]]`: at PP 1 every rank is the first and the last stage), the walk is done again
with those settings and answers: P2P sites only under `if not is_pipeline_first_stage():` no longer
count, and the run is NOT A PIPELINE RUN at those settings only (said so). A guard on anything
else keeps its site. A framework's own dynamic imports (megatron-core's layer specs) are its plug-in loading, not
weighed, in a release or in the checkout the entry runs from. Anything less certain leaves the
verdict as it was.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from packaging.utils import canonicalize_name

from auditor import rulebook
from auditor.analysis.sitestatus import SiteStatus
from auditor.config import own_p2p
from auditor.config.entry_script import MAX_MODULES, handler_types, iter_closure, local_roots, parsed
from auditor.config.effective import EffectiveConfig
from auditor.config.entry_stack import LAUNCHERS, loads_code, modeled_roots, read_as_guess, starts_programs
from auditor.config.command_ranks import ScriptMay, may_launch, starts_no_rank
from auditor.config.shell_command import command_words
from auditor.config.training_command import is_interpreter
from auditor.config.expr import UNKNOWN
from auditor.config.frontend_parser import find_script
from auditor.config.model import LaunchConfig
from auditor.config.pyenv import EntryFile, located_stat
from auditor.findings import Finding
from auditor.rulebook import files, interpreter
from auditor.rulebook.frameworks import launched_by, versioned
from auditor.rulebook.launchers import Spelling
from auditor.sources import SourceSet
from auditor.static.interp.callgraph import Interpreter
from auditor.static.interp.program import Program
from auditor.static.interp.shared import ReachedStop
from auditor.static.ir.build import build as build_ir
from auditor.static.source import Source

RULES = "stacks"
KIND = "entry.no-schedule"  # the finding verdict.judge reads
SRC_FILES = 5000  # files of a checkout's src/ listed at most (parsed only where the walk goes)


def finding(launch: LaunchConfig, srcs: list[SourceSet], effective: EffectiveConfig) -> Finding | None:
    """An `entry.no-schedule` finding where the entry surely reaches no schedule, else None.
    `effective`: the run's settings, and where each was read (`_stated`)."""
    if not launched_by(launch.launcher, LAUNCHERS) or not read_as_guess(launch):
        return None
    located = located_stat(launch)
    if located is None:
        return None
    entry, stat = located
    key = (entry.path, stat.st_mtime_ns, stat.st_size, tuple((s.name, s.version, str(s.root)) for s in srcs))
    found = _ask(key, entry.path, srcs, ())
    answers = _answers(srcs, functools.partial(_stated, effective)) if found == HITS else ()
    if answers:  # only P2P outside a schedule kept it: at settings the stage predicates decide
        found = _ask(key, entry.path, srcs, answers)
    if not isinstance(found, tuple):  # it trains itself, or may: a launch it starts is still not read
        locate = functools.partial(_locate, launch, Path(entry.path).resolve().parent)
        script_may = functools.partial(_script_may_launch, locate=locate)
        started = [c for c in _commands(entry.path) if _may_start(c, script_may)]
        return _runs_command(launch, entry, tuple(started), found) if started else None
    local, functions, commands = found
    commands = tuple(c for c in commands if not _serves(c[3], c[5]))
    if commands:
        return _runs_command(launch, entry, commands, functions)
    whats = [e["what"] for e in rulebook.load(RULES).data["schedule_entry"]]
    where = "at any pipeline size"
    if answers:
        at = ", ".join(sorted({f"{k}={v}" for p in answers for k, v in p["at"].items()}))
        names = ", ".join(sorted({p["function"].rsplit(".", 1)[-1] for p in answers}))
        given = any(_given(effective, k) for p in answers for k in p["at"])
        where = (f"at {at}, as {'--set gives it' if given else 'the run sets it'}: the P2P sites it meets otherwise (megatron-core's "
                 f"pipelined inference) run only where a stage predicate ({names}) is False, and "
                 f"at {at} every rank is the first and the last stage (rules/megatron-core.toml "
                 f"[[stage_predicate]]), so no pipeline P2P")
    what = (f"{os.path.basename(entry.path)} reaches no pipeline schedule: no call path from it to "
            f"{', '.join(whats[:-1])} or {whats[-1]}, {where} (rules/{RULES}.toml "
            f"[[schedule_entry]]; {functions} function(s) walked from it and the {local} local "
            f"module(s) it imports, every call followed or into packages that build no pipeline)")
    return Finding(KIND, "info", what, where=f"{launch.path}:{launch.command_line}",
                   detail={"entry": entry.written, "functions": functions})


def _runs_command(launch: LaunchConfig, located: EntryFile, commands: Commands, walked: int | str | None) -> Finding:
    """An entry whose closure runs a command line (`os.system(cmd)`, `subprocess.run(cmd)`: a
    program, not a file utility) this audit does not read: that command may be the training run,
    so the run is undecided (never CLEAN on the entry's own settings, never NOT A PIPELINE RUN),
    whether the walk from the entry reached no schedule (`walked`, the functions it walked), one
    (REACHED: the entry trains itself, and the program it starts besides, a `torchrun` of another
    script through a local helper, is not judged), P2P outside one (HITS), or was not certain
    (None). --command gives the command it runs: the command itself where every word of it is
    literal (config.shell_command.command_words). A shell string whose known head is a file
    utility with operands spliced in (`os.system("cp -rf " + args.load_path + "/*.json " +
    args.save_path)`) is quoted with its program (_spliced): sh reads the operands again, so it stays
    unread, and the user is told which line to check and what --command would then give."""
    entry = located.written
    name = os.path.basename(entry)
    file, line, callee, _, literal, *_ = commands[0]
    more = f" (and {len(commands) - 1} other command run(s))" if len(commands) > 1 else ""
    lead = (f"reaches no pipeline schedule itself ({walked} function(s) walked), but runs a command"
            if isinstance(walked, int) else
            "trains through a pipeline schedule itself (judged here), and also runs a command" if walked == REACHED
            else "issues P2P outside a pipeline schedule, and also runs a command" if walked == HITS
            else "may train through code this audit does not follow, and runs a command")
    what = (f"{name} {lead} this audit does not read ({file}:{line} {callee}{more}): the training "
            "it may start is not judged")
    decide = (f"--command {shlex.quote(literal)}, the command {file}:{line} runs" if literal
              else f"--command 'CMD ...' giving the command {file}:{line} runs, as it builds it")
    undecided = f"the command {file}:{line} runs ({callee}), not read here: the training it may start"
    spliced = _spliced(Path(located.path).resolve().parent, file, line, literal)
    if spliced is not None:
        program, text = spliced
        undecided = (f"what sh runs for {file}:{line} `{text}`: `{program}` with operands computed at "
                     "run time, which sh reads again (one holding `;` or `$(` would run more)")
        decide = (f"--command 'CMD ...' giving the training command {file}:{line} starts, should its "
                  f"operands hold one (plain paths run only `{program}`: check that line)")
    return Finding("entry.runs-command", "warning", what, where=f"{launch.path}:{launch.command_line}",
                   detail={"entry": entry, "commands": [f"{f}:{n}" for f, n, *_ in commands],
                           "undecided": undecided, "decide": decide})


_MORE = (";", "&", "|", "$(", "`", "\n")  # sh syntax that runs a command besides the first


def _spliced(folder: Path, file: str, line: int, literal: str) -> tuple[str, str] | None:
    """(the program, the source line) of a command string run by a one-line call whose leftmost
    literal piece names a file utility (rules/stacks.toml `[no_pipeline] inert_programs`: `cp`,
    `mkdir`) and whose operands are computed at run time (`literal` empty); None for any other
    command, one whose literal text runs more (`;`, `&&`, `|`, `$(`: `_MORE`), or a line not read.
    Only the wording: such a command stays unread (sh reads the operands again), so the program
    named here decides nothing (config.shell_command)."""
    if literal:
        return None
    try:
        text = (folder / file).read_text(encoding="utf-8").splitlines()[line - 1].strip()
        call = ast.parse(text, mode="eval").body
    except (OSError, UnicodeDecodeError, IndexError, SyntaxError, ValueError):
        return None
    if not isinstance(call, ast.Call) or len(call.args) != 1:
        return None
    pieces = [n.value for n in ast.walk(call.args[0]) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    if any(mark in piece for piece in pieces for mark in _MORE):
        return None  # `"cp a b; torchrun ..." + x`: the literal text itself runs another command
    head: ast.expr = call.args[0]
    while isinstance(head, ast.BinOp) and isinstance(head.op, ast.Add):
        head = head.left
    if isinstance(head, ast.JoinedStr) and head.values:
        head = head.values[0]
    if not isinstance(head, ast.Constant) or not isinstance(head.value, str) or not head.value.split():
        return None
    program = head.value.split()[0]
    if program not in rulebook.load(RULES).data["no_pipeline"]["inert_programs"]:
        return None
    return program, text if len(text) <= 120 else f"{text[:117]}..."


HITS = "hits"  # _unreached: the walk was certain, but met P2P sites outside a schedule
REACHED = "reached"  # _unreached: the walk reached a schedule entry: the entry trains itself
# The command lines the entry's closure runs (file, line, the starter as written, its program and
# the command where known, else "": config.shell_command command_words): starts_programs
Commands = tuple[tuple[str, int, str, tuple[str, ...], str, bool, bool], ...]
_ASKED: dict[tuple, tuple[int, int, Commands] | str | None] = {}


def _ask(key: tuple, path: str, srcs: list[SourceSet],
         answers: tuple[dict, ...]) -> tuple[int, int, Commands] | str | None:
    """_unreached, once per script, releases and stage answers (each setting case and command
    of a scan asks again)."""
    full = (*key, tuple(p["function"] for p in answers))
    if full not in _ASKED:
        _ASKED[full] = _unreached(path, srcs, answers)
    return _ASKED[full]


def _answers(srcs: list[SourceSet], setting: Callable[[str], Any]) -> tuple[dict, ...]:
    """The rules' stage predicates (`[[stage_predicate]]` of the releases judged) whose settings
    `at` the run has, each known and equal."""
    versions = {s.name: s.version for s in srcs}
    out = []
    for framework in versioned():
        if framework.distribution not in versions:
            continue
        for p in files.load(framework.name, versions[str(framework.distribution)]).table("stage_predicate"):
            if all(setting(k) == v and type(setting(k)) is type(v) for k, v in p["at"].items()):
                out.append(p)
    return tuple(out)


def _stated(effective: EffectiveConfig, key: str) -> Any:
    """The run's value of `key` where the run states it: a flag of its launch line (read by a
    parser whose rules run for this launcher: config/derive.py) or a value derived from its lines,
    or `--set`; else UNKNOWN. A rules default (megatron-core's ModelParallelConfig
    pipeline_model_parallel_size=1, a guessed parser's default) is what the rules assume, not what
    the run does: an entry guessed to be Megatron-LM may set its size in its own code."""
    v = effective.get(key)
    return v.value if v is not None and (v.source == "--set" or v.lines) else UNKNOWN


def _given(effective: EffectiveConfig, key: str) -> bool:
    """`key` given by --set (a user's, or a setting case's value: analysis/settingcases.py)."""
    v = effective.get(key)
    return v is not None and v.source == "--set"


def _unreached(path: str, srcs: list[SourceSet],
               answers: tuple[dict, ...]) -> tuple[int, int, Commands] | str | None:
    """(local modules, functions walked, command lines run) where the walk from the script at
    `path` surely reaches no schedule entry, HITS where it surely reaches none but meets P2P
    sites, REACHED where it reaches one, else None.
    `answers`: stage predicates answered as constants, their settings `at` known to the walk."""
    script = Path(path).resolve()
    try:
        text = script.read_text(encoding="utf-8")
        tree = ast.parse(f"__name__ = '__main__'\n{text}")
        read = _closure(script, os.stat(script).st_mtime_ns)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return None
    if not read.certain:
        return None  # the closure was cut, or the script's own code runs code unseen
    closure, commands = read.files, read.commands
    data = rulebook.load(RULES).data
    stops = frozenset(f"{e['module']}.{n}" for e in data["schedule_entry"] for n in e["names"])
    local = _local_sources(script, closure)
    program = Program([*local, *srcs])
    try:
        rules = interpreter.load({s.name: s.version for s in srcs})[0]
        rules.symbols = {**rules.symbols, **{p["function"]: {**p, "constant": p["value"]} for p in answers}}
        interp = Interpreter(program, {k: v for p in answers for k, v in p["at"].items()}, rules)
        interp.stop_at = stops
        code = f"__name__ = '__main__'\n{text}"
        interp.run_module_ir("<entry 0>", build_ir(tree, Source(code), "<entry 0>", False, {}))
    except ReachedStop:
        return REACHED
    except RecursionError:
        return None
    finally:
        program.close()
    if interp.exhausted or program.errors:
        return None
    if not _certain(interp, stops, program):
        return None
    if interp.hits:  # P2P of its own outside a schedule (megatron-core's inference at PP > 1)
        return HITS
    return len(closure) - 1, len(interp.nodes), commands


class _Closure(NamedTuple):
    """The script's local modules read (entry_script.iter_closure), the command lines they run
    (config.shell_command starts_programs, not a file utility) and whether the walk from the
    script can be certain: False where the closure was cut (MAX_MODULES), its code runs code
    unseen (`exec`, `importlib.import_module`: rules/stacks.toml `dynamic`) or issues torch P2P
    itself, or may (config.own_p2p: hand-written send/recv, not a site the walk meets)."""
    files: list[Path]
    commands: Commands
    certain: bool


@functools.lru_cache(maxsize=8)
def _closure(script: Path, mtime_ns: int) -> _Closure:
    """The script's `_Closure`, read once per script, whichever releases the scan judges it on.
    A framework the script's checkout holds (Megatron-LM's megatron/) is not its own code: it is
    walked as a source (_local_sources), its plug-in loading not weighed, as a release's is."""
    read = list(iter_closure(script, modeled_roots()))
    dynamic = rulebook.load(RULES).data["no_pipeline"]["dynamic"]
    certain = len(read) < MAX_MODULES and not any(
        loads_code(t, dynamic) or own_p2p.read(p.read_text(encoding="utf-8"), str(p)).issues for p, t in read)
    starts = [(os.path.relpath(p, script.parent), t, s) for p, t in read for s in starts_programs(t, p)]
    commands = tuple((f, int(getattr(s.node, "lineno", 0)), s.text, *command_words(s.node, t)) for f, t, s in starts)
    return _Closure([p for p, _ in read], commands, certain)


def _serves(words: tuple[str, ...], argv: bool) -> bool:
    """Whether a command the closure of an entry that reaches no schedule runs is a model server
    (rules/stacks.toml [no_pipeline] `serving_modules`, `python -m vllm.entrypoints.api_server`,
    DeepSpeedExamples@83757d9c93 benchmarks/inference/mii/src/server.py:29-44): inference, no
    training to judge. Only an argv run with no shell (a word computed at run time is then one
    argument, never another command) whose interpreter and module are literal."""
    if not argv or len(words) < 3:
        return False
    serving = rulebook.load(RULES).data["no_pipeline"].get("serving_modules", [])
    python = next((e for e in Spelling.load(None).launchers
                   if e.get("one_process") and is_interpreter(os.path.basename(words[0]), e)), None)
    return python is not None and words[1] in python.get("module_options", ()) and any(
        fnmatch.fnmatchcase(words[2], m) for m in serving)


def _script_may_launch(script: tuple[str, ...], depth: int, locate: Callable[[str], Path | None]) -> bool:
    """A Python script a command runs: it may start ranks where the commands its closure runs
    may; none given (the interpreter reads its program from stdin) may. One the checkout does not
    hold (`locate` finds it neither from the run's working directory nor beside the entry) is the
    caller's, as a dataset file is (Megatron-LM's evaluate_mmmu.py runs a clone of MMMU's
    main_eval_only.py): as launched here it starts nothing, so it leaves the run decided."""
    if not script:
        return True
    found = locate(script[0])
    script_may = functools.partial(_script_may_launch, locate=locate)
    return found is not None and any(_may_start(c, script_may, depth + 1) for c in _commands(str(found)))


def _may_start(command: tuple, script_may: ScriptMay, depth: int = 0) -> bool:
    """Whether a command the closure runs may be another run of ranks (config.command_ranks
    `may_launch`); a command library's call (`sh.accelerate("launch", ...)`, whose program any
    attribute names) only where its program surely starts none (`starts_no_rank`: `sh.git.log`)."""
    return not starts_no_rank(command[3]) if command[6] else may_launch(command[3], script_may, depth)


def _locate(launch: LaunchConfig, folder: Path, script: str) -> Path | None:
    """The Python script a command of the entry's closure names, as the run finds it: from the
    working directory the run has (the launch script's, after its `cd`: frontend_parser.find_script),
    else from the entry's folder; None where neither holds it."""
    found = find_script(launch.path, script, workdir=launch.workdir)
    return found if found is not None else (folder / script) if (folder / script).is_file() else None


def _commands(path: str) -> Commands:
    """The command lines the entry's closure runs (`_closure`), read as far as it is read; none
    where the script is not read."""
    script = Path(path).resolve()
    try:
        return _closure(script, os.stat(script).st_mtime_ns).commands
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return ()


def _local_sources(script: Path, closure: list[Path]) -> list[SourceSet]:
    """The closure's files under each directory an import may name them from (the script's
    folder and up to ANCESTORS above it), one SourceSet each: `utils` and
    `tools.checkpoint.x.utils` are the same file, as each import spells it."""
    roots = local_roots(script)
    out = []
    for i, root in enumerate(roots):
        files = sorted(p.relative_to(root).as_posix() for p in closure if p.is_relative_to(root))
        out += [SourceSet.folder(f"p2paudit-entry-{i}", root, str(root), files)] if files else []
    out += _sibling_sources(script, closure, roots)
    # A checkout's own package in the src layout (Megatron-Bridge's src/megatron/bridge), which
    # the run imports once the checkout is installed (`uv run`, `pip install -e .`).
    for i, root in enumerate(roots):
        src = root / "src"
        if src.is_dir() and not src.is_relative_to(script.parent):
            files = sorted(p.relative_to(src).as_posix() for p in src.rglob("*.py"))[:SRC_FILES]
            out += [SourceSet.folder(f"p2paudit-entry-src-{i}", src, str(src), files)] if files else []
    # The checkout of a framework the entry runs from (Megatron-LM's megatron/, whose core the
    # release stands in for in the scan, and megatron/inference, which no release ships): what
    # its imports run, first on sys.path, read as far as the walk goes.
    for i, root in enumerate(roots):
        files = [p.relative_to(root).as_posix() for name in sorted(modeled_roots()) if (root / name).is_dir()
                 for p in sorted((root / name).rglob("*.py"))][:SRC_FILES]
        out += [SourceSet.folder(f"p2paudit-entry-framework-{i}", root, str(root), files)] if files else []
    return out


def _sibling_sources(script: Path, closure: list[Path], roots: list[Path]) -> list[SourceSet]:
    """The local modules of each folder below the script's that holds one of the closure, under
    their bare names, where a module of that folder imports them so only as the fallback of a
    failed relative import of the same name (`try: from .utils import X` / `except ImportError:
    from utils import X`, DeepSpeedExamples@83757d9c93 benchmarks/inference/mii/src/client.py:22-31,
    so that the file also runs as a script from its folder): then that sibling is what the
    fallback imports. Read after the script's own roots, before the releases. A name any other
    file of the closure imports bare (which Python resolves from its own path, perhaps to an
    installed package), or a name of the standard library or of a modeled stack, is not taken."""
    taken = set(sys.stdlib_module_names) | modeled_roots()
    read = {p: _bare_imports(p) for p in closure}
    if any(r is None for r in read.values()):
        return []
    folders = sorted({p.parent for p in closure if p.parent != script.parent
                      and p.parent.is_relative_to(script.parent) and p.parent not in roots})
    out = []
    for i, folder in enumerate(folders):
        here = {p.stem: p for p in closure if p.parent == folder and p.stem not in taken}
        fallback: set[str] = set()
        elsewhere: set[str] = set()
        for file, found in read.items():
            assert found is not None
            fallback |= found[0] if file.parent == folder else set()
            elsewhere |= found[1] | (found[0] if file.parent != folder else set())
        files = sorted(here[name].name for name in (fallback - elsewhere) & set(here))
        out += [SourceSet.folder(f"p2paudit-entry-sibling-{i}", folder, str(folder), files)] if files else []
    return out


_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "builtins.ImportError",
                            "builtins.ModuleNotFoundError"})


def _bare_imports(file: Path) -> tuple[set[str], set[str]] | None:
    """The bare top-level names `file` imports: (those imported only as the fallback of a failed
    relative import of the same name, in an `except ImportError` handler whose try body does
    `from .NAME import ...`; all others). None where the file is not read."""
    try:
        tree = parsed(file.read_text(encoding="utf-8", errors="replace"))  # iter_closure's parse, cached
    except (OSError, SyntaxError, ValueError):
        return None
    fallback: dict[int, str] = {}  # id of an import in such a handler -> its name
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        relative = {n.module.split(".")[0] for stmt in node.body for n in ast.walk(stmt)
                    if isinstance(n, ast.ImportFrom) and n.level == 1 and n.module}
        for handler in node.handlers:
            if not handler_types(handler) & _IMPORT_ERRORS:
                continue
            for n in (n for stmt in handler.body for n in ast.walk(stmt)):
                if isinstance(n, ast.ImportFrom) and not n.level and n.module and \
                        n.module.split(".")[0] in relative:
                    fallback[id(n)] = n.module.split(".")[0]
    inside: set[str] = set()
    outside: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in fallback:
            inside.add(fallback[id(node)])
        elif isinstance(node, ast.Import):
            outside |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            outside.add(node.module.split(".")[0])
    return inside - outside, outside


def _certain(interp: Interpreter, stops: frozenset[str], program: Program) -> bool:
    """Whether nothing the walk met could reach a schedule unseen (see the module docstring):
    a call into code not read, or an import of a pipeline module (`deepspeed.pipe`: importing
    a library not read runs only its definitions)."""
    data = rulebook.load(RULES).data["no_pipeline"]
    allowed = set(data["packages"]) | set(sys.stdlib_module_names) | {"builtins", "__future__"}
    excepted = list(data["except_modules"])
    names = set(data["except_names"])
    for other in ("deepspeed", "pipelining"):
        model = rulebook.load(other).data["pipeline_model"]
        excepted += model["modules"]
        names |= set(model["names"])
    if any(not _framework(program, module) for module, _ in interp.unseen):
        return False  # the entry's own code hands a class out or calls a computed getattr
    read = _packages(program)
    for name in (interp.outside | interp.imported) - read:  # read: a namespace package's part
        if name.rsplit(".", 1)[-1] in names or any(_under(name, m) for m in excepted):
            return False  # code not read that builds or steps a pipeline
    for name in interp.outside - read:
        if name.split(".")[0] not in allowed and not any(_under(name, m) for m in data.get("modules", [])):
            return False  # code not read that may
    last = {s.rsplit(".", 1)[-1] for s in stops}
    return not any(text.rsplit(".", 1)[-1].strip() in last for text in interp.unresolved)


def _framework(program: Program, module: str) -> bool:
    """Whether `module` is a framework's (a release, a checkout's megatron/), not the entry's
    own code (the script, its local modules, its checkout's src/ package): a framework's
    reflection (megatron-core's spec_utils.import_module, `dataclasses.fields(SomeConfig)`,
    `getattr(args, name)` over its config) is, like its plug-in loading, not weighed."""
    if module not in program.where:
        return False  # the entry script itself
    name = program.where[module][0].name
    return not name.startswith("p2paudit-entry-") or name.startswith("p2paudit-entry-framework-")


def _under(name: str, module: str) -> bool:
    return name == module or name.startswith(f"{module}.")


def _packages(program: Program) -> set[str]:
    """Every module of the sources and every package above one."""
    out: set[str] = set()
    for module in program.where:
        parts = module.split(".")
        out.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return out


def own_unjudged(launch: LaunchConfig, own: tuple[str, str, str], site_docs: list[dict[str, Any]]) -> list[Finding]:
    """What of the entry's own P2P (config.pipelining_script.own_entry: its module `own[1]`) the
    scan does not judge, each an undecided finding: a site of the entry's own code no call path
    from the entry reaches (a Trainer subclass's `training_step`, called by a loop not read), and
    a call of torch.distributed by a name not known statically. Never CLEAN on what was not read."""
    where = f"{launch.path}:{launch.command_line}"
    package = canonicalize_name(own[1])
    out = []
    quiet = list(dict.fromkeys(f"{s['path']}:{s['line']}" for s in site_docs
                               if s.get("package") == package and SiteStatus.of(s).quiet))
    if quiet:
        shown = ", ".join(quiet[:3]) + (f" (+{len(quiet) - 3} more)" if len(quiet) > 3 else "")
        out.append(Finding(
            "entry.own-p2p-unreached", "warning",
            f"{own[0]} issues torch P2P itself that no call path from it reaches ({shown}): code "
            "not read here (a library's training loop calling its hooks) may run it, so it is not judged",
            where=where, detail={"undecided": f"the entry's own P2P at {shown}",
                                 "decide": "--entry MODULE:FUNCTION naming the function that runs it, "
                                           "or `p2paudit record` of a run"}))
    located = located_stat(launch)
    if located is None:
        return out
    found, files = own_p2p.closure(located[0].path, located[1].st_mtime_ns, located[1].st_size, modeled_roots())
    if found.computed:
        shown = ", ".join(f"{f}:{n} {t}" for f, n, t in found.computed)
        out.append(Finding(
            "entry.own-p2p-unread", "warning",
            f"{own[0]} calls torch.distributed by a name not known statically ({shown}): "
            "the op it issues is not judged",
            where=where, detail={"undecided": f"the torch.distributed call(s) at {shown}",
                                 "decide": "--entry MODULE:FUNCTION naming it, or `p2paudit record` of a run"}))
    # the files of its own P2P the scan's source does not hold (a local module outside the
    # entry's folder, found on PYTHONPATH or a sys.path insert): their sites are not judged
    judged = {s["path"] for s in site_docs if s.get("package") == package}
    missing = list(dict.fromkeys(f for f, _, _ in found.sites if f not in judged))
    if missing:
        out.append(Finding(
            "entry.own-p2p-unread", "warning",
            f"{own[0]} issues torch P2P in {', '.join(missing)}, which the scan does not read as a "
            "source: its ops are not judged",
            where=where, detail={"undecided": f"the entry's own P2P in {', '.join(missing)}",
                                 "decide": "`p2paudit record` of a run, then `p2paudit report`"}))
    if len(files) >= MAX_MODULES:
        out.append(Finding(
            "entry.own-p2p-unread", "warning",
            f"{own[0]} imports more than {MAX_MODULES} local modules: those not read may issue torch P2P "
            "that is not judged",
            where=where, detail={"undecided": f"the P2P of the local modules past the first {MAX_MODULES}",
                                 "decide": "`p2paudit record` of a run"}))
    return out


def schedule_unreached(launch: LaunchConfig, script: str, site_docs: list[dict[str, Any]]) -> list[Finding]:
    """An undecided finding where a script pipelining with torch itself (`script`,
    config.pipelining_script) reaches none of the schedule's P2P sites from its `__main__` and
    some are not analysed: the schedule it builds runs from code not read (a Trainer subclass's
    `training_step`, called by transformers' loop), so what runs is not judged: never CLEAN 0 sites."""
    if any(SiteStatus.of(s).reached for s in site_docs) or not any(SiteStatus.of(s).quiet for s in site_docs):
        return []
    return [Finding(
        "entry.schedule-unreached", "warning",
        f"{script} pipelines with torch.distributed.pipelining, but no call path from it reaches a "
        "schedule's P2P: the schedule it builds runs from code not read here (a library's training "
        "loop calling its hooks), so it is not judged",
        where=f"{launch.path}:{launch.command_line}",
        detail={"undecided": f"the pipeline schedule {script} builds",
                "decide": "--entry MODULE:FUNCTION naming the function that steps the schedule, "
                          "or `p2paudit record` of a run"})]
