"""The settings `--set KEY=VALUE` and `--matrix KEY=...` may name: a misspelt key is bad input
with the closest known key, never a silent no-op (`--matrix pipline_model_parallel_size=1,2,4`
printed identical columns as if each value had been applied).

A key is known when a rules file of the run's stack reads or derives it, in any release (an
[[arg]] or [[rule]] key, a name in a `when`/`value` expression, a [[model]] size, a [[symbol]]'s
config), when the launch reader or this run's derivation gives it (a key of
`--megatron_extra_kwargs`), or when a guard on a P2P path of this scan tests it (the interpreter
reads any config attribute the analysed code tests, and `--set` decides those too). The stack
is the launch's (rulebook.frameworks.Stack) plus what every run has (torch, the files of facts):
another framework's key (torchtitan's pipeline_parallel_degree on a Megatron run) does nothing
there. Where the stack is not known (no single front end claims the launch, a run answered
without a scan), every rules file's keys are known.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from auditor.config.coerce import overrides_from
from auditor.config.entry_stack import UnknownStack
from auditor.config.envread import ENV_PREFIX
from auditor.config.expr import RuleError, compile_expr
from auditor.config.flags import normalise
from auditor.config.launch import CommandNotFollowed, NotAPipelineRun, NotCoveredRun, ScriptExits
from auditor.config.model import LaunchConfig
from auditor.config.releases import ReleaseUnavailable
from auditor.errors import InputError
from auditor.rulebook import files
from auditor.rulebook.frameworks import Framework, frameworks

# What the launch reader and derive itself put in the effective config.
LAUNCH_KEYS = ("nproc_per_node", "nnodes", "torch_version", "launcher")
# What `p2paudit simulate` reads for its messages' shape, dtype and count beyond the rules of the
# stack it runs: on any stack (SIMULATE_KEYS), and on a stack holding the framework whose schedule
# it runs (SIMULATED_KEYS: simulate/plan.py for megatron-core's, simulate/titan_plan.py for
# torchtitan's). Each is a key `--set` takes, so every "give it with --set KEY" step they print
# can be given (tests/simulate/test_set_steps.py walks them).
SIMULATE_KEYS = ("hidden_size", "micro_batch_size", "num_microbatches")
SEQUENCE_KEYS = ("seq_length", "max_length")  # the sequence, the first one a run states
DTYPE_KEYS = ("pipeline_dtype", "params_dtype", "torch_dtype")  # the activation dtype, likewise
PRECISION_KEYS = ("bf16", "fp16")  # a front end's switch to that dtype
SIMULATED_KEYS = {"megatron-core": (*SEQUENCE_KEYS, *DTYPE_KEYS, *PRECISION_KEYS),
                  "torchtitan": ("torch_dtype", "n_layers")}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# The rules file of the framework every run goes on to, in its stack or not (torchtitan's
# `runs_on` names none): its settings are any run's.
EVERY_RUN = "torch"


def known_settings(directory: Path | None = None, stack: Collection[str] | None = None) -> frozenset[str]:
    """Every setting a rules file reads or derives, in any release; `stack`: only the files
    of those frameworks (Stack.names), torch's and the files of facts (no `position`)."""
    return _known(directory or files.rules_dir(), None if stack is None else frozenset(stack))


@functools.lru_cache(maxsize=16)
def _known(directory: Path, stack: frozenset[str] | None) -> frozenset[str]:
    out: set[str] = {*LAUNCH_KEYS, *SIMULATE_KEYS}
    for fw in frameworks(directory):
        if not _on(fw, stack):
            continue
        out.update(SIMULATED_KEYS.get(fw.name, ()))
        data = files.load(fw.name, None, directory).data
        for table in ("arg", "rule", "check"):
            for entry in data.get(table, []):
                out.update([entry["key"]] if "key" in entry else [])
                for field in ("when", "value"):
                    if isinstance(entry.get(field), str):
                        out.update(_names(entry[field]))
        for entry in data.get("model", []):
            out.update(entry.get("values", {}))
        out.update(e["config"] for e in data.get("symbol", []) if "config" in e)
    return frozenset(out)


