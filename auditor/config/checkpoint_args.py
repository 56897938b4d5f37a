"""Parallel sizes Megatron-LM takes from the checkpoint instead of the launch line.

`--use-checkpoint-args` makes load_args_from_checkpoint overwrite the sizes with the
checkpoint's (`force=True`; rules/megatron-lm.toml `[checkpoint_args]` says where and when):
the flags written do not decide them, so they are unknown until `--set` gives them.
"""

from __future__ import annotations

from pathlib import Path

from auditor import rulebook
from auditor.config.model import LaunchConfig


def checkpoint_sizes(launch: LaunchConfig) -> dict[str, tuple[str, int]]:
    """The sizes the checkpoint gives (key -> (why, line of the flag)); empty where it gives none."""
    if launch.style != "megatron-lm" and launch.builds_parser != "megatron-lm":
        return {}  # another front end's flags
    data = rulebook.load("megatron-lm").data["checkpoint_args"]
    flag = launch.flags.get(data["flag"])
    if flag is None or flag.value in (False, "false", "False"):
        return {}
    gate = launch.flags.get(data["gate"])
    if gate is None and _gated(launch.checkouts.get("megatron-lm"), data["gate"], data["modules"]):
        return {}  # this release takes the sizes only with the gate flag too
    said = gate if gate is not None else flag
    why = (f"{said.spelling} (line {said.line}): Megatron-LM's load_args_from_checkpoint takes it from "
           "the checkpoint's arguments (force=True), not from the launch line")
    return dict.fromkeys(data["keys"], (why, said.line))


def _gated(checkout: Path | None, gate: str, modules: list[str]) -> bool:
    """Whether the Megatron-LM checkout's load_args_from_checkpoint takes the sizes only behind
    the `gate` argument (False where no checkout is known or it cannot be read: not known)."""
    if checkout is None:
        return False
    for module in modules:
        try:
            return gate in (checkout / module).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
    return False
