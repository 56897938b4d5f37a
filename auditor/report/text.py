"""Text for a terminal: the scan report (sites grouped by file, with batched/unbatched counts per
file), the matrix table, and the gate's and the simulation's reports."""

from __future__ import annotations

import os
import textwrap
from collections import defaultdict
from typing import Any

from auditor.analysis import causes
from auditor.analysis.diff import diff_text
from auditor.analysis.sitestatus import SiteStatus
from auditor.analysis.verdict import SITE_VERDICTS, judge
from auditor.analysis.waitfor.sizes import size_words
from auditor.config.derive import OFF_STACK
from auditor.config.runconfig import JSON_UNKNOWN, RunConfig, Unknown
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
            f"{package}  {path}  ({len(sites)} site{'' if len(sites) == 1 else 's'}: {batched} batched, "
            f"{len(sites) - batched} unbatched)"
        )
        width = max(len(_api(s)) for s in sites)
        for s in sites:
            flag = "batched  " if s["batched"] else "UNBATCHED"
            extra = f"  [{s['form']}]" if s.get("form", "call") != "call" else ""
            lines.append(
                f"  {s['line']:>5}  {_api(s):<{width}}  {flag}  group={s.get('group') or 'unknown':<24} "
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
    # torchtitan's [parallelism] / [training] settings its pipelining schedule is built from
    "pipeline_parallel_degree", "pipeline_parallel_schedule", "pipeline_parallel_schedule_csv",
    "pipeline_parallel_microbatch_size", "local_batch_size",
)
# Sites listed worst first, in the order verdict.SITE_VERDICTS names them (html.py too).
VERDICT_ORDER = {v: k for k, v in enumerate(SITE_VERDICTS)}


def torch_words(config: dict[str, Any]) -> str:
    """The torch the scan judged: the version, or the releases judged across when none is stated."""
    run = RunConfig.from_json(config)
    version = run.known("torch_version")
    if version is None and run.torch is not None and run.torch.releases:
        releases = run.torch.releases
        why = run.torch.why_across or "none stated"
        return f"{releases[0]}-{releases[-1]} ({why}: each judged)" if len(releases) > 1 \
            else releases[0]
    if version is not None and run.torch is not None and run.torch.by_range:
        return f"{version} ({run.torch.by_range})"
    return version or JSON_UNKNOWN


def headline_fix(v: dict[str, Any]) -> str:
    """The fix of the cause the headline names, the verdict's first cause when it is an error of
    a run with findings; "" otherwise (the text's `fix:` line, the HTML's)."""
    first = (v.get("causes") or [{}])[0]
    return first.get("fix", "") if v["status"] == "findings" and first.get("severity") == "error" else ""


def verdict_line(doc: dict[str, Any]) -> str:
    """The headline, the fix of the cause it names, then what stays undecided, each with what
    would decide it."""
    v = doc.get("verdict") or judge(doc).to_json()
    lines = [v["headline"]]
    first = (v.get("causes") or [{}])[0]
    if headline_fix(v):
        lines.append(f"fix: {first['fix']}")
        root: dict[str, Any] = next((f for f in doc.get("findings", []) if f["kind"] == first["kind"]
                                     and f.get("where", "") == first["where"]), {})
        lines += _fix_command(root.get("fix_command"), 0)  # the patch that does it, verified
    if v.get("deadlock"):
        lines += deadlock_lines(v["deadlock"])
    if len(v.get("undecided", [])) > 1 or (v["status"] == "findings" and v.get("undecided")):
        lines += ["Not decided:"] + [f"  - {u['what']}\n    decide with: {u['decide']}"
                                     for u in v["undecided"]]
    if v.get("startup_undecided"):
        title = "Start-up checks not decided (whether the run starts; the verdict does not rest on them):"
        lines += [title] + [f"  - {u['what']}\n    decide with: {u['decide']}"
                            for u in v["startup_undecided"]]
    if v.get("advisory_undecided"):
        title = "Warnings not decided (whether they warn; the verdict does not rest on them):"
        lines += [title] + [f"  - {u['what']}\n    decide with: {u['decide']}"
                            for u in v["advisory_undecided"]]
    return "\n".join(lines)


