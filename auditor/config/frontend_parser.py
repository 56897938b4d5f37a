"""The flag spellings a Megatron-LM front end accepts, read from its own argparse calls.

A Megatron-LM checkout (or a megatron-core wheel from 0.17 on, which ships `megatron/training`)
says which flags its `pretrain_*.py` takes: the `add_argument` calls of
`megatron/training/arguments.py` (`megatron/arguments.py` up to core_v0.5), the flags
`ArgumentGroupFactory` generates from config dataclasses (core_v0.16 on), and the training
script's own `add_argument` calls. Read here without importing anything, so that a spelling
check is made against the parser the run uses; rules/megatron-lm.toml keeps only what the
flags mean. Where the script adds flags through a provider that is not read (an imported
`extra_args_provider`), or a config class cannot be found, the table is incomplete and a
spelling missing from it is not known to be rejected.
"""

from __future__ import annotations

import ast
import functools
import os
import re
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from auditor.rulebook.files import load as load_rules, names as rule_names
from auditor.config.entry_path import in_checkout
from auditor.config.entry_script import is_main_guard, parsed
from auditor.config.own_parser import built_parsers, parse_line
from auditor.config.script_run import writes_argv
from auditor.config.parser_entry import calls_parser_entry, entry_calls, module_beside, parse_time_bases, parse_time_methods

PARSER_FILES = ("megatron/training/arguments.py", "megatron/arguments.py")
_LIST = re.compile(r"(Optional\[)?(list|List)\[")
ARGPARSE_METHODS = frozenset({"add_argument", "add_argument_group", "add_mutually_exclusive_group",
                              "set_defaults"})
# argparse actions by what the flag reader makes of them: a flag with values ("store"), or a bare
# flag (given: True; store_false: False). Custom action classes take values, as "store" does.
_ACTIONS = {"store": "store", "append": "store", "extend": "store", "store_true": "store_true",
            "store_false": "store_false", "store_const": "store_true", "append_const": "store_true",
            "count": "store_true", "help": "store_true", "version": "store_true"}
# argparse.BooleanOptionalAction: `--X` (True) and `--no-X` (False) for each long spelling `--X`
# (CPython 3.11 Lib/argparse.py:897-902).
_BOOLEAN_OPTIONAL = "BooleanOptionalAction"


@dataclass(frozen=True)
class FrontEnd:
    """The parser of one front end: spelling -> {dest, action, nargs?}."""

    path: str  # the arguments file read
    flags: dict[str, dict] = field(default_factory=dict)
    complete: bool = True  # every add_argument of the parser was read
    why_incomplete: str = ""
    accepts_unknown: bool = False  # parse_args(ignore_unknown_args=True): nothing is rejected
    origin: str = "release"  # "release": a megatron-core release's files; else the checkout read
    root: Path | None = None  # the checkout read (None: a release's files)
    # argparse's allow_abbrev (True by default): a unique prefix of a long option is that option
    # (`--pipeline-model-parallel` is `--pipeline-model-parallel-size`); Megatron-LM's is False
    abbrev: bool = False
    rejects: str = "argparse rejects it"  # what the front end does with a flag it lacks, and where
    lenient: str = ""  # with accepts_unknown: what makes it take unknown flags ("" ignore_unknown_args)
    # the distribution read where the run's release is not stated: an older one (not covered by
    # the rules) may define a flag this one lacks, so that flag is undecided, not an error
    unstated: str = ""
    parsed_at: int | None = None  # the line of the parser file's `parse_args()` that reads sys.argv
    # read without the training script (not found): whether its parser takes a flag is asked once,
    # of the script (frontends.megatron_lm `launch.front-end-unread`, decided by --command)
    script_unread: bool = False


def locate(launch_path: str, script: str, roots: tuple[Path, ...] = (), workdir: str | None = "") -> FrontEnd | None:
    """The front end of `script` (as the training command names it). Found from the launch
    script's directory up, it is read with the `megatron/` parser of its checkout (the script's
    directory or one above); a script that builds no Megatron-LM parser, or has no checkout
    around it, has no front end read. Not found, the parser of the first of `roots` (a release's
    files) is read, incompletely: what the unread training script adds is not known."""
    found = find_script(launch_path, script, entry=True, workdir=workdir)
    if found is not None:
        for root in [found.parent, *found.parent.parents]:
            parser = _parser(root)
            if parser is not None:
                front = read_parser(parser, found)
                if front is None:
                    return None
                # the parser the script's calls reach may be the checkout's own (own_parser.py)
                owner = "the Megatron-LM checkout" if front.path == str(parser) else "the checkout"
                return replace(front, origin=f"{owner} {root}", root=root)
        return None
    for root in roots:
        parser = _parser(root)
        if parser is not None:
            front = read_parser(parser, None)
            why = f"the training script {script} was not found: flags it adds are not read"
            return replace(front, complete=False, why_incomplete=why, script_unread=True) if front else None
    return None


