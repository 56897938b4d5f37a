"""The effective config: the values megatron-core's pipeline schedules will see, each with the
sentence that explains it and the line it came from (auditor.config.derive computes it).

Three-valued: a value nobody could decide is UNKNOWN (auditor.config.expr), never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from auditor.bash.values import EnvVar, Symbolic
from auditor.config.envread import consumer_value
from auditor.config.expr import UNKNOWN, compile_expr, evaluate
from auditor.findings import Finding


@dataclass(frozen=True)
class Value:
    """One effective value, the sentence that explains it and where that was read."""

    value: Any
    provenance: str
    source: str
    history: tuple[str, ...] = ()
    # Launch-script lines this value traces back to; findings point at the first.
    lines: tuple[int | str, ...] = ()  # `file:line` where another file (the entry script)

    @property
    def known(self) -> bool:
        return self.value is not UNKNOWN

    def json_value(self) -> Any:
        return "unknown" if self.value is UNKNOWN else self.value


@dataclass
class EffectiveConfig:
    """What the schedules see, plus the findings the rules raised while deriving it."""

    values: dict[str, Value]
    versions: dict[str, str | None]
    env: dict[str, EnvVar] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    # Checks that could not be decided (an input was unknown): "id: what was unknown".
    undecided: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # "framework version" -> the keys rules exist for, but not for that release.
    outside_rules: dict[str, list[str]] = field(default_factory=dict)
    # variable name -> how its consumer reads it (auditor.config.envread), for this torch
    env_readers: dict[str, str] = field(default_factory=dict)
    # The torch releases the rules were evaluated for (config.torch_version.TorchBasis) and why.
    torch_releases: tuple[str, ...] = ()
    torch_origin: str = ""
    torch_stated: str | None = None  # None: no release stated, judged across torch_releases
    torch_why_across: str = ""  # why judged across torch_releases (TorchBasis.why_across)
    # derived key -> the unknown inputs its unknown value rests on (what `--set` decides it)
    unknown_inputs: dict[str, list[str]] = field(default_factory=dict)

    def get(self, key: str) -> Value | None:
        return self.values.get(key)

    def value(self, key: str) -> Any:
        """The plain value; UNKNOWN when unknown or never derived."""
        v = self.values.get(key)
        return UNKNOWN if v is None else v.value

    def evaluate(self, text: str) -> Any:
        """Evaluate a condition over this config, e.g. `variable_seq_lengths or mtp_standalone`."""
        return evaluate(compile_expr(text), self.value,
                        lambda n: env_value(self.env, n, self.env_readers))

    def to_json(self) -> dict[str, Any]:
        keys = sorted(self.values)
        return {
            "effective": {k: self.values[k].json_value() for k in keys},
            "provenance": {k: self.values[k].provenance for k in keys},
            "sources": {k: self.values[k].source for k in keys},
            "history": {k: list(self.values[k].history) for k in keys},
            "versions": dict(self.versions),
            "undecided": list(self.undecided),
            "outside_rules": {k: list(v) for k, v in self.outside_rules.items()},
            "notes": list(self.notes),
            "unknown_inputs": {k: list(v) for k, v in self.unknown_inputs.items()
                               if self.value(k) is UNKNOWN},
            "torch_basis": {"version": self.torch_stated,
                            "releases": list(self.torch_releases), "origin": self.torch_origin,
                            **({"why_across": self.torch_why_across}
                               if self.torch_why_across else {})},
        }


def env_value(env: dict[str, EnvVar], name: str, env_readers: dict[str, str]) -> Any:
    """What the training command's consumer of `name` sees: unset is None; a plain (unexported)
    assignment reaches it only if the calling environment exports the name, so its value there
    is unknown; text goes through the variable's reader (auditor.config.envread)."""
    var = env.get(name)
    if var is None:
        return None
    if isinstance(var.value, Symbolic) or var.how == "assign":
        return UNKNOWN
    return consumer_value(var.value, env_readers.get(name, "exact"))
