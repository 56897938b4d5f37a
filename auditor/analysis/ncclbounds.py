"""What a cluster's NCCL_DEBUG=INFO log decides: which of the modelled transports the job really
uses, and, for a bound derived per channel (rules/nccl.toml `per_channel_steps`), the bound with
the log's own channels per peer and P2P chunk instead of the 1..MAXCHANNELS the rules leave open.

A log that contradicts the config (another NCCL than torch's pin, two NCCL releases, transports
none of which the config's layout allows, a network whose sources were not read) is shown and not
used: the modelled bounds stand, and the contradiction says what would decide.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from auditor.analysis.waitfor.sizes import size_words
from auditor.analysis.waitfor.transports import Transport, candidates, nccl_rules, nccl_version
from auditor.dynamic.nccllog import (P2P_CONNECTION, Connection, Fact, NcclLog, read_logs,
                                     version_number)

CHUNK_SETTINGS = ("NCCL_P2P_NET_CHUNKSIZE", "NCCL_P2P_PCI_CHUNKSIZE", "NCCL_P2P_NVL_CHUNKSIZE",
                  "NCCL_BUFFSIZE")


@dataclass
class Decision:
    """The log's transports with their bounds (`transports`; empty: the log is not used), what it
    was read for, and why it is not used or is used only in part."""

    log: NcclLog
    modelled: str  # the transport or topology the config gives ("net", "net-ib")
    transports: tuple[Transport, ...] = ()
    contradictions: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    stated: list[str] = field(default_factory=list)  # what the decision read, each with file:line

    @property
    def used(self) -> bool:
        return bool(self.transports)

    def words(self) -> str:
        """One line for the reports."""
        if self.used:
            # a derived bound the log left per channel (refined ones have none): say what is missing
            still_open = any(t.bound == "derived" and t.per_channel for t in self.transports)
            return "NCCL log: " + "; ".join(self.stated) + (
                f" (not in it: {'; '.join(self.missing)})" if still_open else "")
        why = "; ".join(self.contradictions or self.missing) or "it states nothing decisive"
        return f"NCCL log not used: {why}"

    def to_json(self) -> dict[str, Any]:
        return {"used": self.used, "modelled": self.modelled, "words": self.words(),
                "transports": [t.to_json() for t in self.transports],
                "stated": self.stated, "contradictions": self.contradictions,
                "missing": self.missing, "log": self.log.to_json()}


def from_logs(paths: list[Path], modelled: str, torch_version: str | None) -> Decision | None:
    """The decision of the `--nccl-log` files or directories `paths` (None: none given)."""
    return decide(read_logs(paths), modelled, torch_version) if paths else None


def _rule_name(c: Connection, table: list[dict[str, Any]]) -> str | None:
    """The rules' transport (of rules/nccl.toml's `table`) a connection line names, or None for a
    network whose sources were not read (a plugin: "NET/IBext_v8", "NET/AWS Libfabric")."""
    for t in table:
        names = t.get("net_names")
        if names is not None and c.family.startswith("NET/"):
            if c.family.split("/", 1)[1] in names:
                return t["model_name"]
        elif names is None and t["name"] == c.family:
            return t["model_name"]
    return None


def decide(log: NcclLog, modelled: str, torch_version: str | None) -> Decision:
    """The log read against the config: `modelled` is the transport (or topology) the config
    gives, `torch_version` the torch whose NCCL pin the log's release is checked against."""
    d = Decision(log, modelled, missing=log.missing())
    versions = sorted({version_number(f.value) for f in log.versions})
    pin = nccl_version(torch_version)
    if len(versions) > 1:
        d.contradictions.append("the logs state NCCL " + " and ".join(
            f"{v} ({_first(log.versions, v)})" for v in versions) + ": not one job's logs")
    elif versions and pin and versions[0] != pin:
        where = _first(log.versions, versions[0])
        d.contradictions.append(f"the log states NCCL {versions[0]} ({where})"
                                f" and torch {torch_version} pins NCCL {pin}: a log of this job's "
                                f"NCCL decides")
    version = versions[0] if versions else pin
    rules = nccl_rules()
    if version and version not in rules["nccl"]["versions"]:
        d.contradictions.append(f"NCCL {version}'s sources were not read (rules/nccl.toml "
                                f"[nccl].versions): its bounds are unknown")
    allowed = {t.model_name: t for t in candidates(modelled)}
    seen: dict[str, Connection] = {}
    unread: dict[str, str] = {}  # "NET/IBext_v8" -> where the log names it
    known = {n for t in rules["transport"] for n in t.get("net_names", [])}
    for f in log.networks:  # "Using network IBext_v8": a plugin, even before any connection
        if f.value not in known:
            unread.setdefault(f"NET/{f.value}", f.where)
    for c in log.connections:
        name = _rule_name(c, rules["transport"])
        if name is None:
            unread.setdefault(c.family, c.where)
        else:
            seen.setdefault(name, c)
    if any(f.startswith("NET/") for f in unread) and any(n.startswith("net") for n in allowed):
        d.contradictions += [f"{f} ({where}) is a network whose sources were not read: its bound "
                             f"is unknown" for f, where in unread.items() if f.startswith("NET/")]
    used = [n for n in seen if n in allowed]
    if seen and not used:
        d.contradictions.append(
            "the log's transports (" + ", ".join(f"{c.family} at {c.where}" for c in seen.values())
            + f") are none of those the config's layout allows ({modelled}: "
            + ", ".join(allowed) + ")")
    if d.contradictions or not used:
        return d
    out = []
    for name in used:
        t = allowed[name]
        d.stated.append(f"{seen[name].family} ({seen[name].where})")
        if t.bound == "derived" and t.per_channel is not None:
            t = _from_log(t, log, version, d, rules)
        out.append(t)
    d.transports = tuple(out)
    return d


