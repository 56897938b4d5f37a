"""Front ends whose flags are read as written: ms-swift (dataclass field names; dashes normalised
to underscores), a DeepSpeed script's own argparse. Where the script is found and builds a
Megatron-LM parser (Megatron-DeepSpeed's pretrain_gpt.py under `deepspeed`), its flags are then
judged against that parser (flags.check_front_end); ms-swift's against its release's dataclass
fields once the release is known (frontends/swift_fields.py)."""

from __future__ import annotations

from pathlib import Path

from auditor.bash.values import Field
from auditor.config.configfiles import read_config_files
from auditor.config.flags import check_front_end, read_flags
from auditor.config.frontend_parser import locate
from auditor.config.frontends.reader import Reader, label_front_end
from auditor.config.model import LaunchConfig
from auditor.rulebook.launchers import Spelling


class FlagsReader(Reader):
    def __init__(self, style: str) -> None:
        self.style = style

    def read(self, config: LaunchConfig, args: list[Field], launcher: dict, spelling: Spelling,
             path: str, parser_roots: tuple[Path, ...]) -> None:
        read_flags(config, args, spelling, path, checked=False)
        if isinstance(config.script, str) and not config.script_module:
            # only a script found here: a release's parser stands in for no unread script's own
            front = locate(path, config.script_read or config.script, (), config.workdir)
            if front is not None and front.root is not None:
                check_front_end(config, front, path)
        read_config_files(config, args, launcher, path)
        label_front_end(config, spelling, path)
