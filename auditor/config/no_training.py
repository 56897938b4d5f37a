"""An entry of a framework's checkout that reaches none of its training loops: NOT A PIPELINE RUN
(issue 22 item 11, "say what the run is").

A rules file's `[[no_training_entry]]` names the functions through which the framework steps its
pipeline schedule (`loops`: called by name; `methods`: reached on an object, `trainer.train()`,
`self.pp_schedule`, besides rules/stacks.toml `[training_step]`'s), the flags that make the run one stage (`flags`: Megatron-DeepSpeed's
`--no-pipeline-parallel`, whose validate_args asserts PP 1; or `absent`: the flags whose
absence leaves the parser's default of one stage, where no word of the command is unknown and the
entry's code names none of them) and the entry modules it is about
(`modules`: torchtitan's `-m torchtitan.models.*.inference.*`). It holds only where the code it
was read on is the code that runs: the checkout around the entry holds the rule's `code` in the
file its `source` cites. The entry and the local modules it imports (not the framework's own package,
whose loops are the rule's) are read with the stdlib `ast`: any use of a loop's name, a call that
runs code not seen (rules/stacks.toml `dynamic`) or a closure cut short leaves the run to the
analysis. A local module's `if __name__ == "__main__":` block does not run on import
(Megatron-DeepSpeed's evaluate.py imports pretrain_gpt.py, whose main block calls pretrain).
So does a pipeline the code builds itself (the rule's `pipeline_modules` and `pipeline_names`:
torch.distributed.pipelining, DeepSpeed's PipelineModule, the framework's own pipeline builder)
or torch's P2P API it calls (rules/torch.toml `[[p2p_api]]`): the rule speaks for the
framework's loops only. A method reached through a call (`deepspeed.initialize(...)[0].train_batch()`)
is on an object, not a function of the package the call is rooted at.
"""

from __future__ import annotations

import ast
import copy
import os
from pathlib import Path
from typing import Any

from auditor import rulebook
from auditor.config.entry_script import MAX_MODULES, is_main_guard, iter_closure, uses_or_imports
from auditor.config.entry_stack import runs_code
from auditor.config.model import LaunchConfig
from auditor.config.pipelining_script import is_pipelining_script
from auditor.config.pyenv import located_stat
from auditor.config.rule_checkout import rule_checkout
from auditor.config.script_run import writes_argv
from auditor.findings import Finding
from auditor.rulebook.frameworks import frameworks, launched_by

TABLE = "no_training_entry"


def read_no_training(launch: LaunchConfig) -> None:
    """Add a `launch.not-pipeline` note where a rule says the entry reaches no training loop."""
    if any(d.kind == "launch.not-pipeline" for d in launch.diagnostics) or is_pipelining_script(launch):
        return
    located = located_stat(launch)
    if located is None:
        return
    entry = Path(located[0].path).resolve()
    for framework in frameworks():
        for rule in rulebook.load(framework.name).data.get(TABLE, []):
            what = _judge(rule, launch, entry, located[0].written)
            if what:
                launch.diagnostics.append(Finding(
                    "launch.not-pipeline", "info", what, where=f"{launch.path}:{launch.command_line}",
                    detail={"command": launch.launcher, "rule": f"rules/{framework.name}.toml [[{TABLE}]]"}))
                return


def _judge(rule: dict[str, Any], launch: LaunchConfig, entry: Path, written: str) -> str | None:
    """What the run is where `rule` holds for it, else None."""
    if "modules" in rule and not (launch.script_module and isinstance(launch.script, str)
                                  and launched_by(launch.script, rule["modules"])):
        return None
    if any(getattr(launch.flags.get(k), "value", None) is not True for k in rule.get("flags", [])):
        return None
    absent = rule.get("absent", [])
    if any(k in launch.flags for k in absent) or absent and _words_unseen(launch):
        return None
    file = rule["source"].split()[1].rsplit(":", 1)[0]  # "OWNER/NAME@COMMIT PATH:LINE"
    root = rule_checkout(entry, rule["source"], rule["code"])
    if root is None:
        return None
    shared = rulebook.load("stacks").data["training_step"]
    steps = {**shared, **rule,  # the rule's own, else the shared table's; its methods besides the shared ones
             "methods": list(dict.fromkeys(shared["methods"] + rule.get("methods", [])))}
    read = reaches_no_loop(entry, frozenset({rule["package"]}), steps)
    if read is None or any(may_set(body, absent) for body in read[1]):
        return None
    loops = ", ".join(steps["loops"] + steps.get("methods", []))
    return rule["what"].format(entry=written, module=launch.script, loops=loops, local=len(read[0]) - 1,
                               checkout=os.path.relpath(root / file))


