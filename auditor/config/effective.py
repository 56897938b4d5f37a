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
from auditor.config.runconfig import ConfigSetting, RunConfig, TorchJudged, Unknown
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
    torch_by_range: str = ""  # an unlisted release decided by the rules' ranges (TorchBasis.by_range)
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

    def record(self, needs: list[str] | None = None) -> RunConfig:
        """The typed record analysis reads, with `needs` (the settings the batching rule reads
        for the stack; None: not said): each unknown value an explicit `Unknown`."""
        settings = {k: ConfigSetting(k, Unknown(v.provenance, tuple(self.unknown_inputs.get(k, ())))
                                     if v.value is UNKNOWN else v.value,
                                     v.provenance, v.source, v.history)
                    for k, v in sorted(self.values.items())}
        torch = TorchJudged(self.torch_stated, self.torch_releases, self.torch_origin,
                            self.torch_why_across, self.torch_by_range)
        return RunConfig(settings, dict(self.versions), list(self.undecided),
                         {k: list(v) for k, v in self.outside_rules.items()}, list(self.notes),
                         torch, needs, inputs_order=tuple(self.unknown_inputs))

    def to_json(self) -> dict[str, Any]:
        return self.record().to_json()


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
