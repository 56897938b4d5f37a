"""What each line of code did in a recorded run (calls per rank, unbatched ops per group), read
from the trace reader's op counts: what the join matches to the scan's sites and judges."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from auditor.dynamic.trace import Trace

# (path, line, end_line, function, api, op): one line of code as the trace names it.
Key = tuple[str, int, int, str, str, "str | None"]


@dataclass
class Use:
    """What one line of code did in the run."""

    fired: Counter = field(default_factory=Counter)  # rank -> calls
    unbatched: dict[str, Counter] = field(default_factory=dict)  # group label -> rank -> ops
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)  # label -> recorded group
    via_batch: bool = False  # its ops came from batch_isend_irecv
    chosen: Counter = field(default_factory=Counter)  # "path:line" that chose its ops -> ops


def read_uses(trace: Trace) -> dict[Key, Use]:
    """Per line of code: calls per rank, and the unbatched ops per group, from the reader's op
    counts. An op from batch_isend_irecv counts for its P2POp line (`op_site`) and, once per
    batch, for the batch_isend_irecv line (`site`); a call line also gets the framework lines
    that chose its ops (`chosen`)."""
    uses: dict[Key, Use] = {}
    chosen: dict[tuple, Counter] = {}  # site -> the framework lines that chose its ops

    def use(site: tuple | None, api: str, op: str | None) -> Use:
        path, line, end_line, function = site or ("?", 0, 0, "?")
        key = (path, line, end_line, function, api, op)
        u = uses.get(key)
        if u is None:
            u = uses[key] = Use()
        return u

    for rank, rt in trace.ranks.items():
        for u, n in rt.usage.items():
            if u.kind != "p2p":
                continue
            group = rt.groups[u.group] if u.group >= 0 else {}
            label = group_label(group)
            if u.via == "batch_isend_irecv":
                if u.op_site:  # where its P2POp was made, when the recorder saw it
                    use(u.op_site, "P2POp", u.api).fired[rank] += n
                call = use(u.site, "batch_isend_irecv", None)
                call.via_batch = True
                call.fired[rank] += 0  # counted once per batch below
            else:
                call = use(u.site, u.api, None)
                call.fired[rank] += n
            call.groups.setdefault(label, group)
            if u.batched is False:
                call.unbatched.setdefault(label, Counter())[rank] += n
        for site, calls in rt.batch_calls.items():
            use(site, "batch_isend_irecv", None).fired[rank] += calls
        for (site, line), n in rt.chosen.items():
            if line is not None:
                chosen.setdefault(site, Counter())[f"{line[0]}:{line[1]}"] += n
    for (path, line, end_line, function, _, op), u in uses.items():
        if op is None:
            u.chosen = chosen.get((path, line, end_line, function), u.chosen)
    for u in uses.values():
        u.fired = +u.fired  # drop the zero counts
    return uses


def group_label(group: dict[str, Any]) -> str:
    desc = group.get("desc")
    if desc:
        return str(desc)
    ranks = group.get("ranks")
    return "group[" + ",".join(map(str, ranks)) + "]" if ranks else "unknown group"


# --- matching ----------------------------------------------------------------------------------
