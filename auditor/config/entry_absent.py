"""A training command that surely never runs its training script (issue 22: a run that cannot
start), told from the tree itself: the script's file is not where the run opens it, or the word
taken for the program is a piece of a placeholder that bash read as redirections.

A missing file. alibaba/Pai-Megatron-Patch@a098ca5acb examples/deepseek_v3/
run_mcore_deepseek_lite.sh:203 runs `torchrun ... pretrain_deepseek_250624.py`, relative, with no
`cd`; the tree holds no such file (commit 6a7c390 folded it into pretrain_deepseek.py), so every
worker's python exits 2 ("can't open file"). Said only where that is certain: the command starts
in the directory this audit stands in (config.launch_dir, the walk's; no `cd`, no runner's
working-directory option: config.workdir "", the guards read_entry_imports takes for "another
copy may run"), inside the checkout around the launch script and holding Python scripts (a scan
run from outside it, or from a directory no script is run from, says nothing of where the job
starts: a launch script kept in a repository of configs is run from another tree), its launcher opens the script from there (a launcher rule's `script_in_cwd`) and
not in a container image (whose files are not these), the file is no `.py` found where this audit
looks for one (frontend_parser.find_script: that directory, the launch script's and those above),
nor opened from any directory of the checkout around the launch script (a run started elsewhere
in it finds none either), and nothing may make it or move the run: the command runs
unconditionally (Candidate.conditional), every command before it only sets variables, tests,
shifts or exits (`[[ $# -gt 0 ]]`, `shift`, `exit 1` of an option loop), or is a
wholly literal command of an inert program, or one of programs that only print (rules/stacks.toml
`printing_programs`, in command substitutions too) or only make directories (`directory_programs`:
`mkdir -p $save_dir`): `$(basename $2)` (_only_inert_before: anything else, `source`,
`./prep.sh`, `tar`, `VAR=1 prog`, a command substitution, may write it), no code unread here
(Shell.opaque), no other word of the script naming it, no container or working directory named
anywhere, comments included (torch_version.runs_elsewhere), no submodule left unchecked-out (a
recursive clone fills it, and a run may start in it), no build of the checkout
(entry_imports.built). Otherwise nothing is said, and the scan asks for the command (--command).
Where the script's folder is not there at all (`examples/detxoify_lm/x.py` after the example
moved) but its first folder is, the directory the run opens it from must hold scripts instead
(a missing top-level folder, `Megatron-LM/pretrain_gpt.py`, is another tree cloned there). The
failing command must end the script (_ends_there: `exec`, its last command, or `set -e` in
force; else bash goes on to the training after it) and sit in no function's body (run where it
is called, after commands below it). A plain `python SCRIPT` whose file is so surely absent is
the run's command (launch._last_resort: surely_absent).

A placeholder. NVIDIA/Megatron-LM@d98e8a64dd examples/multimodal/llama_3p1_nemotron_nano_vl_8b_v1/
sft_llama_3p1_nemotron_nano_vl_8b_v1.sh:170 writes `srun ... --container-image <path to docker
image> \\`: bash reads `<path` as standard input from a file named `path` and `image>` as
standard output to a file named by the next word; `to docker image` stay words, so srun's
`--container-image` takes `to` and srun runs `docker`. The training command is an argument of
that program, and where `path` is missing bash runs nothing at all: train.py never starts.
Said only where the shell opening `<path` stands in a directory known here that holds neither
`path` nor a file named as the program.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path


from auditor import rulebook
from auditor.bash.absent import checkout_root, nowhere_in_checkout, unpopulated_submodules
from auditor.bash.errexit import errexit_change
from auditor.bash.lexer import ASSIGN, Lexer, Word
from auditor.bash.parser import Cmd, Function, Node, ShellParser, children, simple_commands
from auditor.config.entry_imports import built
from auditor.config.flags import STARTUP
from auditor.config.frontend_parser import find_script
from auditor.config.model import LaunchConfig
from auditor.config.torch_version import runs_elsewhere
from auditor.config.training_command import Candidate, launch_tree, prints_only, python_rule
from auditor.errors import InputError
from auditor.findings import Finding
from auditor.rulebook.launchers import Spelling

# Shell builtins that set variables or options, test, shift or end only: they run nothing and
# write no file (`[[ $# -gt 0 ]]`, `shift` of an argument loop, `exit 1` on a bad option).
_SETS_STATE = ("export", "set", "unset", "readonly", "local", "declare", "shift", "[[", "[", "test",
               "true", "false", ":", "exit", "return")
# Of rules/stacks.toml `inert_programs` (no code run), those that write a file where no
# redirection says so (`cp -r ../src/* .`): not inert here, where a file made is what matters.
_WRITES = ("cp", "mv", "ln", "touch")


def read_absent_entry(config: LaunchConfig, launcher: dict, chosen: Candidate,
                      opaque: list[tuple[int, str]], path: str) -> None:
    """An error (a start-up failure) where the command surely never runs its training script;
    config.script_absent says why, so that no reader asks for the script's parser."""
    script = config.script
    if not isinstance(script, str) or config.script_module or config.script_read:
        return
    where = _placeholder(config, chosen, path)
    if where is None and launcher.get("script_in_cwd") and not chosen.conditional:
        where = _missing(config, opaque, path)
    if where is not None:
        config.script_absent = where


