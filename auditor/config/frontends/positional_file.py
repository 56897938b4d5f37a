"""A console script whose first argument is its config file (`llamafactory-cli train X.yaml`)."""

from __future__ import annotations

from pathlib import Path

from auditor.bash.values import Field
from auditor.config.env_backend import judge_env_backend
from auditor.config.flags import read_flags
from auditor.config.frontends.reader import Reader
from auditor.config.hf_config_file import read_positional_file, unread_positional
from auditor.config.model import LaunchConfig
from auditor.rulebook.launchers import Spelling


class PositionalFileReader(Reader):
    """A console script whose first argument is its config file (`llamafactory-cli train
    X.yaml`): read where a `[[positional_file]]` names it, else unknown, never defaults."""

    style = "positional-file"

    def read(self, config: LaunchConfig, args: list[Field], launcher: dict, spelling: Spelling,
             path: str, parser_roots: tuple[Path, ...]) -> None:
        judge_env_backend(config, path)  # before the file makes the launcher its front end's
        if read_positional_file(config, args, spelling, path):
            return
        read_flags(config, args, spelling, path, checked=False)
        unread_positional(config, args, path, spelling)
