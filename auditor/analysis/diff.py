"""What changed between two scan documents: targets, config, sites and findings.

Sites are matched by stable id (`package:module.qualname:api:ordinal`), so a site that only moved
lines is "moved", not removed and added. Ids number the sites of one API within one function, so
a copy inserted before a known site shifts the ordinals of those after it; `families` therefore
also compares counts per function and API (the id without its ordinal): that count is what says
"three new copies", whatever the ordinals did.
"""

from __future__ import annotations

from typing import Any

# Fields of a site whose change is worth a line; path/line changes are reported as moves.
SITE_FIELDS = ("api", "op", "batched", "group", "reachable", "verdict", "runs_batched", "groups",
               "guards")


def family(site_id: str) -> str:
    """The stable id without its ordinal: every site of one API in one function."""
    head, _, tail = site_id.rpartition(":")
    return head if tail.isdigit() else site_id


def _where(s: dict[str, Any]) -> str:
    return f"{s['path']}:{s['line']}"


def diff(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """A JSON-ready account of what `after` changes relative to `before`."""
    a = {s["id"]: s for s in before["sites"]}
    b = {s["id"]: s for s in after["sites"]}
    added = [b[i] for i in b if i not in a]
    removed = [a[i] for i in a if i not in b]
    moved, changed = [], []
    for i in a.keys() & b.keys():
        old, new = a[i], b[i]
        if (old["path"], old["line"]) != (new["path"], new["line"]):
            moved.append({"id": i, "before": _where(old), "after": _where(new)})
        fields = {f: [old.get(f), new.get(f)] for f in SITE_FIELDS if old.get(f) != new.get(f)}
        if fields:
            changed.append({"id": i, "where": _where(new), "fields": fields})
    return {
        "before": _label(before), "after": _label(after),
        "targets": _targets(before, after),
        "config": _config(before, after),
        "sites": {
            "added": [_brief(s) for s in sorted(added, key=_order)],
            "removed": [_brief(s) for s in sorted(removed, key=_order)],
            "moved": sorted(moved, key=lambda m: m["id"]),
            "changed": sorted(changed, key=lambda c: c["id"]),
        },
        "families": _families(before["sites"], after["sites"]),
        "findings": _findings(before.get("findings", []), after.get("findings", [])),
    }


def _order(s: dict[str, Any]) -> tuple:
    return (s["package"], s["path"], s["line"], s["id"])


def _brief(s: dict[str, Any]) -> dict[str, Any]:
    keep = ("id", "package", "path", "line", "function", "api", "op", "batched", "group",
            "reachable", "verdict", "runs_batched", "groups", "paths")
    return {k: s[k] for k in keep if k in s}


def _label(doc: dict[str, Any]) -> str:
    return ", ".join(f"{t['name']} {t.get('version') or '?'}" for t in doc.get("targets", []))


def _targets(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    a = {t["name"]: t.get("version") for t in before.get("targets", [])}
    b = {t["name"]: t.get("version") for t in after.get("targets", [])}
    return [{"name": n, "before": a.get(n), "after": b.get(n)}
            for n in sorted(a.keys() | b.keys()) if a.get(n) != b.get(n)]


def _config(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    a = before.get("config", {}).get("effective", {})
    b = after.get("config", {}).get("effective", {})
    prov = after.get("config", {}).get("provenance", {})
    return [{"key": k, "before": a.get(k), "after": b.get(k), "provenance": prov.get(k, "")}
            for k in sorted(a.keys() | b.keys()) if a.get(k) != b.get(k)]


def _families(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[dict[str, Any]]:
    count_a: dict[str, int] = {}
    count_b: dict[str, int] = {}
    for s in before:
        count_a[family(s["id"])] = count_a.get(family(s["id"]), 0) + 1
    for s in after:
        count_b[family(s["id"])] = count_b.get(family(s["id"]), 0) + 1
    return [{"family": f, "before": count_a.get(f, 0), "after": count_b.get(f, 0)}
            for f in sorted(count_a.keys() | count_b.keys())
            if count_a.get(f, 0) != count_b.get(f, 0)]


def finding_key(f: dict[str, Any]) -> tuple:
    """A finding's identity across releases: its kind and the site families it names."""
    return (f["kind"], tuple(sorted(family(i) for i in f.get("site_ids", []))))


def _findings(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> dict[str, list]:
    """Findings by kind and the site families they name (their messages carry line numbers and
    counts that change with every release)."""
    a = {finding_key(f): f for f in before}
    b = {finding_key(f): f for f in after}
    return {
        "added": [_finding_brief(b[k]) for k in b if k not in a],
        "removed": [_finding_brief(a[k]) for k in a if k not in b],
    }


def _finding_brief(f: dict[str, Any]) -> dict[str, Any]:
    return {k: f.get(k) for k in ("kind", "severity", "message", "where", "site_ids")}


def diff_text(d: dict[str, Any]) -> str:
    """The diff as a person reads it: one line per change, the most important first."""
    lines = [f"p2paudit diff: {d['before']}  ->  {d['after']}", ""]
    if d["targets"]:
        lines.append("Targets:")
        lines += [f"  {t['name']}: {t['before']} -> {t['after']}" for t in d["targets"]]
    if d["config"]:
        lines.append("Config:")
        lines += [f"  {c['key']}: {c['before']} -> {c['after']}  ({c['provenance']})"
                  for c in d["config"]]
    sites = d["sites"]
    if sites["added"]:
        lines.append(f"Sites added ({len(sites['added'])}):")
        lines += [f"  + {_site_line(s)}" for s in sites["added"]]
    if sites["removed"]:
        lines.append(f"Sites removed ({len(sites['removed'])}):")
        lines += [f"  - {_site_line(s)}" for s in sites["removed"]]
    if sites["changed"]:
        lines.append(f"Sites changed ({len(sites['changed'])}):")
        for c in sites["changed"]:
            what = "; ".join(f"{k}: {v[0]} -> {v[1]}" for k, v in c["fields"].items())
            lines.append(f"  ~ {c['where']}  {c['id']}: {what}")
    if d["families"]:
        lines.append("Site counts per function and API:")
        lines += [f"  {f['family']}: {f['before']} -> {f['after']}" for f in d["families"]]
    if sites["moved"]:
        lines.append(f"Sites moved ({len(sites['moved'])}, same id, other line; --format json "
                     f"lists each):")
        by_file: dict[str, list[int]] = {}
        for m in sites["moved"]:
            path, _, old = m["before"].rpartition(":")
            by_file.setdefault(path, []).append(int(m["after"].rpartition(":")[2]) - int(old))
        for path, shifts in sorted(by_file.items()):
            lines.append(f"  {path}: {len(shifts)} site(s), {min(shifts):+d} to {max(shifts):+d} lines"
                         if min(shifts) != max(shifts) else
                         f"  {path}: {len(shifts)} site(s), {shifts[0]:+d} lines")
    found = d["findings"]
    if found["added"]:
        lines.append("Findings added:")
        lines += [f"  + {f['severity'].upper()} {f['kind']}: {f['message']}" for f in found["added"]]
    if found["removed"]:
        lines.append("Findings removed:")
        lines += [f"  - {f['severity'].upper()} {f['kind']}: {f['message']}" for f in found["removed"]]
    if len(lines) == 2:
        lines.append("No differences.")
    return "\n".join(lines) + "\n"


def _site_line(s: dict[str, Any]) -> str:
    api = f"{s['api']}({s['op']})" if s.get("op") else s["api"]
    state = "batched" if s.get("batched") else "UNBATCHED"
    extra = f", reachable {s['reachable']}, {s['verdict']}" if "reachable" in s else ""
    return f"{s['path']}:{s['line']}  {api}  {state}  group={s.get('group')}{extra}  {s['id']}"