def _words_unseen(launch: LaunchConfig) -> bool:
    """Whether the command has words not known statically (`$EXTRA_ARGS`, `--load $CKPT` read as
    written): any may be a flag a rule's `absent` names; or code not read ran before it."""
    return ran_unseen(launch) or any(d.kind in ("launch.unresolved-args", "launch.unknown-values")
                                     for d in launch.diagnostics)


def ran_unseen(launch: LaunchConfig) -> bool:
    """Whether code the walk could not read ran before the command (a `source` of a file not read,
    an `eval` of unknown text: `launch.unknown-settings`): it may have set any variable the command
    is built from, after the script set it, or defined a function named as its launcher. The
    `eval` that runs the command itself (`eval ${run_cmd}`, one command of known head: Pai-Megatron-Patch
    a098ca5acb examples/codellama/run_text_generation_megatron_llama.sh:125) runs its unknown words
    inside that command, read as its words are, and anything they may end it with after it
    (`after_command`, bash.walk `_eval`): only that eval's warning, not another's on the same line
    (`eval $prep && eval $run_cmd`), nor one in a loop, whose earlier pass runs before the command."""
    for d in launch.diagnostics:
        if d.kind == "launch.unknown-settings":
            path, _, line = (d.where or "").rpartition(":")
            if not (path == launch.path and line.isdigit() and (int(line) > launch.command_line or (
                    int(line) == launch.command_line and launch.command_eval is not None
                    and d.detail.get("after_command") == launch.command_eval))):
                return True
    return False


def may_set(body: ast.Module, keys: list[str]) -> bool:
    """Whether the code may set one of `keys` itself, not through the launch line (the one reader
    of it: config/entry_inference.py too): a string naming it (`args_defaults={'use_checkpoint_args':
    True}`: Megatron-DeepSpeed f4157bea69 megatron/initialize.py:50), a keyword or an attribute
    stored, any write to sys.argv (config/script_run.py `writes_argv`), or settings the code hands
    on without writing their keys: a `setattr` of a name not written out, a mapping not written
    out given to a keyword of rules/stacks.toml `[settings_mapping]` (`external_args=overrides`, a
    dict loaded from a file: initialize_megatron sets each of its keys, :51-53) or as `**cfg` to
    any call (`parser.set_defaults(**yaml.safe_load(...))`)."""
    if not keys:
        return False
    if writes_argv(body):
        return True
    mapping = set(rulebook.load("stacks").data["settings_mapping"]["keywords"])
    for n in ast.walk(body):
        if (isinstance(n, ast.Constant) and n.value in keys or isinstance(n, ast.keyword) and n.arg in keys
                or isinstance(n, ast.Attribute) and n.attr in keys and not isinstance(n.ctx, ast.Load)):
            return True
        if isinstance(n, ast.keyword) and (n.arg is None or n.arg in mapping) and not _written_out(n.value):
            return True  # `**cfg`, `external_args=overrides`: keys not seen
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "setattr"
                and len(n.args) > 1 and not isinstance(n.args[1], ast.Constant)):
            return True  # `setattr(args, key, value)` of a key not written out
    return False


def _written_out(node: ast.expr) -> bool:
    """Whether a mapping's keys are all in the code: a dict display of constant keys, no `**` in it."""
    return isinstance(node, ast.Dict) and all(isinstance(k, ast.Constant) for k in node.keys)


