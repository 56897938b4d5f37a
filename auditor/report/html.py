"""The HTML report: one self-contained file (inline CSS, JS and SVG) that opens offline.

It is what gets attached to a bug report at 3 a.m., so it carries everything: the verdict in
one sentence, the config with where each value came from, every site with its source excerpt,
its path from the entry point and its per-rank fires, and a picture of the first ops of each
rank in the order they were issued, which is where a lazy-init deadlock shows itself.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import jinja2

from auditor import sources
from auditor.errors import InputError
from auditor.analysis import causes
from auditor.analysis.verdict import judge
from auditor.report.text import KEY_VALUES, VERDICT_ORDER, deadlock_lines, headline_fix, value_words
from auditor.sources import target_label
from auditor.report.timeline import site_counts, timeline_layout

TEMPLATES = Path(__file__).with_name("templates")
EXCERPT_LINES = 3  # lines of source shown above and below a site


def render_html(doc: dict[str, Any]) -> str:
    """The report of a finished document: a scan, a joined run, a gate or a simulation."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
        undefined=jinja2.ChainableUndefined, trim_blocks=True, lstrip_blocks=True,
    )
    return env.get_template("report.html.j2").render(**_context(doc))


def _causes(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The findings by cause, in analysis.causes' order (the headline's: gravest first, a run's
    fired-but-not-predicted sites first among equals)."""
    findings = doc.get("findings", [])
    return [{"severity": c.severity, "finding": findings[c.index],
             "consequences": [findings[i] for i in c.consequences]}
            for c in causes.group(findings)]


def _context(doc: dict[str, Any]) -> dict[str, Any]:
    config = doc.get("config", {})
    effective = config.get("effective", {})
    provenance = config.get("provenance", {})
    keys = [k for k in KEY_VALUES if k in effective]
    keys += sorted(k for k in effective if k not in keys)
    excerpts = _excerpts(doc)
    sites = sorted(doc["sites"], key=lambda s: (
        VERDICT_ORDER.get(s.get("verdict", "unknown"), 2), s["package"], s["path"], s["line"]))
    run = doc.get("run")
    verdict = doc.get("verdict") or judge(doc).to_json()  # judged once: a run carries none
    return {
        "doc": doc,
        "title": _title(doc),
        "targets": [target_label(t) for t in doc["targets"]],
        "verdict": verdict["headline"],
        "deadlock": _deadlock(doc, verdict),
        "verdict_class": _verdict_class(doc, verdict),
        "causes": _causes(doc),
        "fix": headline_fix(verdict),
        "config_rows": [{"key": k, "value": value_words(effective[k]), "provenance": provenance.get(k, ""),
                         "main": k in KEY_VALUES} for k in keys],
        "sites": [_site_row(s, excerpts.get(s["id"])) for s in sites],
        "verdict_counts": Counter(s.get("verdict", "-") for s in doc["sites"]),
        "run": run,
        "timeline": timeline_layout(run) if run and run["timeline"]["ranks"] else None,
        "site_counts": _site_counts(doc) if run else None,
        "scanned": any("reachable" in s for s in doc["sites"]),
    }


def _title(doc: dict[str, Any]) -> str:
    """What was audited: the launch script, else the targets, else the trace (a report of a
    recorded run alone has neither of the first two)."""
    launch = doc.get("launch") or {}
    targets = ", ".join(target_label(t) for t in doc["targets"])
    trace = ((doc.get("run") or {}).get("trace") or {}).get("root")
    return f"p2paudit: {launch.get('path') or targets or trace or 'report'}"


def _deadlock(doc: dict[str, Any], verdict: dict[str, Any]) -> list[str]:
    """MUST's two verdicts under the headline, where the op order was replayed."""
    d = verdict.get("deadlock")
    cluster = (doc.get("run") or {}).get("nccl_log")  # report --nccl-log: what it decided
    return (deadlock_lines(d) if d else []) + ([cluster["words"]] if cluster else [])


def _verdict_class(doc: dict[str, Any], verdict: dict[str, Any]) -> str:
    status = verdict["status"]
    if status == "findings":
        return "bad"
    if status == "inconclusive" or any(f["severity"] == "warning" for f in doc.get("findings", [])):
        return "warn"
    return "good"


def _site_row(s: dict[str, Any], excerpt: list[tuple[int, str]] | None) -> dict[str, Any]:
    fired = {int(r): n for r, n in (s.get("fired") or {}).items()}
    api = f"{s['api']}({s['op']})" if s.get("op") else s["api"]
    return {
        "site": s, "api": api, "excerpt": excerpt,
        "fired_total": sum(fired.values()) if "fired" in s else None,
        "fired_ranks": len(fired), "fired_words": fires_words(fired),
        "search": " ".join(str(x) for x in (s["id"], s["path"], s["function"], api,
                                            s.get("group"), *s.get("groups", []),
                                            s.get("verdict", ""))).lower(),
    }


COUNT_COLUMNS = 16  # ranks shown one column each in the per-site counts; more: runs of ranks


def _site_counts(doc: dict[str, Any]) -> dict[str, Any]:
    """The whole run per site: calls on each rank as columns, or as runs of ranks when many."""
    ranks = sorted({int(r) for s in doc["sites"] for r in (s.get("fired") or {})}
                   | {int(r) for m in doc["run"].get("misses", []) for r in m["fired"]})
    rows = site_counts(doc, ranks)
    if len(ranks) > COUNT_COLUMNS:
        for row in rows:
            row["words"] = fires_words({r: n for r, n in zip(ranks, row["counts"]) if n})
        ranks = []
    return {"ranks": ranks, "rows": rows}


def fires_words(fired: dict[int, int]) -> list[str]:
    """`ranks 0-31: 8 calls` runs of consecutive ranks with the same count: 1,024 ranks in a
    few lines."""
    out: list[str] = []
    ranks = sorted(fired)
    start = 0
    for i in range(1, len(ranks) + 1):
        if i == len(ranks) or ranks[i] != ranks[i - 1] + 1 or fired[ranks[i]] != fired[ranks[start]]:
            a, b = ranks[start], ranks[i - 1]
            span = f"rank {a}" if a == b else f"ranks {a}-{b}"
            out.append(f"{span}: {fired[a]}")
            start = i
    return out


def _excerpts(doc: dict[str, Any]) -> dict[str, list[tuple[int, str]]]:
    """Source lines around each site, read from the targets the document names (a wheel,
    directory or cached download; a target that cannot be read leaves its sites without)."""
    out: dict[str, list[tuple[int, str]]] = {}
    by_package: dict[str, list[dict[str, Any]]] = {}
    for s in doc["sites"]:
        by_package.setdefault(s["package"], []).append(s)
    for target in doc["targets"]:
        sites = by_package.get(target["name"])
        if not sites or not target.get("origin"):
            continue
        try:
            src = sources.resolve(target["origin"])
        except InputError:
            continue
        files: dict[str, list[str]] = {}
        for s in sites:
            if s["path"] not in files:
                try:
                    files[s["path"]] = (src.root / s["path"]).read_text(
                        encoding="utf-8", errors="replace").splitlines()
                except OSError:
                    files[s["path"]] = []
            lines = files[s["path"]]
            if not lines:
                continue
            first = max(1, s["line"] - EXCERPT_LINES)
            last = min(len(lines), (s.get("end_line") or s["line"]) + EXCERPT_LINES)
            out[s["id"]] = [(n, lines[n - 1]) for n in range(first, last + 1)]
    return out