def _placeholder(config: LaunchConfig, chosen: Candidate, path: str) -> str | None:
    """The program is a word between a `<WORD` redirection and the `>` closing it on one line
    (`<path to docker image>`): what bash does with it, said as an error."""
    lines = config.text.split("\n")
    program = str(config.script)
    invoked, redirects = chosen.invoked, chosen.redirects
    for k, (op, target) in enumerate(redirects):
        if op not in ("<", "0<") or target.line > len(lines):
            continue
        m = re.search(rf"<{re.escape(target.raw)}((?:[ \t]+[^\s<>|&;()'\"]+)+)>", lines[target.line - 1])
        if m is None or program not in m.group(1).split() or not _unopenable(chosen.opened_in[k], target, program):
            continue
        out = next((t for o, t in redirects[k + 1:] if o in (">", "1>", ">|")), None)
        placeholder = f"<{target.raw}{m.group(1)}>"
        writes = (f" and `{m.group(1).split()[-1]}>` writes its standard output to a file named by the next "
                  f"word, `{out.raw}`" if out is not None else "")
        why = (f"`{placeholder}` (line {target.line}) is no value to bash: `<{target.raw}` reads standard input "
               f"from a file named `{target.raw}`{writes}, and the words between stay arguments, so "
               f"{invoked.split()[0]} runs `{program}`, not the training command; where no file `{target.raw}` "
               "is in the directory it starts in, bash runs nothing at all. Either way the training "
               "script never starts")
        config.diagnostics.append(Finding(
            "launch.placeholder-program", "error", why,
            fix=f"replace `{placeholder}` with the value it stands for (quoted if it holds spaces)",
            where=f"{path}:{target.line}", detail={**STARTUP, "program": program, "placeholder": placeholder}))
        return why
    return None


def surely_absent(config: LaunchConfig, launcher: dict, chosen: Candidate,
                  opaque: list[tuple[int, str]], path: str) -> bool:
    """Whether the command surely opens no training script (as read_absent_entry decides it),
    so that a plain `python SCRIPT` whose file is not here is still the run's command: what it
    does is not start (bigcode-project/Megatron-LM@7c325cd34a examples/merge_mp_bert.sh:8
    runs `python tools/merge_mp_partitions.py`, removed from tools/ by 5df9e1fb)."""
    return bool(launcher.get("script_in_cwd")) and not chosen.conditional and isinstance(config.script, str) \
        and not config.script_module and not config.script_read and _absence(config, opaque, path) is not None


def _absence(config: LaunchConfig, opaque: list[tuple[int, str]], path: str) -> Path | None:
    """Where the relative `.py` training script was looked for, where no directory the run may
    open it from holds it (see the module's docstring); None where that is not certain."""
    script = str(config.script)
    start = _start(config)
    if os.path.isabs(script) or not script.endswith(".py") or start is None or "no_python" in config.launcher_flags:
        return None
    moved = config.workdir != ""  # the command's own `cd` names where it runs: a container's image is no other directory
    if (runs_elsewhere(config, images=not moved) is not None
            or config.text.count(os.path.basename(script)) != 1 or not _only_inert_before(config, opaque)):
        return None  # unread code, a container or directory given, another word naming it, a command that may make it
    looked = Path(start, script)
    if looked.exists() or find_script(path, script, entry=True) is not None:
        return None
    checkout = checkout_root(path) if Path(path).is_file() else None
    if checkout is None or not looked.resolve().is_relative_to(checkout) or not _run_from(looked, start):
        return None  # the audit stands outside the tree, or where no script is run from
    if built(looked.parent, looked.stem, "") or nowhere_in_checkout(script, path) is None or unpopulated_submodules(checkout):
        return None  # a build makes it, a directory of the checkout or a submodule not checked out may hold it
    return looked


