"""The data passed between the config stages: what a launch script says, and what it means.

`launch.py` produces a LaunchConfig; `effective.py` turns it, with the rules of each framework
version, into an EffectiveConfig. Unresolved shell values stay symbolic (`Symbolic`), never
guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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


@dataclass
class Value:
    value: Any  # None means unknown
    provenance: str  # human sentence: "swift: overlap_p2p_comm forced False: no virtual pipeline"
    source: str  # "flag", "env", "override", "default:<framework>", "derived:<framework>"


@dataclass
class EffectiveConfig:
    values: dict[str, Value] = field(default_factory=dict)
    versions: dict[str, str | None] = field(default_factory=dict)  # framework -> version
    env: dict[str, str] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)

    def get(self, name: str, default: Any = None) -> Any:
        v = self.values.get(name)
        return default if v is None or v.value is None else v.value

    def to_json(self) -> dict[str, Any]:
        return {
            "effective": {k: _jsonable(v.value) for k, v in sorted(self.values.items())},
            "provenance": {k: v.provenance for k, v in sorted(self.values.items())},
            "versions": dict(self.versions),
            "env": dict(self.env),
        }


def _jsonable(value: Any) -> Any:
    return str(value) if isinstance(value, Symbolic) else value
