"""A verdict judged across the values the settings the script leaves unknown can take
(config.setting_basis, written by auditor/scan.py from rules' [[setting_cases]]): decided where
the cases in which the run starts agree, else undecided naming the --set that decides it. A case
still undecided on another such setting is split on it in turn (its `split`): a case that is
decided holds whatever the settings it left open are (the scan treats them as unknown), so only
the undecided ones need the product."""

from __future__ import annotations

import re
from typing import Any

from auditor.analysis import causes as causes_of


def does_not_start(verdict: dict[str, Any]) -> bool:
    """A verdict whose first cause stops the run before its schedule (verdict._findings_headline)."""
    return str(verdict.get("headline", "")).startswith("DOES NOT START")


def settled(basis: dict[str, Any]) -> str | None:
    """The verdict every case gives where the run starts, when they agree on a decided one (no
    case starting: it does not start, whatever the value; every case that starts not a pipeline
    run: not one, whatever the value); else None."""
    starting = {c["status"] for c in basis["cases"] if c["starts"]} or {"findings"}
    common = starting.pop() if len(starting) == 1 else None
    return common if common in ("clean", "findings", "not-pipeline") else None


def disagree(basis: dict[str, Any]) -> bool:
    """Cases that start give different decided verdicts (an undecided case decides nothing)."""
    return len({c["status"] for c in basis["cases"] if c["starts"]} - {"inconclusive"}) > 1


def next_key(verdict: dict[str, Any], needs: list[str], is_open: Any,
             tables: list[dict[str, Any]], within: bool = False) -> dict[str, Any] | None:
    """The [[setting_cases]] table to split an undecided document on: the first whose setting is
    open (`is_open(key)`: unknown, not given) and that the verdict rests on, being a setting the
    stack's batching rule needs or one its undecided entries name (a start-up check or a warning
    is no reason: the verdict does not rest on them). `within`: the document is a case already;
    it is split again only where each undecided entry names a setting that can be split, since
    an entry naming none stays undecided in every case and the scans would decide nothing."""
    splittable = [t for t in tables if is_open(t["key"])]
    words = [f"{u.get('what', '')} {u.get('decide', '')}" for u in verdict.get("undecided") or []]

    def named(key: str, text: str) -> bool:
        return re.search(rf"\b{re.escape(key)}\b", text) is not None

    if within and not all(any(named(t["key"], w) for t in splittable) for w in words):
        return None
    return next((t for t in splittable if t["key"] in needs or any(named(t["key"], w) for w in words)), None)


def undecided_case(basis: dict[str, Any]) -> int | None:
    """The first case that starts and stays undecided: its document names the step that decides
    it, where the cases do not disagree among themselves."""
    return next((k for k, c in enumerate(basis["cases"]) if c["starts"] and c["status"] == "inconclusive"), None)


def disagreeing(basis: dict[str, Any]) -> dict[str, Any] | None:
    """The setting whose values disagree: this one, else the one the first undecided case was
    split on, in turn (the document shown is that case's); None where none does."""
    if disagree(basis):
        return basis
    k = undecided_case(basis)
    split = basis["cases"][k].get("split") if k is not None else None
    return disagreeing(split) if split else None


def judged(basis: dict[str, Any]) -> list[dict[str, Any]]:
    """Every setting the verdict was judged over, in the order split, each once: the top one,
    then those its cases were split on in turn (`split`)."""
    out = {basis["key"]: basis}
    for case in basis["cases"]:
        for inner in judged(case["split"]) if case.get("split") else []:
            out.setdefault(inner["key"], inner)
    return list(out.values())


def _values(basis: dict[str, Any]) -> str:
    values = [str(c["value"]) for c in basis["cases"]]
    return f"{', '.join(values[:-1])} and {values[-1]}"


def holds_words(basis: dict[str, Any]) -> str:
    """What a verdict judged across the settings' values holds on."""
    stops = [str(c["value"]) for c in basis["cases"] if not c["starts"]]
    stop = f"; at {', '.join(stops)} the run does not start" if stops else ""
    every = judged(basis)
    if len(every) == 1:
        return (f"Holds for any {basis['key']} (none known: judged at {_values(basis)}: {basis['why']}"
                f"{stop}; --set {basis['key']}={placeholder(basis)} gives the run's)")
    keys = [b["key"] for b in every]
    sets = ", ".join(f"--set {b['key']}={placeholder(b)}" for b in every)
    inner = "; ".join(f"{b['key']} at {_values(b)} where a case left it open: {b['why']}" for b in every[1:])
    return (f"Holds for any {', '.join(keys[:-1])} and {keys[-1]} (none known: judged at "
            f"{basis['key']} {_values(basis)}: {basis['why']}{stop}; then {inner}; "
            f"{sets} give the run's)")


def differ_words(basis: dict[str, Any]) -> tuple[str, str]:
    """(what, decide) where the values give different verdicts: which, and the --set."""
    key = basis["key"]
    said = "; ".join(f"{key}={c['value']} reads {causes_of.quoted(c['headline'])}"
                     for c in basis["cases"] if c["starts"])
    return (f"{key} is not known statically ({basis['stated']}) and its values disagree: {said}",
            f"--set {key}={placeholder(basis)} (the run's {key})")


def placeholder(basis: dict[str, Any]) -> str:
    """The value a --set of the setting takes: N for a size, else its cases' values."""
    values = [c["value"] for c in basis["cases"]]
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "N"
    return "|".join(str(v).lower() for v in values)
