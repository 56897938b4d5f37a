"""Looking a model up by the name a launch script gives its checkpoint: the one place that does.

Front ends take a model's sizes from its Hugging Face config.json (ms-swift/mcore-bridge from
`--model`, ChatLearn from `models.policy.load`), which p2paudit cannot read: the checkpoint is the
user's. rules/models.toml states the facts of published models, each citing where they are stated
(a pinned release's model provider where one exists). A model is found by its whole hub id or by
a local path whose last component is the name (`${CHATLEARN}/pretrained_models/Qwen3-235B-A22B`);
a name no entry has is not found, and what the caller takes from it is unknown, never a default.
A path the script leaves partly unresolved names its model where its last component is written
out (`${RAY_DATA_HOME}/models/Qwen3-235B-A22B`, RAY_DATA_HOME from $HOME): `find` takes either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from auditor import rulebook
from auditor.bash.values import Symbolic

RULES = "models"


@dataclass(frozen=True)
class ModelFacts:
    """One [[model]] entry as found: `name` its first name, `values` the sizes it states in
    megatron-core's names, `source` where they are stated."""

    name: str
    values: dict[str, int]
    architecture: str | None
    torch_dtype: str | None
    source: str


def _entries() -> list[dict[str, Any]]:
    return rulebook.load(RULES).table("model")


def _leaf(name: str) -> str:
    return name.rstrip("/").rsplit("/", 1)[-1].lower()


def _local(given: str) -> bool:
    """Whether `given` is a directory, not a hub id `org/name`: it starts with `/`, `.`, `~` or
    `$`, or has other than two parts (`ckpt/org/name`, a bare `name`). Another org's
    `org/name` is other weights, whatever its last part (my-org/Moonlight-16B-A3B-Instruct)."""
    return given.startswith(("/", ".", "~", "$")) or given.rstrip("/").count("/") != 1


def lookup(given: str) -> ModelFacts | None:
    """The entry naming `given`: a hub id matches a name whole (case-insensitive), a local path
    by its last component."""
    key = _leaf if _local(given) else (lambda name: name.rstrip("/").lower())
    wanted = key(given)
    for entry in _entries():
        if wanted in (key(n) for n in [*entry["names"], *entry.get("also", [])]):
            source = entry["source"]
            if wanted not in (key(n) for n in entry["names"]):
                source += f"; {given.rstrip('/').rsplit('/', 1)[-1]} as {entry['names'][0]}: {entry['also_source']}"
            return ModelFacts(entry["names"][0], dict(entry.get("values", {})), entry.get("architecture"),
                              entry.get("torch_dtype"), source)
    return None


def named(given: object) -> str | None:
    """The model name or path a launch value gives: itself if known, or the text of a path not
    known statically whose last component is written literally (`$DIR/name`: a directory, by
    _local; `org$X/name` is no hub id an entry names); else None."""
    if isinstance(given, str):
        return given
    if isinstance(given, Symbolic):
        _, slash, last = given.text.rstrip("/").rpartition("/")
        if slash and last and not any(c in last for c in "$`*?[]{}()\"\' "):
            return given.text
    return None


def find(given: object) -> ModelFacts | None:
    """The entry naming the model a launch value gives (`named`), or None."""
    name = named(given)
    return None if name is None else lookup(name)


def size_keys() -> list[str]:
    """Every size a model entry can state: a model not found leaves each unknown."""
    return list(dict.fromkeys(k for entry in _entries() for k in entry.get("values", {})))
