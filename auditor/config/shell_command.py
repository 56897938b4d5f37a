"""Whether a call that runs a command line (`os.system("cp -rf /tmp/a /tmp/b")`,
`subprocess.run(["mkdir", "-p", "out"])`) runs only a file utility: the callee is one of
rules/stacks.toml `[no_pipeline] command_runners` (os.system, subprocess.*: never exec, eval,
runpy or a process starter), its program is one of `inert_programs` (cp, mkdir, ...), and what a
shell would read is literal: a shell string with no shell operator, or an argv list whose
program is a literal string (its other words, run with no shell, are operands whatever they
hold: `subprocess.run(["touch", npy_path])`). A piece of a shell string computed at run time
(`"cp " + src`, `f"cp {src} {dst}"`, Pai-Megatron-Patch's `os.system("cp -rf " +
args.hf_ckpt_path + "/*config.json " + args.save)`) is read again by `sh -c` and may hold `;
torchrun ...`, so it is not read as inert; nor is a call given `runner_keywords` (`executable=`,
`preexec_fn=`, `env=` with PATH or LD_PRELOAD) or `**kwargs`, which run another program or Python,
nor one with a positional argument after the command (`subprocess.Popen(["cp", x], -1,
"/usr/local/bin/torchrun")`: Popen's third is `executable`), nor a name bound to a list the code
uses elsewhere (`cmd[0] = "torchrun"` may change it first). `cwd=` changes nothing here: an
inert program is a bare name, looked up on PATH, never in the directory. Such an inert call runs no
Python and starts no rank, so it neither hides a pipeline (entry_stack.runs_code) nor makes a
one-process run more (config.one_process). Anything else stays a call that runs code unseen.
"""

from __future__ import annotations

import ast
import fnmatch
import re
import shlex
import sys
from pathlib import Path
from typing import NamedTuple

from auditor import rulebook
from auditor.config.entry_script import dotted, names, star_names, through_local

_OPERATOR = re.compile(r"[;&|`\n<>]|\$\(")


def runs_only_utility(call: ast.Call, callee: str, tree: ast.Module) -> bool:
    """Whether `call` of `callee` (its dotted name through the file's import aliases) runs a
    literal command line or argv whose program is an inert one, also through a name bound once
    to it (`vllm_cmd = ("pkill", "-f", "vllm.entrypoints.api_server")`, `subprocess.Popen(vllm_cmd)`:
    DeepSpeedExamples@83757d9c93 benchmarks/inference/mii/src/server.py:110-111)."""
    rules = rulebook.load("stacks").data["no_pipeline"]
    if callee not in rules.get("command_runners", []) or len(call.args) != 1:
        return False  # a positional after the command is Popen's `executable`, `preexec_fn`, `shell`, ...
    if runs_other(call):
        return False
    programs = rules.get("inert_programs", [])
    command = call.args[0]
    if isinstance(command, ast.Name):
        command = _bound_once(command, tree) or command
    if isinstance(command, (ast.List, ast.Tuple)):  # `sys.executable` first: the interpreter running it
        argv = ["python" if k == 0 and ast.unparse(e) == "sys.executable" else _literal(e)
                for k, e in enumerate(command.elts)]
        # with no shell, a word computed at run time is one operand of the program, never another command
        return bool(argv) and argv[0] in programs and (None not in argv or not _shell(call))
    text = _literal(command)
    if text is None or _OPERATOR.search(text):
        return False
    words = text.split()
    return bool(words) and words[0] in programs


