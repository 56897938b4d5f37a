"""One reader per front end: how the training command's arguments become `LaunchConfig.flags`.

A `[[launcher]]` (or `[[swift_script]]`) names its front end by `style`; `for_style` picks the
reader once, and launch.py calls it, instead of comparing the style string wherever a step
differs. Styles: "megatron-lm" (its argparse spellings, checked against the parser read),
"hydra" (`key=value` overrides), "hydra-compose" (a composed Hydra config, one configuration
per role), "chatlearn" (a YAML --config-file with `key=value` words, one configuration per
Megatron role), "megatron-bridge" (run_recipe.py: its options, overrides and recipe), "positional-file" (a console
script's first argument its config file: hf_config_file), "python-module" (a framework's module
run as the program, `python3 -m openrlhf.cli.train_ppo_ray`: its flags as written), "gpt-neox"
(deepy.py's config files: pipe_parallel_size), "nemo-rl" (examples/run_*.py's --config and overrides:
the policy's backend), and any other
("ms-swift", "deepspeed"): the flags as written.
"""

from __future__ import annotations

from auditor.config.frontends.argparse_flags import FlagsReader
from auditor.config.frontends.chatlearn import DotlistConfigReader
from auditor.config.frontends.hydra import HydraReader
from auditor.config.frontends.hydra_compose import HydraComposeReader
from auditor.config.frontends.megatron_bridge import BridgeRecipeReader
from auditor.config.frontends.megatron_lm import MegatronReader
from auditor.config.frontends.module_flags import ModuleFlagsReader
from auditor.config.frontends.nemo_rl import NemoRlReader
from auditor.config.frontends.neox import NeoxReader
from auditor.config.frontends.positional_file import PositionalFileReader
from auditor.config.frontends.reader import Reader

_READERS: dict[str, Reader] = {r.style: r for r in (MegatronReader(), HydraReader(), HydraComposeReader(),
                                                    DotlistConfigReader(), BridgeRecipeReader(),
                                                    PositionalFileReader(), ModuleFlagsReader(),
                                                    NeoxReader(), NemoRlReader())}


def for_style(style: str) -> Reader:
    """The reader of the front end `style` names; flags as written for one with no reader of
    its own (ms-swift's dataclass fields, a DeepSpeed script's own argparse)."""
    return _READERS.get(style) or FlagsReader(style)


__all__ = ["Reader", "for_style"]