def _from_log(t: Transport, log: NcclLog, version: str | None, d: Decision,
              rules: dict[str, Any]) -> Transport:
    """`t`'s bound with the log's channels per peer and chunk; `t` itself where the log does not
    print them (d.missing says so)."""
    rule = next(r for r in rules["transport"] if r["model_name"] == t.model_name)
    channels = _channels(t, log, rules["transport"])
    if not channels:
        return t
    chunks = _chunks(t, rule, log, version, d, rules["nccl"]["p2p_chunk_bytes"])
    if not chunks:
        return t
    steps = rule["per_channel_steps"]
    (lo, lo_where), (hi, hi_where) = _ends(channels)
    (clo, clo_where), (chi, chi_where) = _ends(chunks)
    completes, top = lo * steps * clo, hi * steps * chi
    d.stated.append(f"{lo} channel(s) per peer ({lo_where})" if lo == hi else
                    f"{lo} to {hi} channels per peer ({lo_where}, {hi_where})")
    d.stated.append(f"P2P chunk {size_words(clo)} ({clo_where})" if clo == chi else
                    f"P2P chunk {size_words(clo)} to {size_words(chi)} ({clo_where}; {chi_where})")
    d.stated.append(f"{t.name} buffers {size_words(completes)}" if completes == top else
                    f"{t.name} buffers {size_words(completes)} to {size_words(top)}")
    evidence = (f"channels per peer x {steps} steps x the P2P chunk, as the NCCL_DEBUG=INFO log "
                f"states them: {'; '.join(d.stated)}. Per channel: {t.evidence}")
    return replace(t, completes_bytes=completes, hangs_bytes=top + 1, per_channel=None,
                   evidence=evidence, log=lo_where)


def _channels(t: Transport, log: NcclLog, table: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """The channels per peer of `t`, each count with where: the point-to-point connections of a
    pair (one process's "Channel xx/1 : a -> b [send] via ..." lines), else the communicators'
    "N p2p channels per peer" (of those spanning nodes, for a network transport)."""
    pairs: dict[tuple[str, int, int, str], set[int]] = {}
    first: dict[tuple[str, int, int, str], str] = {}
    for c in log.connections:
        if c.index == P2P_CONNECTION and _rule_name(c, table) == t.model_name:
            key = (c.process, c.src, c.dst, c.direction)
            pairs.setdefault(key, set()).add(c.channel)
            first.setdefault(key, c.where)
    if pairs:
        return [(len(ch), first[k]) for k, ch in pairs.items()]
    net = t.model_name.startswith("net")
    return [(f.value, f.where) for f in log.per_peer if f.nnodes is None or (f.nnodes > 1) == net]


def _chunks(t: Transport, rule: dict[str, Any], log: NcclLog, version: str | None,
            d: Decision, base: dict[str, Any]) -> list[tuple[int, str]]:
    """The P2P chunk as the log prints it (of communicators spanning nodes, for a network); where
    it prints none, the rules' default (and the larger one of a release range that may apply on an
    unread host), unless an NCCL_* setting the log shows changes it."""
    net = t.model_name.startswith("net")
    printed = [(f.value, f.where) for f in log.chunks if f.nnodes is None or (f.nnodes > 1) == net]
    if printed:
        return printed
    settings = [f for name in CHUNK_SETTINGS for f in log.setting(name)]
    if settings:
        d.missing.append(f"the P2P chunk ('P2P Chunksize set to N'): the log sets the chunk or "
                         f"buffer at {settings[0].where}")
        return []
    default = base[rule["chunk"]]
    out = [(default, f"rules/nccl.toml [nccl.p2p_chunk_bytes].{rule['chunk']}")]
    for r in base.get("by_range", []):
        if rule["chunk"] in r and (version is None or _in(version, r["nccl"])):
            out.append((r[rule["chunk"]], f"{r['host']} hosts at NCCL {r['nccl']}"))
    return out


def _ends(values: list[tuple[int, str]]) -> tuple[tuple[int, str], tuple[int, str]]:
    """The smallest and the largest value, each where the log first states it."""
    return min(values, key=lambda v: v[0]), max(values, key=lambda v: v[0])


def _in(version: str, spec: str) -> bool:
    try:
        return Version(version) in SpecifierSet(spec)
    except InvalidVersion:
        return True


def _first(facts: list[Fact], version: str) -> str:
    return next(f.where for f in facts if version_number(f.value) == version)
