"""One `ast` parse of a module gives both its P2P sites and its IR; this task does the parse,
and every stage reads its result from the same per-file cache."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from auditor.rulebook import apis
from auditor.static import analyze, exports, source
from auditor.static.ir import build, codec
from auditor.static.sites import sites


def module_task(text: str, relpath: str, module: str, package: str,
                received: exports.Routes | None = None) -> dict[str, Any]:
    tree = source.parse(text)
    code = source.Source(text)
    table = sites.table()
    pairs = []
    if table.may_hold_site(text, received):  # a file that cannot hold a site is not walked
        pairs = sites.sites_with_nodes(code, tree, relpath, module, package, table, received)
    site_ids = {id(node): site.id for site, node in pairs}
    return {
        "ir": codec.dumps(build.build(tree, code, module, relpath.endswith("__init__.py"), site_ids)),
        "sites": [site.to_json() for site, _ in pairs],
        "context": received.digest() if received else "",
    }


def task_key() -> str:
    """What the cached results depend on: the API rules and this analyzer's own code."""
    # Every module of the static analysis, listed from its folders (the wings too): a module split out later is
    # digested too, so a changed analyzer never reuses results cached by the old one.
    code = analyze.code_digest(apis, *sorted(Path(__file__).parent.rglob("*.py")))
    return f"module:{sites.table().digest}:{code}"
