"""What a training script run by `deepspeed SCRIPT` hands DeepSpeed, read from its own code.

DeepSpeed's launcher passes the script's flags to the script, not to DeepSpeed: whether the run
is a pipeline at all (deepspeed.initialize builds the PipelineEngine only for a PipelineModule),
how many stages it has and which backend it initialises are in the script's calls
(`PipelineModule(num_stages=args.pipeline_parallel_size)`,
`deepspeed.init_distributed(dist_backend=args.backend)`), their values in its argparse defaults
and the flags the launch script gives. rules/deepspeed.toml says which calls and modules count
(`[pipeline_model]`, `[[script_call]]`); this reads them with the stdlib `ast`, never running
anything. A value that is no literal, argparse default or given flag stays unknown. Which
engine the script runs, or whether that is known at all, is config.deepspeed_engine's to say:
a script that calls torch's P2P API itself (a hand-written stage loop) never builds the
PipelineEngine, and its own sends are not read here: INCONCLUSIVE, naming them.
"""

from __future__ import annotations

from pathlib import Path

from auditor import rulebook
from auditor.config.deepspeed_engine import (
    deepspeed_stated, engine_of, launch_words, launched, undecided, zero_engine)
from auditor.config.entry_script import parsed, put_calls
from auditor.config.entry_stack import DEEPSPEED_LAUNCHERS as LAUNCHERS
from auditor.config.model import LaunchConfig
from auditor.config.pyenv import located_stat
from auditor.findings import Finding
from auditor.rulebook.frameworks import launched_by


def read_deepspeed_entry(launch: LaunchConfig) -> None:
    """Say what the script runs where it builds no PipelineModule (config.deepspeed_engine, the one
    reading: DeepSpeed's data-parallel engine, a `launch.not-pipeline` finding; or something that
    reading cannot vouch for, a `launch.unknown-stack` one naming it, never the PipelineEngine it
    never builds), else put the values its DeepSpeed calls state into `launch.entry_values`."""
    if not launched_by(launch.launcher, LAUNCHERS):
        return
    located = located_stat(launch)
    if located is None:
        return
    entry, stat = located
    engine = engine_of(entry.path, stat.st_mtime_ns, stat.st_size, launch_words(launch),
                       deepspeed_stated(launch))  # an error: `undecided`
    if engine is None:
        return  # the closure was cut: a module not read may build the PipelineModule
    engine = launched(engine, launch)
    reading = engine.reading()
    if reading == "undecided":
        undecided(launch, entry.written, engine)
    elif reading == "zero":
        launch.diagnostics.append(Finding(
            "launch.not-pipeline", "info", zero_engine(launch.launcher, entry.written, len(engine.modules)),
            where=f"{launch.path}:{launch.command_line}",
            detail={"command": launch.launcher, "modules": list(engine.modules)}))
    else:
        try:
            tree = parsed(Path(entry.path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
            return  # pyenv.read_entry says why the script is not read
        put_calls(launch, rulebook.load("deepspeed").data.get("script_call", []), tree, entry.path)
