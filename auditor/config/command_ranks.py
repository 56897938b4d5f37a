"""Whether a command line a Python entry runs may be another run of ranks, judged on its words
known statically, as the launch script's own commands are (the launchers' rules, rules/*.toml
[[launcher]], and `program_options`): `git log -1 --format=%H` starts none, `torchrun ...`,
`bash run.sh` or a program not known may. One place answers it for the walk from the entry
(analysis.schedule_reach: a command beside a run that trains itself) and for the world of a
plain `python x.py` (config.one_process: a program it starts is no rank where this says so).
"""

from __future__ import annotations

import fnmatch
import os
import shlex
from collections.abc import Callable

from auditor import rulebook
from auditor.config.training_command import is_interpreter
from auditor.rulebook.launchers import Spelling

# Whether a Python script a command runs (its words after the interpreter's options, the depth
# of the reading) may start ranks: the caller decides how far it reads such a script.
ScriptMay = Callable[[tuple[str, ...], int], bool]


def may_launch(words: tuple[str, ...], script_may: ScriptMay, depth: int = 0) -> bool:
    """Whether a command the closure of an entry that trains itself (or may) runs may be another
    run of ranks, judged on its words known statically (as the launch script's own commands are):
    its program is not known; it is a launcher (rules: a launcher's `programs`, a wrapper such as
    `srun`, `mpirun`) or a path; behind a wrapper (`env A=1`, `timeout 3600`) the word after it
    decides; a shell's `-c` string is a command line judged so (`bash -c "echo hi"` starts
    nothing), a shell running a script not read may; a Python interpreter, its own options skipped
    as it parses them (rules: the interpreter's `boolean_options`, `value_options`: `python -W
    ignore x.py`), runs `-m` of a launcher's `python_modules`, code given inline (`code_options`,
    not read), or a script that may itself (`script_may`, the caller's: analysis.schedule_reach
    follows `python tools/launch_pp.py` whose code runs torchrun; config.one_process says any
    script may). Any other program (`make`, `tensorboard`,
    `aws s3 cp`, `tar`) may only where a word of it names a launcher or a script, or, for one the
    rules say trains nothing, an option that runs another program (`program_options`: `tar
    --to-command`; Megatron-DeepSpeed f4157bea69 pretrain_gpt.py:331-347 runs `git rev-parse`
    beside its training). An entry that trains nothing itself is undecided on any command it runs
    (_runs_command)."""
    spelling = Spelling.load(None)
    programs = {p for e in spelling.launchers for p in (e.get("programs") or [e.get("program")]) if p}
    modules = [m for e in spelling.launchers for m in (*e.get("python_modules", ()), *e.get("process_starters", ()))]
    k, wrapped = 0, False
    while k < len(words):
        if os.path.basename(words[k]) in spelling.wrappers - programs:
            wrapped = True
        elif not (wrapped and (words[k].startswith("-") or words[k].isdigit() or "=" in words[k])):
            break  # the program, after a wrapper's own options, numbers and assignments
        k += 1
    if k >= len(words) or "$" in words[k] or depth > 3:
        return True
    base, rest = os.path.basename(words[k]), words[k + 1:]
    if base in _SHELLS:
        return _shell_may_launch(rest, script_may, depth)
    if base in programs or "/" in words[k]:
        return True
    # the interpreter run bare (rules: `one_process`), not a runner that also lists it (ray's
    # `ray job submit -- python3 ...` rule knows none of python's own options)
    python = next((e for e in spelling.launchers if e.get("one_process") and is_interpreter(base, e)), None)
    if python is not None:
        return _python_may_launch(rest, python, modules, script_may, depth)
    options = spelling.program_options.get(base, ())
    return any(os.path.basename(w) in programs or any(fnmatch.fnmatchcase(w, m) for m in modules)
               or w.endswith((".py", ".sh")) or w.partition("=")[0] in options for w in rest)


def starts_no_rank(words: tuple[str, ...]) -> bool:
    """Whether a command, its words all known, surely starts no rank: its program is one the rules
    mark so (rules/stacks.toml [no_pipeline] `inert_programs`; a subcommand of
    `rankless_subcommands` given right after the program, `git log -1 --format=%H`) and
    `may_launch` finds no word that starts another (`git log --exec`? none; `program_options`).
    Any other program (`accelerate launch ...`, `composer -n 8 train`, `git commit`, which runs
    hooks) may, whatever its words: the one-process world of a plain `python x.py`
    (config.one_process) and a command library's call (`sh.X(...)`, analysis.schedule_reach)
    are read only so."""
    rules = rulebook.load("stacks").data["no_pipeline"]
    if not words:
        return False
    program = words[0]
    known = program in rules.get("inert_programs", ()) or (
        len(words) > 1 and words[1] in rules.get("rankless_subcommands", {}).get(program, ()))
    return known and not may_launch(words, lambda script, depth: True)


_SHELLS = frozenset({"bash", "sh"})
_SEPARATORS = frozenset({";", "&", "&&", "|", "||", ";;"})


def _shell_may_launch(rest: tuple[str, ...], script_may: ScriptMay, depth: int) -> bool:
    """A shell's arguments: with `-c` (alone or among its short options, `-lc`), the command
    line its first operand is, each command of it judged by `may_launch`; where a word of it
    is computed (`$X`, `$(...)`, a backtick) or it does not split as a shell splits it, it may.
    A shell running a script (not read here) may."""
    options = rest[:next((i for i, w in enumerate(rest) if not w.startswith("-")), len(rest))]
    if not any(not o.startswith("--") and "c" in o[1:] for o in options) or len(options) >= len(rest):
        return True
    text = rest[len(options)]
    if "`" in text:
        return True
    lexer = shlex.shlex(text.replace("\n", ";"), posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return True
    commands: list[list[str]] = [[]]
    for token in tokens:
        if token in _SEPARATORS:
            commands.append([])
        else:
            commands[-1].append(token)
    return any(may_launch(tuple(c), script_may, depth + 1) for c in commands if c)


def _python_may_launch(rest: tuple[str, ...], python: dict, modules: list[str],
                       script_may: ScriptMay, depth: int) -> bool:
    """A Python interpreter's arguments, its options read as it reads them: a `value_options`
    option takes the next word (`-W ignore`, `-X faulthandler`) unless given with it (`-Wignore`),
    the others stand alone (`boolean_options`, `-uB`); then `-m MODULE` (a launcher's module, or
    a process starter's, may), inline code (`-c`: not read, so it may) or the script."""
    values = set(python.get("value_options", ()))
    j = 0
    while j < len(rest) and rest[j].startswith("-") and rest[j] != "-":
        option = rest[j]
        if option in python.get("module_options", ()):
            return j + 1 >= len(rest) or any(fnmatch.fnmatchcase(rest[j + 1], m) for m in modules)
        if option in python.get("code_options", ()):
            return True
        j += 2 if option in values else 1
    return script_may(rest[j:j + 1], depth)