def find_script(launch_path: str, script: str, entry: bool = False, workdir: str | None = "") -> Path | None:
    """The file a launch names (its training script, a config file it passes on): at its absolute
    path, else from the launch script's directory up; None where no such file is there. `entry`:
    the training script, whose absolute path of another machine is looked up in the checkout the
    launch script sits in (config.entry_path). A relative name after a `cd` or a runner's
    working-directory option (`workdir`, config.workdir) is opened there, as the run opens it: under
    an absolute one as that absolute path; not at all where the directory is not known."""
    here = Path(launch_path).resolve().parent
    if workdir != "" and not Path(script).is_absolute():
        if workdir is None:
            return None
        if not Path(workdir).is_absolute():
            found = next((c for d in [here, *here.parents] if (c := d / workdir / script).is_file()), None)
            return found if found is not None or not entry else in_checkout(launch_path, script)
        script = os.path.normpath(os.path.join(workdir, script))
    candidates = [Path(script)] if Path(script).is_absolute() else [d / script for d in [here, *here.parents]]
    found = next((c for c in candidates if c.is_file()), None)
    return found if found is not None or not entry else in_checkout(launch_path, script)


def _owner(call: ast.Call) -> str | None:
    """The name a method is called on (`f` of `f.build_group(...)`), else None."""
    func = call.func
    return func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else None


def _parser(root: Path) -> Path | None:
    return next((root / p for p in PARSER_FILES if (root / p).is_file()), None)


@functools.lru_cache(maxsize=16)
def read_parser(parser: Path, script: Path | None = None) -> FrontEnd | None:
    """The flags of `parser` (an arguments file), and of `script`'s own add_argument calls;
    None where `script` builds no Megatron-LM parser (no pretrain, initialize_megatron or
    parse_args call: its front end is its own)."""
    root = parser.parent.parent.parent if parser.parent.name == "training" else parser.parent.parent
    reader = _Reader(root)
    reader.read_file(parser)
    own = _parse(_text(parser))
    abbrev = allows_abbrev(own)
    accepts_unknown = _known_only(own)
    if script is not None:
        tree = _parse(_text(script))
        if tree is None:
            return None
        # `parser.parse_args()` is argparse's own method on a parser the script built
        # (Megatron-DeepSpeed tools/preprocess_data.py, examples_deepspeed/universal_checkpointing/
        # tb_analysis/tb_analysis_script.py): Megatron-LM's parse_args only where it is bound
        # from Megatron-LM's modules (parser_entry.calls_parser_entry).
        if not _builds_parser(tree, script):
            delegate = _delegate(tree, script)
            return read_parser(parser, delegate) if delegate is not None else None
        if not calls_parser_entry(script):
            # an entry called by name only (`pretrain` of the checkout's own package): the parser
            # its calls reach is the one that rejects a flag; none or several found, not known
            calling: list[ast.AST] = []
            built = built_parsers(tree, script, calling)
            # `parse_args(ignore_unknown_args=True)` in a module the call reaches (DeepSpeed-Domino's
            # initialize_domino): that parser takes unknown flags as the entry's own call would
            accepts_unknown = accepts_unknown or any(_ignores_unknown(c) for c in calling)
            if len(built) == 1 and next(iter(built)) != parser.resolve():
                return read_parser(next(iter(built)), script)
            if len(built) != 1:
                reader.missing.append(f"{script.name} calls a parser entry not bound from Megatron-LM's "
                                      f"modules, and the parser its calls build is "
                                      f"{'not found' if not built else 'one of ' + ', '.join(sorted(map(str, built)))}")
        if writes_argv(tree):
            # what the parser sees is the launch line as the script rewrote it (a flag deleted, or
            # left over from its own parse_known_args): no flag it lacks is surely rejected
            reader.missing.append(f"{script.name} rewrites sys.argv before the parse")
        reader.beside = script.parent
        reader.read_tree(tree)
        accepts_unknown = accepts_unknown or _ignores_unknown(tree)
        local = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        for call in _calls(tree):
            provider = _keyword(call, "extra_args_provider")
            if provider is not None and not _provider_read(provider, tree, script.parent, reader, local):
                reader.missing.append(f"{script.name} adds flags through "
                                      f"`{ast.unparse(provider)}`, which is not read")
    return FrontEnd(str(parser), reader.flags, not reader.missing, "; ".join(reader.missing),
                    accepts_unknown, abbrev=abbrev, parsed_at=parse_line(own))


