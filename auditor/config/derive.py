"""Deriving the effective config: the values megatron-core's pipeline schedules will see, each with why.

A launch script says little directly: `batch_p2p_comm` is decided by the front end's argument
handling (ms-swift's, then overwritten by mcore-bridge's `ModelConfig.__post_init__`; or
Megatron-LM's validate_args and core_transformer_config_from_args), then read by megatron-core,
whose run-time behaviour in turn depends on torch's own rules. Each of those steps is data in
`rules/<framework>.toml`, keyed by version ranges and read from the real code of those versions;
this module only evaluates them, in stage order, over the expression language of
auditor.config.expr, as auditor.rulebook.stages selects them for the versions in use.

Rule tables (in any framework file):
- `[[stage]]`  name, order, optional `launchers` (fnmatch patterns of `LaunchConfig.launcher`;
  a stage with launchers runs only for those), `flags = true` where the command line is parsed.
- `[[arg]]`    an argument of a `flags` stage: key, type, default, aliases (other flag names).
- `[[rule]]`   action `set` (when `when` holds, key = value) or `default` (only while the key is
  unset or None), `value` an expression (a TOML non-string is a literal).
- `[[check]]`  `when` is the illegal condition; holding, it becomes a Finding. `supersedes`:
  ids of later checks that see the same illegal setting after this one already stopped the run;
  they are not reported again. `explains`: finding kinds this check, holding, is the cause of
  (shown under it, analysis.causes); `headline`: its cause chain in one sentence.
- model sizes a launch script does not state, keyed by the `--model` value: rules/models.toml's
  `[[model]]` entries, looked up by config/model_facts.py.
Every entry carries `versions`, `source` (path:line, read at `read`, default `[framework].read`)
and for the agreement tests `code` (the line as written) and `function`/`class`.

Three-valued throughout: an input that is unknown (a `${VAR}` the shell reader could not resolve,
a framework version no rule admits, a model size nobody stated) makes what depends on it unknown,
never a guess.

One algorithm, kept whole although it is over 500 lines: `_Deriver` evaluates the stages in
order over one table of values (inputs, `--set` pins, model sizes, each stage's args, rules and
checks, what an unknown version leaves unknown), every step reading what the earlier ones wrote
and the provenance, unknown roots and superseded checks they recorded; a module per step would
hand all of that state around. What reads only finished configs is apart: the merge of the
configs derived under several torch releases (`across_torch`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from auditor.bash.values import EnvVar, Symbolic
from auditor.config.across_torch import merge_across_torch
from auditor.config.checkpoint_args import checkpoint_sizes
from auditor.config.generate_entry import entry_defaults, entry_set
from auditor.config.coerce import coerce
from auditor.config.effective import EffectiveConfig, Value, env_value
from auditor.config.envread import ENV_PREFIX, SET_ENV, STATED, env_key, given, readers
from auditor.config.flags import open_settings
from auditor.config import model_facts
from auditor.config.frontends.checkout_args import Given, arg_from_checkout
from auditor.config.expr import (
    UNKNOWN,
    Expr,
    RuleError,
    and3,
    compile_expr,
    evaluate,
    interpolate,
    show,
)
from auditor.config.model import LaunchConfig
from auditor.config.overrides import hydra_dict
from auditor.config.torch_version import resolve as resolve_torch
from auditor.errors import InputError
from auditor.findings import Finding
from auditor.rulebook import files as rulebook_files
from auditor.rulebook.frameworks import (
    NOT_THIS_STACK,
    Stack,
    pin_option,
)
from auditor.rulebook.stages import Entry, RuleBook, Stage, load_rulebook


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
    `--set KEY=VALUE` pairs: they pin the key, so no later rule changes it. `torch_version`:
    --torch; None reads what the script states (config.torch_version.resolve).
    """
    basis = resolve_torch(torch_version, launch)
    results = []
    stack = launch.stack if rules_directory is None else Stack.of(launch.launcher, rules_directory)
    by_entries: dict[tuple[int, ...], EffectiveConfig] = {}
    for release in basis.releases or (None,):
        # Releases that admit the same torch entries derive the same config: derived once.
        same = _torch_entries(release, rules_directory)
        if same in by_entries:
            results.append(by_entries[same])
            continue
        book = load_rulebook({**versions, "torch": release}, rules_directory, launch.checkouts)
        deriver = _Deriver(launch, book, stack.foreign_settings, stack.names)
        deriver.put("torch_version", basis.version if basis.version else UNKNOWN,
                    basis.origin, "torch version")
        deriver.put("launcher", launch.launcher,
                    f"{launch.path}:{launch.command_line}: {launch.launcher}",
                    f"{launch.path}:{launch.command_line}", (launch.command_line,))
        deriver.pin_overrides(overrides or {})
        deriver.pin_open({**checkpoint_sizes(launch), **entry_set(launch), **open_settings(launch)})
        deriver.launch_inputs()
        deriver.model_sizes()
        deriver.run()
        results.append(by_entries.setdefault(same, deriver.result()))
    merged = results[0] if len(results) == 1 else merge_across_torch(results, basis)
    merged.torch_releases = basis.releases
    merged.torch_origin = basis.origin
    merged.torch_why_across = basis.why_across
    merged.torch_by_range = basis.by_range
    merged.torch_stated = basis.version
    if basis.across:
        merged.versions["torch"] = None
    merged.notes = list(dict.fromkeys([*merged.notes, *basis.notes]))
    return merged


