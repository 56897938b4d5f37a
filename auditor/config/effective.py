"""The effective config: the values megatron-core's pipeline schedules will see, each with why.

A launch script says little directly: `batch_p2p_comm` is decided by ms-swift's argument
handling, then overwritten by mcore-bridge's `ModelConfig.__post_init__`, then read by
megatron-core, whose run-time behaviour in turn depends on torch's own rules. Each of those steps
is data in `rules/<framework>.toml`, keyed by version ranges and read from the real code of those
versions; this module only evaluates them, in stage order, over a small expression language.

Rule tables (in any framework file):
- `[[stage]]`  name, order, optional `launchers` (fnmatch patterns of `LaunchConfig.launcher`;
  a stage with launchers runs only for those), `flags = true` where the command line is parsed.
- `[[arg]]`    an argument of a `flags` stage: key, type, default, aliases (other flag names).
- `[[rule]]`   action `set` (when `when` holds, key = value) or `default` (only while the key is
  unset or None), `value` an expression (a TOML non-string is a literal).
- `[[check]]`  `when` is the illegal condition; holding, it becomes a Finding.
- `[[model]]`  sizes a launch script does not state, keyed by the `--model` value.
Every entry carries `versions`, `source` (path:line, read at `read`, default `[framework].read`)
and for the agreement tests `code` (the line as written) and `function`/`class`.

Three-valued throughout: an input that is unknown (a `${VAR}` the shell reader could not resolve,
a framework version no rule admits, a model size nobody stated) makes what depends on it unknown,
never a guess.
"""

from __future__ import annotations

import ast
import fnmatch
import importlib.metadata
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from auditor import rules as rules_mod
from auditor.config.model import EnvVar, LaunchConfig, Symbolic
from auditor.errors import InputError
from auditor.findings import Finding

FRAMEWORKS = ("torch", "ms-swift", "mcore-bridge", "megatron-core")


class _Unknown:
    """The third truth value. Using it as a plain bool is a bug, so that raises."""

    _instance: "_Unknown | None" = None

    def __new__(cls) -> "_Unknown":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "unknown"

    def __bool__(self) -> bool:
        raise TypeError("unknown has no truth value; test `is UNKNOWN` first")


UNKNOWN: Any = _Unknown()


class RuleError(InputError):
    """A rules entry that cannot be evaluated: exit 2 naming the file, entry and cause."""

    def __init__(self, cause: str, subject: str = "rules") -> None:
        super().__init__(subject, cause)


# --- the expression language -------------------------------------------------------------------
# Python syntax, parsed with `ast` and evaluated by walking a whitelist of node types: names are
# config keys, `env.NAME` is the launch script's environment, `unknown` is the third value.

_ALLOWED = (
    ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.BinOp,
    ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.Compare, ast.Eq, ast.NotEq, ast.Lt,
    ast.LtE, ast.Gt, ast.GtE, ast.Is, ast.IsNot, ast.In, ast.NotIn, ast.Name, ast.Load,
    ast.Constant, ast.IfExp, ast.Tuple, ast.Attribute,
)


@dataclass(frozen=True)
class Expr:
    text: str
    tree: ast.Expression = field(repr=False, compare=False)

    def names(self) -> list[str]:
        """Config keys the expression reads, in order of appearance."""
        seen: list[str] = []
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Name) and node.id not in ("unknown", "env") and node.id not in seen:
                seen.append(node.id)
        return seen

    def env_names(self) -> list[str]:
        return [n.attr for n in ast.walk(self.tree)
                if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)]


def compile_expr(text: str) -> Expr:
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise RuleError(f"expression {text!r}: {exc.msg}") from None
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise RuleError(f"expression {text!r}: {type(node).__name__} is not allowed")
        if isinstance(node, ast.Attribute) and not (
            isinstance(node.value, ast.Name) and node.value.id == "env"
        ):
            raise RuleError(f"expression {text!r}: only env.NAME attributes are allowed")
    return Expr(text.strip(), tree)


