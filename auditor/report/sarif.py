"""SARIF 2.1.0: findings as results that code-scanning UIs (GitHub, VS Code) show on the lines.

Site paths are relative to their package's root, so each location names its package as the
`uriBaseId`; a finding about the launch script points at the script relative to the checkout
(`SRCROOT`). Paths from the entry point become a code flow, so the UI shows how a site is reached.
"""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote

from auditor.analysis import causes

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}
MAX_LOCATIONS = 10
WHERE = re.compile(r"^(?P<path>.+?):(?P<line>\d+)$")


def to_sarif(doc: dict[str, Any]) -> dict[str, Any]:
    sites = {s["id"]: s for s in doc["sites"]}
    findings = doc.get("findings", [])
    grouped = causes.group(findings)  # one result per cause, its consequences inside it
    kinds: dict[str, dict[str, Any]] = {}
    for c in grouped:
        kinds.setdefault(findings[c.index]["kind"], findings[c.index])
    rule_index = {kind: i for i, kind in enumerate(kinds)}
    rules = [{
        "id": kind,
        "name": "".join(w.capitalize() for w in re.split(r"[-_]", kind)),
        "shortDescription": {"text": kind.replace("-", " ")},
        "fullDescription": {"text": first["message"]},
        "help": {"text": first.get("fix") or first["message"]},
        "defaultConfiguration": {"level": LEVEL[first["severity"]]},
    } for kind, first in kinds.items()]
    results = [_result(findings[c.index], rule_index[findings[c.index]["kind"]], sites,
                       "gate" in doc, c.severity, [findings[i] for i in c.consequences])
               for c in grouped]
    bases: dict[str, Any] = {"SRCROOT": {"description": {"text": "the directory p2paudit ran in"}}}
    for t in doc.get("targets", []):
        bases[t["name"]] = {"description": {
            "text": f"root of {t['name']} {t.get('version') or ''} ({t.get('source')}: "
                    f"{t.get('origin')})"}}
    tool = doc.get("tool", {})
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": tool.get("name", "p2paudit"),
                                "version": str(tool.get("version", "")), "rules": rules}},
            "originalUriBaseIds": bases,
            "results": results,
            "columnKind": "unicodeCodePoints",
            "properties": {
                "targets": doc.get("targets", []),
                "effective_config": doc.get("config", {}).get("effective", {}),
                **({"verdict": {k: doc["verdict"][k] for k in ("status", "headline")}}
                   if "verdict" in doc else {}),
            },
        }],
    }


def _result(f: dict[str, Any], index: int, sites: dict[str, dict[str, Any]],
            compared: bool, severity: str, consequences: list[dict[str, Any]]) -> dict[str, Any]:
    """A cause as one result: its own location, then the sites of what it explains."""
    located = [sites[i] for i in f.get("site_ids", []) if i in sites]
    explained = [sites[i] for c in consequences for i in c.get("site_ids", [])
                 if i in sites and sites[i] not in located]
    locations = [_site_location(s) for s in located[:MAX_LOCATIONS]]
    if not locations and f.get("where"):
        match = WHERE.match(f["where"])
        if match:
            locations = [{"physicalLocation": {
                "artifactLocation": artifact(match["path"], "SRCROOT"),
                "region": {"startLine": int(match["line"])}}}]
    text = (f["message"] + (f"\nFix: {f['fix']}" if f.get("fix") else "")
            + "".join(f"\nExplains {c['kind']}: {c['message']}" for c in consequences))
    result: dict[str, Any] = {
        "ruleId": f["kind"], "ruleIndex": index, "level": LEVEL[severity],
        "message": {"text": text},
        "locations": locations,
        "partialFingerprints": {"p2paudit/v1": f"{f['kind']}|" + "|".join(
            sorted(f.get("site_ids", [])) or [f.get("where", "")])},
    }
    related = [_site_location(s) for s in located[MAX_LOCATIONS:] + explained]
    related += [_chosen_location(c, f.get("where", ""), sites) for c in f.get("chosen", [])
                if WHERE.match(c)]
    if related:
        result["relatedLocations"] = [dict(loc, id=k) for k, loc in enumerate(related)]
    flows = [path for s in (located or explained)[:1] for path in s.get("paths", [])]
    if flows:
        result["codeFlows"] = [{"threadFlows": [{"locations": [
            {"location": {"message": {"text": step}}} for step in path]}]} for path in flows]
    fixes = [fix for x in (f, *consequences) for fix in _fixes(x.get("patch"))]
    if fixes:
        result["fixes"] = fixes
    if compared:
        result["baselineState"] = (f.get("detail") or {}).get("baseline", "unchanged")
    return result


def _fixes(patch: dict[str, Any] | None) -> list[dict[str, Any]]:
    """A cause's verified patch (`p2paudit fix`) as SARIF `fixes`: per file its replacements,
    each a character range of the file as scanned and the text that replaces it."""
    if not patch or not patch.get("verified"):
        return []
    by_path: dict[str, list[dict[str, Any]]] = {}
    for e in patch["edits"]:
        by_path.setdefault(e["path"], []).append({
            "deletedRegion": {"charOffset": e["offset"], "charLength": e["length"]},
            **({"insertedContent": {"text": e["text"]}} if e["text"] else {})})
    return [{"description": {"text": f"{patch['says']} (verified by p2paudit's re-scan of the "
                                     "patched script)"},
             "artifactChanges": [{"artifactLocation": {"uri": path, "uriBaseId": "SRCROOT"},
                                  "replacements": replacements}
                                 for path, replacements in by_path.items()]}]


def _site_location(s: dict[str, Any]) -> dict[str, Any]:
    region = {"startLine": s["line"]}
    if s.get("end_line") and s["end_line"] != s["line"]:
        region["endLine"] = s["end_line"]
    return {"physicalLocation": {
        "artifactLocation": artifact(s["path"], s["package"]), "region": region},
        "message": {"text": f"{s['api']} in {s['function']} ({s['package']})"}}


def _chosen_location(chosen: str, where: str,
                     sites: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A framework line that chose the recorded op at `where` ("path:line", the trace's
    `chosen`), against the root of the target whose sites share its top directory, else
    SRCROOT."""
    match = WHERE.match(chosen)
    assert match is not None
    top = match["path"].split("/", 1)[0]
    base = next((s["package"] for s in sites.values() if s["path"].split("/", 1)[0] == top
                 and "/" in match["path"]), "SRCROOT")
    return {"physicalLocation": {"artifactLocation": artifact(match["path"], base),
                                 "region": {"startLine": int(match["line"])}},
            "message": {"text": "a framework line that chose this finding's recorded ops"
                                + (f" (their call into torch: {where})" if where else "")}}


def artifact(path: str, base: str) -> dict[str, str]:
    """An artifactLocation for `path` (from a script, a trace: untrusted), a valid URI as SARIF
    2.1.0 wants (section 3.10): a relative path, percent-encoded, against `base`; an absolute
    path below the directory p2paudit ran in is made relative to it (SRCROOT), any other is a
    file: URI of its own, with no base (3.4.4)."""
    if path.startswith("/"):
        path = posixpath.normpath(path)
        here = os.getcwd()
        if base != "SRCROOT" or not path.startswith(here.rstrip("/") + "/"):
            return {"uri": PurePosixPath(path).as_uri()}
        path = posixpath.relpath(path, here)
    parts = [quote(part, safe="") for part in posixpath.normpath(path).split("/")]
    return {"uri": "/".join(parts), "uriBaseId": base}