def yes_no(value: bool | None) -> str:
    return {True: "yes", False: "no", None: "undecided"}[value]


def deadlock_lines(d: dict[str, Any]) -> list[str]:
    """MUST's two verdicts (waitfor.deadlock.Deadlock.to_json), one line each, then each transport's
    bound and what it says."""
    # a run on another backend (gloo): what NCCL would do with its order, not what happened
    under = f" under NCCL (the run ran on {d['ran_on']})" if d.get("ran_on") else ""
    here = under or " here"
    lines = [f"can deadlock{under}: {yes_no(d['can_deadlock'])} (zero-buffer contract: every "
             f"send waits for its receive)" + (f": {d['cycle']}" if d["can_deadlock"] and d["cycle"] else ""),
             f"will deadlock{here}: {yes_no(d['will_deadlock'])} (over {d['transport']}, with the "
             f"recorded sizes; bounds from rules/nccl.toml"
             + (" and the NCCL log" if any(t["transport"].get("log") for t in d["transports"])
                else "") + f", NCCL {d['nccl']})"]
    for t in d["transports"]:
        bound = t["transport"]
        hangs = f", {size_words(bound['hangs_bytes'])} hangs" if bound["hangs_bytes"] else ""
        lines.append(f"  {bound['name']}: {yes_no(t['will_deadlock'])}: {t['why']} "
                     f"[{bound['bound']}: {size_words(bound['completes_bytes'])} completes{hangs}]")
    if d["will_deadlock"] is None and d.get("decide"):
        lines.append(f"  decide with: {d['decide']}")
    return lines


