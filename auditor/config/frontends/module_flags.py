"""A framework's module run as the program (`python3 -m openrlhf.cli.train_ppo_ray --flags`): the
module is no script beside the launch script, its arguments are its own argparse's flags, read as
written (nothing checks them against a parser). What the module trains is the rules' say
(`[[entry_module]]`, config/entry_stack.py packaged_entry)."""

from __future__ import annotations

from pathlib import Path

from auditor.bash.values import Field
from auditor.config.flags import read_flags
from auditor.config.frontends.reader import Reader
from auditor.config.model import LaunchConfig
from auditor.rulebook.launchers import Spelling


class ModuleFlagsReader(Reader):
    style = "python-module"
    module_is_program = True

    def read(self, config: LaunchConfig, args: list[Field], launcher: dict, spelling: Spelling,
             path: str, parser_roots: tuple[Path, ...]) -> None:
        read_flags(config, args, spelling, path, checked=False)