def _torch_entries(release: str | None, rules_directory: Path | None) -> tuple[int, ...]:
    """The torch rules entries `release` admits, and the rules of other files whose `torch`
    specifier admits it, by identity (the parsed files are cached)."""
    rules = rulebook_files.load("torch", release, rules_directory)
    own = [id(e) for name, table in rules.data.items() if isinstance(table, list) for e in rules.table(name)]
    others = [id(e) for name in rulebook_files.names(rules_directory) if name != "torch"
              for e in rulebook_files.load(name, None, rules_directory).data.get("rule", [])
              if "torch" in e and rulebook_files.version_in(release, e["torch"])]
    return tuple(own + others)


# The provenance of a setting only another stack's rules give (megatron-core's on a torchtitan
# run): unknown, and not this run's to show (report/text.py).
OFF_STACK = "not this run's stack: "


class _Deriver:
    def __init__(self, launch: LaunchConfig, book: RuleBook, foreign: dict[str, list[str]],
                 stack: set[str] | None) -> None:
        self.launch = launch
        # Settings of another stack (rulebook.frameworks.Stack.foreign_settings): no check is judged by
        # them, unless a rule of this run's stack derives it (torchtitan's pp size is one).
        derived = {e.data["key"] for es in book.entries.values() for e in es
                   if e.table == "rule" and "key" in e.data and stack is not None and e.framework in stack}
        self.stack = stack  # the rules files of this run's stack; None: unknown
        self.own_rules = derived  # keys a rule of this run's stack derives
        self.versions = book.versions
        self.env_readers = readers(book.versions.get("torch"))
        self.book = book
        self.values: dict[str, Value] = {}
        self.pinned: set[str] = set()
        # The environment the training command gets, with `--set env.NAME=VALUE` in place of
        # what the script leaves unknown (a `source` of a file not here may set anything).
        self.environ: dict[str, EnvVar] = dict(launch.env)
        # derived key -> the unknown inputs it rests on (`_derived_from`)
        self.roots: dict[str, list[str]] = {}
        self.findings: list[Finding] = []
        self.undecided: list[str] = []
        self.notes: list[str] = []
        self.outside_rules: dict[str, list[str]] = {}
        # Checks not reported because an earlier check that stops the run fired (`supersedes`).
        self.superseded: set[str] = set()
        running = {s.name for s in _running(book, launch)}
        args = [e for es in book.entries.values() for e in es if e.table == "arg"]
        # The arguments of this launcher's front end, also those no rule admits for its version.
        self.frontend_args = {e.key for e in args if e.stage in running} | {
            raws[0]["key"] for table, raws in book.uncovered.values()
            if table == "arg" and raws[0]["stage"] in running}
        # A setting this run's own front end gives is its own, whatever other stacks need it
        # (Megatron-DeepSpeed's --pipeline-model-parallel-size on DeepSpeed's stack).
        # So is one the entry script's own code gives (a DeepSpeed PipelineModule's num_stages).
        self.foreign = {k: v for k, v in foreign.items()
                        if k not in derived and k not in self.frontend_args and k not in launch.entry_values}
        # --set values are typed as this launcher's front end types them.
        self.arg_types: dict[str, str] = {
            e.key: e.data.get("type", "str")
            for e in sorted(args, key=lambda e: e.stage in running)
        }

    # -- bookkeeping --

    def put(self, key: str, value: Any, provenance: str, source: str,
            lines: tuple[int | str, ...] = ()) -> None:
        if key in self.pinned:
            return
        old = self.values.get(key)
        history = (old.history if old else ()) + (provenance,)
        self.values[key] = Value(value, provenance, source, history, lines)

    def lookup(self, key: str) -> Any:
        v = self.values.get(key)
        return UNKNOWN if v is None else v.value

    def env(self, name: str) -> Any:
        return env_value(self.environ, name, self.env_readers)

    def eval(self, expr: Expr) -> Any:
        return evaluate(expr, self.lookup, self.env)

    def lines_of(self, *exprs: Expr | None) -> tuple[int | str, ...]:
        """The launch-script lines the inputs of `exprs` come from; a setting of another file
        (the entry script's, auditor.config.pyenv) as its `file:line`."""
        lines: list[int | str] = []
        for expr in exprs:
            if expr is None:
                continue
            for name in expr.names():
                v = self.values.get(name)
                lines.extend(v.lines if v else ())
            for name in expr.env_names():
                var = self.environ.get(name)
                if var is not None and var.how == SET_ENV:
                    lines.append(f"--set {ENV_PREFIX}{name}={var.value}")
                elif var is not None:
                    lines.append(var.where("") if var.path else var.line)
        return tuple(dict.fromkeys(lines))

    # -- inputs --

    def pin_overrides(self, overrides: dict[str, str]) -> None:
        for key, text in overrides.items():
            name = env_key(key)
            if name is not None:  # the variable as the job's environment has it, read as torch reads it
                self._refuse_stated(key, name, text)
                # No line of the script: findings cite the `--set`, and `fix` edits nothing for it.
                self.environ[name] = EnvVar(name, given(name, text, self.versions.get("torch")), 0, SET_ENV)
                continue
            value = coerce(text, self.arg_types.get(key, "auto"), f"--set {key}", None)
            self.values[key] = Value(value, f"--set {key}={text}", "--set", (f"--set {key}={text}",))
            self.pinned.add(key)

    def _refuse_stated(self, key: str, name: str, text: str) -> None:
        """`--set env.NAME` decides only a value the script leaves unknown: one the script states
        at the training command (an export after every unread `source`) is not overridden silently."""
        old = self.launch.env.get(name)
        if old is None or old.how not in STATED or isinstance(old.value, Symbolic):
            return
        raise InputError(f"--set {key}={text}", f"the script sets {name}={old.value} at "
                         f"{old.where(self.launch.path)}; --set {key} decides only a value the "
                         "script leaves unknown")

    def pin_open(self, settings: dict[str, tuple[str, int]]) -> None:
        """Settings a word not known statically may set (config.flags.open_settings) or the
        checkpoint gives (config.checkpoint_args): unknown, whatever the rules derive, unless --set
        gives them."""
        for key, (why, line) in settings.items():
            if key not in self.pinned:
                self.values[key] = Value(UNKNOWN, why, self.launch.path, (why,), (line,))
                self.pinned.add(key)

    def launch_inputs(self) -> None:
        path = self.launch.path
        self._backend()
        for key in ("nproc_per_node", "nnodes"):
            raw = getattr(self.launch, key)
            if raw is None:
                self.put(key, UNKNOWN, f"{key}: the launch script does not set it", path)
            elif isinstance(raw, Symbolic):
                self.put(key, UNKNOWN, f"{key}: {raw.text} is not resolved in the script", path)
            else:
                origin = self.launch.world_source.get(key, f"{key}={raw} from the launch script")
                self.put(key, raw, origin, path, tuple(_lines_in(origin)))
        for key, (value, why, at) in self.launch.entry_values.items():  # config.pyenv
            self.put(key, value, why, at, (at,))

    def _backend(self) -> None:
        """A run on another backend than NCCL, as the script shows it (config.launch `launch.backend`,
        from rules' [[backend]]): its process groups are that backend's whatever name the trainer
        passes (torch_npu runs `nccl` on HCCL), so no rule reads NCCL's behaviour for it. Pinned,
        like --set, which gives another."""
        found = next((d for d in self.launch.diagnostics if d.kind == "launch.backend"), None)
        if found is None or "distributed_backend" in self.pinned:
            return
        line = found.where.rpartition(":")[2]
        self.put("distributed_backend", found.detail["backend"], found.message.partition(": ")[0],
                 self.launch.path, (int(line),) if line.isdigit() else ())
        self.pinned.add("distributed_backend")

    def model_sizes(self) -> None:
        """The sizes of the model the front end's `model` argument names (ms-swift's `--model`,
        verl's `actor_rollout_ref.model.path`, or its default: a hub id or a path ending in the
        name), as rules/models.toml states them (config/model_facts.py).

        Without a match, and for every size the entry does not state, the key is unknown: the
        real value comes from the checkpoint's config.json, which p2paudit does not read. A front
        end without a `model` argument (Megatron-LM: --num-layers ...) states the sizes as flags.
        """
        if self.frontend_args and "model" not in self.frontend_args:
            return
        flag = next((self.launch.flags[n] for n in ["model", *self._aliases("model")] if n in self.launch.flags), None)
        given = flag.value if flag is not None else self._running_default("model")
        found = model_facts.find(given)
        if found is not None:
            for key, value in found.values.items():
                self.put(key, value, f"{found.name} config.json: {key}={value}", found.source,
                         (flag.line,) if flag is not None else ())
        if flag is not None:
            shown = f"{flag.spelling}{' ' if flag.spelling.startswith('-') else '='}{flag.value}"
        else:
            shown = "no --model" if given is None else f"the default model path {given}"

        def why(keys: str) -> str:
            if found is None and given is not None and model_facts.named(given) is None:
                return f"{shown}: the model path is not known statically; give its sizes with --set KEY=N"
            return (f"{shown}: rules/models.toml names no such model; give its sizes with --set KEY=N" if found is None
                    else f"{shown}: rules/models.toml does not state its {keys}; give it with --set KEY=N")
        left = [k for k in model_facts.size_keys() if k not in self.pinned and (found is None or k not in found.values)]
        for key in left:
            self.put(key, UNKNOWN, why(key), "model config.json")
        if left:
            self.notes.append(why(", ".join(left)))
        for raw in self._model_overrides():
            self._model_override(raw, given)

    def _model_overrides(self) -> list[dict[str, Any]]:
        """The [[model_override]]s of the frameworks whose stages run for this launcher."""
        running = dict.fromkeys(s.framework for s in _running(self.book, self.launch))
        return [raw for fw in running
                for raw in rulebook_files.load(fw, self.book.versions.get(fw)).table("model_override")]

    def _model_override(self, raw: dict[str, Any], model: Any) -> None:
        """One [[model_override]]: what the launch keys it names change in the model's sizes
        (schema.py). Never a default in place of what the script gives: a value not known, or a
        dict the reader cannot split, leaves the setting unknown, pinned against later rules."""
        flags = self.launch.flags
        read = {a for es in self.book.entries.values() for e in es if e.table == "arg" for a in e.data.get("aliases", [])}
        first, *others = raw["keys"]
        where = f"{raw['source']} ({raw.get('about', '')})"
        for key in raw["keys"]:
            flag = flags.get(key)
            if flag is None:
                continue
            line = (flag.line,)
            if raw.get("whole"):
                if flag.value is not None and (model_facts.named(flag.value) != model_facts.named(model)
                                               or model_facts.named(flag.value) is None):
                    for size in model_facts.size_keys():
                        self.put(size, UNKNOWN, f"{key}={flag.value}: the model's config.json is that one; "
                                 f"give {size} with --set {size}=N", where, line)
                continue
            if flag.value is not None and hydra_dict(flag.value) is None:  # `key=${X}`, `key=null`
                for name in [*raw.get("settings", []), *dict.fromkeys(raw.get("hf_sizes", {}).values())]:
                    if name not in self.pinned:
                        self.put(name, UNKNOWN, f"{key}={flag.value} is no dict p2paudit can read; it may set "
                                 f"{name}: give it with --set {name}=VALUE", where, line)
                        self.pinned.add(name)
        for name, size in raw.get("hf_sizes", {}).items():
            given = next((flags[f"{k}.{name}"] for k in raw["keys"] if f"{k}.{name}" in flags), None)
            if given is not None:
                self.put(size, UNKNOWN, f"{given.name}={given.value} changes the model's config.json; "
                         f"give {size} with --set {size}=N", where, (given.line,))
        for name in raw.get("settings", []):
            mine = flags.get(f"{first}.{name}")
            theirs = [flags[f"{k}.{name}"] for k in others if f"{k}.{name}" in flags]
            if name in self.pinned or (mine is None and not theirs) or f"{first}.{name}" in read:
                continue
            value = coerce(mine.value, self.arg_types.get(name, "auto"), mine.name, mine.line) \
                if mine is not None else UNKNOWN
            if any(coerce(t.value, self.arg_types.get(name, "auto"), t.name, t.line) != value for t in theirs):
                at = theirs[0]
                self.put(name, UNKNOWN, f"{at.name}={at.value} gives the other model another {name}; "
                         f"give it with --set {name}=VALUE", where, (at.line,))
            else:
                assert mine is not None
                self.put(name, value, f"{mine.spelling}={mine.value}: merged over the config built from "
                         f"config.json", where, (mine.line,))
            self.pinned.add(name)

    # -- stages --

    def run(self) -> None:
        launcher = self.launch.launcher
        running = _running(self.book, self.launch)
        frontend = any(s.flags and s.launchers is not None for s in running)
        # An entry's own argparse (a Bridge generate program): what the other front ends' stages
        # would decide stays unknown, but for the megatron-core defaults it surely runs.
        spared = entry_defaults(self.launch) if any(s.styles for s in running) else None
        if not frontend:
            known = sorted({p for s in self.book.stages if s.flags for p in (s.launchers or ())})
            self.notes.append(f"launcher {launcher!r} matches no rules frontend ({', '.join(known)}): "
                              "what its argument handling decides is unknown")
        for stage in self.book.stages:
            if stage not in running:
                if stage.framework in self.book.from_checkout and self.stack is not None \
                        and stage.framework not in self.stack:
                    continue  # no release of it is installed: off this run's stack, its code never runs
                if not frontend:
                    self._mark_unknown(stage, f"launcher {launcher!r} has no rules for "
                                              f"{stage.framework}'s {stage.name}", other_frontend=True)
                elif spared is not None:
                    self._mark_unknown(stage, f"{self.launch.style}: its entry parses its own arguments, and "
                                              f"what {stage.framework}'s {stage.name} would decide is not "
                                              "read for it", other_frontend=True, spared=spared)
                continue
            if (self.versions.get(stage.framework) is None and stage.framework != "torch"
                    and stage.framework not in self.book.confirmed_in):
                off = self.stack is not None and stage.framework not in self.stack
                self._mark_unknown(stage, f"{OFF_STACK}{stage.framework}'s {stage.name} rules are not "
                                          f"for a {launcher} run" if off else
                                          self._unread(stage))
                continue
            if self.book.entries.get(stage.name):
                self._note_unverified(stage.framework)
            self._settings_it_lacks(stage)
            for entry in self.book.entries.get(stage.name, []):
                self._apply(entry)
            self._uncovered(stage)

    def _unread(self, stage: Stage) -> str:
        """Why the rules of a stage of this run's stack were not applied: its framework's release
        is unknown, or (one no release selects) no checkout of its code is here to read."""
        if stage.framework in self.book.from_checkout:
            return (f"{stage.framework}'s code is not here (no checkout of it around the script or "
                    f"in the working directory): what its {stage.name} rules decide is unknown")
        return f"{stage.framework} version unknown: its {stage.name} rules were not applied"

    def _mark_unknown(self, stage: Stage, why: str, other_frontend: bool = False,
                      spared: frozenset[str] | None = None) -> None:
        """What the stage would decide is unknown. `other_frontend`: the stage belongs to a front
        end the launcher is not; whatever front end it has derives unknown values too, and reads
        the flags it was given in an unknown way, but a flag it was not given leaves
        megatron-core's own default in place. `spared`: the launch's front end is an entry's own
        argparse, which surely runs none of the stage (its checks included) and leaves these
        settings at megatron-core's default (config/generate_entry.py)."""
        def decided(table: str, raw: dict[str, Any]) -> bool:
            if table != "arg" or not other_frontend:
                return table != "check"
            names = [raw["key"], *raw.get("aliases", [])]
            return any(n in self.launch.flags for n in names) or _named_in_words(self.launch, names)

        def inert(table: str, raws: list[dict[str, Any]]) -> bool:
            """A rule whose `when` is false under this run's values in every variant sets
            nothing, whatever the release (mbridge's rules on a verl run with use_mbridge=False)."""
            return table == "rule" and all("when" in r and self.eval(compile_expr(r["when"])) is False
                                           for r in raws)

        entries = self.book.entries.get(stage.name, [])
        keys = [e.key for e in entries if decided(e.table, e.data) and not inert(e.table, [e.data])]
        keys += [raws[0].get("key", "") for table, raws in self.book.uncovered.values()
                 if raws[0]["stage"] == stage.name and decided(table, raws[0]) and not inert(table, raws)]
        # A front end the launcher is not does not init the process group the entry script inits.
        mine = self.launch.entry_values if other_frontend else {}
        # A framework off this run's stack does not undo what the run's own front end, entry
        # script or rules gave (megatron-core's config stages on a Megatron-DeepSpeed run, whose PP
        # is its flag's; torchtitan's init on a DeepSpeed run, whose init DeepSpeed's rules state).
        off_stack = self.stack is not None and stage.framework not in self.stack
        own = self.frontend_args | set(self.launch.entry_values) | self.own_rules
        for key in dict.fromkeys(k for k in keys if k and k not in mine and not (off_stack and k in own)
                                 and k not in (spared or ())):
            self.put(key, UNKNOWN, why, stage.framework)
        if spared is not None:
            return
        self.undecided.extend(f"{e.id}: {why}" for e in entries if e.table == "check")
        # Checks with version ranges are not admitted for an unknown version: undecided too, where
        # the framework is part of this run's stack (a DeepSpeed run has no megatron-core checks).
        if self.stack is None or stage.framework in self.stack:
            self.undecided.extend(f"{ident}: {why}" for ident, (table, raws) in self.book.uncovered.items()
                                  if table == "check" and raws[0]["stage"] == stage.name)
        merges = [(e.id, e.data) for e in entries if e.table == "rule" and not e.key]
        merges += [(ident, raws[0]) for ident, (table, raws) in self.book.uncovered.items()
                   if table == "rule" and raws[0]["stage"] == stage.name and "key" not in raws[0]]
        for ident, raw in merges:
            self._merge_not_applied(ident, raw, why, stage.framework)

    def _note_unverified(self, framework: str) -> None:
        version = self.versions.get(framework)
        verified = self.book.verified.get(framework) or []
        if not version or not verified or version in verified:
            return
        root = self.book.confirmed_in.get(framework)
        note = (f"{framework} {version}: its rules were read from {', '.join(verified)}; "
                + (f"each applies where its code is in the checkout {root} (rules not found there "
                   "are unknown)" if root is not None else f"{version} itself was not read"))
        if note not in self.notes:
            self.notes.append(note)

    def _uncovered(self, stage: Stage) -> None:
        version = self.versions.get(stage.framework)
        for ident, (table, raws) in self.book.uncovered.items():
            if raws[0]["stage"] != stage.name:
                continue
            spans = ", ".join(str(r.get("versions", "*")) for r in raws)
            root = self.book.confirmed_in.get(stage.framework)
            why = (f"{stage.framework}: the checkout {root} lacks the code of rule {ident} "
                   f"({raws[0].get('source', '')}), so what it decides is unknown"
                   if root is not None and version is None else
                   f"{stage.framework} {version or 'unknown'}: rule {ident} covers only {spans}")
            if table == "check":
                # A check whose ranges exclude a known version does not exist in that version.
                if version is None:
                    self.undecided.append(f"{ident}: {why}")
            elif "key" not in raws[0]:
                self._merge_not_applied(ident, raws[0], why, stage.framework)
            elif self._absent_and_idle(stage.framework, raws[0]):
                continue
            elif table == "arg" and self._from_parser(stage.framework, raws[0]) is not None:
                continue  # given before the stage's rules ran (_settings_it_lacks)
            else:
                self.put(raws[0]["key"], UNKNOWN, why, stage.framework)
                if version is not None:
                    self.outside_rules.setdefault(f"{stage.framework} {version}", []).append(
                        raws[0]["key"])

    def _absent_and_idle(self, framework: str, raw: dict[str, Any]) -> bool:
        """A rule whose code the checkout of this release lacks (rulebook.checkout), under a
        `when` that is false here: whatever that release does instead, this rule would not fire."""
        if framework not in self.book.confirmed_in or "when" not in raw:
            return False
        return self.eval(compile_expr(raw["when"])) is False

    def _settings_it_lacks(self, stage: Stage) -> None:
        """The [[arg]]s of this stage whose code the checkout of this release lacks, read from the
        checkout's parser (_from_parser), before the stage's rules read them."""
        for table, raws in self.book.uncovered.values():
            if table == "arg" and raws[0]["stage"] == stage.name:
                given = self._from_parser(stage.framework, raws[0])
                if given is not None:
                    self.put(raws[0]["key"], *given)

    def _from_parser(self, framework: str, raw: dict[str, Any]) -> Given | None:
        """An uncovered [[arg]] from the parser of the checkout of this release (frontends.checkout_args)."""
        root = self.book.confirmed_in.get(framework)
        label = f"{framework} {self.versions.get(framework)}"
        return arg_from_checkout(raw, root, label, self.launch) if root is not None else None

    def _merge_not_applied(self, ident: str, raw: dict[str, Any], why: str, framework: str) -> None:
        """A merge rule (e.g. --megatron_extra_kwargs) that does not run for this release (or the
        release is unknown). Its option not given sets nothing. Given, the settings it names are
        unknown; where they cannot be read (a value not known statically), anything it sets is
        undecided, and so is the run."""
        given = self._merge_option(raw)
        if given is None:
            return
        by, value, lines = given
        decide = f"{pin_option(framework)} of a release the rule covers"
        keys = _object_keys(value)
        if keys is None:
            self._merge_undecided(ident, by, f"{why}; {decide} also decides them")
            return
        for key in keys:
            self.put(key, UNKNOWN, f"{why}: whether {by} sets {key} is unknown; --set {key}=VALUE "
                                   f"or {decide} decides it", framework, lines)

    def _merge_undecided(self, ident: str, by: str, why: str) -> None:
        """Whatever the merge option sets is unknown: undecided, decided by `--set` of each
        setting it gives (analysis.verdict reads `: unknown ` as the inputs to --set)."""
        self.undecided.append(f"{ident}: unknown the settings {by} gives ({why})")

    def _merge_option(self, raw: dict[str, Any]) -> tuple[str, Any, tuple[int, ...]] | None:
        """Where the run gives a merge rule's dict-valued setting (a flag, or --set), its value and
        its lines; None where nothing gives it."""
        for name in compile_expr(raw["value"]).names():
            if name in self.pinned and self.values[name].value is not None:
                return f"--set {name}", self.values[name].value, ()
            flag = next((self.launch.flags[n] for n in [name, *self._aliases(name)] if n in self.launch.flags), None)
            if flag is not None:
                return f"{flag.spelling} at {self.launch.path}:{flag.line}", flag.value, (flag.line,)
        return None

    def _aliases(self, name: str) -> list[str]:
        """The other spellings of the [[arg]] `name`, also of entries no rule admits for the
        version (verl's `actor_rollout_ref.model.path` for `model`)."""
        aliases = [a for es in self.book.entries.values() for e in es
                   if e.table == "arg" and e.key == name for a in e.data.get("aliases", [])]
        return aliases + [a for table, raws in self.book.uncovered.values() if table == "arg"
                          and raws[0]["key"] == name for r in raws for a in r.get("aliases", [])]

    def _running_default(self, name: str) -> Any:
        """The default of the [[arg]] `name` of this launcher's front end, as its release states it
        (verl's `actor_rollout_ref.model.path: ~/models/deepseek-llm-7b-chat`); None if none."""
        running = {s.name for s in _running(self.book, self.launch)}
        return next((e.data.get("default") for es in self.book.entries.values() for e in es
                     if e.table == "arg" and e.key == name and e.stage in running), None)

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
                 f"{entry.framework} default {key}={show(default)}", entry.source_ref())
        names = [key] + list(data.get("aliases", []))
        flag = next((self.launch.flags[n] for n in names if n in self.launch.flags), None)
        if flag is None:
            return
        value = coerce(flag.value, data.get("type", "str"), flag.spelling, flag.line, self.launch.path)
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
            if current is UNKNOWN and when is None:  # unknown whatever the default: it keeps the
                self._derived_from(key, value_expr)  # why of what left it unknown
                return
            holds = and3(holds, UNKNOWN if current is UNKNOWN else current is None)
        if holds is False:
            return
        new = self.eval(value_expr) if value_expr is not None else data.get("value")
        if action == "default" and holds is True and key in self.values and new == self.lookup(key):
            return  # a default that leaves the value as it was does not claim it
        lines = self.lines_of(when, value_expr)
        sentence = interpolate(data.get("provenance", f"{key} = {data.get('value')}"),
                                lambda name: new if name == key else self.lookup(name), self.env)
        if holds is UNKNOWN:
            if new is not UNKNOWN and new == self.lookup(key):
                return
            cond = when.text if when is not None else f"{key} is None"
            self.put(key, UNKNOWN, f"{sentence}: applies only if {cond}, which is unknown",
                     entry.source_ref(), lines)
            self._derived_from(key, when, value_expr)
            return
        self.put(key, new, sentence, entry.source_ref(), lines)
        if new is UNKNOWN:
            self._derived_from(key, when, value_expr)

    def _derived_from(self, key: str, *exprs: Expr | None) -> None:
        """Record the inputs an unknown derived value rests on: what decides it is stating them
        (`--set num_layers=N`), never `--set` of the derived value itself."""
        if key in self.pinned:
            return
        self.roots[key] = self.inputs_of([n for n in self.unknown_names(*exprs) if n != key]) or [key]

    def unknown_names(self, *exprs: Expr | None) -> list[str]:
        """The settings `exprs` read that are unknown, and as `env.NAME` the unknown variables."""
        names = [n for e in exprs if e is not None for n in e.names() if self.lookup(n) is UNKNOWN]
        return names + [ENV_PREFIX + n for e in exprs if e is not None for n in e.env_names()
                        if self.env(n) is UNKNOWN]

    def inputs_of(self, names: list[str]) -> list[str]:
        """`names` with each derived unknown replaced by the unknown inputs it rests on."""
        return list(dict.fromkeys(r for n in names for r in self.roots.get(n, [n])))

    def _merge(self, entry: Entry, value_expr: Expr | None) -> None:
        """Every key of a dict-valued setting (e.g. --megatron_extra_kwargs) set as given."""
        if value_expr is None:
            raise RuleError("merge needs a value expression naming a dict-valued key")
        extra = self.eval(value_expr)
        lines = self.lines_of(value_expr)
        if extra is None:
            return
        if extra is UNKNOWN:
            given = self._merge_option(entry.data)
            by, what = (given[0], f"its value {given[1]}") if given else (value_expr.text, "its value")
            self._merge_undecided(entry.id, by, f"{what} is not known statically")
            return
        if not isinstance(extra, dict):
            self.notes.append(f"{value_expr.text} is not a JSON object: any value it could set is "
                              "taken as if it were not given")
            return
        for key, value in extra.items():
            self.put(key, value, f"{entry.data.get('provenance', entry.id)}: {key}={value!r}",
                     entry.source_ref(), lines)

    def _apply_check(self, entry: Entry) -> None:
        if entry.id in self.superseded:
            return
        data = entry.data
        when = compile_expr(data["when"])
        holds = evaluate(when, lambda n: UNKNOWN if n in self.foreign else self.lookup(n), self.env)
        if holds is UNKNOWN:
            foreign = [n for n in when.names() if n in self.foreign]
            unknown = self.inputs_of([n for n in self.unknown_names(when) if n not in self.foreign])
            if foreign:
                owners = " and ".join(dict.fromkeys(o for n in foreign for o in self.foreign[n]))
                rest = (f"only its other inputs can rule it out: unknown {', '.join(unknown)}" if unknown
                        else "no input of this run decides it")
                self.undecided.append(f"{entry.id}: reads {owners}'s {', '.join(foreign)}, "
                                      f"{NOT_THIS_STACK} ({self.launch.launcher}); {rest}")
            else:
                self.undecided.append(f"{entry.id}: unknown {', '.join(unknown) or 'input'}")
            return
        if not holds:
            return
        lines = self.lines_of(when)
        blame = data.get("blame")
        if blame:  # the line that states a blamed setting; none states it: the command, where
            # the fix adds it (not the line of some other input its default was derived from)
            stated = [v.lines for v in map(self.values.get, blame) if v and v.lines]
            lines = stated[0] if stated else ()
        first = lines[0] if lines else self.launch.launcher_line or self.launch.command_line
        where = first if isinstance(first, str) else f"{self.launch.path}:{first}"
        message = interpolate(data["message"], self.lookup, self.env)
        effect = data.get("effect")
        if effect:
            message = f"{message} ({entry.framework}: {effect})"
        supersedes = list(data.get("supersedes", []))
        self.superseded.update(supersedes)
        self.findings.append(Finding(
            kind=data["kind"], severity=data.get("severity", "error"), message=message,
            fix=interpolate(data.get("fix", ""), self.lookup, self.env), where=where,
            detail={"rule": entry.id, "source": entry.source_ref(),
                    "category": data.get("category", "config"),
                    **({"supersedes": supersedes} if supersedes else {}),
                    # What this cause explains and its one-sentence chain (analysis.causes).
                    **({"explains": list(data["explains"])} if data.get("explains") else {}),
                    **({"headline": interpolate(data["headline"], self.lookup, self.env)}
                       if data.get("headline") else {})},
        ))

    def result(self) -> EffectiveConfig:
        self._check_sizes()
        return EffectiveConfig(self.values, dict(self.versions),
                               dict(self.environ), self.findings, self.undecided, self.notes,
                               self.outside_rules, self.env_readers, unknown_inputs=self.roots)


    def _check_sizes(self) -> None:
        """A parallel size or process count below 1 that the user gave is bad input, whatever a
        rule would derive from it (PP=-1 would otherwise give DP=-32)."""
        for key in (k for k in SIZE_INPUTS if k in self.values):
            v = self.values[key]
            if isinstance(v.value, int) and not isinstance(v.value, bool) and v.value < 1:
                raise InputError(v.source, f"{key}={v.value} ({v.provenance}): a parallel size or "
                                           "process count is at least 1")


