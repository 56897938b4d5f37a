"""A script that runs several training commands (a `for` loop over parallel sizes, as
Megatron-Bridge's examples/models/gemma/gemma3_vl/sft.sh does), or one command whose config runs
several pipelines (a Hydra config's megatron roles, ROLL's actor_train and reference), is judged
on each: the run is only as good as its worst command, so the document shown is that command's,
and config.command_basis (written here, read by the verdict) lists every command's verdict.

Every command is judged, whether or not the script stops on one that fails: among findings, a
hang or a wrong result ranks before a start-up failure, so a hang in a later command is never
hidden behind an earlier command's DOES NOT START (h33-review2), and a command that does not start
is never left out for the others' CLEAN (whether bash goes on past it -- `set -e` spelt however,
`$?` tested, `exec` -- is not read here: h33-review7). A command that runs only where the caller
sets a variable (`[ "${RUN_EVAL:-0}" = 1 ] || exit 0` before it: config/chosen_command.py
`guarded`) is no part of the run as launched: the shown verdict is the default run's, and that
command's verdict is said with its condition (review r42-shell item 2)."""

from __future__ import annotations

from typing import Any

from auditor.analysis import causes
from auditor.analysis.sitestatus import SiteStatus

# The worse a verdict, the earlier: a run with one command that hangs has findings.
_ORDER = ("findings", "not-covered", "inconclusive", "clean", "not-pipeline", "inventory")


def _rank(doc: dict[str, Any]) -> int:
    status = doc["verdict"]["status"]
    return _ORDER.index(status) if status in _ORDER else 0


def _reached(doc: dict[str, Any]) -> int:
    return sum(1 for s in doc.get("sites", []) if SiteStatus.of(s).reached)


def _role(doc: dict[str, Any]) -> str | None:
    """The role a document judged, where its command runs several (a Hydra config's megatron
    roles; config/frontends/hydra_compose.py names it in its config-file finding)."""
    return next((f["detail"]["role"] for f in doc.get("findings", [])
                 if f.get("kind") == "launch.config-file" and "role" in (f.get("detail") or {})), None)


def _starts_not(doc: dict[str, Any]) -> bool:
    """The command stops at start-up: its only errors are start-up failures, no site contradicts."""
    errors = [f for f in doc.get("findings", []) if f.get("severity") == "error"]
    return (doc["verdict"]["status"] == "findings" and bool(errors) and all(map(causes.is_startup, errors))
            and not any(SiteStatus.of(s).contradiction for s in doc.get("sites", [])))


