"""The run's picture: which ops of each rank to draw, and where, so the first screen tells the story.

A recorded rank starts with dozens of set-up calls (init_process_group, one new_group per
megatron group) and runs thousands of ops; the hang is a handful of them. So each lane keeps only
the windows that matter, in issue order: its set-up calls folded into one item, its first P2P
exchange, and the ops around every op that waits (blocked, queued, pending, or waited on by
another rank). What lies between is one gap item with its count; the per-site counts of the
whole run are in the report's table. The wait-for cycle is drawn as arrows rank -> rank, each
naming the op, its bytes, its communicator and its site.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from auditor.analysis.waitfor.sizes import size_words
from auditor.dynamic.rankfile import IN_FLIGHT

OP_W, GAP_W, SETUP_W, BOX_H, GAP_X, LANE_H, LEFT, TOP = 104, 60, 80, 24, 8, 56, 70, 24
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f",
           "#ff9da7", "#bab0ac", "#86bcb6", "#d37295", "#a0cbe8")
SEND = {"send", "isend"}
RECV = {"recv", "irecv"}
FIRST_OPS = 2  # the first exchange: a shape exchange and its tensor, or a send and a receive
CALM_OPS = 6  # a lane where nothing waits shows its first few exchanges
BEFORE, AFTER = 2, 1  # ops kept around each waiting op
MAX_LANES = 16  # lanes drawn; ranks in the cycle and ranks left waiting come first
WAITING = ("blocked", "queued", "creating")


def is_waiting(ev: dict[str, Any]) -> bool:
    """The model leaves it waiting, or the run never finished it (and did not end with it open)."""
    return ev.get("model") in WAITING or ev.get("recorded", "done") not in ("done", IN_FLIGHT)


def is_notable(ev: dict[str, Any]) -> bool:
    """Drawn with its neighbours: it waits, or its process crashed or exited with it in flight."""
    return is_waiting(ev) or ev.get("recorded") == IN_FLIGHT


def cycle_edges(lanes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The wait-for cycle as edges between drawn ops ({rank, index, to_rank, to_index, ev}),
    found by following each waiting op's `blocked_on` until an op repeats."""
    ops = {(lane["rank"], ev["index"]): ev for lane in lanes for ev in lane["events"]
           if "index" in ev}
    succ = {}
    for key, ev in ops.items():
        target = ev.get("blocked_on") or {}
        nxt = (target.get("rank"), target.get("index"))
        if nxt in ops and nxt != key:
            succ[key] = nxt
    for start in sorted(succ):
        path, seen = [start], {start}
        while path[-1] in succ and succ[path[-1]] not in seen:
            seen.add(succ[path[-1]])
            path.append(succ[path[-1]])
        if path[-1] in succ:  # the walk closed on an op already on it
            loop = path[path.index(succ[path[-1]]):]
            return [{"rank": a[0], "index": a[1], "to_rank": b[0], "to_index": b[1], "ev": ops[a],
                     "to_ev": ops[b]} for a, b in zip(loop, loop[1:] + loop[:1])]
    return []


def _site(ev: dict[str, Any]) -> str:
    """`path:line function` as the join writes it, without the `None`s of an op recorded
    without its call site; then the framework line that chose the op, where the trace names
    another (`chosen`)."""
    where = str(ev.get("where") or "")
    if not where or where.startswith("None:"):
        return "an unrecorded site"
    chosen = f", chosen at {ev['chosen']}" if ev.get("chosen") else ""
    return where.removesuffix(" None") + chosen


def _op_words(ev: dict[str, Any]) -> str:
    size = f" {size_words(ev['bytes'])}" if ev.get("bytes") is not None else ""
    return f"{str(ev.get('api')).upper()}{size}"


def edge_words(edge: dict[str, Any], cycle: list[dict[str, Any]]) -> str:
    """`rank 2 -> rank 3: ISEND 24 MiB on default_pg:2-3 at p2p_communication.py:49
    _batched_p2p_ops waits for rank 3's IRECV, queued behind its ISEND 24 MiB`"""
    ev, to = edge["ev"], edge["to_ev"]
    comm = ev.get("communicator") or ev.get("group") or "the default group"
    reason = (ev.get("blocked_on") or {}).get("reason", "")
    text = (f"rank {edge['rank']} \u2192 rank {edge['to_rank']}: {_op_words(ev)} on {comm}, "
            f"at {_site(ev)}, waits for rank {edge['to_rank']}'s {_op_words(to)}")
    if reason not in ("match", "queued"):
        text += f" ({reason})"
    behind = [e for e in cycle if (e["rank"], e["index"]) == (edge["to_rank"], edge["to_index"])]
    if behind and behind[0]["to_rank"] == edge["to_rank"]:
        text += f", queued behind its {_op_words(behind[0]['to_ev'])}"
    return text