class _Reader:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.flags: dict[str, dict] = {}
        self.missing: list[str] = []
        self.path: Path | None = None  # the file being read, where an add_argument's default is
        self.beside: Path | None = None  # the script's folder (sys.path[0]), where its imports are found first
        self.read_beside: dict[str, ast.FunctionDef] = {}  # functions read from modules there, by the name called
        self.modules: set[Path] = set()  # the modules beside the script read

    def read_file(self, path: Path) -> None:
        tree = _parse(_text(path))
        if tree is None:
            self.missing.append(f"{path} does not parse")
            return
        self.path = path
        self.read_tree(tree)
        self.path = None

    def read_tree(self, tree: ast.AST) -> None:
        at_parse = parse_time_code(tree)
        imported = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        funcs: list[ast.AST] = [n for n in at_build(tree, at_parse) if isinstance(n, ast.FunctionDef)]
        local = {f.name for f in funcs if isinstance(f, ast.FunctionDef)}
        for func in funcs or [tree]:
            # A callee that is the function's parameter (`extra_args_provider(parser)`) is the
            # training script's provider, read from the script (read_parser).
            params = {a.arg for a in func.args.args} if isinstance(func, ast.FunctionDef) else set()
            # `f = ArgumentGroupFactory(Config)`: `f.build_group(parser)` adds the fields `_factory`
            # reads from the ArgumentGroupFactory call itself
            factories = {t.id for n in ast.walk(func) if isinstance(n, ast.Assign)
                         and isinstance(n.value, ast.Call)
                         and getattr(n.value.func, "id", getattr(n.value.func, "attr", "")) == "ArgumentGroupFactory"
                         for t in n.targets if isinstance(t, ast.Name)}
            lists = {n.targets[0].id: _strings(n.value.elts) for n in ast.walk(func)
                     if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)
                     and isinstance(n.value, ast.List)}
            for call in (n for n in at_build(func, at_parse) if isinstance(n, ast.Call)):
                name = getattr(call.func, "attr", getattr(call.func, "id", None))
                if name == "add_argument":
                    self._argument(call)
                elif name == "ArgumentGroupFactory" and call.args:
                    self._factory(call, lists)
                elif name not in local | params and name not in ARGPARSE_METHODS \
                        and _owner(call) not in factories and any(
                        isinstance(a, ast.Name) and a.id == "parser" for a in call.args):
                    if self._read_beside(call, tree):
                        continue
                    helper = _helper(call, imported)
                    if helper is not None:  # a library call whose flags the rules list
                        for spelling, action in helper["flags"].items():
                            self.flags.setdefault(spelling, {"dest": spelling.lstrip("-").replace("-", "_"),
                                                             "action": action})
                        continue
                    # the parser handed to code not read here, which may add flags to it
                    self.missing.append(f"`{ast.unparse(call.func)}(parser)` may add flags, and "
                                        "is not read")

    def _read_beside(self, call: ast.Call, tree: ast.AST) -> bool:
        """Whether `call` hands the parser to a function of a module beside the script, which
        is then read as the script is: Megatron-LM d98e8a64dd examples/multimodal/run_text_generation.py
        imports add_multimodal_extra_args from multimodal_args (:20), found in the script's folder
        (sys.path[0]), and its provider add_text_generation_args calls it (:101)."""
        if self.beside is None or not isinstance(call.func, ast.Name) or not isinstance(tree, ast.Module):
            return False
        found = _beside(call.func.id, tree, self.beside)
        func = next((n for n in found[1].body if isinstance(n, ast.FunctionDef) and n.name == found[2]),
                    None) if found is not None else None
        if found is None or func is None:
            return False
        self.read_beside[call.func.id] = func
        if found[0] not in self.modules:
            self.modules.add(found[0])
            self.read_tree(found[1])
        return True

    def _argument(self, call: ast.Call) -> None:
        if not all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in call.args):
            at = f"{self.path.name}:{call.lineno}" if self.path is not None else f"line {call.lineno}"
            self.missing.append(f"the spelling of `{ast.unparse(call)[:80]}` ({at}) is not written "
                                "literally, and is not read")
            return
        names = [s for s in _strings(call.args) if s.startswith("-")]
        if not names:
            return
        dest, action, nargs = (_keyword(call, k) for k in ("dest", "action", "nargs"))
        kind = str(action.value) if isinstance(action, ast.Constant) else "store"
        boolean = action is not None and getattr(action, "attr", getattr(action, "id", None)) == _BOOLEAN_OPTIONAL
        if boolean:
            kind = "store_true"
        entry = {
            "dest": dest.value if isinstance(dest, ast.Constant) else next(
                (s for s in names if s.startswith("--")), names[0]).lstrip("-").replace("-", "_"),
            # As the flag reader needs it: whether the flag takes values, and a bare flag's value.
            "action": _ACTIONS.get(kind, "store"),
        }
        if nargs is not None:
            entry["nargs"] = nargs.value if isinstance(nargs, ast.Constant) else "*"
        if nargs is None and (action is None or getattr(action, "value", None) == "store"):
            # what a value becomes, where validate_stops.py needs its truth
            kind_of = _keyword(call, "type")
            entry["type"] = "str" if kind_of is None else getattr(kind_of, "id", "?")
        default = _default(_keyword(call, "default"), kind)
        if default is not _OPAQUE and self.path is not None:
            where = self.path.relative_to(self.root) if self.path.is_relative_to(self.root) else self.path
            entry["default"], entry["where"] = default, f"{where}:{call.lineno}"
        for s in names:
            self.flags.setdefault(s, entry)
        if boolean:
            for s in names:
                if s.startswith("--"):
                    self.flags.setdefault(f"--no-{s[2:]}", {**entry, "action": "store_false"})

    def _factory(self, call: ast.Call, lists: dict[str, list[str]]) -> None:
        """argument_utils.ArgumentGroupFactory: `--name` per field of the dataclass, a bool
        defaulting to True as `--no-name`/`--disable-name`, argparse_meta's arg_names/action
        overriding both."""
        cls_name = getattr(call.args[0], "id", getattr(call.args[0], "attr", ""))
        fields = self._fields(cls_name)
        if fields is None:
            self.missing.append(f"the fields of {cls_name} (ArgumentGroupFactory) were not found")
            return
        exclude = _keyword(call, "exclude")
        excluded = set(lists.get(exclude.id, [])) if isinstance(exclude, ast.Name) else (
            set(_strings(exclude.elts)) if isinstance(exclude, ast.List) else set())
        for name, annotation, value in fields:
            default, meta, init = value, None, None
            if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "field":
                default, init = _keyword(value, "default"), _keyword(value, "init")
                metadata = _keyword(value, "metadata")
                if isinstance(metadata, ast.Dict):
                    meta = next((v for k, v in zip(metadata.keys, metadata.values)
                                 if isinstance(k, ast.Constant) and k.value == "argparse_meta"), None)
            if name in excluded or (isinstance(init, ast.Constant) and init.value is False):
                continue
            dash = name.replace("_", "-")
            action, names = "store", [f"--{dash}"]
            # argument_utils._extract_type: a list[...] field (Optional or not) takes "+" values.
            nargs: Any = "+" if _LIST.match(annotation) else None
            if annotation in ("bool", "Optional[bool]", "bool | None"):
                default_false = isinstance(default, ast.Constant) and default.value is False
                action = "store_true" if default_false else "store_false"
                names = [f"--{dash}"] if default_false else [f"--no-{dash}", f"--disable-{dash}"]
            if isinstance(meta, ast.Dict):
                for k, v in zip(meta.keys, meta.values):
                    if isinstance(k, ast.Constant) and k.value == "arg_names" and isinstance(v, ast.List):
                        names = _strings(v.elts)
                    if isinstance(k, ast.Constant) and k.value == "action" and isinstance(v, ast.Constant):
                        action = _ACTIONS.get(str(v.value), "store")
                    if isinstance(k, ast.Constant) and k.value == "nargs":
                        nargs = v.value if isinstance(v, ast.Constant) else "*"
            entry = {"dest": name, "action": action, **({"nargs": nargs} if nargs is not None else {})}
            for s in names:
                self.flags.setdefault(s, entry)

    def _fields(self, name: str) -> list[tuple[str, str, ast.expr | None]] | None:
        cls = _class(self.root, name)
        if cls is None:
            return None
        out: list[tuple[str, str, ast.expr | None]] = []
        for base in cls.bases:
            base_name = getattr(base, "id", getattr(base, "attr", None))
            inherited = self._fields(base_name) if base_name else None
            if inherited is None:
                return None
            out += inherited
        for st in cls.body:
            if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                out = [f for f in out if f[0] != st.target.id]
                if not ast.unparse(st.annotation).startswith("ClassVar"):
                    out.append((st.target.id, ast.unparse(st.annotation), st.value))
        return out


