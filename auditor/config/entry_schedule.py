"""Whether an entry script's own code names a pipeline schedule entry (rules/stacks.toml
`[[schedule_entry]]`): a script rule that calls a script NOT A PIPELINE RUN by its name
(rules/megatron-bridge.toml `[[swift_script]] not_pipeline`, `examples/conversion/*.py`) holds
only where it does not. Megatron-Bridge's examples/conversion/hf_to_megatron_generate_text.py
imports and calls `get_forward_backward_func()(..., forward_only=True)`: at PP > 1 a forward-only
pipeline schedule with P2P, not a conversion. Naming is read from the script and its local
modules (stdlib ast); a script that cannot be read names nothing here, and the name rule does
not decide it (`names_no_schedule`); analysis/schedule_reach.py decides from the call graph
what it can.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from auditor import rulebook
from auditor.config.entry_script import iter_closure
from auditor.config.entry_stack import modeled_packages
from auditor.config.model import LaunchConfig
from auditor.config.pyenv import located_stat


def names_schedule(config: LaunchConfig) -> str | None:
    """The schedule entry (`module.name`) the entry script of `config` or a local module it
    imports names in an import or an attribute, or None (also where the script is not read)."""
    return _read(config)[1]


def names_no_schedule(config: LaunchConfig) -> bool:
    """The entry script of `config` and its local modules were read and name no schedule entry:
    only then may a script rule call it NOT A PIPELINE RUN by its name (a `cd` the scratch
    config does not follow, a file absent here: not decided by the name)."""
    read, named = _read(config)
    return read and named is None


def _read(config: LaunchConfig) -> tuple[bool, str | None]:
    found = located_stat(config)
    return (False, None) if found is None else _named(Path(found[0].path).resolve(), found[1].st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _named(script: Path, mtime_ns: int) -> tuple[bool, str | None]:
    """(whether the script and its closure were read, the schedule entry named)."""
    entries = [(e["module"], n.split(".")[0]) for e in rulebook.load("stacks").data["schedule_entry"]
               for n in e["names"]]
    stop = frozenset(m.split(".")[0] for m in modeled_packages())
    try:
        for _, tree in iter_closure(script, stop):
            for node in ast.walk(tree):
                hit = next((f"{m}.{n}" for m, n in entries if _names(node, m, n)), None)
                if hit:
                    return True, hit
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return False, None
    return True, None


def _names(node: ast.AST, module: str, name: str) -> bool:
    """Whether `node` imports `name` from `module` (`from megatron.core.pipeline_parallel.schedules
    import get_forward_backward_func`) or names it on the module (`schedules.NAME`, the module
    spelled in full or by its last part): `model.train()` is not Megatron-LM's `train`."""
    if isinstance(node, ast.ImportFrom):
        return node.module == module and any(a.name == name for a in node.names)
    if isinstance(node, ast.Attribute) and node.attr == name:
        base = ast.unparse(node.value)
        return base == module or base == module.rsplit(".", 1)[-1]
    return False
