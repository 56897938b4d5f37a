"""ms-swift's front end as its release defines it: `megatron sft|pt|rlhf` parse the command line
with HfArgumentParser over one arguments dataclass (rules/ms-swift.toml [[launcher]]
`args_classes`), and the pipeline raises on what the parser leaves (`[unknown_flags]`:
swift/pipelines/base.py `_parse_args`), so a flag no field defines stops every rank before
training. The fields are read from the release in use (the classes of its `swift` package,
bases and all), never from a table of ours; flags.check_front_end judges each flag written.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import replace
from pathlib import Path

from auditor.config.flags import abbreviated, check_front_end, expand_abbreviations
from auditor.config.frontend_parser import FrontEnd
from auditor.config.model import LaunchConfig
from auditor.rulebook import files
from auditor.sources import SourceSet

# bases that add no dataclass fields
_NO_FIELDS = frozenset({"object", "ABC", "Generic"})
# HfArgumentParser's string_to_bool: what turns `--ignore_args_error VALUE` off
_FALSE = frozenset({"no", "false", "f", "n", "0"})


def check_swift_flags(launch: LaunchConfig, srcs: list[SourceSet], planned: bool = False) -> None:
    """The command's flags judged against the fields of the arguments class its subcommand
    parses in the ms-swift release judged (`srcs`); nothing where the release, the subcommand or
    the class is not known (then the flags stay as written, as before), nor where the release's
    CLI hands the command line to another reader ([unknown_flags] `diverts`). `planned`: the
    releases are a combination chosen for a script that states none; ms-swift's may then be one
    older than the rules cover, so a flag it lacks is undecided, not a run that does not start."""
    rules = files.load("ms-swift").data
    lenient = rules.get("unknown_flags", {})
    program, _, sub = launch.launcher.partition(" ")
    launcher = next((e for e in rules.get("launcher", []) if e.get("program") == program), None)
    release = next((s for s in srcs if s.name == "ms-swift"), None)
    name = (launcher or {}).get("args_classes", {}).get(sub)
    if launch.style != "ms-swift" or release is None or name is None or not lenient \
            or _diverted(launch, release.root, (launcher or {}).get("routes", {}).get(sub), lenient):
        return
    front = dataclass_front_end(release.root, name, f"ms-swift {release.version or '(unstated)'}")
    if front is None:
        return
    field = lenient["lenient_field"]
    expand_abbreviations(launch, replace(front, abbrev=True))  # `--ignore_args` is the field
    given = launch.flags.get(field)
    rejects = (f"ms-swift raises on the arguments its parser leaves ({lenient['source']}: "
               f"`{lenient['code']}`) before training, on every rank")
    why = _not_sure(launch, field, front)
    if given is not None and str(given.value).lower() not in _FALSE:
        front = FrontEnd(front.path, front.flags, front.complete, front.why_incomplete, True,
                         front.origin, abbrev=True, lenient=f"--{field} {given.value}")
    else:
        front = FrontEnd(front.path, front.flags, front.complete and not why,
                         front.why_incomplete or why, False, front.origin, abbrev=True, rejects=rejects)
    if planned and release.name not in launch.pins and release.kind in ("wheel", "sdist"):
        front = replace(front, unstated=release.name)
    check_front_end(launch, front, launch.path)


def _diverted(launch: LaunchConfig, root: Path, module: str | None, rules: dict) -> bool:
    """Whether the subcommand's CLI module in the release (`routes`) takes the command line away
    from the arguments class: ms-swift >= 4.3's `megatron rlhf` strips `--use_ray [true|false]`
    and runs swift.ray.megatron.pipeline.main, which reads `--config` itself
    (swift/cli/_megatron/rlhf.py:6-20); `--use_ray false` leaves it to the class."""
    flag = next((f for f in launch.flags.values() if f.spelling == rules.get("diverts")), None)
    if flag is None or module is None or str(flag.value).lower() == "false":
        return False
    path = root / (module.replace(".", "/") + ".py")
    try:
        return rules["diverts_code"] in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def _not_sure(launch: LaunchConfig, field: str, front: FrontEnd) -> str:
    """Why the pipeline may not raise on an unknown flag though the command line does not turn
    `field` (ignore_args_error) on: a word not known statically, or a config file not read, may
    give it; RAY_SWIFT_ARGS replaces the command line; a prefix of several flags, `field` among
    them (`--ignore`), is `field` where argparse takes an ambiguous prefix of one action."""
    if "RAY_SWIFT_ARGS" in launch.env:
        return "RAY_SWIFT_ARGS replaces the command line ms-swift parses"
    prefix = next((f.spelling for f in launch.flags.values()
                   for w in abbreviated(replace(front, abbrev=True), f.spelling)
                   if front.flags[w]["dest"] == field), None)
    if prefix is not None:
        return f"`{prefix}` abbreviates --{field} among other flags, which some Python versions take"
    if launch.unknown_words:
        return f"{launch.unknown_words[0].text} (line {launch.unknown_words[0].line}) may give --{field}"
    unread = next((d for d in launch.diagnostics if d.kind == "launch.config-file-unread"), None)
    return f"the config file not read ({unread.where}) may give {field}" if unread else ""


def dataclass_front_end(root: Path, name: str, origin: str) -> FrontEnd | None:
    """The flags HfArgumentParser makes of the dataclass `name` of the `swift` package under
    `root` (transformers hf_argparser.py _parse_dataclass_field): `--field` and `--field-name`
    (dashes), a bool field defaulting to True also `--no_field` / `--no-field`, and each
    `metadata={'aliases': ...}`; a field with init=False none. None where the class is not in
    the release; incomplete where a base is not found there or is imported from another
    distribution (its fields are not read: a flag it may define is undecided, never an error)."""
    index = _classes(root)
    if name not in index:
        return None
    flags: dict[str, dict] = {}
    missing: list[str] = []
    for dest, (default, aliases) in _fields(index, _mro(index, name, missing)).items():
        spellings = [f"--{dest}", f"--{dest.replace('_', '-')}", *aliases]
        if default is True:
            spellings += [f"--no_{dest}", f"--no-{dest.replace('_', '-')}"]
        for s in spellings:
            flags.setdefault(s, {"dest": dest, "action": "store"})
    path = index[name][0][0]
    return FrontEnd(str(path), flags, not missing,
                    f"the bases {', '.join(sorted(set(missing)))} of {name} are not read from the release"
                    if missing else "",
                    origin=f"{origin} ({name})", root=None)


# each class of the release by name: its module, its definition, and the names that module
# imports from another distribution (_imported)
Classes = dict[str, list[tuple[Path, ast.ClassDef, dict[str, str]]]]


def _mro(index: Classes, name: str, missing: list[str], seen: tuple[str, ...] = ()) -> list[str]:
    """`name` and its bases in Python's method resolution order (C3). A base not in the release,
    or one its module imports from another distribution (mcore_bridge, megatron, transformers:
    that package's class, not read here, even where the release has a class of that name), goes
    to `missing`: its fields are not known."""
    bases: list[str] = []
    for _, cls, imported in index[name]:  # one name in several modules: every one's bases
        for base in cls.bases:
            written = ast.unparse(base).partition("[")[0]
            simple, head = written.rpartition(".")[2], written.partition(".")[0]
            if simple in _NO_FIELDS or simple in seen or simple in bases:
                continue
            if head in imported or simple not in index:
                missing.append(f"{simple} ({imported[head]})" if head in imported else simple)
                continue
            bases.append(simple)
    lines = [_mro(index, b, missing, (*seen, name)) for b in bases] + [bases]
    out = [name]
    while lines := [line for line in lines if line]:
        # the first head in no other line's tail (an inconsistent order, which Python refuses
        # with a TypeError, is taken in declared order)
        head = next((line[0] for line in lines if not any(line[0] in other[1:] for other in lines)), lines[0][0])
        out.append(head)
        lines = [[c for c in line if c != head] for line in lines]
    return out


def _fields(index: Classes, mro: list[str]) -> dict[str, tuple[object, tuple[str, ...]]]:
    """The fields __init__ takes, as dataclasses collects them: along the MRO from its end, a
    field a subclass declares again being that declaration (MegatronSftArguments' `load_args:
    bool = False` over BaseArguments' True leaves no `--no_load_args`); name -> (a literal
    default, else None; its metadata aliases)."""
    out: dict[str, tuple[object, tuple[str, ...], bool]] = {}
    for name in reversed(mro):
        for _, cls, _ in index[name]:  # one name in several modules: every one's fields (more accepted)
            for st in cls.body:
                if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) \
                        and not ast.unparse(st.annotation).startswith("ClassVar"):
                    out[st.target.id] = _field_call(st.value)
    return {name: (default, aliases) for name, (default, aliases, init) in out.items() if init}


def _field_call(value: ast.expr | None) -> tuple[object, tuple[str, ...], bool]:
    """A field's literal default, its metadata aliases and whether __init__ takes it."""
    if not (isinstance(value, ast.Call) and ast.unparse(value.func).rpartition(".")[2] == "field"):
        return (value.value if isinstance(value, ast.Constant) else None), (), True
    keywords = {k.arg: k.value for k in value.keywords}
    init = keywords.get("init")
    default = keywords.get("default")
    aliases: tuple[str, ...] = ()
    meta = keywords.get("metadata")
    if isinstance(meta, ast.Dict):
        for k, v in zip(meta.keys, meta.values):
            if isinstance(k, ast.Constant) and k.value == "aliases":
                items = v.elts if isinstance(v, (ast.List, ast.Tuple)) else [v]
                aliases = tuple(str(e.value) for e in items if isinstance(e, ast.Constant))
    return ((default.value if isinstance(default, ast.Constant) else None), aliases,
            not (isinstance(init, ast.Constant) and init.value is False))


@functools.lru_cache(maxsize=8)
def _classes(root: Path) -> Classes:
    """Every top-level class of the release's `swift` package, by name."""
    out: Classes = {}
    for path in sorted((root / "swift").rglob("*.py")):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
            if "class " not in text:
                continue
            tree = ast.parse(text)
        except (OSError, SyntaxError, ValueError, RecursionError):
            continue
        imported = _imported(tree.body)
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                out.setdefault(node.name, []).append((path, node, imported))
    return out


def _imported(body: list[ast.stmt]) -> dict[str, str]:
    """The names a module binds at its top level (under `if`/`try` too) by importing from
    another distribution than the release's `swift` (absolute, not `swift.`), with that module."""
    out: dict[str, str] = {}
    for node in body:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.partition(".")[0] != "swift":
            out.update({a.asname or a.name: node.module for a in node.names})
        elif isinstance(node, ast.Import):
            out.update({(a.asname or a.name).partition(".")[0]: a.name for a in node.names
                        if a.name.partition(".")[0] != "swift"})
        elif isinstance(node, (ast.If, ast.Try)):
            for block in (node.body, node.orelse, getattr(node, "finalbody", []),
                          *(h.body for h in getattr(node, "handlers", []))):
                out.update(_imported(block))
    return out