def merged(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """The document of the worst verdict among `docs` (one per training command, in the order the
    script runs them; among findings, a contradiction before a start-up failure; among equals, the
    one reaching the most P2P sites, then the first), its
    config.command_basis naming every command's verdict and its launch warnings about the other
    commands replaced by that basis."""
    commands = [{"line": int((d.get("launch") or {}).get("line") or 0), "status": d["verdict"]["status"],
                 "headline": d["verdict"]["headline"],
                 "pipeline_model_parallel_size": d.get("config", {}).get("effective", {}).get(
                     "pipeline_model_parallel_size")} for d in docs]
    for c, d in zip(commands, docs):  # by its place in the run: a loop's commands share a line
        if _detail(d, "launch.caller-runs", "caller_only"):
            c["caller_sets"] = _detail(d, "launch.caller-runs", "names")
    default = [k for k, c in enumerate(commands) if "caller_sets" not in c] or list(range(len(docs)))
    # among findings, a hang or a wrong result before a start-up failure: the run shows it first
    shown = min(default, key=lambda k: (_rank(docs[k]), _starts_not(docs[k]), -_reached(docs[k]), k))
    doc = docs[shown]
    roles = [_role(d) for d in docs]
    if all(roles):
        for command, role in zip(commands, roles):
            command["role"] = role
    doc["config"]["command_basis"] = {"shown": shown, "commands": commands}
    chosen = _chosen_by(doc)
    if chosen:
        doc["config"]["command_basis"]["chosen_by"] = chosen
    guarded = _detail(doc, "launch.caller-runs", "guarded")
    if guarded:
        doc["config"]["command_basis"]["guarded"] = guarded
    said = "; ".join(f"{k + 1}: {_which(c)}, pipeline_model_parallel_size "
                     f"{c['pipeline_model_parallel_size']}, {c['status']}" for k, c in enumerate(commands))
    where = f"{(doc.get('launch') or {}).get('path', '')}:{commands[shown]['line']}"
    doc["findings"] = [f for f in doc.get("findings", []) if f.get("kind") != "launch.several-commands"]
    doc["findings"].append({
        "kind": "launch.several-commands", "severity": "info",
        "message": (f"the config runs {len(docs)} pipelines (its roles), each judged ({said}); this document "
                    f"is role {roles[shown]}'s, the worst verdict" if all(roles) else
                    f"the script {'may run' if guarded else 'runs'} {_runs(len(docs), chosen)}, each judged ({said}); this document is "
                    f"command {shown + 1} of {len(docs)}'s, the worst verdict"),
        "fix": "", "site_ids": [], "where": where,
        "detail": {}})
    return doc


def _chosen_by(doc: dict[str, Any]) -> str:
    """What chooses which of the commands runs, where one of them does (the tests that
    config/chosen_command.py names); "" where the script runs each."""
    return _detail(doc, "launch.chosen-command", "chosen_by")


def _detail(doc: dict[str, Any], kind: str, key: str) -> Any:
    """The `key` of the first finding of `kind` that has one: what config/chosen_command.py says
    chooses the commands (`chosen_by`), or lets the later ones run (`guarded`)."""
    return next((f["detail"][key] for f in doc.get("findings", [])
                 if f.get("kind") == kind and key in (f.get("detail") or {})), "")


def _runs(count: int, chosen: str) -> str:
    return f"one of {count} training commands, chosen by {chosen}" if chosen else f"{count} training commands"


def _which(command: dict[str, Any]) -> str:
    return f"role {command['role']}" if "role" in command else f"line {command['line']}"


def words(basis: dict[str, Any]) -> str:
    """What a verdict judged on each of a script's training commands (or of its command's
    roles) holds on."""
    commands = basis["commands"]
    shown = commands[basis["shown"]]
    if all("role" in c for c in commands):
        each = ", ".join(f"{c['role']}: {c['status']} at pipeline_model_parallel_size "
                         f"{c['pipeline_model_parallel_size']}" for c in commands)
        return (f"Judged on each of the {len(commands)} roles its config runs a pipeline for ({each}); "
                f"shown: {shown['role']}")
    each = ", ".join(f"{c['status']} at pipeline_model_parallel_size {c['pipeline_model_parallel_size']}"
                     for c in commands)
    runs = (f"may run ({each}; it runs the one {basis['chosen_by']} chooses)" if basis.get("chosen_by")
            else f"may run ({each}; {basis['guarded']})" if basis.get("guarded") else f"runs ({each})")
    only = "".join(f"; where the caller sets {c['caller_sets']}, the training command {k + 1} (line {c['line']}) "
                   f"runs too, and then: {_first_sentence(c['headline'])}"
                   for k, c in enumerate(commands) if c.get("caller_sets") and c is not shown)
    return (f"Judged on each of the {len(commands)} training commands the script {runs}; "
            f"shown: command {basis['shown'] + 1} (line {shown['line']}), the run as launched{only}"
            if only else f"Judged on each of the {len(commands)} training commands the script {runs}; "
            f"shown: command {basis['shown'] + 1} (line {shown['line']})")


def _first_sentence(headline: str) -> str:
    """A command's answer without what it holds on (`DOES NOT START: ... (run.sh:4)`)."""
    return headline.split(". ", 1)[0].rstrip(".")
