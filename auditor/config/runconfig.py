"""The config section of a scan document, typed: what analysis, simulate and the reports read.

The scan derives an `EffectiveConfig` whose undecided values are the rules' UNKNOWN; the JSON
document writes them as the string "unknown" (docs/schema/scan-document.schema.json,
`config.effective`). Readers get neither: a `RunConfig`, built from the scan's config
(`EffectiveConfig.record`) or parsed from a document's `config` (`RunConfig.from_json`), holds
each setting as its value or an explicit `Unknown` with why and what decides it. The string is
read and written here only (`from_json`, `to_json`), so it cannot be mistaken for a value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from auditor.errors import InputError

# How the document writes a setting nothing decided (the schema's `config.effective`).
JSON_UNKNOWN = "unknown"
# The JSON type of each part of `config` the record reads (docs/schema/scan-document.schema.json).
_SHAPES: dict[str, tuple[type, str]] = {
    **dict.fromkeys(("effective", "provenance", "sources", "history", "versions", "outside_rules",
                     "unknown_inputs", "torch_basis", "release_basis", "setting_basis", "command_basis"),
                    (dict, "an object")),
    **dict.fromkeys(("undecided", "notes", "needs"), (list, "an array")),
    "release_choice": (str, "a string"),
}


@dataclass(frozen=True)
class Unknown:
    """A setting nothing decided: why (its provenance sentence) and the unknown inputs its value
    rests on, each of which `--set` decides (empty: the setting itself is the input)."""

    why: str
    inputs: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        raise TypeError("an unknown setting has no truth value; test `isinstance(v, Unknown)` first")


@dataclass(frozen=True)
class ConfigSetting:
    """One setting as the schedules see it: its value (or `Unknown`), the sentence explaining
    it, the rules file or flag that gave it (`source`) and the steps it went through."""

    key: str
    value: Any
    provenance: str
    source: str = ""
    history: tuple[str, ...] = ()

    @property
    def known(self) -> bool:
        return not isinstance(self.value, Unknown)


@dataclass(frozen=True)
class TorchJudged:
    """The torch release(s) the rules were evaluated for (`config.torch_basis`): `version`, the
    one the run is judged on, or None where none is stated and it is judged across `releases`."""

    version: str | None
    releases: tuple[str, ...]
    origin: str
    why_across: str = ""
    by_range: str = ""  # `version` is not a listed release: how the rules' ranges judge it

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "releases": list(self.releases), "origin": self.origin,
                **({"why_across": self.why_across} if self.why_across else {}),
                **({"by_range": self.by_range} if self.by_range else {})}


@dataclass
class RunConfig:
    """The document's `config`: settings by key (sorted, as written), the releases, the checks
    the rules could not decide, and what the scan judged across (torch releases, framework
    releases, a setting's cases; the last two stay the schema's objects)."""

    settings: dict[str, ConfigSetting]
    versions: dict[str, str | None] = field(default_factory=dict)
    undecided: list[str] = field(default_factory=list)  # "rule id: why", config.derive
    outside_rules: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    torch: TorchJudged | None = None
    needs: list[str] | None = None  # None: not said (documents from before `needs`)
    release_basis: dict[str, Any] | None = None
    setting_basis: dict[str, Any] | None = None
    release_choice: str | None = None
    # The unknown settings in the order their inputs were derived (the document's order).
    inputs_order: tuple[str, ...] = ()
    command_basis: dict[str, Any] | None = None  # each training command's verdict (analysis.commandcases)

    def value(self, key: str) -> Any:
        """The setting's value, its `Unknown`, or None where it was never derived."""
        s = self.settings.get(key)
        return None if s is None else s.value

    def known(self, key: str) -> Any:
        """The value where derived and known, else None."""
        v = self.value(key)
        return None if isinstance(v, Unknown) else v

    def is_unknown(self, key: str) -> bool:
        """Derived, and nothing decided it."""
        return isinstance(self.value(key), Unknown)

    def is_open(self, key: str) -> bool:
        """Unknown or never derived: nothing gives its value."""
        s = self.settings.get(key)
        return s is None or not s.known

    def provenance(self, key: str, default: str = "") -> str:
        """The sentence explaining the setting; `default` where it was never derived."""
        s = self.settings.get(key)
        return default if s is None else s.provenance

    def source(self, key: str) -> str:
        s = self.settings.get(key)
        return "" if s is None else s.source

    def unknown_inputs(self, key: str) -> list[str]:
        """The unknown inputs an unknown setting rests on (empty where known or not derived)."""
        v = self.value(key)
        return list(v.inputs) if isinstance(v, Unknown) else []

    @classmethod
    def from_json(cls, config: Mapping[str, Any]) -> RunConfig:
        """The record of a document's `config` (as the schema describes it; absent parts empty).
        A part of another JSON type is bad input (InputError naming it), not a crash later."""
        _check(config)
        effective = config.get("effective") or {}
        provenance = config.get("provenance") or {}
        sources = config.get("sources") or {}
        history = config.get("history") or {}
        inputs = config.get("unknown_inputs") or {}
        settings = {}
        for key, raw in effective.items():
            said = provenance.get(key, "")
            value = Unknown(said, tuple(inputs.get(key, ()))) if raw == JSON_UNKNOWN else raw
            settings[key] = ConfigSetting(key, value, said, sources.get(key, ""),
                                          tuple(history.get(key, ())))
        basis = config.get("torch_basis")
        torch = TorchJudged(basis.get("version"), tuple(basis.get("releases", ())),
                            basis.get("origin", ""), basis.get("why_across", ""),
                            basis.get("by_range", "")) if basis else None
        return cls(settings, dict(config.get("versions") or {}), list(config.get("undecided") or []),
                   {k: list(v) for k, v in (config.get("outside_rules") or {}).items()},
                   list(config.get("notes") or []), torch,
                   None if config.get("needs") is None else list(config["needs"]),
                   config.get("release_basis"), config.get("setting_basis"),
                   config.get("release_choice"), tuple(inputs), config.get("command_basis"))

    def to_json(self) -> dict[str, Any]:
        """The document's `config`, in the order the schema's readers have always seen it."""
        keys = sorted(self.settings)
        s = self.settings
        out: dict[str, Any] = {
            "effective": {k: JSON_UNKNOWN if not s[k].known else s[k].value for k in keys},
            "provenance": {k: s[k].provenance for k in keys},
            "sources": {k: s[k].source for k in keys},
            "history": {k: list(s[k].history) for k in keys},
            "versions": dict(self.versions),
            "undecided": list(self.undecided),
            "outside_rules": {k: list(v) for k, v in self.outside_rules.items()},
            "notes": list(self.notes),
            "unknown_inputs": {k: self.unknown_inputs(k) for k in self.inputs_order
                               if self.is_unknown(k)},
            "torch_basis": self.torch.to_json() if self.torch else {},
        }
        optional = {"needs": self.needs, "release_basis": self.release_basis,
                    "setting_basis": self.setting_basis, "release_choice": self.release_choice,
                    "command_basis": self.command_basis}
        out.update({k: v for k, v in optional.items() if v is not None})
        return out


def _check(config: Any) -> None:
    """The shape of the parts `from_json` reads, as the schema gives it."""
    if not isinstance(config, Mapping):
        raise InputError("config", "is not an object (the scan document's schema)")
    for key, (kind, words) in _SHAPES.items():
        if config.get(key) is not None and not isinstance(config[key], kind):
            raise InputError(f"config.{key}", f"is not {words} (the scan document's schema)")
    for key in ("provenance", "sources"):
        bad = next((k for k, v in (config.get(key) or {}).items() if not isinstance(v, str)), None)
        if bad is not None:
            raise InputError(f"config.{key}.{bad}", "is not a string (the scan document's schema)")
