"""One effective config from those derived under each torch release a run may use.

A run that states no torch (or a pre-release build) is derived once per covered release
(`derive`); this merges the results: what every release agrees on, and for the rest an unknown
that names which releases gave which value, so a disagreement is said, never resolved by a
guess; a warning raised on some releases only is kept, naming them. Apart from `derive` because it reads only finished configs, not the rules."""

from __future__ import annotations

from dataclasses import replace

from auditor.config.effective import EffectiveConfig, Value
from auditor.config.expr import UNKNOWN, show
from auditor.config.torch_version import TorchBasis, span


def merge_across_torch(results: list[EffectiveConfig], basis: TorchBasis) -> EffectiveConfig:
    """One config from the torch releases of `basis`: what they agree on, the rest unknown,
    naming which releases gave which value (a pre-release build is read as two releases; a run
    that states no torch as every covered release)."""
    releases = basis.releases
    first = results[0]
    values = dict(first.values)
    for key, a in first.values.items():
        got = [r.values.get(key) for r in results]
        if key == "torch_version":
            continue
        if all(b is not None and b.value == a.value for b in got):
            # A rule's sentence names `{torch_version}`, which is unknown across releases.
            if basis.across:
                values[key] = replace(a, provenance=a.provenance.replace(
                    "torch unknown", f"every torch {span(releases)}"))
            continue
        by_value = _runs([show(b.value) if b else "underived" for b in got], releases)
        values[key] = Value(
            UNKNOWN, f"torch {basis.version or span(releases)}: "
            + "; ".join(f"as {span(rs)} {key}={v}" for v, rs in by_value)
            + "; pass --torch with the cluster's release", "torch version", a.history, a.lines)
    def keys(f):
        return (f.kind, f.where)
    raised = [{keys(f) for f in r.findings} for r in results]
    findings = [f for f in first.findings if all(keys(f) in k for k in raised)]
    undecided = list(dict.fromkeys(u for r in results for u in r.undecided))
    seen: set[tuple[str, str | None]] = set()
    for r in results:
        for f in r.findings:
            if keys(f) in seen or all(keys(f) in k for k in raised):
                continue
            seen.add(keys(f))
            on = [rel for rel, k in zip(releases, raised) if keys(f) in k]
            if f.severity != "error":
                # A warning leaves the P2P verdict as it is, and each release's answer is known:
                # said with the releases that raise it.
                off = ", ".join(_spans([r for r in releases if r not in on], releases))
                findings.append(replace(f, message=f"on torch {', '.join(_spans(on, releases))} only "
                                                   f"(not {off}): {f.message}",
                                        detail={**f.detail, "torch": _spans(on, releases)}))
                continue
            undecided.append(f"{f.detail.get('rule', f.kind)}: raised for torch {', '.join(_spans(on, releases))} "
                             f"only, not for the other releases of torch {basis.version or span(releases)}")
    notes = list(dict.fromkeys(n for r in results for n in r.notes))
    outside: dict[str, list[str]] = {}
    for r in reversed(results):
        outside.update(r.outside_rules)
    roots = {k: v for r in reversed(results) for k, v in r.unknown_inputs.items()}
    return EffectiveConfig(values, first.versions, first.env, findings, undecided, notes,
                           outside, first.env_readers, unknown_inputs=roots)


def _runs(values: list[str], releases: tuple[str, ...]) -> list[tuple[str, list[str]]]:
    """Consecutive releases that gave one value, as (value, releases) in release order."""
    out: list[tuple[str, list[str]]] = []
    for value, release in zip(values, releases):
        if out and out[-1][0] == value:
            out[-1][1].append(release)
        else:
            out.append((value, [release]))
    return out


def _spans(chosen: list[str], releases: tuple[str, ...]) -> list[str]:
    """`chosen` (a subset of `releases`) as spans of consecutive releases: ["2.10.0", "2.12.0-2.15.0"]."""
    marks = [r in chosen for r in releases]
    return [span(rs) for on, rs in _runs([str(m) for m in marks], releases) if on == "True"]