def reaches_no_loop(entry: Path, own: frozenset[str], steps: dict[str, Any]) -> tuple[list[tuple[Path, ast.Module]], list[ast.Module]] | None:
    """(the modules read with their parse, the entry first; the code that can run, module by
    module) where the entry and the local modules it imports (the closure stops at the packages
    `own`) name none of `steps`' `loops`,
    reach none of them or of its `methods` as an attribute, build no pipeline (`pipeline_modules`,
    `pipeline_names`) and call no P2P API (rules/torch.toml `[[p2p_api]]`); None otherwise, or
    where the closure cannot be read whole, is cut at MAX_MODULES or runs code unseen
    (rules/stacks.toml `dynamic`). The one reader of "reaches no training" (config/entry_inference.py
    too, with rules/stacks.toml `[training_step]`)."""
    dynamic = rulebook.load("stacks").data["no_pipeline"]["dynamic"]
    p2p = [api["name"] for api in rulebook.load("torch").data.get("p2p_api", [])]
    try:
        modules = list(iter_closure(entry, own))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return None
    if len(modules) >= MAX_MODULES:
        return None
    loops = set(steps["loops"])
    local = {part for path, _ in modules for part in path.with_suffix("").parts}  # its own modules' names
    pipeline = steps["pipeline_modules"], steps["pipeline_names"] + p2p
    bodies = _imported_code(modules, entry)
    for body in bodies:
        if (runs_code(body, dynamic) or _uses(body, own | local, loops, loops | set(steps.get("methods", [])))
                or uses_or_imports(body, *pipeline)):
            return None
    return modules, bodies


def _imported_code(modules: list[tuple[Path, ast.Module]], entry: Path) -> list[ast.Module]:
    """The code that can run: the entry whole; of a module it imports, its top-level code but its
    main block, and each top-level function that code reached from these names (pretrain_gpt.py's
    git_ds_info, which runs `git` through subprocess from its main block only, is left out). A
    function is named by a name in its own module, by a module that imports it by name and uses
    the name it gets (`from loop import run_training as fit_model`, then `fit_model(...)`; the
    import alone runs nothing: Pai-Megatron-Patch's evaluate_huggingface_llama.py imports
    get_model from megatron_patch/training.py, not its train_step), by any name of a module that
    star-imports, or as an attribute of anything (an over-reach finds more, never less)."""
    defs = {path: {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)} for path, tree in modules}
    kept: dict[Path, list[ast.stmt]] = {
        path: list(tree.body) if path == entry else
        [s for s in tree.body if not isinstance(s, ast.FunctionDef) and not is_main_guard(s)]
        for path, tree in modules}
    imports = {path: {a.asname or a.name: a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                      for a in n.names} for path, tree in modules}  # the name a module uses -> the one it imports
    todo = [(path, s) for path, body in kept.items() for s in body]
    while todo:
        path, code = todo.pop()
        nodes = list(ast.walk(code))
        used = {n.id for n in nodes if isinstance(n, ast.Name)}
        anywhere = {n.attr for n in nodes if isinstance(n, ast.Attribute)}
        anywhere |= {imports[path][name] for name in used if name in imports[path]}
        anywhere |= used if "*" in imports[path] else set()
        found = [(path, defs[path][name]) for name in used if name in defs[path]]
        found += [(p, d[name]) for p, d in defs.items() for name in anywhere if name in d]
        for where, stmt in found:
            if stmt not in kept[where]:
                kept[where].append(stmt)
                todo.append((where, stmt))
    return [_used_imports(ast.Module(body=body, type_ignores=[])) for body in kept.values()]


def _used_imports(tree: ast.Module) -> ast.Module:
    """The code with each name a `from X import` gives that it never uses left out (a copy): an
    import names a loop or a schedule entry only where the code uses what it gets."""
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    tree = copy.deepcopy(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            node.names = [a for a in node.names if a.name == "*" or (a.asname or a.name) in used]
    return tree


def _uses(tree: ast.Module, own: frozenset[str] | set[str], loops: set[str], attributes: set[str]) -> bool:
    """Whether the code names a loop (called, handed on, or imported under another name) or
    reaches one as an attribute of anything but a module of another package it imports."""
    foreign = {a.asname or a.name.split(".")[0] for node in ast.walk(tree) for a in _foreign(node, own)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in loops:
            return True
        if isinstance(node, ast.ImportFrom) and any(a.name in loops and a.asname for a in node.names):
            return True
        if isinstance(node, ast.Attribute) and node.attr in attributes and _root(node) not in foreign:
            return True
    return False


def _foreign(node: ast.AST, own: frozenset[str] | set[str]) -> list[ast.alias]:
    """The names `node` imports from a package neither the framework's nor local (`own`)."""
    if isinstance(node, ast.Import):
        return [a for a in node.names if a.name.split(".")[0] not in own]
    if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] not in own:
        return list(node.names)
    return []


def _root(node: ast.expr) -> str:
    """The name a dotted path (`pkg.mod.train`) starts at; "" where a call or subscript is on the
    way (`deepspeed.initialize(...)[0].train_batch`: a method of what the call returned)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""