@functools.lru_cache(maxsize=256)
def _class(root: Path, name: str) -> ast.ClassDef | None:
    for path in sorted((root / "megatron").rglob("*.py")):
        text = _text(path)
        if f"class {name}(" in text or f"class {name}:" in text:
            tree = _parse(text)
            for node in tree.body if tree is not None else []:
                if isinstance(node, ast.ClassDef) and node.name == name:
                    return node
    return None


@functools.cache
def parser_helpers() -> tuple[dict[str, Any], ...]:
    """The library calls whose flags the rules list (rules/*.toml [[parser_helper]])."""
    return tuple(h for name in rule_names() for h in load_rules(name).data.get("parser_helper", []))


def _helper(call: ast.Call, imported: set[str]) -> dict[str, Any] | None:
    """The [[parser_helper]] `call` is, called through its module as the file imports it
    (`import deepspeed` then `deepspeed.add_config_arguments(parser)`); else None."""
    func = ast.unparse(call.func)
    return next((h for h in parser_helpers() if func == h["call"] and h["module"] in imported), None)


def parse_time_code(tree: ast.AST) -> frozenset[int]:
    """The ids of the methods of `tree` that run when the parser parses, not when it is built:
    the parse-time methods (rules/megatron-lm.toml [parser_entry] parse_time_methods) of the
    subclasses of argparse's actions (parse_time_bases), directly or through another such class
    of the file. The class's other methods and its body run when the parser is built."""
    bases, methods = set(parse_time_bases()), parse_time_methods()
    classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    found: list[ast.ClassDef] = []
    while True:
        names = bases | {c.name for c in found}
        more = [c for c in classes if c not in found and any(ast.unparse(b) in names for b in c.bases)]
        if not more:
            break
        found += more
    return frozenset(id(f) for c in found for f in c.body
                     if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name in methods)


