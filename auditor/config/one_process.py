"""The world of a plain `python SCRIPT.py` / `python -m MODULE` with no launcher around it (issue
22 items 10, 11; the `one_process` launcher rule of rules/megatron-lm.toml).

Python starts one process: a world of 1, where no pipeline can run, and the rest of the scan
(config.entry_stack, analysis.schedule_reach) says what the run is. That holds only where the
program starts no processes of its own and joins no world the environment names; otherwise the
world size is unknown, with the reason, never 1:
- a call in the entry or its local modules (entry_script.iter_closure, through each file's
  import aliases) matches the rule's `process_starters` (`mp.spawn(main, nprocs=8)`,
  accelerate's notebook_launcher) or starts another program (rules/stacks.toml
  `command_runners`, `subprocess.run(["torchrun", ...])`; not a command line of a file utility,
  `os.system("cp ...")`: config.shell_command, nor a wholly literal one that config.command_ranks
  says starts no rank, `sh.git.log("-1", format="%H")`), or one of them imports a package of
  `process_packages` (Lightning's Trainer starts a process per device);
- the shell starts it together with others: several `python` commands, or one in the background
  (config.launch `_together`), each may join one world;
- a call joins a world it names itself (`world_joins` with a `world_join_params` argument:
  `init_process_group(init_method="tcp://...", rank=r, world_size=w)`);
- a call goes into an installed package outside `inert_packages` (or the standard library, whose
  starters `process_starters` and `command_runners` name): its code is not read and may start processes;
- a `world_env` variable (WORLD_SIZE, RANK, ...) is set for the command, or the code reads one by
  name: other processes started elsewhere may join it (torch's env:// rendezvous);
- the entry is not read here (not found, unparsable, more local modules than are read).
"""

from __future__ import annotations

import ast
import fnmatch
import sys
from pathlib import Path

from auditor.bash.values import Symbolic
from auditor.config.entry_script import MAX_MODULES, aliases, calls, foreign_imports, iter_closure
from auditor.config.model import LaunchConfig, Written
from auditor.config.pyenv import locate
from auditor.config.command_ranks import starts_no_rank
from auditor.config.shell_command import command_words, runs_other, starts_programs
from auditor.rulebook.launchers import Spelling


def world(config: LaunchConfig, launcher: dict, path: str, together: str = "") -> None:
    """Sets `config.nproc_per_node` and `config.nnodes` of a one-process launch, each with where
    it came from: 1 and 1, or unknown with the reason (`together`: why the shell may start more
    copies of it)."""
    why = _joins_env(config, launcher, path) or together or _starts_processes(config, launcher)
    if why:
        config.nproc_per_node, config.nnodes = Symbolic("processes the program starts"), 1
        config.world_source = {"nproc_per_node": why, "nnodes": why}
        return
    config.nproc_per_node, config.nnodes = 1, 1
    one = Written(f"`{config.launcher}` {ONE}")
    config.world_source = {"nproc_per_node": one, "nnodes": one}


ONE = "runs one process: no launcher starts more, and it starts none itself"


def surely_one(config: LaunchConfig) -> bool:
    """Whether `world` found the launch to be one process: a single rank, with no peer to send to."""
    return (config.nproc_per_node, config.nnodes) == (1, 1) and config.world_source.get(
        "nproc_per_node", "").endswith(ONE)


def own_processes(config: LaunchConfig) -> str:
    """Why the program may run in a world bigger than its launcher starts ("" where it surely does
    not): it joins one the environment names or starts processes of its own, by the one-process
    launcher rule's tables (rules/megatron-lm.toml `one_process`), as `world` reads a plain
    `python`, for a launch of any launcher (config/trains_nothing.py: a one-task srun of a Python
    entry). Without that rule nothing is known."""
    launcher = next((e for e in Spelling.load(None).launchers if e.get("one_process")), None)
    if launcher is None:
        return ("no launcher rule gives the one-process tables (rules: `one_process`): whether the program "
                "starts or joins more processes is not read")
    return _joins_env(config, launcher, config.path) or _starts_processes(config, launcher)


def _joins_env(config: LaunchConfig, launcher: dict, path: str) -> str:
    """Why the command joins a world its environment names ("" where none): a `world_env`
    variable set for it (`export WORLD_SIZE=2 RANK=0 MASTER_ADDR=node0`), whose env:// rendezvous
    processes started elsewhere join."""
    given = next((config.env[n] for n in launcher.get("world_env", ()) if n in config.env), None)
    if given is None:
        return ""
    where = "the caller's environment" if given.how == "environ" else f"{path}:{given.line}"
    return (f"{given.name} is set for `{config.launcher}` ({where}): it joins a world that processes "
            "started elsewhere make up, unknown here; give it as --set world_size=N")


