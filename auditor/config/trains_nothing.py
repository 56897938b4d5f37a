"""One rank running an entry that trains nothing is NOT A PIPELINE RUN (issue 22 item 11, "say
what the run is"): Megatron-Bridge's examples/models/nemotron/nemotron_3/ultra/pack_data_job.sh
(067f987df0) runs `srun ... python scripts/training/prepare_gpt_sft_packed_data.py` as one Slurm
task (#SBATCH --nodes=1 --ntasks-per-node=1), which packs an SFT dataset with the framework's
tokenizer and dataset builder: a data-preparation job, not a pipeline trainer.

It holds only where all of these do, for any value the run could take:
- the launch is one rank: its world is the int 1 as the launcher reads it, from sources the script
  writes (config/model.py `Written`: an allocation or option, not torchrun's default nor a
  `${NAME:-1}` fallback, which the caller's PET_NPROC_PER_NODE or NAME replaces), and the
  command joins no world its environment names (an exported WORLD_SIZE, RANK or MASTER_ADDR:
  env:// joins processes started elsewhere) nor do the entry and its local modules start
  processes of their own (config/one_process.py `own_processes`): a single rank has no peer;
- the entry and the local modules it imports reach no training step, build no pipeline, call no
  P2P API and run no code not seen (config/no_training.py `reaches_no_loop` with rules/stacks.toml
  `[training_step]`), name no schedule entry even unused (config/entry_schedule.py), and import no
  module that a local package or the checkout lacks (config/entry_imports.py decides it: the run
  stops there, or runs a copy not read): a training entry of one rank runs the no-pipelining
  schedule of a pipeline trainer and stays a one-stage CLEAN run (README, Judging);
- no pipeline size is given that could exceed the one rank (the run would not start, or would
  pipeline in a world joined elsewhere, which the start-up checks and the analysis judge): the
  entry is not read by Megatron-LM's parser (config/entry_inference.py reads the inference entries
  that are), sets no size itself (nor calls megatron-core's initialize_model_parallel with sizes
  other than literal 1s: config/bridge_mimo.py `global_split`), no flag of the command may name
  one (the front ends' name for it, or any name a pipeline size may have: `--pp-size`,
  `--pipe-parallel-size`, `--num-stages`), and no word of the command is unseen.

At more than one rank, "trains nothing" is not enough: a framework module may send between ranks
outside any schedule (Megatron-LM d98e8a64dd examples/rl/benchmark_refit.py reshards weights with
megatron.core.inference.shards' P2POp, at any pipeline size), so such an entry is left to the
analysis.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from auditor import rulebook
from auditor.config.bridge_mimo import global_split
from auditor.config.entry_imports import SearchRoot, entry_roots, import_gaps, own_package_gaps
from auditor.config.entry_inference import PP
from auditor.config.entry_schedule import names_no_schedule
from auditor.config.entry_script import local_roots
from auditor.config.entry_stack import modeled_roots
from auditor.config.model import LaunchConfig, Written
from auditor.config.no_training import ran_unseen, reaches_no_loop
from auditor.config.one_process import own_processes
from auditor.config.pipelining_script import is_pipelining_script
from auditor.config.pyenv import located_stat
from auditor.findings import Finding

DECIDED = ("launch.not-pipeline", "launch.not-covered", "launch.unknown-stack")
# read_entry_imports' findings: an import that stops the run, or one whose copy is not read
UNREAD_IMPORT = ("launch.import-missing", "launch.import-unread-copy")
# a flag name that may be a pipeline size, beside the front ends' PP (`--pp`, `--pp-size`,
# `--ppsize`, `--pp_degree`, `--vpp`, `--pipeline-parallel`, GPT-NeoX's `--pipe-parallel-size`,
# `--num-stages`): the entry's own parser is not read, so any of them may set it
_PIPELINE_NAME = re.compile(r"pipe|stages|(^|[._])v?pp")


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
    own = modeled_roots()
    read = reaches_no_loop(entry, own, steps)
    if read is None:
        return
    closure, bodies = read
    # megatron-core set up with sizes of its own (`initialize_model_parallel(1, 2)`): on one rank
    # it does not start, in a world joined elsewhere it pipelines
    if _unread_import(launch, entry, [p for p, _ in closure]) or global_split(closure):
        return
    launch.diagnostics.append(Finding(
        "launch.not-pipeline", "info",
        f"{located[0].written} is {_kind(bodies)}, on one rank ({world}): it and the {len(closure) - 1} local "
        "module(s) it imports reach no training step (rules/stacks.toml [training_step]), build no "
        "pipeline, call no torch P2P op and start no process of their own; a single rank has no peer",
        where=f"{launch.path}:{launch.command_line}", detail={"command": launch.launcher}))


def _one_rank(launch: LaunchConfig) -> str | None:
    """Where the launcher surely starts one rank, the program no more, and no pipeline size is
    given, what says so; else None."""
    if (launch.nproc_per_node, launch.nnodes) != (1, 1):
        return None
    said = [launch.world_source.get(k, "") for k in ("nproc_per_node", "nnodes")]
    if not all(isinstance(s, Written) for s in said):
        return None  # a launcher's default or a fallback: the caller may give another world
    if (launch.builds_parser or PP in launch.entry_values or ran_unseen(launch)
            or any(d.kind == "launch.unresolved-args" for d in launch.diagnostics)
            or any(_PIPELINE_NAME.search(name.lower()) for name in launch.flags)):
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


def _unread_import(launch: LaunchConfig, entry: Path, closure: list[Path]) -> bool:
    """Whether the entry or a local module it imports (`closure`) imports a module that is not
    where the closure reads it, as config/entry_imports.py decides: a start-up finding of it on
    the entry (`read_entry_imports`), a module of the checkout's own package the checkout lacks
    (`own_package_gaps`, for each file: Pai-Megatron-Patch a098ca5acb
    examples/llama/evaluate_huggingface_llama.py:31 imports megatron_patch.data.evaluate_dataset,
    absent there), or one a local package the closure reads lacks, or a guarded one whose copy
    is not read (`import_gaps` over the closure's roots, entry_script.iter_closure's): the run
    stops there, or runs a copy not read."""
    if any(d.kind in UNREAD_IMPORT for d in launch.diagnostics):
        return True
    roots = entry_roots(entry, launch.env)
    local = [SearchRoot(r, f"{r}, where the entry's local modules are read")
             for r in local_roots(entry)]
    gaps = import_gaps(entry, local)
    return bool(gaps.missing or gaps.unread) or any(own_package_gaps(p, launch.path, roots) for p in closure)