def at_build(node: ast.AST, at_parse: frozenset[int] | None = None) -> list[ast.AST]:
    """The nodes of `node` (breadth first, as ast.walk) that run when the parser is built, not
    those of the methods `at_parse` (default: `node`'s own parse_time_code): an action's
    `__call__` runs once argparse has sorted the command line, so a flag it adds is not accepted
    and the parser it is handed gains nothing."""
    if at_parse is None:
        at_parse = parse_time_code(node)
    out: list[ast.AST] = []
    todo = deque([node])
    while todo:
        here = todo.popleft()
        out.append(here)
        todo.extend(c for c in ast.iter_child_nodes(here) if id(c) not in at_parse)
    return out


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _parse(text: str) -> ast.Module | None:
    """`text` parsed through the launch readers' one cache (entry_script.parsed): an arguments file
    read here is read again by validate_stops and the entry readers."""
    try:
        return parsed(text)
    except (SyntaxError, ValueError):
        return None


def _calls(node: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Call)]


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _strings(nodes: list[ast.expr]) -> list[str]:
    return [n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _read_provider(node: ast.expr, local: dict[str, ast.FunctionDef]) -> bool:
    """Whether every flag `extra_args_provider=node` adds was read: None, or a function of the
    script that hands its parser to nothing but argparse's own methods and other such functions."""
    if isinstance(node, ast.Constant) and node.value is None:
        return True
    if isinstance(node, ast.IfExp):
        return _read_provider(node.body, local) and _read_provider(node.orelse, local)
    func = local.get(node.id) if isinstance(node, ast.Name) else None
    if func is None or not func.args.args:
        return False
    handles = {func.args.args[0].arg}
    for n in ast.walk(func):  # `group = parser.add_argument_group(...)` hands it on too
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and any(
                isinstance(a, ast.Name) and a.id in handles for a in ast.walk(n.value)):
            handles |= {t.id for t in n.targets if isinstance(t, ast.Name)}
    for call in _calls(func):
        name = getattr(call.func, "attr", getattr(call.func, "id", None))
        passed = any(isinstance(a, ast.Name) and a.id in handles for a in call.args)
        if passed and name not in ARGPARSE_METHODS and (name not in local or local[name] is func):
            return False
    return True


def _provider_read(node: ast.expr, tree: ast.Module, folder: Path, reader: _Reader,
                   local: dict[str, ast.FunctionDef]) -> bool:
    """Whether every flag `extra_args_provider=node` may add was read, reading each function it
    may be whose module lies beside the script (`folder`) as the script is, each branch of a
    conditional on its own (`add_modelopt_args if has_nvidia_modelopt else None`, Megatron-LM
    0d7e02bd26 pretrain_gpt.py:239, imported in a `try` at :29-35)."""
    if isinstance(node, ast.IfExp):
        return (_provider_read(node.body, tree, folder, reader, local)
                and _provider_read(node.orelse, tree, folder, reader, local))
    # a name bound in a `try` and again in its `except` may be either module's function: each is
    # read, and one not found beside the script leaves the parser not wholly read
    sources = _sources(node.id, tree, folder) if isinstance(node, ast.Name) else []
    if not sources:
        return _read_provider(node, reader.read_beside | local)
    read = True
    for sibling in sources:
        if sibling is None:
            return False
        reader.read_tree(sibling[1])
        read = _read_provider(ast.Name(sibling[2]), reader.read_beside | {
            n.name: n for n in ast.walk(sibling[1]) if isinstance(n, ast.FunctionDef)}) and read
    return read


def _top_imports(tree: ast.Module) -> list[ast.stmt]:
    """The statements run at import time at the top of `tree`: its body and the blocks of a
    top-level `try` (`try: from megatron.post_training.arguments import add_modelopt_args`,
    Megatron-LM 0d7e02bd26 pretrain_gpt.py:29-35)."""
    out: list[ast.stmt] = []
    for stmt in tree.body:
        out.append(stmt)
        if isinstance(stmt, ast.Try):
            out += [*stmt.body, *(s for h in stmt.handlers for s in h.body), *stmt.orelse]
    return out


def _beside(name: str, tree: ast.Module, folder: Path) -> tuple[Path, ast.Module, str] | None:
    """The module `tree` imports `name` from (`from multimodal_args import NAME`, top level,
    absolute) where it lies in `folder`, the script's, which python searches first (sys.path[0]):
    its path, its tree and the name `name` has in it; None otherwise. Only there, not also under
    the checkout's packages as parser_entry._local: flags read from more modules would change what
    the scan accepts."""
    return next((s for s in _sources(name, tree, folder) if s is not None), None)


def _sources(name: str, tree: ast.Module, folder: Path) -> list[tuple[Path, ast.Module, str] | None]:
    """Each top-level import of `tree` that binds `name`, as _beside finds its module (None where
    it is not beside the script): `try: from A import f as add_args` / `except ImportError: from
    fallback_args import add_args` binds it twice, and either may be the one the run calls."""
    out: list[tuple[Path, ast.Module, str] | None] = []
    for stmt in _top_imports(tree):
        alias = next((a for a in stmt.names if (a.asname or a.name) == name), None) \
            if isinstance(stmt, (ast.Import, ast.ImportFrom)) else None
        if alias is None or not isinstance(stmt, ast.ImportFrom):
            out += [None] if alias is not None else []
            continue
        module = module_beside(folder, stmt.module) if stmt.module and not stmt.level else None
        found = _parse(_text(module)) if module is not None else None
        out.append((module, found, alias.name) if module is not None and found is not None else None)
    return out


def _delegate(tree: ast.Module, script: Path) -> Path | None:
    """The module beside `script` whose function the script runs as the program and that builds
    Megatron-LM's parser itself: Megatron-LM d98e8a64dd tools/run_hybrid_text_generation_server.py
    is `from run_text_generation_server import main` and `main(model_type="hybrid")` under its
    main guard (:8-11), and that module's main calls parse_and_validate_args (:122). Python finds
    the module beside the script first (sys.path[0]); one step only, so that two wrappers calling
    each other end. None where there is no such module, or where the wrapper parses arguments or
    rewrites sys.argv itself (what the parser then reads is not the launch line as written)."""
    if writes_argv(tree) or any(getattr(c.func, "attr", getattr(c.func, "id", None)) in _OWN_PARSING
                                for c in _calls(tree)):
        return None
    run = [s for s in tree.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    run += [s for g in tree.body if is_main_guard(g) for s in getattr(g, "body", [])]
    called = {c.func.id for s in run for c in _calls(s) if isinstance(c.func, ast.Name)}
    for stmt in tree.body:
        if not isinstance(stmt, ast.ImportFrom) or stmt.level or not stmt.module:
            continue
        module = script.parent / (stmt.module.replace(".", "/") + ".py")
        if module == script or not module.is_file() or not any((a.asname or a.name) in called for a in stmt.names):
            continue
        found = _parse(_text(module))
        if found is not None and _builds_parser(found, module):
            return module
    return None


# a wrapper's own argument handling (_delegate)
_OWN_PARSING = frozenset({"add_argument", "parse_args", "parse_known_args", "ArgumentParser"})


def _builds_parser(tree: ast.Module, script: Path) -> bool:
    """Whether the script calls an entry of Megatron-LM's parser (see read_parser)."""
    names = {getattr(c.func, "attr", getattr(c.func, "id", None)) for c in _calls(tree)
             if not (isinstance(c.func, ast.Attribute) and c.func.attr == "parse_args")}
    return bool(names & entry_calls()) or calls_parser_entry(script)


def allows_abbrev(tree: ast.AST | None) -> bool:
    """Whether an `ArgumentParser(...)` the file builds takes unique prefixes of its long options
    (argparse's allow_abbrev, True unless `allow_abbrev=False`): Megatron-LM's and
    Megatron-DeepSpeed's arguments.py pass False; a file that builds none is taken at False, as
    Megatron-LM's parse_args builds it."""
    built = [c for c in _calls(tree) if getattr(c.func, "attr", getattr(c.func, "id", None)) == "ArgumentParser"] \
        if tree is not None else []
    return any(not (isinstance(k := _keyword(c, "allow_abbrev"), ast.Constant) and k.value is False) for c in built)


def _known_only(tree: ast.AST | None) -> bool:
    """A parser file (a fork's arguments.py) that parses with `parse_known_args` and never
    `parse_args`: what it lacks is left over, not rejected. Megatron-LM's calls both, the first
    only under `ignore_unknown_args` (the training script's say: _ignores_unknown)."""
    called = {getattr(c.func, "attr", None) for c in _calls(tree)} if tree is not None else set()
    return "parse_known_args" in called and "parse_args" not in called


def _ignores_unknown(tree: ast.AST) -> bool:
    return any(isinstance(k.value, ast.Constant) and k.value.value is True
               for call in _calls(tree) for k in call.keywords if k.arg == "ignore_unknown_args")


def with_front_end(spelling: Any, front: FrontEnd | None) -> Any:
    """`spelling` (auditor.rulebook.launchers.Spelling) with the flags of the parser read: a
    spelling it has keeps its rules entry (what the flag means), others take argparse's."""
    if front is None:
        return spelling
    flags = {s: spelling.flags.get(s) or entry for s, entry in front.flags.items()}
    return replace(spelling, flags=flags, front_end=front)


_OPAQUE = object()  # a default that is not a literal (a call, a name): not read


def _default(node: ast.expr | None, action: str) -> Any:
    """An add_argument's default as argparse gives it: the literal, else the action's own."""
    if node is None:
        return {"store_true": False, "store_false": True}.get(action)
    try:
        return ast.literal_eval(node)
    except ValueError:
        return _OPAQUE


@dataclass(frozen=True)
class CheckoutSettings:
    """The settings the parser of a checkout defines, and the literal defaults of its
    add_argument calls: dest -> (default, `path:line`)."""

    names: frozenset[str]
    defaults: dict[str, tuple[Any, str]]


def checkout_settings(root: Path) -> CheckoutSettings | None:
    """What the parser of the Megatron-LM checkout `root` defines; None where it has none, or
    where not all of it was read (a setting missing may still exist)."""
    parser = _parser(root)
    front = read_parser(parser, None) if parser is not None else None
    if front is None or not front.complete:
        return None
    defaults = {str(f["dest"]): (f["default"], str(f["where"])) for f in front.flags.values() if "where" in f}
    return CheckoutSettings(frozenset(str(f["dest"]) for f in front.flags.values()), defaults)
