"""One rank running an entry that trains nothing is NOT A PIPELINE RUN (issue 22 item 11, "say
what the run is"): Megatron-Bridge's examples/models/nemotron/nemotron_3/ultra/pack_data_job.sh
(067f987df0) runs `srun ... python scripts/training/prepare_gpt_sft_packed_data.py` as one Slurm
task (#SBATCH --nodes=1 --ntasks-per-node=1), which packs an SFT dataset with the framework's
tokenizer and dataset builder: a data-preparation job, not a pipeline trainer.

It holds only where all of these do, for any value the run could take:
- the launch is one rank: its world is the int 1 as the launcher reads it (an allocation or
  option written out, not a `${NAME:-1}` fallback the caller may replace), and the entry and its
  local modules start no processes of their own nor join a world the environment names
  (config/one_process.py `own_processes`): a single rank has no peer;
- the entry and the local modules it imports reach no training step, build no pipeline, call no
  P2P API and run no code not seen (config/no_training.py `reaches_no_loop` with rules/stacks.toml
  `[training_step]`), name no schedule entry even unused (config/entry_schedule.py), and import no
  module of a local package that the checkout lacks (the run stops there, or runs a copy not read):
  a training entry of one rank runs the no-pipelining schedule of a pipeline trainer and stays a
  one-stage CLEAN run (README, Judging);
- no pipeline size is given that could exceed the one rank (the run would not start, which the
  start-up checks judge): the entry is not read by Megatron-LM's parser (config/entry_inference.py
  reads the inference entries that are), sets no size itself, no flag of the command names one,
  and no word of the command is unseen.

At more than one rank, "trains nothing" is not enough: a framework module may send between ranks
outside any schedule (Megatron-LM d98e8a64dd examples/rl/benchmark_refit.py reshards weights with
megatron.core.inference.shards' P2POp, at any pipeline size), so such an entry is left to the
analysis.
"""

from __future__ import annotations

import ast
from pathlib import Path

from auditor import rulebook
from auditor.config.entry_inference import PP
from auditor.config.entry_schedule import names_no_schedule
from auditor.config.entry_script import ANCESTORS, iter_closure
from auditor.config.entry_stack import modeled_packages
from auditor.config.model import LaunchConfig
from auditor.config.no_training import ran_unseen, reaches_no_loop
from auditor.config.one_process import own_processes
from auditor.config.pipelining_script import is_pipelining_script
from auditor.config.pyenv import located_stat
from auditor.findings import Finding

DECIDED = ("launch.not-pipeline", "launch.not-covered", "launch.unknown-stack")


def read_trains_nothing(launch: LaunchConfig) -> None:
    """Add a `launch.not-pipeline` note where one rank runs an entry that trains nothing."""
    if any(d.kind in DECIDED for d in launch.diagnostics) or is_pipelining_script(launch):
        return
    located = located_stat(launch)
    world = _one_rank(launch)
    if located is None or world is None or not names_no_schedule(launch):
        return
    entry = Path(located[0].path).resolve()
    steps = rulebook.load("stacks").data["training_step"]
    own = frozenset(m.split(".")[0] for m in modeled_packages())
    read = reaches_no_loop(entry, own, steps)
    if read is None or _lacked_import(entry, own) is not None:
        return
    launch.diagnostics.append(Finding(
        "launch.not-pipeline", "info",
        f"{located[0].written} is {_kind(read[1])}, on one rank ({world}): it and the {read[0]} local "
        "module(s) it imports reach no training step (rules/stacks.toml [training_step]), build no "
        "pipeline, call no torch P2P op and start no process of their own; a single rank has no peer",
        where=f"{launch.path}:{launch.command_line}", detail={"command": launch.launcher}))


def _one_rank(launch: LaunchConfig) -> str | None:
    """Where the launcher surely starts one rank, the program no more, and no pipeline size is
    given, what says so; else None."""
    if (launch.nproc_per_node, launch.nnodes) != (1, 1):
        return None
    said = [launch.world_source.get(k, "") for k in ("nproc_per_node", "nnodes")]
    if any("fallback" in s or "unknown" in s for s in said):
        return None
    if (launch.builds_parser or PP in launch.entry_values or ran_unseen(launch)
            or any(d.kind == "launch.unresolved-args" for d in launch.diagnostics)
            or any("pipeline" in name or name == "pp" for name in launch.flags)):
        return None
    if own_processes(launch):
        return None
    return "; ".join(dict.fromkeys(s for s in said if s)) or "one process"


def _kind(bodies: list[ast.Module]) -> str:
    """What the code that can run does, in words: a `.generate(...)` call is text generation, a
    `.eval()` call or `torch.no_grad` an evaluation; else it runs no model step that is read."""
    said = {n.func.attr for body in bodies for n in ast.walk(body)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
    said |= {n.attr for body in bodies for n in ast.walk(body) if isinstance(n, ast.Attribute)} & {"no_grad"}
    if "generate" in said:
        return "a text generation, training nothing"
    if said & {"eval", "no_grad", "inference_mode"}:
        return "an evaluation, training nothing"
    return "a job that trains nothing (data preparation, conversion or another tool)"


def _lacked_import(entry: Path, own: frozenset[str]) -> str | None:
    """The first module of a local package the entry's closure imports and the checkout lacks
    (`megatron_patch.data.evaluate_dataset` with no evaluate_dataset.py): its code is not read."""
    roots = [entry.parent, *list(entry.parent.parents)[:ANCESTORS]]
    try:
        for path, tree in iter_closure(entry, own):
            for name in _absolute_imports(tree):
                if _lacks(name, [path.parent, *roots]):
                    return name
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return entry.name
    return None


def _absolute_imports(tree: ast.Module) -> list[str]:
    """The modules the file imports by absolute name (of `from X import y`, X: y may be a name)."""
    return [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names] + [
        n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and not n.level]


def _lacks(name: str, roots: list[Path]) -> bool:
    """Whether the first root holding `name`'s top package lacks the module itself."""
    parts = name.split(".")
    root = next((r for r in roots if (r / parts[0]).is_dir() or (r / f"{parts[0]}.py").is_file()), None)
    if root is None:
        return False
    for n in range(1, len(parts) + 1):
        base = root.joinpath(*parts[:n])
        if base.with_suffix(".py").is_file():
            return False  # a module: what follows are its attributes
        if not base.is_dir():
            return True
    return False
