"""Front ends whose flags are read as written: ms-swift (dataclass field names; dashes normalised
to underscores), a DeepSpeed script's own argparse. Nothing checks them against a parser."""

from __future__ import annotations

from pathlib import Path

from auditor.bash.values import Field
from auditor.config.configfiles import read_config_files
from auditor.config.flags import read_flags
from auditor.config.frontends.reader import Reader, label_front_end
from auditor.config.model import LaunchConfig
from auditor.rulebook.launchers import Spelling


class FlagsReader(Reader):
    def __init__(self, style: str) -> None:
        self.style = style

    def read(self, config: LaunchConfig, args: list[Field], launcher: dict, spelling: Spelling,
             path: str, parser_roots: tuple[Path, ...]) -> None:
        read_flags(config, args, spelling, path, checked=False)
        read_config_files(config, args, launcher, path)
        label_front_end(config, spelling, path)