def evaluate(expr: Expr, lookup: Callable[[str], Any], env: Callable[[str], Any]) -> Any:
    """Kleene logic over config values; any unknown operand of an operator gives unknown."""
    return _eval(expr.tree.body, lookup, env)


def _eval(node: ast.AST, lookup: Callable[[str], Any], env: Callable[[str], Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return UNKNOWN if node.id == "unknown" else lookup(node.id)
    if isinstance(node, ast.Attribute):
        return env(node.attr)
    if isinstance(node, ast.Tuple):
        items = tuple(_eval(e, lookup, env) for e in node.elts)
        return UNKNOWN if any(i is UNKNOWN for i in items) else items
    if isinstance(node, ast.BoolOp):
        return _bool_op(node, lookup, env)
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, lookup, env)
        if v is UNKNOWN:
            return UNKNOWN
        return (not v) if isinstance(node.op, ast.Not) else -v
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left, lookup, env), _eval(node.right, lookup, env)
        if a is UNKNOWN or b is UNKNOWN or a is None or b is None:
            return UNKNOWN
        try:
            return _BINOPS[type(node.op)](a, b)
        except (ZeroDivisionError, TypeError):
            return UNKNOWN
    if isinstance(node, ast.Compare):
        left = _eval(node.left, lookup, env)
        for op, right_node in zip(node.ops, node.comparators):
            right = _eval(right_node, lookup, env)
            if left is UNKNOWN or right is UNKNOWN:
                return UNKNOWN
            try:
                ok = _COMPARE[type(op)](left, right)
            except TypeError:
                return UNKNOWN
            if not ok:
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        test = _eval(node.test, lookup, env)
        if test is UNKNOWN:
            a, b = _eval(node.body, lookup, env), _eval(node.orelse, lookup, env)
            return a if (a is not UNKNOWN and b is not UNKNOWN and a == b) else UNKNOWN
        return _eval(node.body if test else node.orelse, lookup, env)
    raise RuleError(f"cannot evaluate {type(node).__name__}")  # unreachable after compile_expr


def _bool_op(node: ast.BoolOp, lookup, env) -> Any:
    is_and = isinstance(node.op, ast.And)
    saw_unknown = False
    last: Any = None
    for operand in node.values:
        last = _eval(operand, lookup, env)
        if last is UNKNOWN:
            saw_unknown = True
        elif bool(last) is not is_and:  # a known False under `and`, a known True under `or`
            return last
    return UNKNOWN if saw_unknown else last


_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
}
_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
    ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}


# --- values ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Value:
    """One effective value, the sentence that explains it and where that was read."""

    value: Any
    provenance: str
    source: str
    history: tuple[str, ...] = ()
    # Launch-script lines this value traces back to; findings point at the first.
    lines: tuple[int, ...] = ()

    @property
    def known(self) -> bool:
        return self.value is not UNKNOWN

    def json_value(self) -> Any:
        return "unknown" if self.value is UNKNOWN else self.value


@dataclass
class EffectiveConfig:
    """What the schedules see, plus the findings the rules raised while deriving it."""

    values: dict[str, Value]
    versions: dict[str, str | None]
    launch_path: str
    env: dict[str, EnvVar] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    # Checks that could not be decided (an input was unknown): "id: what was unknown".
    undecided: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def get(self, key: str) -> Value | None:
        return self.values.get(key)

    def value(self, key: str) -> Any:
        """The plain value; UNKNOWN when unknown or never derived."""
        v = self.values.get(key)
        return UNKNOWN if v is None else v.value

    def evaluate(self, text: str) -> Any:
        """Evaluate a condition over this config, e.g. `variable_seq_lengths or mtp_standalone`."""
        return evaluate(compile_expr(text), self.value, lambda n: _env_value(self.env, n))

    def to_json(self) -> dict[str, Any]:
        keys = sorted(self.values)
        return {
            "effective": {k: self.values[k].json_value() for k in keys},
            "provenance": {k: self.values[k].provenance for k in keys},
            "sources": {k: self.values[k].source for k in keys},
            "history": {k: list(self.values[k].history) for k in keys},
            "versions": dict(self.versions),
            "undecided": list(self.undecided),
            "notes": list(self.notes),
        }


