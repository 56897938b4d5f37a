"""Terminal tables: sites grouped by file, with batched/unbatched counts per file."""

from __future__ import annotations

from collections import defaultdict
from typing import Any


def _api(site: dict[str, Any]) -> str:
    return f"{site['api']}({site['op']})" if site.get("op") else site["api"]


def sites_table(doc: dict[str, Any]) -> str:
    by_file: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for s in doc["sites"]:
        by_file[(s["package"], s["path"])].append(s)
    lines: list[str] = []
    for (package, path), sites in sorted(by_file.items()):
        batched = sum(1 for s in sites if s["batched"])
        lines.append(
            f"{package}  {path}  ({len(sites)} sites: {batched} batched, "
            f"{len(sites) - batched} unbatched)"
        )
        width = max(len(_api(s)) for s in sites)
        for s in sites:
            flag = "batched  " if s["batched"] else "UNBATCHED"
            extra = f"  [{s['form']}]" if s.get("form", "call") != "call" else ""
            lines.append(
                f"  {s['line']:>5}  {_api(s):<{width}}  {flag}  group={s['group']:<24} "
                f"{s['function']}{extra}"
            )
        lines.append("")
    lines.append(summary_line(doc))
    for e in doc.get("files", {}).get("errors", []):
        lines.append(f"  not analysed: {e['package']} {e['path']}: {e['cause']}")
    return "\n".join(lines) + "\n"


def summary_line(doc: dict[str, Any]) -> str:
    sites = doc["sites"]
    unbatched = sum(1 for s in sites if not s["batched"])
    files = doc.get("files", {})
    targets = ", ".join(f"{t['name']} {t['version'] or '(version unknown)'}" for t in doc["targets"])
    return (
        f"{len(sites)} P2P sites ({len(sites) - unbatched} batched, {unbatched} unbatched) "
        f"in {targets}; {files.get('total', 0)} files, {files.get('parsed', 0)} parsed, "
        f"{files.get('cached', 0)} from cache, {len(files.get('errors', []))} not analysable"
    )