def _start(config: LaunchConfig) -> str | None:
    """The directory the command opens its script from: the launch directory where nothing moved
    it, else the absolute one a sure `cd` before it names (`DIR=`pwd`; ... cd ${DIR}`, `cd
    $(dirname $0)`); None where that is not known statically (a relative `cd` from a directory
    not known, a runner's working-directory option: Candidate.workdir)."""
    if config.workdir == "":
        return config.launch_dir
    return config.workdir if config.workdir is not None and os.path.isabs(config.workdir) else None


def _missing(config: LaunchConfig, opaque: list[tuple[int, str]], path: str) -> str | None:
    """The relative `.py` training script no directory the run may open it from holds."""
    looked = _absence(config, opaque, path)
    if looked is None:
        return None
    script = str(config.script)
    near = _near(looked)
    where = ("the directory this audit runs in (the script moves it nowhere)" if config.workdir == ""
             else f"{config.workdir}, where the script's `cd` moves it")
    why = (f"`{config.launcher}` opens {script} in {where}: no such file there, "
           "nor from any directory of the "
           "checkout; python exits 2 (can't open file) on every rank" + (f" ({near} is there)" if near else ""))
    config.diagnostics.append(Finding(
        "launch.entry-missing", "error", why,
        fix=(f"run {near} (the file the tree has), or " if near else "")
            + "launch from the directory that holds the training script (--command gives that command)",
        where=f"{path}:{config.command_line}", detail={**STARTUP, "looked_for": str(looked)}))
    return why


def absent_here(config: LaunchConfig) -> bool:
    """Whether the relative `.py` training script is not where the job is meant to start, which
    the rules' knowing it by name (`torchrun pretrain_gpt.py`: Megatron-LM's front end) does not
    replace: the command opens it in the directory this audit stands in (no `cd`, no
    working-directory option, no container or directory named anywhere), a directory of the
    checkout around the launch script that holds Python scripts (one jobs are run from: see
    `_missing`, whose further conditions, where they all hold, make it DOES NOT START instead),
    and no such file is there, nor beside the launch script or above it. Outside a checkout, or
    from a directory no script is run from, the job starts in another tree (a Megatron-LM clone)."""
    script = config.script
    if (not isinstance(script, str) or config.script_module or config.script_read or config.script_absent
            or os.path.isabs(script) or not script.endswith(".py") or config.workdir != ""
            or config.launch_dir is None or runs_elsewhere(config) is not None):
        return False
    looked = Path(config.launch_dir, script)
    checkout = checkout_root(config.path) if Path(config.path).is_file() else None
    if checkout is None or not looked.resolve().is_relative_to(checkout) or not _run_from(looked, config.launch_dir):
        return False
    return not looked.exists() and find_script(config.path, script, entry=True) is None


def _run_from(looked: Path, launch_dir: str) -> bool:
    """Whether the directory the script is opened from is one jobs are run from: the script's
    own folder holds Python scripts, or, where that folder is not there at all (`python
    examples/detxoify_lm/generate_samples_gpt.py` after the example moved) but its first folder
    is, the launch directory does (Megatron-LM's root, beside pretrain_gpt.py). A missing
    top-level folder (`Megatron-LM/pretrain_gpt.py`, a clone a README asks for) is another tree."""
    if _scripts(looked.parent):
        return True
    parts = Path(os.path.normpath(looked)).relative_to(os.path.normpath(launch_dir)).parts \
        if Path(os.path.normpath(looked)).is_relative_to(os.path.normpath(launch_dir)) else ()
    # a missing top-level folder (`Megatron-LM/pretrain_gpt.py`) is another tree cloned there
    return len(parts) > 2 and Path(launch_dir, parts[0]).is_dir() and not looked.parent.exists() \
        and bool(_scripts(Path(launch_dir)))


def _scripts(directory: Path) -> list[str]:
    """The Python scripts a directory holds (setup.py is none): a directory jobs are run from."""
    try:
        return sorted(p.name for p in directory.glob("*.py") if p.is_file() and p.name != "setup.py")
    except OSError:
        return []


def _near(looked: Path) -> str:
    """The closest name among the `.py` files beside where the script was looked for."""
    close = difflib.get_close_matches(looked.name, _scripts(looked.parent), n=1, cutoff=0.6)
    return close[0] if close else ""


def _unopenable(opened_in: str | None, target: Word, program: str) -> bool:
    """Whether bash surely fails to open the `<WORD` file, so runs nothing: the shell opening it
    stands in a directory known here (Candidate.opened_in: no `cd` before), WORD is literal and
    no such file is there, nor is the program word a file there."""
    if opened_in is None or any(p.kind != "lit" for p in target.parts):
        return False
    return not Path(opened_in, target.raw).exists() and not Path(opened_in, program).exists()