def _env_value(env: dict[str, EnvVar], name: str) -> Any:
    """What the training command sees: unset is None; a plain (unexported) assignment reaches it
    only if the calling environment exports the name, so its value there is unknown."""
    var = env.get(name)
    if var is None:
        return None
    return UNKNOWN if isinstance(var.value, Symbolic) or var.how == "assign" else var.value


# --- rules ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stage:
    name: str
    order: int
    framework: str
    launchers: tuple[str, ...] | None
    flags: bool
    about: str

    def runs_for(self, launcher: str) -> bool:
        return self.launchers is None or any(fnmatch.fnmatch(launcher, p) for p in self.launchers)


@dataclass(frozen=True)
class Entry:
    """One [[arg]], [[rule]] or [[check]] entry, resolved for the framework version in use."""

    table: str
    id: str
    framework: str
    stage: str
    data: dict[str, Any] = field(repr=False)
    version: str | None
    read: str

    @property
    def key(self) -> str:
        return self.data.get("key", "")

    def source_ref(self) -> str:
        src = self.data.get("source", "")
        if not src or not self.read or not re.search(r":\d+$", src):
            return f"{self.framework}: {src}" if src else self.framework
        if self.version and self.version != self.read:
            path, _, line = src.rpartition(":")
            return f"{self.framework} {self.version}: {path} (line {line} as read in {self.read})"
        return f"{self.framework} {self.read}: {src}"


@dataclass
class RuleBook:
    """All frameworks' rules for the versions in use: stages in order and their entries."""

    stages: list[Stage]
    entries: dict[str, list[Entry]]  # stage name -> entries in file order
    # Entry ids that exist for some version but admit none of the versions in use:
    # id -> (table, its variants).
    uncovered: dict[str, tuple[str, list[dict[str, Any]]]]
    models: list[tuple[str, dict[str, Any]]]  # (framework, [[model]] entry)
    verified: dict[str, list[str]]


def load_rulebook(versions: dict[str, str | None], directory: Path | None = None) -> RuleBook:
    stages: list[Stage] = []
    entries: dict[str, list[Entry]] = {}
    uncovered: dict[str, tuple[str, list[dict[str, Any]]]] = {}
    models: list[tuple[str, dict[str, Any]]] = []
    verified: dict[str, list[str]] = {}
    for fw in FRAMEWORKS:
        rs = rules_mod.load(fw, versions.get(fw), directory)
        meta = rs.section("framework")
        read = str(meta.get("read", ""))
        verified[fw] = [str(v) for v in meta.get("verified", [])]
        for s in rs.data.get("stage", []):
            launchers = s.get("launchers")
            stages.append(Stage(s["name"], int(s["order"]), fw,
                                tuple(launchers) if launchers is not None else None,
                                bool(s.get("flags", False)), s.get("about", "")))
        for table in ("arg", "rule", "check"):
            admitted = rs.table(table)
            for raw in rs.data.get(table, []):
                ident = _entry_id(table, raw)
                if any(e is raw for e in admitted):
                    entry = Entry(table, ident, fw, raw["stage"], raw, versions.get(fw),
                                  str(raw.get("read", read)))
                    entries.setdefault(raw["stage"], []).append(entry)
                else:
                    uncovered.setdefault(ident, (table, []))[1].append(raw)
        models.extend((fw, m) for m in rs.table("model"))
    # An id is uncovered only when none of its variants was admitted.
    admitted_ids = {e.id for es in entries.values() for e in es}
    uncovered = {k: v for k, v in uncovered.items() if k not in admitted_ids}
    stages.sort(key=lambda s: s.order)
    known_stages = {s.name for s in stages}
    for name in list(entries) + [raws[0]["stage"] for _, raws in uncovered.values()]:
        if name not in known_stages:
            raise RuleError(f"an entry refers to the undeclared stage {name!r}")
    return RuleBook(stages, entries, uncovered, models, verified)