# Sizes the user states (flags, --set, the launcher).
SIZE_INPUTS = ("pipeline_model_parallel_size", "tensor_model_parallel_size",
               "context_parallel_size", "expert_model_parallel_size",
               "virtual_pipeline_model_parallel_size", "nproc_per_node", "nnodes")


# Name parts by which an unread front end's own flags may spell a size (`--pp 2`, `--pp_size 2`,
# `--pipe-parallel-size 2`): such a flag may set it, so megatron-core's default is not assumed.
_SPELLED_WITH = {"pipeline_model_parallel_size": ("pp", "pipe", "pipeline")}


def _running(book: RuleBook, launch: LaunchConfig) -> list[Stage]:
    """The stages that run for this launch: by its launcher, the front end whose parser its
    script builds, or the style of its entry (rulebook.stages Stage.runs_for)."""
    return [s for s in book.stages if s.runs_for(launch.launcher, launch.builds_parser, launch.style)]


def _named_in_words(launch: LaunchConfig, names: list[str]) -> bool:
    """Whether a word of the training command may set one of `names` in a form the front end's
    rules do not read (a Hydra-style `model.pipeline_model_parallel_size=2`, an entry script's
    own `--pp 2`): then that front end, not megatron-core's default, gives the value."""
    spelled = "|".join(re.escape(n) for n in names)
    setting = re.compile(rf"(?:^|[.+])(?:{spelled})=")
    words = [*launch.positionals, *(v for f in launch.flags.values() for v in f.values)]
    if any(isinstance(w, str) and setting.search(w) for w in words):
        return True
    parts = {p for n in names for p in _SPELLED_WITH.get(n, ())}
    keys = [*launch.flags, *(k for w in words if isinstance(w, str) for k in _WORD_KEYS.findall(w))]
    return any(parts & set(re.split(r"[._+-]+", k.lower())) for k in keys)


# Every `KEY=` of a word, also inside a list of them (Megatron-Bridge MIMO's
# `--component language=tp=4,pp=2,dp=2`): an entry's own syntax may set a size by any of them.
_WORD_KEYS = re.compile(r"(?:^|(?<=[,;:=\s]))([A-Za-z_][\w.+-]*)=")


def _object_keys(raw: Any) -> list[str] | None:
    """The keys of a JSON object (as given, or as its text); None where they cannot be read."""
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return None
    return list(value) if isinstance(value, dict) else None


def _lines_in(text: str) -> list[int]:
    """Line numbers cited as `(path:LINE)` in a launch reader's provenance string."""
    return [int(n) for n in re.findall(r":(\d+)\)", text)]