def _only_inert_before(config: LaunchConfig, opaque: list[tuple[int, str]]) -> bool:
    """Whether every command before the training command sets variables or options only, or is a
    wholly literal command of an inert program (rules/stacks.toml `inert_programs`, less those
    that write files) with no redirection but to /dev/null or a descriptor; and one command,
    itself running no command substitution, holds the training command's line. Anything else
    (`source`, `./prepare.sh`, `tar`, `VAR=1 prog`, a here-document) may make the file."""
    printing = frozenset(rulebook.load("stacks").data["no_pipeline"].get("printing_programs", []))
    nodes = ShellParser(Lexer(config.text, config.path).tokens(), config.path, []).parse()
    at = [c for c in simple_commands(nodes) if c.line <= config.command_line <= c.end_line]
    if len(at) != 1 or any(_substitutes(w, printing) for w in at[0].words) or _in_function(nodes, at[0]):
        return False  # a function's body runs where it is called, after what may come below it
    if not _ends_there(nodes, at[0]):
        return False
    return unread_before(config, opaque, nodes) is None


def unread_before(config: LaunchConfig, opaque: list[tuple[int, str]], nodes: list[Node] | None = None,
                  made: Path | None = None) -> int | None:
    """The line of the first command before the training command that is not inert (_inert):
    one that may run code not read here (`source /opt/env.sh`, `./prep.sh`, `eval`), move the
    run (`cd /opt/megatron-lm`), install packages (`pip install -e /opt/megatron-lm`) or write
    files; or of unread code (Shell.opaque) before it. None where every command before only sets
    variables, prints, tests or makes directories. The one test of "what ran before the command
    is read here", for a missing entry (_only_inert_before), a missing import
    (entry_imports.read_entry_imports) and a missing Hydra config (frontends.hydra_compose). Where
    the question is one file (`made`), a literal `cp`/`mv`/`touch` writing only to absolute
    paths neither it nor a folder above it (`cp a.yaml /tmp/other.yaml`) does not make it."""
    if nodes is None:
        nodes = ShellParser(Lexer(config.text, config.path).tokens(), config.path, []).parse()
    rules = rulebook.load("stacks").data["no_pipeline"]
    programs = [p for p in rules.get("inert_programs", []) if p not in _WRITES]
    printing = frozenset(rules.get("printing_programs", []))
    directories = frozenset(rules.get("directory_programs", []))
    before = [c for c in simple_commands(nodes) if c.end_line < config.command_line]
    # `python` on a PATH the script changed (`export PATH=$PWD/bin:$PATH`) may be a file of the tree
    python = (python_rule(Spelling.load(None)), launch_tree(config.path),
              any(re.match(r"PATH\+?=", w.raw) for c in before for w in c.words))
    lines = [line for line, _ in opaque if line < config.command_line]
    lines += [c.line for c in before if not _inert(c, programs, printing, directories, python)
              and not (made is not None and _writes_elsewhere(c, made, printing))]
    return min(lines, default=None)


def _writes_elsewhere(cmd: Cmd, made: Path, printing: frozenset[str]) -> bool:
    """Whether a `cp`, `mv` or `touch`, wholly literal, writes only to absolute paths that are not
    `made` nor a folder above it: its destination (the last word; each operand of `touch`). Not
    where an option may name another destination: `-t` alone or in a bundle (`cp -rt DIR`), a
    `--t...` long option (GNU takes `--ta` for `--target-directory`); not to /proc or /dev, which
    this machine resolves for itself (`/proc/self/cwd` is the job's directory there); never `ln`,
    whose link may point a later path into the checkout (`ln -s $PWD/examples /tmp/x`)."""
    words = [w.raw for w in cmd.words]
    if not words or words[0] not in ("cp", "mv", "touch") or not _quiet(cmd, printing) \
            or any(p.kind != "lit" for w in cmd.words for p in w.parts) \
            or any(a.startswith("--t") or re.match(r"-[^-]*t", a) for a in words[1:]):
        return False
    dests = [a for a in words[1:] if not a.startswith("-")] if words[0] == "touch" \
        else words[-1:] if len(words) > 1 else []
    return bool(dests) and all(
        os.path.isabs(d) and not Path(os.path.normpath(d)).is_relative_to("/proc")
        and not Path(os.path.normpath(d)).is_relative_to("/dev")
        and not any(made == here or made.is_relative_to(here) for here in (Path(os.path.normpath(d)), Path(d).resolve()))
        for d in dests)