def _starts_processes(config: LaunchConfig, launcher: dict) -> str:
    """Why the program may run more than one process ("" where it surely does not)."""
    entry, missing = locate(config)
    if entry is None:
        return f"the entry is not read ({missing or 'no script'}): whether it starts processes of its own is unknown"
    names = set(launcher.get("world_env", ()))
    packages = set(launcher.get("process_packages", ()))
    modules = 0
    try:
        for file, tree in iter_closure(Path(entry.path)):
            modules += 1
            spawner = next(((n, name) for n, name in _imports(tree) if name.split(".")[0] in packages), None)
            if spawner is not None:
                return (f"{file.name}:{spawner[0].lineno} imports {spawner[1]}, which starts processes of the "
                        "script itself: how many is not read here; give it as --set world_size=N")
            why = _calls(file, tree, Path(entry.path), launcher)
            if why:
                return why
            read = next((n for n in ast.walk(tree) if isinstance(n, ast.Constant)
                         and isinstance(n.value, str) and n.value in names), None)
            if read is not None:
                return (f"{file.name}:{read.lineno} names {read.value!s}: the program joins a world its "
                        "environment gives, unknown here; give it as --set world_size=N")
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError) as exc:
        return f"the entry {entry.path} is not read ({type(exc).__name__}): whether it starts processes is unknown"
    if modules >= MAX_MODULES:
        return f"the entry imports more than {MAX_MODULES} local modules, not all read: whether it starts processes is unknown"
    return ""


def _calls(file: Path, tree: ast.Module, script: Path, launcher: dict) -> str:
    """Why a call of the file may start or join more processes ("" where none does)."""
    starters, joins = launcher.get("process_starters", ()), set(launcher.get("world_joins", ()))
    named = set(launcher.get("world_join_params", ()))
    inert = set(launcher.get("inert_packages", ())) | set(sys.stdlib_module_names)
    unread = {n.split(".")[0] for n in foreign_imports(tree, file, script)} - inert
    imported_heads = set(aliases(tree))
    found = starts_programs(tree, file)
    read = {id(s.node) for s in found if _starts_no_rank(s.node, tree)}  # a command library's call too
    started = [s for s in found if id(s.node) not in read]
    programs = {id(s.node) for s in started}
    for node, written, imported in calls(tree):
        if id(node) in read:
            continue
        if id(node) in programs or any(fnmatch.fnmatchcase(imported, p) for p in starters):
            return (f"{file.name}:{node.lineno} calls `{written}` ({imported}): the program starts "
                    "processes of its own, how many is not read here; give it as --set world_size=N")
        given = [k.arg or "**kwargs" for k in node.keywords if k.arg in named or k.arg is None] + (
            ["a positional argument after the backend"] if len(node.args) > 1 else [])
        if imported in joins and given:
            return (f"{file.name}:{node.lineno} calls `{written}` with {', '.join(given)}: it joins "
                    "a world that copies of the program started elsewhere make up, unknown here; give it "
                    "as --set world_size=N")
        if written.split(".")[0] in imported_heads and imported.split(".")[0] in unread:
            return (f"{file.name}:{node.lineno} calls `{written}` ({imported}), a package whose code is not "
                    "read here (rules: inert_packages): it may start processes; give it as --set world_size=N")
    return next((f"{file.name}:{getattr(s.node, 'lineno', 0)} reaches {s.text}: the program may start processes "
                 "of its own, how many is not read here; give it as --set world_size=N"
                 for s in started if not isinstance(s.node, ast.Call)), "")


def _starts_no_rank(node: ast.AST, tree: ast.Module) -> bool:
    """A call whose whole command line is literal and runs as written (no `executable=`, `env=`,
    `**kwargs`: shell_command.runs_other) and that config.command_ranks says is no run of ranks:
    `git log -1 --format=%H` (microsoft/DeepSpeedExamples@83757d9c93 training/HelloDeepSpeed/
    train_bert.py:466 `sh.git.log(...)`). A Python script it runs is not read here, so it may."""
    if not isinstance(node, ast.Call) or runs_other(node):
        return False
    command = command_words(node, tree)
    return bool(command.line) and starts_no_rank(command.words)


def _imports(tree: ast.Module) -> list[tuple[ast.stmt, str]]:
    """(statement, absolute module name) of each import in the file."""
    out: list[tuple[ast.stmt, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.append((node, node.module))
    return out
