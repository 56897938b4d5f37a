"""Per-rank site summaries of the recorded GPU runs, the checks issue 4 asks for, and the
step-time overhead; written as summary.md and summary.json into the results directory.

    python3 reports/record-gpu/summarize.py OUT

Reads OUT/trace-<variant>/ (through p2paudit's trace reader), OUT/metrics/<run>/rank-N.json
(step times from train_gpt.py) and OUT/log-<run>.txt (NCCL's lazy-init warnings).
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import Counter
from pathlib import Path

from auditor.dynamic import rankfile, trace
from auditor.errors import InputError

VARIANTS = ("stock", "swift", "unbatched")
P2P_FILE = "megatron/core/pipeline_parallel/p2p_communication.py"
LAZY_WARNING = "An unbatched P2P op (send/recv) was called on this ProcessGroup"


def site_rows(rt: rankfile.RankTrace) -> list[dict]:
    """One row per distinct (api, batched, via, site, P2POp site, group), with its count."""
    counts: Counter = Counter()
    marks: dict[tuple, list[str]] = {}
    for e in rt.starts("p2p") + rt.starts("collective"):
        site = e["site"] or {}
        key = (e["kind"], e["api"], e["batched"], e["via"],
               f"{site.get('path')}:{site.get('line')} {site.get('function')}",
               f"{e['op_site']['line']}" if e["op_site"] else "",
               f"{e['group']['desc']}/{e['group']['size']}" if e["group"] else "")
        counts[key] += 1
        if e["comm_init"]:
            marks.setdefault(key, []).append(
                f"seq {e['seq']}: {e['comm_init']['kind']} {e['comm_init']['key']}")
    fields = ("kind", "api", "batched", "via", "site", "op_site_line", "group")
    return [dict(zip(fields, key, strict=True), count=n, comm_init=marks.get(key, []))
            for key, n in sorted(counts.items(), key=lambda kv: (kv[0][0], kv[0][4], kv[0][1]))]


def checks(variant: str, t: trace.Trace) -> list[tuple[str, bool]]:
    p2p = [e for rt in t.ranks.values() for e in rt.starts("p2p")]
    in_p2p_ops = [e for e in p2p if e["site"]["path"] == P2P_FILE
                  and e["site"]["function"] == "_p2p_ops"]
    pending = [e for rt in t.ranks.values() for e in rt.pending()]
    out = [(f"{len(t.ranks)} ranks traced, nothing skipped", len(t.ranks) == 2 and not t.skipped),
           ("no op left pending", not pending),
           ("P2P ops recorded", bool(p2p))]
    if variant == "unbatched":
        out.append(("unbatched isend/irecv from _p2p_ops recorded",
                    bool(in_p2p_ops) and not any(e["batched"] for e in in_p2p_ops)))
    else:
        out.append(("no op from _p2p_ops", not in_p2p_ops))
        out.append(("every P2P op batched (a coalescing window observed)",
                    all(e["batched"] for e in p2p)))
    shapes = [e for e in p2p if e["site"]["function"] == "P2PCommunicator._communicate_shapes"]
    out.append(("_communicate_shapes ops batched on the PP group",
                bool(shapes) and all(e["batched"] and e["group"]["desc"] != "default_pg"
                                     for e in shapes)))
    if variant == "swift":
        data = [e for e in p2p if e["site"]["function"] == "_batched_p2p_ops"]
        out.append(("ms-swift patch: _batched_p2p_ops ops on the default (WORLD) group",
                    bool(data) and all(e["group"]["desc"] == "default_pg" for e in data)))
    return out


def step_medians(out: Path, run: str) -> dict[int, float]:
    medians = {}
    for file in sorted((out / "metrics" / run).glob("rank-*.json")):
        data = json.loads(file.read_text())
        if data.get("median_step_s") is not None:
            medians[data["rank"]] = data["median_step_s"]
    return medians


def total_steps(out: Path, run: str) -> int:
    """Steps a run took in all (warm-up included): what its trace holds ops of."""
    for file in sorted((out / "metrics" / run).glob("rank-*.json")):
        data = json.loads(file.read_text())
        return data.get("warmup", 0) + len(data.get("step_s", []))
    return 0


def main() -> None:
    out = Path(sys.argv[1])
    summary: dict = {"variants": {}, "overhead": {}}
    traces: dict[str, trace.Trace] = {}
    md = ["# p2paudit record on megatron-core 0.17.0, PP=2, 2 GPUs", ""]
    env = out / "env.txt"
    if env.is_file():
        md += ["```", env.read_text().strip(), "```", ""]
    for variant in VARIANTS:
        trace_dir = out / f"trace-{variant}"
        md.append(f"## {variant}")
        if not trace_dir.is_dir():
            md += [f"no trace directory {trace_dir.name}", ""]
            continue
        log = out / f"log-{variant}.txt"
        try:
            t = trace.read_trace_dir(trace_dir)
        except InputError as exc:
            md += [f"no trace: {exc} (see {log.name})", ""]
            summary["variants"][variant] = {"error": str(exc)}
            continue
        traces[variant] = t
        warnings = log.read_text(errors="replace").count(LAZY_WARNING) if log.is_file() else None
        result = {"checks": [], "ranks": {}, "skipped": t.skipped, "lazy_init_warnings": warnings}
        for name, ok in checks(variant, t):
            result["checks"].append({"check": name, "ok": ok})
            md.append(f"- {'PASS' if ok else 'FAIL'}: {name}")
        md.append(f"- NCCL lazy-init warnings in the log: {warnings}")
        for rank, rt in t.ranks.items():
            rows = site_rows(rt)
            result["ranks"][rank] = {"rows": rows, "hang": rt.hang}
            md += ["", f"### rank {rank}", "",
                   "| kind | api | batched | via | site | P2POp line | group | count | comm_init |",
                   "|---|---|---|---|---|---|---|---|---|"]
            md += [f"| {r['kind']} | {r['api']} | {r['batched']} | {r['via'] or ''} | {r['site']} "
                   f"| {r['op_site_line']} | {r['group']} | {r['count']} "
                   f"| {'; '.join(r['comm_init'])} |" for r in rows]
        summary["variants"][variant] = result
        md.append("")
    plain, recorded = step_medians(out, "stock-plain"), step_medians(out, "stock-recorded")
    again = step_medians(out, "stock-plain-again")
    steps = total_steps(out, "stock-recorded")
    stock = traces.get("stock")
    md += ["## step-time overhead (stock, median of the timed steps, per rank)", "",
           "| rank | unrecorded s | recorded s | unrecorded again s | recorded / unrecorded "
           "| added ms per step | ops per step | added us per op |",
           "|---|---|---|---|---|---|---|---|"]
    for rank in sorted(set(plain) & set(recorded)):
        base = statistics.mean([plain[rank]] + ([again[rank]] if rank in again else []))
        added = recorded[rank] - base
        ops = (len(stock.ranks[rank].starts("p2p")) + len(stock.ranks[rank].starts("collective"))
               if stock and rank in stock.ranks and steps else 0)
        per_step = ops / steps if steps else float("nan")
        summary["overhead"][rank] = {
            "unrecorded_s": plain[rank], "recorded_s": recorded[rank],
            "unrecorded_again_s": again.get(rank), "ratio": recorded[rank] / base,
            "added_s_per_step": added, "ops_per_step": per_step}
        md.append(f"| {rank} | {plain[rank]:.5f} | {recorded[rank]:.5f} | "
                  f"{again.get(rank, float('nan')):.5f} | {recorded[rank] / base:.4f} | "
                  f"{added * 1e3:.3f} | {per_step:.1f} | "
                  f"{added * 1e6 / per_step if per_step else float('nan'):.1f} |")
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    (out / "summary.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