def _entry_id(table: str, raw: dict[str, Any]) -> str:
    if "id" in raw:
        return str(raw["id"])
    if table == "arg":
        return f"arg:{raw['stage']}:{raw['key']}"
    raise RuleError(f"[[{table}]] entry without id: {raw}")


# --- deriving ------------------------------------------------------------------------------------


def installed_torch_version() -> str | None:
    """The installed torch's version from its metadata; torch itself is never imported."""
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


def resolve_torch_version(explicit: str | None, launch: LaunchConfig) -> tuple[str | None, str]:
    """--torch VERSION, else the installed torch, else the script's `torch==X` pin comment."""
    if explicit:
        return explicit, "--torch"
    installed = installed_torch_version()
    if installed:
        return installed, "the torch installed where p2paudit runs (pass --torch for the cluster's)"
    if launch.torch_pin:
        return launch.torch_pin, f"{launch.path}: torch=={launch.torch_pin} comment"
    return None, "no --torch, no installed torch and no torch==X comment in the script"


def derive(
    launch: LaunchConfig,
    versions: dict[str, str | None],
    overrides: dict[str, str] | None = None,
    torch_version: str | None = None,
    rules_directory: Path | None = None,
) -> EffectiveConfig:
    """Evaluate every stage's rules for this launch script and these framework versions.

    `versions` maps distribution names ("megatron-core", "ms-swift", "mcore-bridge") to versions;
    a missing or None version leaves what that framework decides unknown. `overrides` are
    `--set KEY=VALUE` pairs: they pin the key, so no later rule changes it. `torch_version` is
    resolved with `resolve_torch_version` when None.
    """
    tv, tv_origin = resolve_torch_version(torch_version, launch)
    all_versions = {fw: versions.get(fw) for fw in FRAMEWORKS if fw != "torch"}
    all_versions["torch"] = tv
    book = load_rulebook(all_versions, rules_directory)
    deriver = _Deriver(launch, all_versions, book)
    deriver.put("torch_version", tv, f"torch {tv or 'unknown'} ({tv_origin})", "torch version")
    deriver.put("launcher", launch.launcher, f"{launch.path}:{launch.command_line}: {launch.launcher}",
                f"{launch.path}:{launch.command_line}", (launch.command_line,))
    deriver.pin_overrides(overrides or {})
    deriver.launch_inputs()
    deriver.model_sizes()
    deriver.run()
    return deriver.result()