def _literal(node: ast.expr) -> str | None:
    """The text of a string every piece of which is literal (a constant, `+` of constants, an
    f-string with no placeholder); None where any piece is computed at run time."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal(node.left), _literal(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.JoinedStr):
        parts = [_literal(v) for v in node.values]
        return None if None in parts else "".join(p for p in parts if p is not None)
    return None


class Command(NamedTuple):
    """What a starter's call runs, as far as its words are literal: its leading words known
    statically (the program first; none where a shell operator may start another program), and
    the whole command line ("" unless every word is literal), and whether it is an argv list run
    with no shell (`subprocess.Popen(("python", "-m", M, "--model", args.model))`): then a word
    computed at run time is one argument, never another command; and whether a command library
    names its program by attribute (`sh.accelerate(...)`: a program no rule may know)."""
    words: tuple[str, ...]
    line: str
    argv: bool = False
    library: bool = False


def command_words(node: ast.AST, tree: ast.Module) -> Command:
    """The Command of a starter's call whose one positional argument is the command: an argv
    list (`subprocess.run(["torchrun", "--nproc_per_node", "8", "train.py"])`, shell-quoted as a
    launch line writes it) or a command string (`os.system("torchrun train.py")`; `f"type {cmd}"`
    names `type`), also through a name the call's function (or the module) binds once to such a
    value (Megatron-DeepSpeed f4157bea69 pretrain_gpt.py:341-345 `git_hash_cmd = "git rev-parse
    --short HEAD"`, `subprocess.check_output(git_hash_cmd, shell=True)`). A starter given the
    program and its arguments apart (`os.execvp("bash", argv)`) names none here. A call of a
    `[[command_library]]` that names its program by attribute is read by `_by_attribute`."""
    if isinstance(node, ast.Call) and (by_attribute := _by_attribute(node, tree)) is not None:
        return by_attribute
    given = [k.value for k in node.keywords if k.arg == "args"] if isinstance(node, ast.Call) else []
    if not isinstance(node, ast.Call) or len(node.args) + len(given) != 1:
        return Command((), "")
    command = (node.args or given)[0]  # `subprocess.run(args=[...])` too
    if isinstance(command, ast.Name):
        command = _bound_once(command, tree) or command
    if isinstance(command, (ast.List, ast.Tuple)):  # `sys.executable` first: the interpreter running it
        argv = ["python" if k == 0 and ast.unparse(e) == "sys.executable" else _literal(e)
                for k, e in enumerate(command.elts)]
        cut = next((k for k, a in enumerate(argv) if a is None), len(argv))
        known = tuple(a for a in argv[:cut] if a is not None)
        return Command(known, shlex.join(known) if cut == len(argv) else "", not _shell(node) and not runs_other(node))
    text = _literal(command)
    if text is not None:
        return Command(() if _OPERATOR.search(text) else tuple(text.split()), text)
    head = _literal(command.values[0]) if isinstance(command, ast.JoinedStr) and command.values else \
        _literal(command.left) if isinstance(command, ast.BinOp) and isinstance(command.op, ast.Add) else None
    if head is None or _OPERATOR.search(head):
        return Command((), "")
    words = head.split()
    return Command(tuple(words if head[-1:].isspace() else words[:-1]), "")


def _by_attribute(call: ast.Call, tree: ast.Module) -> Command | None:
    """The Command of a call of a `[[command_library]]` with `programs_by_attribute` (sh: the
    attribute after the module the program, each further one a subcommand, a trailing `_` dropped;
    `from sh import git` too), run with no shell: `sh.git.log("-1", format="%H")` runs `git log -1
    --format=%H` (sh 2.4.0 compile_args: `k=v` is `--k=v`, `-k v` for one letter, `k=True`
    the bare flag, `_` in a keyword `-`; a keyword `_k` is sh's own option). Its words stop at the first not literal (a
    list, a dict, a value computed at run time, `**kw`, sh's own `_env=` or `_preexec_fn=`: the
    runner_keywords); None where the callee is no such name."""
    written = dotted(call.func)
    head, _, rest = written.partition(".")
    bound = names(tree)
    full = bound.get(head, head) + (f".{rest}" if rest else "") if head in bound else ""
    module, _, chain = full.partition(".")
    libraries = rulebook.load("stacks").data.get("command_library", [])
    if not chain or not any(lib.get("programs_by_attribute") and module in lib["modules"] for lib in libraries):
        return None
    words: list[str | None] = [w[:-1] if w.endswith("_") else w for w in chain.split(".")]
    if words[0] == "Command":  # `sh.Command("torchrun")(...)` is called on its result, not here
        return Command((), "")
    def word(e: ast.expr) -> str | None:  # sh passes str(arg): `sh.torchrun("--nproc_per_node", 8)`
        number = isinstance(e, ast.Constant) and type(e.value) in (int, float)
        return str(e.value) if number and isinstance(e, ast.Constant) else _literal(e)
    words += [word(a) for a in call.args]
    keywords = rulebook.load("stacks").data["no_pipeline"].get("runner_keywords", [])
    for k in call.keywords:
        if k.arg is None or k.arg.startswith("_") and k.arg[1:] in keywords:
            words.append(None)  # `_env=` may give git GIT_EXTERNAL_DIFF: what runs is not read whole
        elif not k.arg.startswith("_"):  # `k=True` the bare flag, `k=False` none
            value, flag = word(k.value), k.arg.replace("_", "-")
            switch = k.value.value if isinstance(k.value, ast.Constant) and type(k.value.value) is bool else None
            words += [] if switch is False else [f"-{flag}"] if len(flag) == 1 and switch else \
                [f"-{flag}", value] if len(flag) == 1 else [f"--{flag}"] if switch else \
                [None if value is None else f"--{flag}={value}"]
    cut = next((i for i, w in enumerate(words) if w is None), len(words))
    known = tuple(w for w in words[:cut] if w is not None)
    return Command(known, shlex.join(known) if cut == len(words) else "", True, True)


def _shell(call: ast.Call) -> bool:
    """Whether the call may run its command through a shell (`shell=` given, and not the constant
    False): then the words are script text, which a computed piece may extend."""
    return any(k.arg == "shell" and not (isinstance(k.value, ast.Constant) and k.value.value is False)
               for k in call.keywords)


def runs_other(call: ast.Call) -> bool:
    """Whether the call's keywords may run another program than its words name (rules/stacks.toml
    [no_pipeline] `runner_keywords`: `executable="/opt/train.sh"`, `preexec_fn`; any `**kwargs`)."""
    keywords = rulebook.load("stacks").data["no_pipeline"].get("runner_keywords", [])
    return any(k.arg is None or k.arg in keywords for k in call.keywords)


def _bound_once(name: ast.Name, tree: ast.Module) -> ast.expr | None:
    """The value a name is bound to by the one assignment of it in the innermost function around
    it (else the module), outside nested functions; None where it is bound otherwise or more, or
    where the value is a list the scope reads elsewhere than at `name` (nested functions too):
    any such use may change it in place before it runs (`cmd[0] = "torchrun"`, `cmd.pop(0)`, `del
    cmd[0]`, `cmd += [x]`, `fill(cmd)`, `alias = cmd`), which no binding count sees."""
    scopes = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
              and n.lineno <= name.lineno <= (n.end_lineno or n.lineno)]
    scope: ast.AST = max(scopes, key=lambda f: f.lineno) if scopes else tree
    found: list[ast.AST] = []
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(n, ast.Name) and n.id == name.id and isinstance(n.ctx, (ast.Store, ast.Del)):
            found.append(n)
        todo.extend(ast.iter_child_nodes(n))
    assigns = [n for n in ast.walk(scope) if isinstance(n, ast.Assign) and len(n.targets) == 1
               and isinstance(n.targets[0], ast.Name) and n.targets[0].id == name.id]
    if not (len(found) == 1 and len(assigns) == 1 and id(assigns[0].targets[0]) == id(found[0])):
        return None
    value = assigns[0].value
    if isinstance(value, ast.List) and any(isinstance(n, ast.Name) and n.id == name.id and n is not name
                                           and isinstance(n.ctx, ast.Load) for n in ast.walk(scope)):
        return None
    return value


class Start(NamedTuple):
    """Where code may start another program: the call (else the reference), and what to check,
    as written."""
    node: ast.AST
    text: str


def starts_programs(tree: ast.Module, path: Path | None = None) -> list[Start]:
    """Where the file may start a process running another program, each with what to check, as
    written: a call of a `command_runners` starter (subprocess.*, os.system/exec*/spawn*,
    asyncio's create_subprocess_*, pty.spawn) by the name written or imported (`import subprocess
    as sp; sp.run(...)`, `from subprocess import run`, `from subprocess import *`, `run =
    subprocess.run`); a starter handed on as a value (`functools.partial(subprocess.run, cmd)`,
    `pool.submit(os.system, cmd)`, `Process(target=os.system)`, `map(os.system, cmds)`,
    `run: Callable = subprocess.run`, a name bound to it more than once); one reached by a name
    this reader cannot name (`getattr(os, name)`, the module itself handed on); a
    `command_methods` method of an object not typed here (`loop.subprocess_shell(...)`); any name
    of a `[[command_library]]` (`sh.torchrun(...)`, `invoke.run`); a `[[package_starter]]` of a
    package otherwise inert (`psutil.Popen`, torch's `elastic_launch`, `torch.distributed.run.main`:
    the training run itself); a starter bound in a class (`class Cfg: start = os.system`, used as
    `Cfg.start(...)`, which names() does not read); a starter module reached through
    `sys.modules["subprocess"]`. A file that starts nothing itself but gives its importers a
    starter under a public name (`run = subprocess.run`, `from subprocess import *`) counts at that
    binding: `from launch_utils import run; run(cmd)` calls it in another file, which names()
    does not follow; where the file's `path` is given, a name a local module gives is read as
    what that module binds it to (`from launch_utils import sp` is subprocess: entry_script.through_local;
    `from launch_utils import *` gives its public names: entry_script.star_names).
    Not a literal command line of
    a file utility, `os.system("mkdir -p out")` (`runs_only_utility`). The node is the call where
    the starter is called, else the reference. The one reader of "this code runs a command"."""
    data = rulebook.load("stacks").data
    runners = set(data["no_pipeline"].get("command_runners", []))
    methods = set(data["no_pipeline"].get("command_methods", []))
    libraries = {m for lib in data.get("command_library", []) for m in lib["modules"]}
    packaged = {s for p in data.get("package_starter", []) for s in p["starters"]}
    modules = {r.rpartition(".")[0] for r in runners} | libraries
    starter_modules = modules | {s.rpartition(".")[0] for s in packaged}
    bound = names(tree) if path is None else {**star_names(tree, path), **names(tree)}
    for node in ast.walk(tree):  # `from subprocess import *` binds subprocess's starters
        if isinstance(node, ast.ImportFrom) and not node.level and any(a.name == "*" for a in node.names):
            bound.update({r.rpartition(".")[2]: r for r in runners if r.rpartition(".")[0] == node.module})
    parents = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    typed = {id(n) for t in _annotations(tree) for n in ast.walk(t)}  # `proc: subprocess.Popen` runs nothing
    seen: dict[str, str] = {}

    def resolved(name: str) -> str:  # through a local module's own names, once per name
        if path is None or name.split(".")[0] in sys.stdlib_module_names:
            return name
        if name not in seen:
            seen[name] = through_local(name, path)
        return seen[name]
    out: list[Start] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in libraries and any(a.name == "*" for a in node.names):
            out.append(Start(node, f"`from {node.module} import *`"))
        if (reached := _from_sys_modules(node, bound, starter_modules)) is not None:
            out.append(reached)
            continue
        if not isinstance(node, (ast.Name, ast.Attribute)) or not isinstance(node.ctx, ast.Load):
            continue
        parent = parents.get(id(node))
        if isinstance(parent, ast.Attribute) or id(node) in typed or _type_test(parent, node, parents):
            continue  # read as the whole chain (`subprocess.run`, not `subprocess`); a type only
        written = dotted(node)
        head, _, rest = written.partition(".")
        imported = resolved(bound.get(head, head) + (f".{rest}" if rest else "")) if head in bound else written
        called = isinstance(parent, ast.Call) and parent.func is node
        if called and (written in runners or imported in runners):
            if isinstance(parent, ast.Call) and not runs_only_utility(parent, imported, tree):
                out.append(Start(parent, f"`{written}(...)`"))
            continue
        if head in bound and (through := _through_module(rest, runners | packaged)):
            # `launch_utils.subprocess.run(...)`: a starter module another module imports, reached as its attribute
            out.append(Start(parent, f"`{written}(...)` ({through})") if called and parent is not None
                       else Start(node, f"`{written}` ({through}, used as a value)"))
            continue
        if _within(imported, packaged):
            out.append(Start(parent, f"`{written}(...)`") if called and parent is not None
                       else Start(node, f"`{written}` (a process starter used as a value)"))
            continue
        if head in bound and _not_program(imported, data.get("command_library", [])):
            continue  # `except sh.ErrorReturnCode_128:`: the library's own class, no program
        if (_within(written, runners) or _within(imported, runners)
                or (head in bound and _within(imported, libraries))
                or (isinstance(node, ast.Attribute) and methods & set(written.split(".")[1:] or [node.attr]))):
            if not _bound_here(parent, node, bound, imported, parents):
                out.append(Start(parent, f"`{written}(...)`") if called and parent is not None
                           else Start(node, f"`{written}` (a program starter used as a value)"))
        elif head in bound and imported in starter_modules and not _bound_here(parent, node, bound, imported, parents):
            reach = _getattr(parent, node, imported, runners | libraries | packaged)
            if reach is None:  # handed on; a package's module only tested (`if psutil is not None`) starts nothing
                if imported in modules or not _tested(node, parents):
                    out.append(Start(node, f"`{written}` (module {imported} handed on: what it starts is not read)"))
            elif reach.text:
                out.append(reach)
    if not out:
        out = _exported(tree, bound, runners | packaged, starter_modules)
    return sorted(out, key=lambda o: (getattr(o[0], "lineno", 0), getattr(o[0], "col_offset", 0)))


def _exported(tree: ast.Module, bound: dict[str, str], starters: set[str], modules: set[str]) -> list[Start]:
    """The module-level bindings of a starter, or a starter module, to a public name
    (`run = subprocess.run`, `from subprocess import check_call`, `from subprocess import *`, an
    alias the file itself never reads, `import subprocess as sp`): a module importing it (`from
    launch_utils import run`, `from helpers import *`, `from launch_utils import sp`) calls the
    starter under a name its own reader cannot resolve."""
    out: list[Start] = []
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    todo = list(tree.body)
    while todo:
        stmt = todo.pop()
        if isinstance(stmt, (ast.If, ast.Try, ast.With)):  # still module level
            todo += [s for f in ("body", "orelse", "finalbody") for s in getattr(stmt, f, [])]
            todo += [s for h in getattr(stmt, "handlers", []) for s in h.body]
            continue
        given: list[tuple[str, str]] = []
        if isinstance(stmt, ast.Assign):
            value = dotted(stmt.value)
            head, _, rest = value.partition(".")
            full = bound.get(head, head) + (f".{rest}" if rest else "")
            given = [(t.id, full) for t in stmt.targets if isinstance(t, ast.Name) and value]
        elif isinstance(stmt, ast.Import):  # `import subprocess as sp` only for importers: `from launch_utils import sp`
            given = [(a.asname, a.name) for a in stmt.names if a.asname and a.asname != a.name and a.asname not in used]
        elif isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
            given = [(a.asname or a.name, f"{stmt.module}.{a.name}") for a in stmt.names]
            if any(a.name == "*" for a in stmt.names) and stmt.module in modules:
                given = [("*", stmt.module)]
        for name, full in given:
            if not name.startswith("_") and (_within(full, starters) or full in modules):
                out.append(Start(stmt, f"`{ast.unparse(stmt)}` (a program starter this module gives its importers)"))
    return out


def _through_module(rest: str, starters: set[str]) -> str:
    """Where the chain after an imported name (`subprocess.run` of `launch_utils.subprocess.run`)
    ends in a starter by its module's own name, that starter ("" where none): the imported module
    gives the starter module to its importers as an attribute."""
    parts = rest.split(".")
    return next((".".join(parts[i:]) for i in range(len(parts) - 1)
                 if _within(".".join(parts[i:]), starters)), "")


def _from_sys_modules(node: ast.AST, bound: dict[str, str], modules: set[str]) -> Start | None:
    """A starter module taken from `sys.modules` by its name (`sys.modules["subprocess"].run`,
    `sys.modules.get("os")`): the module handed on, what it starts not read."""
    if isinstance(node, ast.Subscript):
        table, key = node.value, node.slice
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
        table, key = node.func.value, node.args[0]
    else:
        return None
    written = dotted(table)
    head, _, rest = written.partition(".")
    if bound.get(head, head) + (f".{rest}" if rest else "") != "sys.modules":
        return None
    if not (isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value in modules):
        return None
    return Start(node, f"`{ast.unparse(node)}` (module {key.value} reached by name: what it starts is not read)")


def _annotations(tree: ast.Module) -> list[ast.expr]:
    """The file's annotations (of parameters, returns, annotated names): types, never called."""
    out: list[ast.expr | None] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            out.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            out.append(node.annotation)
    return [a for a in out if a is not None]


def _type_test(parent: ast.AST | None, node: ast.expr, parents: dict[int, ast.AST]) -> bool:
    """`node` is a type tested against, `isinstance(p, subprocess.Popen)` or `except
    sh.ErrorReturnCode_128:` (alone or in its tuple): it is not called there."""
    tested: ast.AST | None = node
    if isinstance(parent, ast.Tuple):
        parent, tested = parents.get(id(parent)), parent
    if isinstance(parent, ast.ExceptHandler):
        return parent.type is tested
    return (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name)
            and parent.func.id in ("isinstance", "issubclass") and tested in parent.args[1:])


def _not_program(name: str, libraries: list[dict]) -> bool:
    """`name` (dotted, through the file's imports) is a `[[command_library]]` module's own name
    that runs no program (`not_programs`: sh's exception classes, `sh.ErrorReturnCode_128`), or an
    attribute of one."""
    module, _, rest = name.partition(".")
    return any(module in lib["modules"] and any(fnmatch.fnmatchcase(rest.partition(".")[0], p)
                                                for p in lib.get("not_programs", []))
               for lib in libraries)


def _tested(node: ast.expr, parents: dict[int, ast.AST]) -> bool:
    """`node` is only compared or tested for truth (`psutil is not None`, `if psutil and x:`,
    `not psutil`): an optional package's availability check, which hands the module to no code
    (review r40-holes 3: any other use, an argument or a class attribute, may call its starter)."""
    parent = parents.get(id(node))
    while isinstance(parent, ast.BoolOp) or isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
        node, parent = parent, parents.get(id(parent))
    if isinstance(parent, ast.Compare):
        return True
    return isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)) and parent.test is node


def _within(name: str, names: set[str]) -> bool:
    """`name` is one of `names` or an attribute under one (`subprocess.Popen.wait`, `sh.git.log`)."""
    return name in names or any(name.startswith(f"{n}.") for n in names)


def _bound_here(parent: ast.AST | None, node: ast.expr, bound: dict[str, str], imported: str,
                parents: dict[int, ast.AST]) -> bool:
    """`node`, `imported` as resolved, is the value of a plain assignment to a name bound once to it
    (`run = subprocess.run`, `sp = subprocess`): entry_script.names reads each use of that name as
    the starter it is. Not in a class body: there the name is a class attribute, used as
    `Cfg.start` or `self.sp`, which names() does not resolve."""
    return (isinstance(parent, ast.Assign) and parent.value is node and len(parent.targets) == 1
            and isinstance(parent.targets[0], ast.Name) and bound.get(parent.targets[0].id) == imported
            and not isinstance(parents.get(id(parent)), ast.ClassDef))


def _getattr(parent: ast.AST | None, node: ast.expr, module: str,
             starters: set[str]) -> Start | None:
    """A starter module as the object of `getattr` / `hasattr`: (the call, what to check) where it
    may give a starter, (the call, "") where it gives none (`getattr(os, "O_DIRECTORY", 0)`), None
    where the module is handed on otherwise."""
    if not (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.args
            and parent.args[0] is node and parent.func.id in ("getattr", "hasattr") and len(parent.args) > 1):
        return None
    name = parent.args[1]
    text = ast.unparse(parent)
    if parent.func.id == "hasattr":
        return Start(parent, "")
    if isinstance(name, ast.Constant) and isinstance(name.value, str):
        return Start(parent, f"`{text}`" if _within(f"{module}.{name.value}", starters) else "")
    return Start(parent, f"`{text}` (a name of {module} this reader cannot name)")