def scan_report(doc: dict[str, Any], verbose: bool = False, width: int = 80) -> str:
    """The scan (or joined scan) for a terminal. Sites that share an explanation are one block
    with their lines under it; `verbose` gives every site its own block. Config provenance is
    cut to `width` (verbose: whole); `fit` wraps the rest."""
    launch = doc.get("launch") or {}
    run = RunConfig.from_json(doc["config"])
    targets = ", ".join(target_label(t) for t in doc["targets"]) or "none"
    basis = run.release_basis or {}
    unstated = f"{', '.join(basis.get('free') or [])} not stated" if basis.get("stated") else "none stated"
    for combo in basis.get("combinations", [])[1:]:  # config.release_basis: the first is shown
        targets += f" ({unstated}: also judged on {', '.join(f'{n} {v}' for n, v in combo['releases'].items())})"
    ranks = launch.get("world_size") or "?"
    how = ", ".join(str(x) for x in (launch.get("launcher"), f"{ranks} ranks") if x)
    if (launch.get("world_given") or ranks == "?") and launch.get("world_source"):
        how += f"; world size from {launch['world_source']}"
    lines = [
        f"p2paudit scan {launch.get('path') or '(no launch script)'}  ({how})",
        f"targets: {targets}; torch {torch_words(doc['config'])}",
    ]
    if (launch.get("entry_read") or {}).get("module"):  # config.entry_module: `-m pkg.mod`'s file
        lines.append(f"entry script: -m {launch['entry_read']['script']} runs {launch['entry_read']['read']} "
                     "(found as python -m finds it)")
    elif launch.get("entry_read"):  # config.entry_path: an absolute entry of another machine
        lines.append(f"entry script: {launch['entry_read']['script']} is not here; read "
                     f"{launch['entry_read']['read']} (the same path's tail in the checkout around the script)")
    said = next((f for f in doc.get("findings", []) if f.get("kind") == "launch.script-arguments"), None)
    if said is not None:  # config.flags: the script read as run with no arguments
        lines.append(f"run as: {said['message']}")
    if "entries" in doc and (doc.get("verdict") or judge(doc).to_json())["status"] != "not-pipeline":
        # a run with no pipeline P2P analysed none: naming the schedule would say the opposite
        not_run = [n.removeprefix("entry point ") for n in run.notes
                   if n.startswith("entry point ")]  # scan.py: a rules entry whose `when` is false
        lines.append("entry points: " + ("; ".join(doc["entries"]) or "; ".join(f"none: {n}" for n in not_run) or
                                         "none (the rules name none for these targets: "
                                         "pass --entry MODULE:QUALNAME)"))
    lines += ["", verdict_line(doc)]
    lines += _cause_blocks(doc, verbose)
    lines += ["", "Effective config (P2P-relevant; --format json has all, with provenance):"]
    for key in KEY_VALUES:
        if key in run.settings and not run.provenance(key).startswith(OFF_STACK):
            row = f"  {key:<36} {value_words(run.value(key)):<6} {run.provenance(key)}"
            lines.append(row if verbose or len(row) <= width else row[:width - 1] + "…")
    patches = doc.get("patches") or []
    shown_patches = patches if verbose else _on_p2p_path(doc, patches)
    if shown_patches:
        lines += ["", "Monkeypatches installed on the way (found in the code)"
                  + ("" if verbose else ", on the P2P path") + ":"]
        for p in shown_patches:
            lines.append(f"  {p['target']}  <-  {p['replacement']}  (in {p['installed_in']})")
    if len(shown_patches) < len(patches):
        lines.append(f"  ({len(patches) - len(shown_patches)} other monkeypatch(es), off the P2P "
                     "path: --verbose lists them)")
    lines += ["", "Sites:"]
    quiet = []
    unreachable: dict[tuple[str, str, str], list[int]] = {}
    shown = []
    for s in sorted(doc["sites"], key=lambda s: (VERDICT_ORDER[s["verdict"]], s["package"], s["path"], s["line"])):
        where = f"{s['path']}:{s['line']}"
        status = SiteStatus.of(s)
        if status.verdict_unknown and not status.on_path:
            quiet.append(where)
        elif status.verdict == "unreachable":
            unreachable.setdefault((s["path"], s["function"], s["reason"]), []).append(s["line"])
        else:
            shown.append(s)
    lines += _site_blocks(shown) if verbose else _grouped_blocks(shown)
    for (path, function, reason), at in unreachable.items():
        lines.append(f"  UNREACHABLE   {path}:{','.join(map(str, at))}  in {function}: {reason}")
    if quiet:
        listed = quiet if verbose else quiet[:QUIET_SHOWN]
        more = "" if len(listed) == len(quiet) else f" (+{len(quiet) - len(listed)} more: --verbose)"
        lines.append(f"  UNKNOWN       {len(quiet)} site(s) no call path from the entry points reaches: "
                     + ", ".join(listed) + more)
    counts = {v: sum(1 for s in doc["sites"] if s["verdict"] == v) for v in VERDICT_ORDER}
    a = doc.get("analysis", {})
    lines += ["", ", ".join(f"{n} {v}" for v, n in counts.items())
              + f"; {a.get('functions_interpreted', 0)} function contexts interpreted, "
              f"{a.get('modules_parsed', 0)} modules parsed, {a.get('modules_cached', 0)} cached, "
              f"{a.get('seconds', 0)} s"]
    return "\n".join(lines) + "\n"


# Sites no call path reaches, listed by name in the default view (the rest behind --verbose).
QUIET_SHOWN = 3


def _cause_blocks(doc: dict[str, Any], verbose: bool) -> list[str]:
    """The findings grouped by cause (analysis.causes, through the verdict): each cause once, with
    its line and fix, and the findings it explains under it, by their first sentence (`verbose`:
    in full)."""
    findings = doc.get("findings") or []
    if not findings:
        return []
    lines = ["", "Findings, by cause:"]
    for cause in causes.group(findings):
        f = findings[cause.index]
        at = f" at {f['where']}" if f.get("where") else ""
        if f.get("chosen"):
            at += f", chosen at {', '.join(f['chosen'])}"
        lines += [f"  {cause.severity.upper():<7} {f['kind']}{at}", f"          {f['message']}"]
        if f.get("fix"):
            lines.append(f"          fix: {f['fix']}")
        patch = [line for x in (f, *(findings[i] for i in cause.consequences))
                 for line in _patch_lines(x.get("patch"))]
        lines += patch or _fix_command(f.get("fix_command"))
        explained = [findings[i] for i in cause.consequences]
        if verbose:
            lines += [f"          explains {c['kind']}: {c['message']}" for c in explained]
        elif explained:
            lines.append("          explains: " + ", ".join(_briefly(c) for c in explained)
                         + " (--verbose says each)")
    return lines