def _keep(lane: dict[str, Any], wanted: set[int]) -> set[int]:
    """Positions in the lane's events to draw in full: the first exchange, every waiting op
    with its neighbours, and the ops other ranks wait for (`wanted` op indices)."""
    events = lane["events"]
    ops = [p for p, ev in enumerate(events) if ev["kind"] != "setup"]
    keep: set[int] = set()
    if ops:
        calm = not any(is_notable(events[p]) or events[p].get("index") in wanted for p in ops)
        first = events[ops[0]].get("batch")
        keep.update(ops[:CALM_OPS if calm else FIRST_OPS])
        keep.update(p for p in ops if first is not None and events[p].get("batch") == first)
    for k, p in enumerate(ops):
        ev = events[p]
        if is_notable(ev) or ev.get("index") in wanted:
            keep.update(ops[max(0, k - BEFORE):k + AFTER + 1])
    return keep


def _cells(lane: dict[str, Any], keep: set[int], truncated: bool) -> list[dict[str, Any]]:
    """The lane as drawn: ops kept in full, set-up calls folded into one item where they lead
    to a kept op, and gaps that count what is not drawn (ops of the lane outside `keep`, and
    ops the lane itself leaves out between its windows)."""
    cells: list[dict[str, Any]] = []
    setup: list[dict[str, Any]] = []
    gap: dict[str, Any] = {"kind": "gap", "ops": 0, "setup": 0, "sites": Counter()}  # not drawn since the last kept op
    last = -1  # the op index seen last: a lane cut into windows skips the ops between them
    for p, ev in enumerate(lane["events"]):
        if ev["kind"] == "setup":
            setup.append(ev)
            continue
        index = ev.get("index")
        if index is not None:
            gap["ops"] += max(0, index - last - 1)
            last = index
        if p not in keep:
            gap["ops"] += 1
            gap["setup"] += len(setup)
            gap["sites"][_site(ev)] += 1
            setup = []
            continue
        if gap["ops"]:
            cells.append(gap)
            gap = {"kind": "gap", "ops": 0, "setup": 0, "sites": Counter()}
        if setup:
            cells.append({"kind": "setup", "calls": setup})
            setup = []
        cells.append({"kind": "op", "ev": ev})
    if setup and not cells:
        cells.append({"kind": "setup", "calls": setup})
    else:
        gap["setup"] += len(setup)
    if gap["ops"] or gap["setup"] or truncated:
        cells.append(dict(gap, more=truncated))
    return cells


def _lanes_shown(lanes: list[dict[str, Any]], cycle_ranks: set[int]) -> list[dict[str, Any]]:
    """All lanes, or MAX_LANES of them that tell one story: the cycle's ranks, the ranks left
    waiting, then the ranks they exchange with (a pipeline column rather than one stage's
    data-parallel replicas), then the lowest ranks."""
    if len(lanes) <= MAX_LANES:
        return lanes
    by_rank = {lane["rank"]: lane for lane in lanes}
    order = sorted(cycle_ranks) + [lane["rank"] for lane in lanes
                                   if any(is_notable(ev) for ev in lane["events"])]
    order += [min(by_rank)]
    chosen: dict[int, None] = {}
    queue = list(order)
    while queue and len(chosen) < MAX_LANES:
        rank = queue.pop(0)
        if rank in chosen or rank not in by_rank:
            continue
        chosen[rank] = None
        queue += [ev["peer"] for ev in by_rank[rank]["events"] if ev.get("peer") is not None]
    for rank in sorted(by_rank):
        if len(chosen) >= MAX_LANES:
            break
        chosen.setdefault(rank, None)
    return [by_rank[r] for r in sorted(chosen)]