class _Deriver:
    def __init__(self, launch: LaunchConfig, versions: dict[str, str | None], book: RuleBook) -> None:
        self.launch = launch
        self.versions = versions
        self.book = book
        self.values: dict[str, Value] = {}
        self.pinned: set[str] = set()
        self.findings: list[Finding] = []
        self.undecided: list[str] = []
        self.notes: list[str] = []
        self.arg_types: dict[str, str] = {
            e.key: e.data.get("type", "str")
            for es in book.entries.values() for e in es if e.table == "arg"
        }

    # -- bookkeeping --

    def put(self, key: str, value: Any, provenance: str, source: str,
            lines: tuple[int, ...] = ()) -> None:
        if key in self.pinned:
            return
        old = self.values.get(key)
        history = (old.history if old else ()) + (provenance,)
        self.values[key] = Value(value, provenance, source, history, lines)

    def lookup(self, key: str) -> Any:
        v = self.values.get(key)
        return UNKNOWN if v is None else v.value

    def env(self, name: str) -> Any:
        return _env_value(self.launch.env, name)

    def eval(self, expr: Expr) -> Any:
        return evaluate(expr, self.lookup, self.env)

    def lines_of(self, *exprs: Expr | None) -> tuple[int, ...]:
        lines: list[int] = []
        for expr in exprs:
            if expr is None:
                continue
            for name in expr.names():
                v = self.values.get(name)
                lines.extend(v.lines if v else ())
            for name in expr.env_names():
                var = self.launch.env.get(name)
                if var is not None:
                    lines.append(var.line)
        return tuple(dict.fromkeys(lines))

    # -- inputs --

    def pin_overrides(self, overrides: dict[str, str]) -> None:
        for key, text in overrides.items():
            value = _coerce(text, self.arg_types.get(key, "auto"), f"--set {key}", None)
            self.values[key] = Value(value, f"--set {key}={text}", "--set", (f"--set {key}={text}",))
            self.pinned.add(key)

    def launch_inputs(self) -> None:
        path = self.launch.path
        for key in ("nproc_per_node", "nnodes"):
            raw = getattr(self.launch, key)
            if raw is None:
                self.put(key, UNKNOWN, f"{key}: the launch script does not set it", path)
            elif isinstance(raw, Symbolic):
                self.put(key, UNKNOWN, f"{key}: {raw.text} is not resolved in the script", path)
            else:
                origin = self.launch.world_source.get(key, f"{key}={raw} from the launch script")
                self.put(key, raw, origin, path, tuple(_lines_in(origin)))

    def model_sizes(self) -> None:
        """[[model]] entries keyed by the --model value (hub id or a path ending in the name).

        Without a match every size key a [[model]] entry can give is unknown: the real value
        comes from the checkpoint's config.json, which p2paudit does not read.
        """
        flag = self.launch.flags.get("model")
        if flag is not None and isinstance(flag.value, str):
            wanted = flag.value.rstrip("/").rsplit("/", 1)[-1].lower()
            for fw, model in self.book.models:
                if wanted in (n.rsplit("/", 1)[-1].lower() for n in model.get("names", [])):
                    for key, value in model.get("values", {}).items():
                        self.put(key, value, f"{model['names'][0]} config.json: {key}={value}",
                                 model.get("source", fw), (flag.line,))
                    return
        shown = f"--model {flag.value}" if flag else "no --model"
        why = f"{shown}: no [[model]] entry gives its sizes; give them with --set KEY=N"
        for key in dict.fromkeys(k for _, m in self.book.models for k in m.get("values", {})):
            if key not in self.pinned:
                self.put(key, UNKNOWN, why, "model config.json")
        self.notes.append(why)

    # -- stages --

    def run(self) -> None:
        launcher = self.launch.launcher
        frontend = any(s.flags and s.launchers is not None and s.runs_for(launcher)
                       for s in self.book.stages)
        if not frontend:
            known = sorted({p for s in self.book.stages if s.flags for p in (s.launchers or ())})
            self.notes.append(f"launcher {launcher!r} matches no rules frontend ({', '.join(known)}): "
                              "what its argument handling decides is unknown")
        for stage in self.book.stages:
            if not stage.runs_for(launcher):
                if not frontend:
                    self._mark_unknown(stage, f"launcher {launcher!r} has no rules for "
                                              f"{stage.framework}'s {stage.name}")
                continue
            if self.versions.get(stage.framework) is None and stage.framework != "torch":
                self._mark_unknown(stage, f"{stage.framework} version unknown: its "
                                          f"{stage.name} rules were not applied")
                continue
            self._note_unverified(stage.framework)
            for entry in self.book.entries.get(stage.name, []):
                self._apply(entry)
            self._uncovered(stage)

    def _mark_unknown(self, stage: Stage, why: str) -> None:
        entries = self.book.entries.get(stage.name, [])
        keys = [e.key for e in entries if e.table != "check"]
        keys += [raws[0].get("key", "") for table, raws in self.book.uncovered.values()
                 if raws[0]["stage"] == stage.name and table != "check"]
        for key in dict.fromkeys(k for k in keys if k):
            self.put(key, UNKNOWN, why, stage.framework)
        self.undecided.extend(f"{e.id}: {why}" for e in entries if e.table == "check")

    def _note_unverified(self, framework: str) -> None:
        version = self.versions.get(framework)
        verified = self.book.verified.get(framework) or []
        if not version or not verified or version in verified:
            return
        note = (f"{framework} {version}: its rules were read from {', '.join(verified)}; "
                f"{version} itself was not read")
        if note not in self.notes:
            self.notes.append(note)

    def _uncovered(self, stage: Stage) -> None:
        version = self.versions.get(stage.framework)
        for ident, (table, raws) in self.book.uncovered.items():
            if raws[0]["stage"] != stage.name:
                continue
            spans = ", ".join(str(r.get("versions", "*")) for r in raws)
            why = (f"{stage.framework} {version or 'unknown'}: rule {ident} covers only {spans}")
            if table == "check":
                # A check whose ranges exclude a known version does not exist in that version.
                if version is None:
                    self.undecided.append(why)
            else:
                self.put(raws[0]["key"], UNKNOWN, why, stage.framework)

    def _apply(self, entry: Entry) -> None:
        try:
            if entry.table == "arg":
                self._apply_arg(entry)
            elif entry.table == "rule":
                self._apply_rule(entry)
            else:
                self._apply_check(entry)
        except RuleError as exc:
            raise RuleError(f"rules/{entry.framework}.toml [[{entry.table}]] {entry.id}: {exc}") from None

    def _apply_arg(self, entry: Entry) -> None:
        key, data = entry.key, entry.data
        default = data.get("default")
        self.put(key, default,
                 f"{entry.framework} default {key}={_show(default)}", entry.source_ref())
        names = [key] + list(data.get("aliases", []))
        flag = next((self.launch.flags[n] for n in names if n in self.launch.flags), None)
        if flag is None:
            return
        value = _coerce(flag.value, data.get("type", "str"), flag.spelling, flag.line, self.launch.path)
        shown = "" if flag.value is True else f" {flag.value}"
        self.put(key, value, f"{self.launch.path}:{flag.line}: {flag.spelling}{shown}",
                 f"{self.launch.path}:{flag.line}", (flag.line,))

    def _apply_rule(self, entry: Entry) -> None:
        key, data = entry.key, entry.data
        when = compile_expr(data["when"]) if "when" in data else None
        value_expr = compile_expr(data["value"]) if isinstance(data.get("value"), str) else None
        action = data.get("action", "set")
        if action == "merge":
            self._merge(entry, value_expr)
            return
        if action not in ("set", "default"):
            raise RuleError(f"action must be set, default or merge, not {action!r}")
        holds = True if when is None else self.eval(when)
        if action == "default" and key in self.values:
            current = self.values[key].value
            holds = _and3(holds, UNKNOWN if current is UNKNOWN else current is None)
        if holds is False:
            return
        new = self.eval(value_expr) if value_expr is not None else data.get("value")
        lines = self.lines_of(when, value_expr)
        sentence = _interpolate(data.get("provenance", f"{key} = {data.get('value')}"),
                                lambda name: new if name == key else self.lookup(name), self.env)
        if holds is UNKNOWN:
            if new is not UNKNOWN and new == self.lookup(key):
                return
            cond = when.text if when is not None else f"{key} is None"
            self.put(key, UNKNOWN, f"{sentence}: applies only if {cond}, which is unknown",
                     entry.source_ref(), lines)
            return
        self.put(key, new, sentence, entry.source_ref(), lines)

    def _merge(self, entry: Entry, value_expr: Expr | None) -> None:
        """Every key of a dict-valued setting (e.g. --megatron_extra_kwargs) set as given."""
        if value_expr is None:
            raise RuleError("merge needs a value expression naming a dict-valued key")
        extra = self.eval(value_expr)
        lines = self.lines_of(value_expr)
        if extra is None:
            return
        if extra is UNKNOWN or not isinstance(extra, dict):
            self.notes.append(f"{value_expr.text} is unknown or not a JSON object: any value it "
                              "could set is taken as if it were not given")
            return
        for key, value in extra.items():
            self.put(key, value, f"{entry.data.get('provenance', entry.id)}: {key}={value!r}",
                     entry.source_ref(), lines)

    def _apply_check(self, entry: Entry) -> None:
        data = entry.data
        when = compile_expr(data["when"])
        holds = self.eval(when)
        if holds is UNKNOWN:
            unknown = [n for n in when.names() if self.lookup(n) is UNKNOWN]
            self.undecided.append(f"{entry.id}: unknown {', '.join(unknown) or 'input'}")
            return
        if not holds:
            return
        lines = self.lines_of(when)
        blame = data.get("blame")
        if blame:
            for name in blame:
                v = self.values.get(name)
                if v and v.lines:
                    lines = v.lines + lines
                    break
        where = f"{self.launch.path}:{lines[0] if lines else self.launch.command_line}"
        message = _interpolate(data["message"], self.lookup, self.env)
        effect = data.get("effect")
        if effect:
            message = f"{message} ({entry.framework}: {effect})"
        self.findings.append(Finding(
            kind=data["kind"], severity=data.get("severity", "error"), message=message,
            fix=_interpolate(data.get("fix", ""), self.lookup, self.env), where=where,
            detail={"rule": entry.id, "source": entry.source_ref(),
                    "category": data.get("category", "config")},
        ))

    def result(self) -> EffectiveConfig:
        return EffectiveConfig(self.values, dict(self.versions), self.launch.path,
                               dict(self.launch.env), self.findings, self.undecided, self.notes)


