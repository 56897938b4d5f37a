"""What a launch script says: the data `launch.py` produces and `effective.py` consumes.

Unresolved shell values stay symbolic (`Symbolic`), never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from auditor.findings import Finding


@dataclass(frozen=True)
class Symbolic:
    """A shell value that could not be resolved statically, e.g. `${MODEL_PATH}`."""

    text: str

    def __str__(self) -> str:
        return self.text


Scalar = str | bool | int | float | Symbolic | None


@dataclass
class Flag:
    name: str  # normalised: dashes to underscores, no leading dashes
    value: Scalar  # raw text as the shell would pass it; True for a bare boolean flag
    line: int  # 1-based line in the launch script
    spelling: str  # as written, e.g. "--pipeline-model-parallel-size"


@dataclass
class EnvVar:
    name: str
    value: Scalar
    line: int
    how: str  # "export", "inline" (VAR=x cmd), "assign" (VAR=x on its own line)


@dataclass
class LaunchConfig:
    path: str
    launcher: str  # e.g. "megatron sft", "swift sft", "torchrun pretrain_gpt.py"
    command_line: int  # line where the training command starts
    flags: dict[str, Flag] = field(default_factory=dict)
    env: dict[str, EnvVar] = field(default_factory=dict)
    nproc_per_node: int | Symbolic | None = None
    nnodes: int | Symbolic | None = None
    torch_pin: str | None = None  # from a `torch==X` comment in the script
    diagnostics: list[Finding] = field(default_factory=list)

    @property
    def world_size(self) -> int | None:
        if isinstance(self.nproc_per_node, int) and isinstance(self.nnodes, int):
            return self.nproc_per_node * self.nnodes
        return None
