"""Terminal tables: sites grouped by file, with batched/unbatched counts per file."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from auditor.sources import target_label


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
    targets = ", ".join(target_label(t) for t in doc["targets"])
    return (
        f"{len(sites)} P2P sites ({len(sites) - unbatched} batched, {unbatched} unbatched) "
        f"in {targets}; {files.get('total', 0)} files, {files.get('parsed', 0)} parsed, "
        f"{files.get('cached', 0)} from cache, {len(files.get('errors', []))} not analysable"
    )


# The configuration values a P2P reader looks at first; the JSON has all of them.
KEY_VALUES = (
    "pipeline_model_parallel_size", "virtual_pipeline_model_parallel_size",
    "tensor_model_parallel_size", "context_parallel_size", "expert_model_parallel_size",
    "data_parallel_size", "batch_p2p_comm", "overlap_p2p_comm", "variable_seq_lengths",
    "mtp_standalone", "use_ring_exchange_p2p", "torch_version", "torch_batch_coalesces",
    "torch_eager_init",
)
_ORDER = {"contradiction": 0, "ok": 1, "unknown": 2, "unreachable": 3}


def verdict_line(doc: dict[str, Any]) -> str:
    sites = doc["sites"]
    bad = [s for s in sites if s["verdict"] == "contradiction"]
    ok = [s for s in sites if s["verdict"] == "ok"]
    if bad:
        return (f"VERDICT: {len(bad)} reachable P2P site(s) will run unbatched although "
                f"batch_p2p_comm=True: this run can create lazy 2-rank NCCL communicators and hang.")
    return (f"VERDICT: no contradiction: {len(ok)} reachable P2P site(s), all run as the config "
            f"says.")


def scan_report(doc: dict[str, Any]) -> str:
    launch = doc.get("launch", {})
    eff = doc["config"].get("effective", {})
    prov = doc["config"].get("provenance", {})
    targets = ", ".join(target_label(t) for t in doc["targets"])
    lines = [
        f"p2paudit scan {launch.get('path')}  ({launch.get('launcher')}, "
        f"{launch.get('world_size') or '?'} ranks)",
        f"targets: {targets}; torch {eff.get('torch_version', 'unknown')}",
        f"entry points: {'; '.join(doc.get('entries', []))}",
        "",
        verdict_line(doc),
        "",
        "Effective config (P2P-relevant; --format json has all, with provenance):",
    ]
    for key in KEY_VALUES:
        if key in eff:
            lines.append(f"  {key:<38} {str(eff[key]):<8} {prov.get(key, '')}")
    findings = sorted(doc["findings"], key=lambda f: ("error", "warning", "info").index(f["severity"]))
    if findings:
        lines += ["", "Findings:"]
        for f in findings:
            lines.append(f"  {f['severity'].upper():<7} {f['kind']}: {f['message']}")
            if f.get("where"):
                lines.append(f"          at {f['where']}")
            if f.get("fix"):
                lines.append(f"          fix: {f['fix']}")
    if doc.get("patches"):
        lines += ["", "Monkeypatches installed on the way (found in the code):"]
        for p in doc["patches"]:
            lines.append(f"  {p['target']}  <-  {p['replacement']}  (in {p['installed_in']})")
    lines += ["", "Sites:"]
    quiet = []
    unreachable: dict[tuple[str, str, str], list[int]] = {}
    for s in sorted(doc["sites"], key=lambda s: (_ORDER[s["verdict"]], s["package"], s["path"], s["line"])):
        where = f"{s['path']}:{s['line']}"
        if s["verdict"] == "unknown" and not s["paths"]:
            quiet.append(where)
            continue
        if s["verdict"] == "unreachable":
            unreachable.setdefault((s["path"], s["function"], s["reason"]), []).append(s["line"])
            continue
        lines.append(f"  {s['verdict'].upper():<13} {where}  {_api(s)}  in {s['function']}"
                     + (f"  groups: {', '.join(s['groups'])}" if s.get("groups") else ""))
        if s["verdict"] == "contradiction" and s.get("unbatched_reason"):
            lines.append(f"      why: {s['unbatched_reason']}")
        if s["paths"]:
            lines.append(f"      path: {' -> '.join(s['paths'][0])}")
        if s["guards"]:
            lines.append(f"      guards: {'; '.join(s['guards'])}")
        if s.get("reason"):
            lines.append(f"      {s['reason']}")
    for (path, function, reason), at in unreachable.items():
        lines.append(f"  UNREACHABLE   {path}:{','.join(map(str, at))}  in {function}: {reason}")
    if quiet:
        lines.append(f"  UNKNOWN       {len(quiet)} site(s) no call path from the entry points reaches: "
                     + ", ".join(quiet))
    counts = {v: sum(1 for s in doc["sites"] if s["verdict"] == v) for v in _ORDER}
    a = doc.get("analysis", {})
    lines += ["", ", ".join(f"{n} {v}" for v, n in counts.items())
              + f"; {a.get('functions_interpreted', 0)} function contexts interpreted, "
              f"{a.get('modules_parsed', 0)} modules parsed, {a.get('modules_cached', 0)} cached, "
              f"{a.get('seconds', 0)} s"]
    return "\n".join(lines) + "\n"


def matrix_table(key: str, docs: dict[str, dict[str, Any]]) -> str:
    values = list(docs)
    width = max(12, *(len(v) for v in values))
    lines = [f"{key:<40}" + "".join(f"{v:>{width}}" for v in values)]
    for k in KEY_VALUES:
        row = [str(docs[v]["config"].get("effective", {}).get(k, "")) for v in values]
        if len(set(row)) > 1:
            lines.append(f"  {k:<38}" + "".join(f"{c:>{width}}" for c in row))
    for verdict in _ORDER:
        row = [str(sum(1 for s in docs[v]["sites"] if s["verdict"] == verdict)) for v in values]
        lines.append(f"  sites {verdict:<32}" + "".join(f"{c:>{width}}" for c in row))
    by_id: dict[str, list[str]] = {}
    for i, v in enumerate(values):
        for s in docs[v]["sites"]:
            by_id.setdefault(s["id"], [""] * len(values))[i] = s["verdict"]
    changed = {sid: row for sid, row in by_id.items() if len(set(row)) > 1}
    if changed:
        lines.append("  sites whose verdict changes:")
        for sid, row in sorted(changed.items()):
            lines.append(f"    {sid}")
            lines.append("      " + "  ".join(f"{v}: {r or '-'}" for v, r in zip(values, row)))
    findings = {v: sorted({f["kind"] for f in docs[v]["findings"] if f["severity"] == "error"}) for v in values}
    for v in values:
        lines.append(f"  errors at {key}={v}: {', '.join(findings[v]) or 'none'}")
    return "\n".join(lines) + "\n"