def _patch_lines(patch: dict[str, Any] | None) -> list[str]:
    """A cause's verified patch (`p2paudit fix`): the lines it removes and adds."""
    if not patch or not patch.get("verified"):
        return []
    changed = [line for line in patch["diff"].splitlines()
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    head = (f"          patch ({patch['says']}, verified by a re-scan; `p2paudit fix --apply` "
            "writes it):")
    return [head, *(f"            {line}" for line in changed)]


def _fix_command(pointer: dict[str, str] | None, indent: int = 10) -> list[str]:
    """The command that makes and verifies the cause's patch (auditor.fix.pointer)."""
    if not pointer:
        return []
    line = f"{' ' * indent}patch: {pointer['command']} ({pointer['says']}; fix re-scans to verify it)"
    return [line]


def _briefly(f: dict[str, Any]) -> str:
    """A consequence in a few words: its kind, how many sites, where."""
    n = len(f.get("site_ids") or [])
    where = f.get("where") or ""
    bits = [f"{n} site(s)" if n else "", f"at {where}" if where else ""]
    said = ", ".join(b for b in bits if b)
    return f"{f['kind']} ({said})" if said else f["kind"]


def _on_p2p_path(doc: dict[str, Any], patches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The monkeypatches whose replacement a reached site's call path goes through."""
    steps = {step for s in doc.get("sites", []) for path in s.get("paths") or [] for step in path}
    return [p for p in patches
            if any(p["replacement"].endswith("." + step) or p["replacement"] == step
                   for step in steps)]


def fit(text: str, width: int) -> str:
    """Every line at most `width` columns: a longer one wraps under its own indentation (plus
    two), so nothing is cut; the JSON keeps the lines whole."""
    out = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip(" ")))
        out += textwrap.wrap(line, width, subsequent_indent=indent + "  ",
                             break_on_hyphens=False, drop_whitespace=True) or [line[:width]]
    return "\n".join(out)


def value_words(value: Any) -> str:
    """A config value as printed: None is `unset`, an `Unknown` is `unknown`."""
    return "unset" if value is None else JSON_UNKNOWN if isinstance(value, Unknown) else str(value)


def _why(s: dict[str, Any]) -> str:
    return s.get("unbatched_reason") or "" if s["verdict"] == "contradiction" else ""


def _site_blocks(sites: list[dict[str, Any]]) -> list[str]:
    """One block per site: its verdict, why, path, guards and reason in full."""
    lines = []
    for s in sites:
        lines.append(f"  {s['verdict'].upper():<13} {s['path']}:{s['line']}  {_api(s)}  in {s['function']}"
                     + (f"  groups: {', '.join(s['groups'])}" if s.get("groups") else ""))
        if _why(s):
            lines.append(f"      why: {_why(s)}")
        if s["paths"]:
            lines.append(f"      path: {' -> '.join(s['paths'][0])}")
        if s["guards"]:
            lines.append(f"      guards: {'; '.join(s['guards'])}")
        if s.get("reason"):
            lines.append(f"      {s['reason']}")
    return lines


