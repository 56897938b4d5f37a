"""A framework the run imports from a git submodule of its checkout that is not checked out here,
where the release judged in its stead lacks a module the entry imports: the code the run imports
is not read, so the run is undecided (never CLEAN on a release that is surely not what it runs).

alibaba/Pai-Megatron-Patch@a098ca5acb examples/qwen2_5/run_mcore_qwen.sh:6 exports
`PYTHONPATH=${MEGATRON_PATCH_PATH}:${MEGATRON_PATCH_PATH}/backends/megatron/Megatron-LM-250328`,
a path its .gitmodules names as a submodule (a recursive clone fills it; a plain clone, or an
archive, leaves it empty). The scan judges the covered megatron-core releases in its stead, as it
does for a Megatron the caller gives (`$2`). Where every module the entry and its local modules
import at start-up is in that release, it stands in; where one is not (a module of the
submodule's Megatron-LM the release lacks), the release is surely not the code the run imports,
and the step that decides the run is to check the submodule out and scan again. Only a
submodule the command's PYTHONPATH names is the run's copy, and only a module of the packages a
release stands in for whole (rules `[stand_in]`: megatron.core, not the megatron/training its
wheels ship in part, nor megatron-energon's megatron.energon) that no root read here holds is
asked of it.
"""

from __future__ import annotations

import re
from pathlib import Path

from auditor import rulebook
from auditor.bash.absent import checkout_root, unpopulated_submodules
from auditor.bash.values import segments
from auditor.config.entry_imports import entry_roots, import_gaps
from auditor.config.model import LaunchConfig
from auditor.config.pyenv import located_stat
from auditor.findings import Finding
from auditor.rulebook.frameworks import frameworks
from auditor.sources import SourceSet


def unread_submodule(launch: LaunchConfig, srcs: list[SourceSet]) -> list[Finding]:
    """An undecided finding where the run imports a framework from a submodule of its checkout
    not checked out here (named by the PYTHONPATH the command gets) and a release of `srcs`,
    judged in its stead, lacks a module the entry imports at start-up (entry_imports.import_gaps
    `elsewhere`: through its local modules, of a package no root read here holds); else none."""
    located = located_stat(launch)
    var = launch.env.get("PYTHONPATH")
    checkout = checkout_root(launch.path)
    if located is None or var is None or checkout is None:
        return []
    named = [p for p in unpopulated_submodules(checkout) if any(
        re.search(rf"(^|/){re.escape(p.strip('/'))}(/|:|$)", text) for text, unknown in segments(var.value) if not unknown)]
    if not named:
        return []
    entry = Path(located[0].path).resolve()
    imported = import_gaps(entry, entry_roots(entry, launch.env)).elsewhere
    for src in srcs:
        known, whole = _modules(src), _stands_in(src)
        gap = next(((module, path, line) for module, must, path, line in imported
                    if any(module == p or module.startswith(f"{p}.") for p in whole)
                    and not _held(module, must, known)), None)
        if gap is None:
            continue
        module, path, line = gap
        top = module.split(".")[0]
        where = "the caller's environment" if var.how == "environ" else f"line {var.line}"
        return [Finding(
            "launch.submodule-unread", "warning",
            f"`{module}` ({path}:{line}) is not in {src.label}, judged in place of the `{top}` the run "
            f"imports: its PYTHONPATH ({where}) names {named[0]}, a submodule of the checkout {checkout} "
            "(.gitmodules) that is not checked out here, so the code the run imports is not read",
            where=f"{launch.path}:{launch.command_line}",
            detail={"undecided": f"the `{top}` of the submodule {named[0]}, which the run imports and this "
                                 f"checkout lacks (`{module}`, {path.name}:{line}, is in no release judged)",
                    "decide": f"`git submodule update --init {named[0]}` in {checkout}, then scan again"})]
    return []


def _modules(src: SourceSet) -> set[str]:
    """Every module and package of a release's files, by its import name."""
    out: set[str] = set()
    for file in src.files:
        parts = src.module_name(file).split(".")
        out.update(".".join(parts[:k]) for k in range(1, len(parts) + 1))
    return out


def _stands_in(src: SourceSet) -> list[str]:
    """The packages of the release that stand in whole for a checkout's copy (each rules file's
    `[stand_in]` of its distribution: megatron-core's megatron.core, not the megatron/training
    its wheels ship in part)."""
    return [p for f in frameworks() if f.distribution == src.name
            for p in rulebook.load(f.name).data.get("stand_in", {}).get("packages", [])]


def _held(module: str, must: bool, known: set[str]) -> bool:
    """Whether the release holds what the import loads: the module or package, or, where the
    last part may be a name of its parent (`from a import b`), that parent."""
    return module in known or not must and module.rpartition(".")[0] in known