def timeline_layout(run: dict[str, Any]) -> dict[str, Any]:
    """Coordinates for templates/timeline.svg.j2 from the joined run (`run.timeline` lanes with
    the wait-for model's state on each op): one lane per rank, boxes coloured by the NCCL
    communicator the op runs on, a diamond where an op creates a communicator, red where the
    run or the model leaves it waiting, an arrow from each waiting op to what it waits for."""
    timeline = run["timeline"]
    cycle = cycle_edges(timeline["ranks"])
    cycle_ranks = {e["rank"] for e in cycle}
    lanes = _lanes_shown(timeline["ranks"], cycle_ranks)
    wanted: dict[int, set[int]] = {}
    for lane in lanes:
        for ev in lane["events"]:
            target = ev.get("blocked_on") or {}
            if target.get("index") is not None:
                wanted.setdefault(target["rank"], set()).add(target["index"])
    colors: dict[str, str] = {}
    boxes, gaps, setups, brackets, where, ends = [], [], [], [], {}, {}
    for i, lane in enumerate(lanes):
        y = TOP + i * LANE_H
        ops = sum(1 for ev in lane["events"] if ev["kind"] != "setup")
        cells = _cells(lane, _keep(lane, wanted.get(lane["rank"], set())),
                       ops >= timeline.get("ops_per_rank", ops + 1))
        x = LEFT
        batch_start = None
        for cell in cells:
            if cell["kind"] == "setup":
                setups.append(_setup_item(lane["rank"], cell["calls"], x, y))
                x += SETUP_W + GAP_X
                batch_start = None
                continue
            if cell["kind"] == "gap":
                gaps.append(_gap_item(cell, x, y))
                x += GAP_W + GAP_X
                batch_start = None
                continue
            ev = cell["ev"]
            comm = ev.get("communicator")
            if comm and comm not in colors:
                colors[comm] = PALETTE[len(colors)] if len(colors) < len(PALETTE) else "#cccccc"
            boxes.append({
                "x": x, "y": y, "label": _label(ev), "title": _tooltip(lane["rank"], ev),
                "fill": colors.get(comm, "#e8e8e8"), "waiting": is_waiting(ev),
                "pending": ev["recorded"] in ("pending", IN_FLIGHT), "creates": bool(ev.get("comm_init")),
                "later": ev.get("model") == "not_issued",
                "rank": lane["rank"], "index": ev.get("index"),
            })
            if "index" in ev:
                where[(lane["rank"], ev["index"])] = (x, y)
            batch = ev.get("batch")
            if batch is not None and batch_start is not None and batch_start[0] == batch:
                brackets.append({"x1": batch_start[1] + 4, "x2": x + OP_W - 4, "y": y + BOX_H + 4})
            else:
                batch_start = (batch, x) if batch is not None else None
            x += OP_W + GAP_X
        ends[lane["rank"]] = (x, y)
    arrows, ghosts = _arrows(lanes, where, ends, cycle)
    width = max([x for x, _ in ends.values()] + [g["x"] + OP_W for g in ghosts] + [LEFT]) + 16
    legend_y = TOP + len(lanes) * LANE_H + 8
    legend = [{"x": LEFT + (k % 4) * 260, "y": legend_y + (k // 4) * 18, "name": name,
               "color": color} for k, (name, color) in enumerate(colors.items())]
    rows = (len(colors) + 3) // 4
    return {
        "width": max(width, LEFT + 4 * 260), "height": legend_y + rows * 18 + 30,
        "lanes": [{"rank": lane["rank"], "y": TOP + i * LANE_H + BOX_H / 2 + 4}
                  for i, lane in enumerate(lanes)],
        "boxes": boxes, "gaps": gaps, "setups": setups, "arrows": arrows, "ghosts": ghosts,
        "brackets": brackets, "legend": legend, "legend_y": legend_y + rows * 18 + 14,
        "box_w": OP_W, "box_h": BOX_H, "setup_w": SETUP_W, "gap_w": GAP_W,
        "cycle": [edge_words(e, cycle) for e in cycle if e["rank"] != e["to_rank"]],
        "not_shown": len(timeline["ranks"]) - len(lanes) + timeline.get("not_shown", 0),
        "setup_calls": [{"rank": s["rank"], "calls": s["calls"]} for s in setups],
    }


def _arrows(lanes: list[dict[str, Any]], where: dict, ends: dict, cycle: list[dict[str, Any]]
            ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """An arrow from each drawn waiting op to the op it waits for; the cycle's arrows between
    ranks carry their words. An op waiting for one its peer never issued points at a ghost."""
    in_cycle = {(e["rank"], e["index"]): e for e in cycle}
    arrows: list[dict[str, Any]] = []
    ghosts: list[dict[str, Any]] = []
    for lane in lanes:
        for ev in lane["events"]:
            target = ev.get("blocked_on") or {}
            start = where.get((lane["rank"], ev.get("index")))
            if not start or not target:
                continue
            end = where.get((target.get("rank"), target.get("index")))
            # "no matching SEND was ever issued": the peer's lane is where it is missing.
            other = target["rank"] if target.get("rank") is not None else ev.get("peer")
            if end is None and target.get("index") is None and other in ends:
                end = ends[other]
                if not any(g["x"] == end[0] and g["y"] == end[1] for g in ghosts):
                    ghosts.append({"x": end[0], "y": end[1]})
            if end is None or end == start:
                continue
            x1, y1 = start[0] + OP_W / 2, start[1] + BOX_H / 2
            x2, y2 = end[0] + OP_W / 2, end[1] + BOX_H / 2
            # Bent to the right going down, to the left going up: A->B and B->A both show.
            bend = 36 if y2 >= y1 else -36
            if y1 == y2:  # along one lane (queued behind): an arc above the boxes
                y1, y2, bend = start[1], end[1], 0
            cx, cy = (x1 + x2) / 2 + bend, (y1 + y2) / 2 - (18 if y1 == y2 else 0)
            edge = in_cycle.get((lane["rank"], ev.get("index")))
            crosses = bool(edge and edge["rank"] != edge["to_rank"])
            arrows.append({
                "d": f"M{x1},{y1} Q{cx},{cy} {x2},{y2}",
                "title": edge_words(edge, cycle) if edge else
                f"rank {lane['rank']} waits for rank {other}: {target.get('reason', '')}",
                "cycle": bool(edge), "label": f"{lane['rank']}\u2192{other}" if crosses else "",
                "from_rank": lane["rank"], "to_rank": other,
                # the curve's midpoint, where its label goes
                "lx": (x1 + 2 * cx + x2) / 4, "ly": (y1 + 2 * cy + y2) / 4 + 4,
            })
    return arrows, ghosts


def _setup_item(rank: int, calls: list[dict[str, Any]], x: float, y: float) -> dict[str, Any]:
    by_api = Counter(str(ev.get("api")) for ev in calls)
    words = ", ".join(f"{api} \u00d7{n}" for api, n in by_api.most_common())
    return {"x": x, "y": y, "rank": rank, "n": len(calls), "label": f"set-up \u00d7{len(calls)}",
            "title": f"rank {rank}: {len(calls)} set-up call(s): {words} (click to list them)",
            "calls": [_label(ev) for ev in calls]}


def _gap_item(cell: dict[str, Any], x: float, y: float) -> dict[str, Any]:
    words = [f"{cell['ops']} op(s) not drawn"] if cell["ops"] else []
    if cell["setup"]:
        words.append(f"{cell['setup']} set-up call(s)")
    words += [f"  {n} at {where}" for where, n in cell["sites"].most_common(4)]
    if cell.get("more"):
        words.append("later ops are not kept in the report: the per-site counts cover the run")
    label = f"\u22ef {cell['ops']}" if cell["ops"] else "\u22ef"
    return {"x": x, "y": y, "label": label + ("+" if cell.get("more") else ""),
            "title": "\n".join(words)}


def _label(ev: dict[str, Any]) -> str:
    api = str(ev.get("api"))
    if ev["kind"] == "setup":
        return f"{api} {ev['group']}" if ev.get("group") else api
    if api in SEND:
        return f"{api}\u2192{ev.get('peer')}"
    if api in RECV:
        return f"{api}\u2190{ev.get('peer')}"
    return api


def _tooltip(rank: int, ev: dict[str, Any]) -> str:
    size = f" ({size_words(ev['bytes'])})" if ev.get("bytes") is not None else ""
    lines = [f"rank {rank}, op {ev.get('index')}: {_label(ev)}{size} on "
             f"{ev.get('group') or 'the default group'}",
             f"at {_site(ev)}", f"recorded: {ev['recorded']}"
             + (" (batched)" if ev.get("batched") else " (unbatched)" if ev["kind"] == "p2p" else "")]
    if ev.get("comm_init"):
        ci = ev["comm_init"]
        lines.append(f"creates a communicator under lazy init ({ci.get('kind')} {ci.get('key')})")
    if ev.get("communicator"):
        lines.append(f"NCCL model: on {ev['communicator']}, {ev.get('model')}")
    target = ev.get("blocked_on")
    if target:
        who = f"rank {target['rank']}" if target.get("rank") is not None else "nobody"
        lines.append(f"waits for {who}: {target.get('reason')}")
    return "\n".join(lines)


def site_counts(doc: dict[str, Any], ranks: list[int]) -> list[dict[str, Any]]:
    """Per site that fired, its calls on each rank (the whole run, not only what is drawn):
    the scanned sites from `fired`, then lines the scan has no site for (`run.misses`)."""
    rows = []
    for s in doc["sites"]:
        fired = {int(r): n for r, n in (s.get("fired") or {}).items()}
        if fired:
            api = f"{s['api']}({s['op']})" if s.get("op") else s["api"]
            rows.append({"where": f"{s['path']}:{s['line']}", "function": s["function"],
                         "api": api, "counts": [fired.get(r, 0) for r in ranks],
                         "total": sum(fired.values()), "predicted": True})
    for m in (doc.get("run") or {}).get("misses", []):
        fired = {int(r): n for r, n in m["fired"].items()}
        rows.append({"where": f"{m['path']}:{m['line']}", "function": m["function"],
                     "api": m["api"], "counts": [fired.get(r, 0) for r in ranks],
                     "total": m["calls"], "predicted": False})
    rows.sort(key=lambda r: (-r["total"], r["where"]))
    return rows