def _grouped_blocks(sites: list[dict[str, Any]]) -> list[str]:
    """One block per verdict and function: what its sites share is said once (a `why` shared by
    every site of the verdict once above them all), their lines listed under it, and only what
    differs said per line."""
    lines: list[str] = []
    by_verdict: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in sites:
        by_verdict[s["verdict"]].append(s)
    for verdict, group in by_verdict.items():
        functions: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
        for s in group:
            functions[(s["package"], s["path"], s["function"])].append(s)
        whys = {_why(s) for s in group}
        common_why = whys.pop() if len(whys) == 1 else ""
        lines.append(f"  {verdict.upper():<13} {len(group)} site(s) in {len(functions)} function(s)")
        if common_why:
            lines.append(f"      why: {common_why}")
        for (_, path, function), members in functions.items():
            groups = _shared(members, lambda s: ", ".join(s.get("groups") or []))
            lines.append(f"    {function}  {path}" + (f"  groups: {groups}" if groups else ""))
            lines.append("      lines: " + ", ".join(f"{s['line']} {_api(s)}" for s in members))
            fields = [("why", lambda s: "" if common_why else _why(s)),
                      ("path", lambda s: " -> ".join(s["paths"][0]) if s["paths"] else ""),
                      ("guards", lambda s: "; ".join(s["guards"])),
                      ("", lambda s: s.get("reason") or "")]
            if groups is None:
                fields.insert(0, ("groups", lambda s: ", ".join(s.get("groups") or [])))
            for label, get in fields:
                value = _shared(members, get)
                prefix = f"{label}: " if label else ""
                if value:
                    lines.append(f"      {prefix}{value}")
                elif value is None and label == "path":
                    lines.append(f"      path: {_merged_path([s['paths'][0] for s in members if s['paths']])}")
                elif value is None:  # each value once, with the lines that have it
                    by_value: dict[str, list[int]] = defaultdict(list)
                    for s in members:
                        if get(s):
                            by_value[get(s)].append(s["line"])
                    for v, at in by_value.items():
                        lines.append(f"      {prefix}{v}  (line{'s' if len(at) > 1 else ''} "
                                     f"{', '.join(map(str, at))})")
    return lines


def _shared(members: list[dict[str, Any]], get) -> str | None:
    """The value every member has ("" for none), or None where they differ."""
    values = {get(s) for s in members}
    return values.pop() if len(values) == 1 else None


def _merged_path(paths: list[list[str]]) -> str:
    """Call paths of one function's sites as one line: the steps they share, and `{a | b}`
    where they differ (paths of different lengths: each distinct one, `|` between)."""
    distinct = list(dict.fromkeys(tuple(p) for p in paths))
    if len({len(p) for p in distinct}) != 1:
        return " | ".join(" -> ".join(p) for p in distinct)
    steps = []
    for options in zip(*distinct):
        unique = list(dict.fromkeys(options))
        if len(unique) == 1:
            steps.append(unique[0])
            continue
        stem = os.path.commonprefix(unique)
        stem = stem[:stem.rfind(".") + 1]  # a common module or class, not half a name
        steps.append(stem + "{" + " | ".join(u[len(stem):] for u in unique) + "}")
    return " -> ".join(steps)


def matrix_table(key: str, docs: dict[str, dict[str, Any]]) -> str:
    """What changes across the values of `key`: a row per config value that differs and per
    site verdict, the columns as narrow as their cells so that four values fit 80 columns."""
    values = list(docs)
    rows: list[tuple[str, list[str]]] = []
    for k in KEY_VALUES:
        row = [value_words(RunConfig.from_json(docs[v]["config"]).value(k)) for v in values]
        if len(set(row)) > 1:
            rows.append((f"  {k}", row))
    for verdict in VERDICT_ORDER:
        rows.append((f"  sites {verdict}",
                     [str(sum(1 for s in docs[v]["sites"] if s["verdict"] == verdict)) for v in values]))
    label = max(len(key), *(len(name) for name, _ in rows)) + 1
    width = max(len(c) for c in [*values, *(c for _, row in rows for c in row)]) + 2
    lines = [f"{key:<{label}}" + "".join(f"{v:>{width}}" for v in values)]
    lines += [f"{name:<{label}}" + "".join(f"{c:>{width}}" for c in row) for name, row in rows]
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


