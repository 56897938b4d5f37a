"""What every front end's reader does (frontends/__init__.py picks one per launch)."""

from __future__ import annotations

import ast
import fnmatch
import os
from pathlib import Path

from auditor.bash.values import Field
from auditor.config.entry_script import calls
from auditor.config.frontend_parser import find_script
from auditor.config.model import LaunchConfig
from auditor.config.rule_checkout import rule_checkout
from auditor.findings import Finding
from auditor.rulebook.launchers import Spelling


class Reader:
    """Reads a training command's arguments into `config` for one front end (`style`)."""

    style = ""
    # `python -m verl.trainer.main_ppo a.b=c`: the module is the program, its arguments no script's
    module_is_program = False
    # several configurations per command (a Hydra config's roles): launch.py reads `config.case`
    cases = False

    def read(self, config: LaunchConfig, args: list[Field], launcher: dict, spelling: Spelling,
             path: str, parser_roots: tuple[Path, ...]) -> None:
        raise NotImplementedError


def flags_as_written(config: LaunchConfig, args: list[Field], spelling: Spelling) -> bool:
    """A front end the rules know by its flags whose parser reads them as written
    (`flags_as_written`: mcore_adapter's HfArgumentParser, `--pipeline_model_parallel_size`):
    Megatron-LM's spellings are not its, so they are not checked against them."""
    script = os.path.basename(str(config.script)) if isinstance(config.script, str) else None
    given = {f.value.partition("=")[0] for f in args if isinstance(f.value, str)}
    return script is not None and any(
        front.get("flags_as_written") and any(fnmatch.fnmatchcase(script, p) for p in front["scripts"])
        and set(front["flags"]) <= given and bool(set(front.get("layout_flags", given)) & given)
        for front in spelling.front_ends)


def label_front_end(config: LaunchConfig, spelling: Spelling, path: str) -> None:
    """A front end the rules know by its flags (`[[front_end]]`: Megatron-DeepSpeed's
    pretrain_*.py with --deepspeed) runs on another stack than its launcher's: the run is
    labelled for that stack (`launcher`), and a note says why. Its script is one its `scripts`
    name, or one of its checkout that builds its pipeline model (`builds_pipeline_model`). Its
    flags surely given: a flag only an undecided branch may give (`Flag.maybe`) leaves which
    stack runs undecided (`launch.unknown-stack`, the flag named), never taken as given."""
    script = os.path.basename(str(config.script)) if isinstance(config.script, str) else None
    sure = {f.spelling for f in config.flags.values() if not f.maybe}
    maybe = {f.spelling for f in config.flags.values() if f.maybe}
    def chosen(given: set[str]) -> bool:
        return set(front["flags"]) <= given and bool(set(front.get("layout_flags", given)) & given)
    for front in spelling.front_ends:
        if script is None or not (any(fnmatch.fnmatchcase(script, p) for p in front["scripts"])
                                  or builds_pipeline_model(config, front, path)):
            continue
        if not chosen(sure) and chosen(sure | maybe):
            flags = sorted(set(front["flags"]) & maybe) or sorted(set(front.get("layout_flags", ())) & maybe)
            line = min(f.line for f in config.flags.values() if f.maybe and f.spelling in flags)
            named = ", ".join(f"`{f}`" for f in flags)
            config.diagnostics.append(Finding(
                "launch.unknown-stack", "warning",
                f"{named} is given only on a branch this reading cannot decide: with it the run is "
                f"{front['name']}'s, without it not: which stack runs is not known",
                fix=f"give {named} (or leave it out) on the training command itself",
                where=f"{path}:{line}",
                detail={"undecided": f"whether the run is {front['name']}'s: {named} is given only on "
                                     "an undecided branch", "decide": "--command 'THE TRAINING LINE' (as the "
                                                                      "job runs it)", "flags": flags}))
            continue
        if not chosen(sure):
            continue
        config.diagnostics.append(Finding(
            "launch.front-end", "info", f"{front['what']} (rules: {front['name']})",
            where=f"{path}:{config.command_line}", detail={"front_end": front["name"], "launched": config.launcher}))
        config.launcher = f"{front['launcher']} {script}"
        return


def builds_pipeline_model(config: LaunchConfig, front: dict, path: str) -> bool:
    """Whether the training script, found here, calls one of the front end's `pipeline_models`
    (Megatron-DeepSpeed's finetune_llama.py:47 `model = GPTModelPipe(`, a DeepSpeed
    PipelineModule) and sits in the checkout the front end's rule was read on (its `source` file
    holds its `code`: config.rule_checkout), so that the name is that framework's class."""
    models = set(front.get("pipeline_models", ()))
    if not models or not front.get("source") or not isinstance(config.script, str):
        return False
    found = find_script(path, config.script_read or config.script, entry=True, workdir=config.workdir)
    if found is None or rule_checkout(found.resolve(), front["source"], front["code"]) is None:
        return False
    try:
        tree = ast.parse(found.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return False
    return any(written.rsplit(".", 1)[-1] in models for _, written, _ in calls(tree))
