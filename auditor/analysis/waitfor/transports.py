"""NCCL's transports and what each is known to buffer (rules/nccl.toml), and the NCCL release a
torch wheel pins: the bounds the replay and the two deadlock verdicts read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from auditor import rulebook


@dataclass(frozen=True)
class Transport:
    """One transport's bound (rules/nccl.toml): a send of at most `completes_bytes` completes with
    its receive not running; one of at least `hangs_bytes` waits for it; between the two (or above
    `completes_bytes` where nothing was seen to hang) nobody knows, and the verdict says so."""

    name: str  # as NCCL_DEBUG=INFO names it: "NET/IB"
    model_name: str  # as --transport names it: "net-ib"
    bound: str  # "measured" or "derived" (read from NCCL's sources, never measured here)
    completes_bytes: int
    hangs_bytes: int | None
    per_channel: int | None
    evidence: str
    log: str = ""  # path:line of the NCCL log that set these bounds (analysis.ncclbounds)

    @property
    def basis(self) -> str:
        """How the bound is known, in words: "derived", "derived; from the NCCL log at ..."."""
        return f"{self.bound}; from the NCCL log at {self.log}" if self.log else self.bound

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "model_name": self.model_name, "bound": self.bound,
                "completes_bytes": self.completes_bytes, "hangs_bytes": self.hangs_bytes,
                "per_channel": self.per_channel, "evidence": self.evidence,
                "log": self.log or None}


def nccl_rules() -> dict[str, Any]:
    return rulebook.load("nccl").data


def transports() -> dict[str, Transport]:
    """Every transport of rules/nccl.toml, by the name --transport gives it."""
    return {t["model_name"]: Transport(t["name"], t["model_name"], t["bound"],
                                       t["completes_bytes"], t.get("hangs_bytes"),
                                       t.get("per_channel"), t["evidence"])
            for t in nccl_rules()["transport"]}


def transport_names() -> list[str]:
    """What --transport accepts: a transport, or a topology (`node`, `net`) naming several."""
    return sorted({*transports(), *nccl_rules()["topology"]})


def candidates(transport: str) -> tuple[Transport, ...]:
    """The transports `transport` leaves possible: itself, or those of a topology."""
    known = transports()
    names = nccl_rules()["topology"].get(transport, [transport])
    if any(n not in known for n in names):
        raise ValueError(f"unknown transport {transport!r}; one of {transport_names()}")
    return tuple(known[n] for n in names)


def nccl_version(torch_version: str | None) -> str | None:
    """The NCCL torch's Linux wheel pins, where rules/nccl.toml knows it and its sources were read;
    None otherwise, so that an unread release is shown as read against others, never as itself."""
    nccl = nccl_rules()["nccl"]
    pin = nccl["torch"].get((torch_version or "").split("+")[0], {}).get("nccl")
    return pin if pin in nccl["versions"] else None


def nccl_words(torch_version: str | None) -> str:
    """The NCCL release the bounds are read against, in words: torch's pin where it is known,
    else the releases whose sources were read."""
    known = nccl_version(torch_version)
    if known:
        return f"{known} (torch {torch_version}'s pin)"
    return ("read against NCCL " + ", ".join(nccl_rules()["nccl"]["versions"])
            + (f"; torch {torch_version}'s NCCL is not in rules/nccl.toml" if torch_version else ""))


# What a send can leave behind without its receive running, per --transport name: the largest size
# one of its candidate transports is known to complete. This is the single replay's bound; the two
# deadlock verdicts (`deadlock`) read each candidate's whole range.
# The replay of MUST's zero-buffer contract: every send waits for its receive.
ZERO_BUFFER = "zero-buffer"
TRANSPORT_BUFFER: dict[str, int] = {
    name: max(t.completes_bytes for t in candidates(name)) for name in transport_names()}