def gate_report(doc: dict[str, Any]) -> str:
    """`gate`'s text: the script, the baseline, the verdict, what fails it and what changed."""
    result = doc["gate"]
    base = result["baseline"]
    torch = torch_words(doc.get("config", {}))
    lines = [
        f"p2paudit gate: {(doc.get('launch') or {}).get('path') or '(no launch script)'} "
        f"(torch {torch})",
        f"baseline: {base['path']} ("
        + ", ".join(target_label(t) for t in base["targets"]) + ")",
        "", doc["verdict"]["headline"],
    ]
    for f in result["new"]:
        lines += [f"  ERROR {f['kind']}: {f['message']}", f"        fix: {f['fix']}",
                  *_fix_command(f.get("fix_command"), 8)]
    for f in result["fixed"] + result["notes"]:
        lines.append(f"  {f['severity'].upper()} {f['kind']}: {f['message']}")
    lines += ["", "What changed:", diff_text(result["diff"])]
    return "\n".join(lines)


def simulation_report(doc: dict[str, Any], config: str) -> str:
    """`simulate`'s text: its inputs and where each came from, the replays, the verdict, the sites."""
    sim, headline = doc["simulation"], doc["verdict"]["headline"]
    lines = [f"p2paudit simulate {config}: {sim.get('runner') or 'megatron-core'}'s own "
             f"schedule on CPU (gloo), "
             f"recorded, replayed by the wait-for model",
             f"targets: {', '.join(target_label(t) for t in doc['targets']) or 'none'}; "
             f"torch {torch_words(doc['config'])}"]
    choice = RunConfig.from_json(doc["config"]).release_choice
    if choice:
        lines.append(choice)
    if sim["ranks"]:
        lines.append(f"schedule: {sim['schedule']}, {len(sim['ranks'])} pipeline ranks"
                     + (f" x {sim['virtual_stages']} virtual stages" if sim.get("virtual_stages")
                        else "")
                     + f", {sim['microbatches']} micro-batches, ran in {sim['seconds']} s")
    lines.append(f"message: {sim['message']}")
    for name, v in sim["inputs"].items():
        shown = "none" if name == "virtual_stages" and v["value"] is None else \
            "unknown" if v["value"] is None else v["value"]
        lines.append(f"  {name} = {shown}: {v['provenance']}")
    if sim.get("stood_in"):
        lines.append(f"stood in: {', '.join(sim['stood_in'])}, not installed here: megatron-core "
                     "imports it on the way to its schedule, which never calls it (rules "
                     "[[import_stand_in]])")
    for patch in sim.get("patches", []):
        state = "applied" if patch["applied"] else f"NOT applied ({patch['why']})"
        lines.append(f"patch {patch['installer']} of {patch['target']}: {state}")
    if sim.get("replays") and len(sim["replays"]) > 1:
        lines.append("replayed under each open condition:")
        lines += [f"  {r['words']}: will deadlock: {yes_no(r['hang'])}, can deadlock: "
                  f"{yes_no(r['can_deadlock'])}" for r in sim["replays"]]
    for error in sim["startup_errors"]:
        lines.append(f"ERROR the real run stops at start-up: {error}")
    lines.append("")
    lines.append(headline)
    if sim.get("deadlock"):
        lines += deadlock_lines(sim["deadlock"])
    lines += [f"  {t}: {d['words']}" for t, d in (sim.get("nccl_log") or {}).items()]
    for rank, words in sim["blocked"].items():
        lines.append(f"  rank {rank}: {words}")
    if sim["ranks"]:
        lines.append(f"sites: {len(sim['fired'])} fired, {len(sim['unpredicted'])} fired but "
                     f"not predicted, {len(sim['unfired'])} predicted but not fired")
        lines += [f"  fired: {sid}" for sid in sim["fired"]]
        lines += [f"  UNPREDICTED: {sid}" for sid in sim["unpredicted"]]
        lines += [f"  unfired: {u['site_id']}: {u['why']}" for u in sim["unfired"]]
    return "\n".join(lines) + "\n"
