"""Hydra front ends (verl's `python -m verl.trainer.main_ppo a.b.c=value`): the module is the
program, and its arguments are overrides of the job's config (config/overrides.py); the strategy
the composed config names may make it no pipeline run (frontends/hydra_strategy.py). A copy of
the module's main run as a script (`python3 main_ppo_split.py a.b=c`, config/entry_copy.py) is
the module's run on the copy's own config: its script is the first argument."""

from __future__ import annotations

from pathlib import Path

from auditor.bash.values import Field
from auditor.config.entry_copy import copied_main
from auditor.config.frontends.hydra_strategy import judge_strategy, read_copy_config
from auditor.config.frontends.reader import Reader
from auditor.config.model import LaunchConfig
from auditor.config.overrides import read_overrides
from auditor.rulebook.launchers import Spelling


class HydraReader(Reader):
    style = "hydra"
    module_is_program = True

    def read(self, config: LaunchConfig, args: list[Field], launcher: dict, spelling: Spelling,
             path: str, parser_roots: tuple[Path, ...]) -> None:
        main, args = copied_main(config, launcher, args, path)
        read_overrides(config, args, path)
        if main is not None:
            read_copy_config(config, args, path, main)
        judge_strategy(config, args, path, main)
