"""A remedy option as a codemod of the trainer's own Python (auditor/fix/p2pcode.py): which
file it edits and at which lines. The files are the run's entry script and the targets given as
paths (`--target train.py`, `--target mytrain/`), never a downloaded or installed release.

eager_init  the entry script's `init_process_group(...)`
pass_group  the finding's sites on the default group (`group` "default")
batch_p2p   the finding's sites that issue an op on its own (send/recv/isend/irecv)
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from packaging.utils import canonicalize_name

from auditor.fix.edits import TextEdit, lines_between
from auditor.fix.remedies import Option
from auditor.sources import SourceSet

EDITS = ("eager_init", "pass_group", "batch_p2p")


@dataclass
class Scene:
    """What a trainer codemod needs of the scan: the finding, the sites by id, the files it may
    edit (a path target's package -> its root), the entry script's path."""

    finding: dict[str, Any]
    sites: dict[str, dict[str, Any]]
    roots: dict[str, str] = field(default_factory=dict)
    entry: str | None = None

    @staticmethod
    def of(finding: dict[str, Any], doc: dict[str, Any], srcs: list[SourceSet],
           entry: str | None) -> Scene:
        return Scene(finding, {s["id"]: s for s in doc.get("sites", [])},
                     {s.name: str(s.root) for s in srcs if s.kind == "dir"}, entry)


class Unfit(Exception):
    """The option is no edit of this trainer; the message says why."""


def edits(option: Option, scene: Scene, sources: dict[str, str],
          read: Callable[[str], str]) -> list[TextEdit]:
    """The option's edits; each file it reads for them joins `sources` (path -> text)."""
    # p2pcode (libcst) is imported where a codemod runs: every scan imports this module through
    # fix.pointer, and libcst would add ~0.2 s of CPU to each process start
    from auditor.fix import p2pcode
    if option.edit == "eager_init":
        if scene.entry is None:
            raise Unfit("the run's entry script is not read: no init_process_group to edit")
        return _codemod(scene.entry, sources, read,
                        lambda text: p2pcode.eager_init(text, option.name, option.value or ""))
    wanted = [s for i in scene.finding.get("site_ids") or [] if (s := scene.sites.get(i))]
    if option.edit == "pass_group":
        wanted = [s for s in wanted if s.get("group") == "default"]
    else:
        wanted = [s for s in wanted if s.get("api") in p2pcode.AS_OP]
    if not wanted:
        raise Unfit(f"none of the finding's sites is one {option.says()} edits")
    by_file: dict[str, set[int]] = {}
    for s in wanted:
        root = scene.roots.get(canonicalize_name(s["package"]))
        if root is None:
            raise Unfit(f"{s['path']}:{s['line']} is in {s['package']}, a release, not the "
                        "trainer's own code (give it as --target PATH to patch it)")
        by_file.setdefault(os.path.abspath(os.path.join(root, s["path"])), set()).add(s["line"])
    out: list[TextEdit] = []
    for path, lines in by_file.items():
        out += _codemod(path, sources, read, functools.partial(_at_lines, option, lines))
    return out


def _at_lines(option: Option, lines: set[int], text: str) -> str:
    from auditor.fix import p2pcode
    if option.edit == "pass_group":
        return p2pcode.pass_group(text, lines, option.value or "group")
    return p2pcode.batch_pairs(text, lines, option.name, option.value or "P2POp")


def _codemod(path: str, sources: dict[str, str], read: Callable[[str], str],
             change: Callable[[str], str]) -> list[TextEdit]:
    from auditor.fix import p2pcode
    text = sources.get(path)
    if text is None:
        text = sources[path] = read(path)
    try:
        return lines_between(path, text, change(text))
    except p2pcode.Refused as exc:
        raise Unfit(f"{os.path.basename(path)}: {exc}") from None