def _in_function(nodes: list[Node], cmd: Cmd) -> bool:
    """Whether the command sits in a function's body (run where it is called, not where written)."""
    for node in nodes:
        if isinstance(node, Function) and any(c is cmd for c in simple_commands([node.body])):
            return True
    return any(_in_function(children(node), cmd) for node in nodes)


def _ends_there(nodes: list[Node], cmd: Cmd) -> bool:
    """Whether nothing runs after the failing command, so that its failure is the run's end: it
    is `exec`, the script's last command, or a top-level command under `set -e` (errexit) set
    before it at the top level. Without these, bash goes on to the next command (the training)."""
    if cmd.words and cmd.words[0].raw == "exec":
        return True
    if not any(c.line > cmd.end_line for c in simple_commands(nodes)):
        return True
    if not any(node is cmd for node in nodes):
        return False  # in a list, a condition or a loop: errexit does not stop there
    errexit = False
    for node in nodes:
        if isinstance(node, Cmd) and node.line < cmd.line and node.words and node.words[0].raw == "set":
            change = errexit_change([w.raw for w in node.words[1:]])  # `set +e` turns it off again
            errexit = errexit if change is None else change
    return errexit


def _inert(cmd: Cmd, programs: list[str], printing: frozenset[str], directories: frozenset[str],
           python: tuple[dict | None, Path | None, bool]) -> bool:
    """A command that runs nothing and writes no file (see _only_inert_before): a printing
    program (rules/stacks.toml `printing_programs`) or one that makes directories only
    (`directory_programs`: `mkdir -p $save_dir`) whatever its arguments, an inert one wholly
    literal, or a literal `python -c` whose text only prints (training_command.prints_only)."""
    if not _quiet(cmd, printing):
        return False
    if not cmd.words or all(ASSIGN.match(w.raw) for w in cmd.words):
        return True  # assignments only
    head = cmd.words[0]
    if head.raw in _SETS_STATE or head.raw in printing | directories and all(p.kind == "lit" for p in head.parts):
        return True
    literal = all(p.kind == "lit" for w in cmd.words for p in w.parts)
    return literal and (head.raw in programs
                        or prints_only(["".join(p.text for p in w.parts) for w in cmd.words], *python))


def _quiet(cmd: Cmd, printing: frozenset[str], reads: bool = False) -> bool:
    """Whether a command is fed nothing (no here-document or here-string), runs no command
    substitution but of printing programs, and redirects only to /dev/null or a descriptor
    (or, where it `reads`, from a file with `<`): it writes no file. `>& WORD` duplicates a
    descriptor only where WORD is a number or `-`; any other word is a file that gets both
    stdout and stderr (bash(1), "Redirecting Standard Output and Standard Error")."""
    return cmd.stdin is None and cmd.herestring is None and not any(_substitutes(w, printing) for w in cmd.words) \
        and all(t.raw == "/dev/null" or reads and op.lstrip("0123456789") == "<"
                or op.lstrip("0123456789") in (">&", "<&") and re.fullmatch(r"[0-9]+-?|-", t.raw)
                for op, t in cmd.redirects)


def _substitutes(word: Word, printing: frozenset[str]) -> bool:
    """Whether a word may run a command substitution (`$(...)`, backquotes), inside a parameter's
    default (`${X:-$(python -c ...)}`) or an array's elements included, other than one of
    printing programs only (`$(basename $2)`, `$(wc -l < $1)`, `$(cd "$(dirname "$0")" && pwd)`:
    _printing_only)."""
    return any(p.kind == "cmd" and not _printing_only(p.text, printing)
               or p.kind not in ("lit", "cmd") and ("$(" in p.text or "`" in p.text)
               or any(_substitutes(e, printing) for e in p.elements) for p in word.parts)


def _printing_only(text: str, printing: frozenset[str]) -> bool:
    """Whether a command substitution's text runs printing programs only (a `cd` inside it moves
    only its own subshell), reading files with `<` at most: it writes no file."""
    try:
        nodes = ShellParser(Lexer(text, "$(...)").tokens(), "$(...)", []).parse()
    except InputError:  # text the parser refuses is not known to be harmless
        return False
    commands = list(simple_commands(nodes))
    for cmd in commands:
        if not _quiet(cmd, printing, reads=True):
            return False
        head = cmd.words[0] if cmd.words else None
        if head is not None and not (all(p.kind == "lit" for p in head.parts)
                                     and (head.raw in printing or head.raw == "cd")):
            return False
    return bool(commands)
