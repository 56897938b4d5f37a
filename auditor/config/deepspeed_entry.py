"""What a training script run by `deepspeed SCRIPT` hands DeepSpeed, read from its own code.

DeepSpeed's launcher passes the script's flags to the script, not to DeepSpeed: whether the run
is a pipeline at all (deepspeed.initialize builds the PipelineEngine only for a PipelineModule),
how many stages it has and which backend it initialises are in the script's calls
(`PipelineModule(num_stages=args.pipeline_parallel_size)`,
`deepspeed.init_distributed(dist_backend=args.backend)`), their values in its argparse defaults
and the flags the launch script gives. rules/deepspeed.toml says which calls and modules count
(`[pipeline_model]`, `[[script_call]]`); this reads them with the stdlib `ast`, never running
anything. A value that is no literal, argparse default or given flag stays unknown. A script
that calls torch's P2P API itself (a hand-written stage loop) gets no ZeRO note: its own sends
are the analysis's, as under torchrun.
"""

from __future__ import annotations

import os
from pathlib import Path

from auditor import rulebook
from auditor.rulebook.frameworks import launched_by
from auditor.config.entry_script import local_closure, names_p2p, put_calls, uses_modules
from auditor.config.model import LaunchConfig
from auditor.config.pyenv import locate
from auditor.findings import Finding

# The launchers whose training script is DeepSpeed's user code (rules [[launcher]] deepspeed);
# Megatron-DeepSpeed's front end has rules of its own.
LAUNCHERS = ("deepspeed *",)


def read_deepspeed_entry(launch: LaunchConfig) -> None:
    """Say when the script builds no pipeline (a `launch.not-pipeline` finding), else put the
    values its DeepSpeed calls state into `launch.entry_values`."""
    if not launched_by(launch.launcher, LAUNCHERS):
        return
    entry, _ = locate(launch)
    if entry is None:
        return
    data = rulebook.load("deepspeed").data
    try:
        modules = local_closure(Path(entry.path))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return  # pyenv.read_entry says why the script is not read
    model = data["pipeline_model"]
    users = [p for p, tree in modules.items() if uses_modules(tree, model["modules"], model["names"])]
    where = f"{launch.path}:{launch.command_line}"
    if not users and any(names_p2p(tree) for tree in modules.values()):
        return  # its own sends (dist.send/recv, P2POp): stages of its own, left to the analysis
    if not users:
        shown = sorted(os.path.relpath(p, Path(entry.path).parent) for p in modules if str(p) != entry.path)
        launch.diagnostics.append(Finding(
            "launch.not-pipeline", "info", zero_engine(launch.launcher, entry.written, len(shown)),
            where=where, detail={"command": launch.launcher, "modules": shown}))
        return
    put_calls(launch, data.get("script_call", []), modules[Path(entry.path)], entry.path)


def zero_engine(launcher: str, written: str, modules: int) -> str:
    """What a run is whose entry `written` and its `modules` local modules never build DeepSpeed's
    PipelineModule: DeepSpeed's data-parallel engine (the one reading, whichever launcher starts
    the ranks: config.entry_stack.deepspeed_engine for torch's and the clusters' launchers)."""
    model = rulebook.load("deepspeed").data["pipeline_model"]
    return (f"`{launcher}` trains with DeepSpeed's data-parallel engine (ZeRO), not its pipeline: "
            f"{written} and the {modules} local module(s) it imports never import "
            f"{' or '.join(model['modules'])}, so deepspeed.initialize gets no {model['names'][0]} "
            f"({model['source']}: `{model['code']}`); the third-party packages they import are not read")
