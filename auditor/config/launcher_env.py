"""The environment a launcher's own options give the command it starts (issue 22 items 1/4/9):
srun's `--export=[ALL,|NONE,]NAME=VALUE[,NAME]` (also `--export NAME=VALUE`, two words) and
mpirun's `-x NAME=VALUE`, whether the launcher starts the training script itself (`srun python
pretrain_gpt.py`), wraps another launcher (`srun --export=ALL,... torchrun ...`) or starts a shell
(`srun --export=... bash -c "..."`, where what that shell sets itself is kept). What a value does
is config.export_option's (rules data); sbatch's `--export` is read where the job file's walk
starts (config.training_command)."""

from __future__ import annotations

import os

from auditor.bash.values import EnvVar, Field, Scalar
from auditor.config.export_option import effect, option_values
from auditor.config.model import LaunchConfig
from auditor.config.training_command import is_interpreter
from auditor.findings import Finding
from auditor.rulebook.launchers import Spelling

_CALLER = ("export", "environ", "inline", "option")  # how a variable of the launcher's own environment is set


def apply(config: LaunchConfig, launcher: dict, args: list[Field], wrapper: list[Field],
          spelling: Spelling) -> None:
    """Reads the environment options of `launcher` among `args` (up to the program it starts)
    and of a launcher in `wrapper` (`srun --export=... torchrun`) into `config.env`."""
    for rule, options, inner in _option_words(launcher, args, wrapper, spelling, config.env):
        for word, line in options:
            _read(config, rule, word, line, inner)


def _option_words(launcher: dict, args: list[Field], wrapper: list[Field], spelling: Spelling,
                  env: dict[str, EnvVar]) -> list[tuple[dict, list[tuple[Scalar, int]], bool]]:
    """(rule, [(value, line)], whether a shell runs between it and the command) per launcher."""
    shells = set(spelling.shells)
    found = []
    for i, f in enumerate(wrapper):
        rule = next((e for e in spelling.launchers if e.get("env_options")
                     and os.path.basename(str(f.value)) in e.get("programs", ())), None)
        if rule is not None:
            rest = wrapper[i + 1:]
            end = next((j for j, g in enumerate(rest) if os.path.basename(str(g.value)) in shells), len(rest))
            found.append((rule, option_values(rule, rest[:end]) or _default(rule, env, f.line), end < len(rest)))
    if launcher.get("env_options"):
        end = next((j for j, g in enumerate(args) if isinstance(g.value, str) and not g.value.startswith("-")
                    and (is_interpreter(os.path.basename(g.value), launcher) or g.value.endswith(".py"))), len(args))
        inner = any(os.path.basename(str(g.value)) in shells for g in wrapper)
        given = option_values(launcher, args[:end]) or _default(launcher, env, args[0].line if args else 0)
        found.append((launcher, given, inner))
    return found


def _default(rule: dict, env: dict[str, EnvVar], line: int) -> list[tuple[Scalar, int]]:
    """The value of the variable a launcher reads in place of its option (srun's SLURM_EXPORT_ENV,
    which `sbatch --export=NONE` sets for the job's steps), read at the launcher's `line`."""
    var = env.get(rule.get("env_default", ""))
    return [(var.value, line)] if var is not None and var.how != "assign" and line else []


def _read(config: LaunchConfig, rule: dict, value: Scalar, line: int, inner: bool) -> None:
    """One option value into `config.env`, as the launcher `rule` reads it."""
    said = f"{rule.get('name')}'s {rule['env_options'][0]}={value} (line {line})"
    caller = {n: v.value for n, v in config.env.items()
              if v.how in _CALLER and (v.line < line or (v.line == line and not inner))}
    drops, sets, note = effect(rule, value, said, caller, Spelling.load(None).env_names)
    if note:
        config.diagnostics.append(Finding("launch.export-option", "info", note, where=f"{config.path}:{line}"))
    for name in drops:
        del config.env[name]
    for name, setting in sets.items():
        kept = config.env.get(name)
        if kept is None or name in caller or kept.how not in _CALLER:
            config.env[name] = EnvVar(name, setting, line, "option")
