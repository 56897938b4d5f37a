"""An entry that generates text with megatron-core's inference engine at a pipeline size of 1 is
NOT A PIPELINE RUN (rules/megatron-core.toml `[inference_engine]`).

Megatron-Bridge scripts/inference/text_generation.py (067f987df0) imports StaticInferenceEngine
and MegatronLLM from megatron.core.inference (:33-37) and builds its model at `--pp` (:212-226);
examples/models/falcon_h1/inference.sh runs it with `--pp 1`. The engine trains nothing, and at
PP 1 no stage sends to another. The note is given only where the entry imports such a module,
its code names no schedule entry (config/entry_schedule.py: a forward_backward function or a
training loop, which a script may run besides), and the pipeline size it surely sets
(config/entry_assign.py, config/entry_library.py) is the int 1.
"""

from __future__ import annotations

import ast
from pathlib import Path

from auditor import rulebook
from auditor.config.entry_schedule import names_schedule
from auditor.config.model import LaunchConfig
from auditor.findings import Finding


def inference_not_pipeline(launch: LaunchConfig, script: Path, tree: ast.Module) -> None:
    """Add a `launch.not-pipeline` note where `script` generates with megatron-core's inference
    engine at a pipeline size of 1 (see the module docstring)."""
    pp = launch.entry_values.get("pipeline_model_parallel_size")
    if pp is None or type(pp[0]) is not int or pp[0] != 1:
        return
    modules = rulebook.load("megatron-core").data["inference_engine"]["modules"]
    engine = next((n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and not n.level and n.module
                   and any(n.module == m or n.module.startswith(m + ".") for m in modules)), None)
    if engine is None or names_schedule(launch) is not None:
        return
    launch.diagnostics.append(Finding(
        "launch.not-pipeline", "info",
        f"{script.name} generates text with megatron-core's inference engine ({engine.module}, "
        f"line {engine.lineno}), which trains nothing, at pipeline size 1 "
        f"({pp[1].removeprefix(pp[2] + ': ')}): no stage sends to another",
        where=f"{launch.path}:{launch.command_line}", detail={"command": launch.launcher}))
