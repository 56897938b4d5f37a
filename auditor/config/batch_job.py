"""`sbatch [options] FILE`: the job file a launch script submits, as Slurm runs it (issue 22
items 4 and 9).

sbatch(1) runs FILE on the allocation with the submitting shell's environment (`--export` ALL by
default: exported variables, not the shell's own), its `#SBATCH` lines read as options that the
command line's own options override ("options on the command line take precedence"). So a
submitter that builds its run as a string (`export COMMAND="python run_grpo.py ..."; sbatch
ray.sub`, NVIDIA-NeMo/RL) reaches the training command inside the job file. A relative FILE is
opened from the submit directory; after a `cd` that this reader cannot follow (NeMo-RL's copy of
its checkout), the file at that path in the checkout around the launch script is read, and the
scan says so. Which sbatch options take no value, and which allocation variables each sizing
option sets, are rules (rules/megatron-lm.toml [wrappers] batch_flags, the srun launcher's
`directive_options`).
"""

from __future__ import annotations

import os
from pathlib import Path

from auditor.bash.absent import checkout_root
from auditor.bash.values import Field, Scalar, segments
from auditor.rulebook.launchers import Spelling


def job_file_at(fields: list[Field], spelling: Spelling) -> int | None:
    """The index of FILE among sbatch's arguments `fields` (its options skipped: `-A acct`, `-N 4`,
    `--nodes=4`, `--exclusive`); None where there is none (a job on stdin or `--wrap`)."""
    k = 0
    while k < len(fields):
        word = _known_start(fields[k].value)
        if word is None:
            return None  # an option or the file, not known statically
        if word == "--":
            return k + 1 if k + 1 < len(fields) else None
        if not word.startswith("-") or word == "-":
            return k
        takes_value = "=" not in word and word not in spelling.batch_flags and not (
            not word.startswith("--") and len(word) > 2)  # `-N4`: the value is attached
        k += 2 if takes_value else 1
    return None


def _known_start(value: Scalar) -> str | None:
    """The word as far as it is known from its start, where that says what it is: all of a known
    word, `--nodes=` of `--nodes=$(...)`; None where its start is not known."""
    if isinstance(value, str):
        return value
    first = segments(value)[0]
    return first[0] if not first[1] and first[0].startswith("-") and "=" in first[0] else None


def allocation_options(fields: list[Field], spelling: Spelling) -> dict[str, str]:
    """The allocation variables sbatch's own options set (`-N 4` / `--nodes=4`: SLURM_JOB_NUM_NODES
    and SLURM_NNODES), by the rules' `directive_options`; a value that is no plain count sets none."""
    options = {o: names for e in spelling.launchers for o, names in e.get("directive_options", {}).items()}
    out: dict[str, str] = {}
    for k, f in enumerate(fields):
        word = f.value
        if not isinstance(word, str) or not word.startswith("-"):
            continue
        option, eq, value = word.partition("=")
        if not eq:
            given = fields[k + 1].value if k + 1 < len(fields) else None
            value = given if isinstance(given, str) else ""
        for name in options.get(option, ()):
            if value.isdigit():
                out[name] = value
    return out


def in_checkout(name: str, launch_path: str) -> str | None:
    """The job file `name` (relative) at that path in the launch script's directory or one above
    it, up to the checkout's root; None where no checkout holds it."""
    root = checkout_root(launch_path)
    if root is None or os.path.isabs(name):
        return None
    here = Path(launch_path).resolve().parent
    found = next((d / name for d in (here, *here.parents) if d.is_relative_to(root) and (d / name).is_file()), None)
    return str(found) if found is not None else None