def _lines_in(text: str) -> list[int]:
    """Line numbers cited as `(path:LINE)` in a launch reader's provenance string."""
    return [int(n) for n in re.findall(r":(\d+)\)", text)]


def _and3(a: Any, b: Any) -> Any:
    if a is False or b is False:
        return False
    if a is UNKNOWN or b is UNKNOWN:
        return UNKNOWN
    return bool(a) and bool(b)


def _show(value: Any) -> str:
    return "unknown" if value is UNKNOWN else repr(value) if isinstance(value, str) else str(value)


_BRACES = re.compile(r"\{([^{}]+)\}")


def _interpolate(text: str, lookup, env) -> str:
    """`{expr}` in a message or provenance sentence, evaluated over the config."""
    def one(m: re.Match[str]) -> str:
        value = evaluate(compile_expr(m.group(1)), lookup, env)
        return value if isinstance(value, str) else _show(value)
    return _BRACES.sub(one, text)


_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def _coerce(raw: Any, kind: str, spelling: str, line: int | None, path: str = "--set") -> Any:
    """A flag's text as the framework's argument parser would type it; bad text is bad input."""
    if isinstance(raw, Symbolic):
        return UNKNOWN
    optional = kind.startswith("optional_")
    base = kind.removeprefix("optional_")
    if isinstance(raw, str) and raw.lower() in ("none", "null") and (optional or kind == "auto"):
        return None
    if base == "bool":
        if raw is True or raw is False:
            return raw
        if str(raw).lower() in _TRUE:
            return True
        if str(raw).lower() in _FALSE:
            return False
    elif base == "int":
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and re.fullmatch(r"[+-]?\d+", raw.strip()):
            return int(raw)
    elif base == "json":
        try:
            return json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError:
            pass
    elif base == "str":
        return raw if isinstance(raw, str) else str(raw)
    elif base == "auto":
        text = str(raw).strip()
        if re.fullmatch(r"[+-]?\d+", text):
            return int(text)
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        return text
    raise InputError(path, f"{spelling} {raw!r}: expected {kind.replace('_', ' ')}", line)


def overrides_from(pairs: Iterable[str]) -> dict[str, str]:
    """`--set KEY=VALUE` arguments to a dict; a pair without `=` is bad input."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InputError("--set", f"{pair!r}: expected KEY=VALUE")
        out[key.strip().lstrip("-").replace("-", "_")] = value.strip()
    return out
