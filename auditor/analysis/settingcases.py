"""A verdict judged across the values a setting the script leaves unknown can take
(config.setting_basis, written by auditor/scan.py from rules' [[setting_cases]]): decided where
the cases in which the run starts agree, else undecided naming the --set that decides it."""

from __future__ import annotations

from typing import Any

from auditor.analysis import causes as causes_of


def does_not_start(verdict: dict[str, Any]) -> bool:
    """A verdict whose first cause stops the run before its schedule (verdict._findings_headline)."""
    return str(verdict.get("headline", "")).startswith("DOES NOT START")


def settled(basis: dict[str, Any]) -> str | None:
    """The verdict every case gives where the run starts, when they agree on a decided one (no
    case starting: it does not start, whatever the value); else None."""
    starting = {c["status"] for c in basis["cases"] if c["starts"]} or {"findings"}
    common = starting.pop() if len(starting) == 1 else None
    return common if common in ("clean", "findings") else None


def disagree(basis: dict[str, Any]) -> bool:
    """Cases that start give different decided verdicts (an undecided case decides nothing)."""
    return len({c["status"] for c in basis["cases"] if c["starts"]} - {"inconclusive"}) > 1


def holds_words(basis: dict[str, Any]) -> str:
    """What a verdict judged across the setting's values holds on."""
    values = [str(c["value"]) for c in basis["cases"]]
    stops = [str(c["value"]) for c in basis["cases"] if not c["starts"]]
    return (f"Holds for any {basis['key']} (none stated: judged at {', '.join(values[:-1])} and "
            f"{values[-1]}: {basis['why']}"
            + (f"; at {', '.join(stops)} the run does not start" if stops else "")
            + f"; --set {basis['key']}=N gives the run's)")


def differ_words(basis: dict[str, Any]) -> tuple[str, str]:
    """(what, decide) where the values give different verdicts: which, and the --set."""
    key = basis["key"]
    said = "; ".join(f"{key}={c['value']} reads {causes_of.quoted(c['headline'])}"
                     for c in basis["cases"] if c["starts"])
    return (f"{key} is not known statically ({basis['stated']}) and its values disagree: {said}",
            f"--set {key}=N (the run's {key})")