def _on(fw: Framework, stack: Collection[str] | None) -> bool:
    """Whether `fw`'s settings are the run's: every framework's where the stack is not known."""
    return stack is None or fw.name in stack or fw.name == EVERY_RUN or fw.position is None


def _names(text: str) -> set[str]:
    """The settings an expression reads, and as `env.NAME` (what `--set` takes) its variables."""
    try:
        expr = compile_expr(text)
    except RuleError:
        return set()
    return {*expr.names(), *(ENV_PREFIX + n for n in expr.env_names())}


def check_settings(given: Mapping[str, str], doc: dict[str, Any], stack: Collection[str] | None,
                   directory: Path | None = None) -> None:
    """InputError (exit 2) for the first key of `given` (key -> the option that gave it,
    `--set` or `--matrix`) that no rule of the run's `stack` (Stack.names: None where not
    known), launch input or guard of `doc` knows."""
    config = doc.get("config", {})
    off = {f.name for f in frameworks(directory) if not _on(f, stack)}
    # derived, not --set: a framework off the stack derives its keys unknown (config.derive
    # _mark_unknown, the source its name), which its code, never run here, would read
    derived = {k for k, source in config.get("sources", {}).items() if source != "--set" and source not in off}
    known = set(known_settings(directory, stack)) | derived
    known |= _guard_names(doc.get("sites", []))
    _refuse(given, known)


# Answers made before the settings are read: the run's own (scan), or why a command that needs a
# pipeline refuses it (simulate, gate, fix). The first two are decided without the run's code.
DECIDED_UNREAD = (NotAPipelineRun, ScriptExits)
ANSWERED_UNREAD = (*DECIDED_UNREAD, NotCoveredRun, UnknownStack, CommandNotFollowed, ReleaseUnavailable)


def check_unscanned(given: Mapping[str, str], answered: InputError) -> None:
    """check_settings for a run `answered` without a scan (an ANSWERED_UNREAD): known are the
    rules' keys and the flags of the launch as read. Where the answer is decided without the
    run's code (DECIDED_UNREAD) and its command was read, no guard of it can matter; where it is
    not (the command not followed, its stack unknown), a guard of that unread code may test any
    name, and where the command was never read (ScriptExits: the script exits before it) any of
    its flags may be the key, so only a near miss of a known key is refused as a misspelling."""
    known = set(known_settings())
    launch: LaunchConfig | None = getattr(answered, "config", None)
    if launch is not None:
        known |= {normalise(name) for name in [*launch.flags, *launch.launcher_flags]}
        known |= set(launch.entry_values)
    _refuse(given, known, near_only=launch is None or not isinstance(answered, DECIDED_UNREAD))


@contextmanager
def keys_first(pairs: Iterable[str]) -> Iterator[None]:
    """For a command that refuses a run answered without a scan (simulate, gate, fix: exit 2), a
    misspelt `--set` key (`pairs` as given) is the error named, not the run."""
    try:
        yield
    except ANSWERED_UNREAD as exc:
        check_unscanned(dict.fromkeys(overrides_from(pairs), "--set"), exc)
        raise


def _refuse(given: Mapping[str, str], known: set[str], near_only: bool = False) -> None:
    """InputError for the first key of `given` not in `known`, with the closest known key;
    `near_only`: only a key that has one."""
    for key, option in given.items():
        if key in known:
            continue
        close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
        if near_only and not close:
            continue
        hint = f"; did you mean {close[0]}?" if close else \
            "; the keys are the effective config's (`--format json`: config.effective)"
        raise InputError(f"{option} {key}", f"no such setting: no rule, launch input or guard of "
                                            f"this run reads {key!r}{hint}")


def _guard_names(sites: Iterable[dict[str, Any]]) -> set[str]:
    """The names the guards of this scan's P2P paths test (`config.overlap_p2p_comm`)."""
    return {n for s in sites for g in s.get("guards") or [] for n in _NAME.findall(str(g))}
