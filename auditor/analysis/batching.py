"""Whether each reached P2P site runs coalesced at run time, what the scan document says of it,
and the findings that follow: an op issued on its own, a batch torch (or a pipelining wrapper)
runs op by op, pipeline neighbours on more than one group. Decided from the site, the effective
config and the batch wrappers of the torch release (rules/torch.toml)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from auditor.analysis import verdict
from auditor.analysis.backend import OP_BY_OP_POSTED, PIPELINE_BACKEND, op_by_op_words
from auditor.analysis.sitestatus import SiteStatus
from auditor.config.effective import EffectiveConfig
from auditor.config.expr import UNKNOWN
from auditor.findings import Finding
from auditor.rulebook.apis import BatchWrapper
from auditor.static.interp.graph import AttrPatch
from auditor.static.interp.formula import UNK, YES
from auditor.static.interp.reach import SiteReach
from auditor.static.sites.sites import Site


@dataclass(frozen=True)
class Unbatched:
    """Why an op runs outside any coalesced group at run time, and what to do about it."""

    cause: str
    fix: str
    detail: str = ""

    @property
    def words(self) -> str:
        return f"{self.cause}: {self.detail}" if self.detail else self.cause


ON_ITS_OWN = Unbatched(
    "issued on its own (not in batch_isend_irecv or a coalescing block)",
    "route this op through batch_isend_irecv (megatron: batch_p2p_comm=True covers the pipeline "
    "path), or initialise NCCL eagerly (init_process_group(device_id=...)) so no per-pair "
    "communicator is created lazily")
TORCH_OP_BY_OP = Unbatched(
    "torch will run this batch op by op",
    "unset TORCH_DISTRIBUTED_DEBUG (or use INFO), or upgrade to torch >= 2.11, where the debug "
    "wrapper forwards supportsCoalescing (pytorch PR #173599); `p2paudit repro fallback-1f1b` "
    "shows the failure and each fix")


WRAPPER_OP_BY_OP = Unbatched(
    "its batch runs op by op",
    "on this torch every all-send or all-recv batch of the schedule runs unbatched: initialise "
    "NCCL eagerly (init_process_group(device_id=...)) so that no per-pair communicator is "
    "created lazily, or use a torch whose pipelining coalesces every batch")

# The key a stack's rules derive True where its schedule issues each op issued on its own paired
# with the neighbour's in one order (rules/deepspeed.toml deepspeed.pipe-paired-order).
PAIRED = "p2p_order_paired"
# The key a stack's rules derive True where every pipeline exchange the run reaches is one op, one
# way (rules/megatron-core.toml mcore.forward-only-one-way): a batch of it run op by op, or not
# known to be coalesced, cannot make neighbours both send first.
ONE_WAY = "pipeline_exchanges_one_way"

# How a batched site's op reaches torch: as a P2POp descriptor or as the batch call itself; both
# run coalesced only where torch coalesces batch_isend_irecv.
BATCH_ISSUED = ("descriptor", "batch")


def coalesces_key(site: Site, wrappers: list[BatchWrapper]) -> str:
    """The config key that says whether this site's batch runs coalesced: a descriptor made
    where a wrapper issues the batches follows the wrapper; a batch call follows torch's."""
    for w in wrappers if site.issues == "descriptor" else ():
        if any(site.module == m or site.module.startswith(f"{m}.") for m in w.modules):
            return w.key
    return "torch_batch_coalesces"


def effectively_batched(site: Site, effective: EffectiveConfig, key: str) -> Unbatched | None:
    """None when the op runs inside a coalesced group at run time (or that is undecided, see
    `coalescing_undecided`), else why it does not; `key`: the site's `coalesces_key`."""
    if not site.batched:
        return ON_ITS_OWN
    if site.issues in BATCH_ISSUED and effective.value(key) is False:
        how = TORCH_OP_BY_OP if key == "torch_batch_coalesces" else WRAPPER_OP_BY_OP
        return Unbatched(how.cause, how.fix, _provenance(effective, key))
    return None


def coalescing_undecided(site: Site, effective: EffectiveConfig, key: str) -> str:
    """Why it is unknown whether this batched op runs coalesced ("" when it is known); `key`:
    the site's `coalesces_key`."""
    if not site.batched or site.issues not in BATCH_ISSUED or effective.value(key) is not UNKNOWN:
        return ""
    batch = "batch_isend_irecv" if key == "torch_batch_coalesces" else "batch"
    return f"whether torch runs this {batch} coalesced is undecided: " + _provenance(effective, key)


def site_doc(site: Site, r: SiteReach, effective: EffectiveConfig, unbatched: Unbatched | None,
              key: str, needs: list[str]) -> dict[str, Any]:
    """`key`: the site's `coalesces_key`; `needs`: the settings the batching rule reads for
    this run's stack; without batch_p2p_comm among them the stack has no batching setting, and
    an op issued on its own is neither a contradiction nor ok: its order decides, which scan
    does not replay, unless the stack's rules say its schedule pairs that order (`PAIRED`).
    A site a call path reaches under a guard the config leaves undecided is judged as if
    reached too: where it is ok then, the guard decides nothing (not reached, it issues
    nothing), and the site is ok whichever way the guard goes."""
    d = site.to_json()
    v, undecided, why, runs_batched = _judged(site, r.reachable, effective, unbatched, key, needs)
    reason = r.reason
    if v == "unknown" and r.reachable == UNK and r.paths:
        reached = _judged(site, YES, effective, unbatched, key, needs)
        if reached[0] == "ok":
            v, undecided, why, runs_batched = reached
            tests = ", ".join(f"`{t}`" for t in r.decided_by[:3])
            said = f"reached only under a guard the config leaves undecided{f' ({tests})' if tests else ''}; " \
                   "ok if reached, so the guard does not decide the verdict"
            reason = f"{reason}; {said}" if reason else said
    d.update(
        reachable=r.reachable, guards=r.guards, conditions=r.conditions, paths=r.paths,
        groups=r.groups, verdict=v, reason=reason, runs_batched=runs_batched,
        unbatched_reason=why.words if why else "",
        undecided=undecided if v == "unknown" else "", decided_by=r.decided_by,
    )
    return d


def _judged(site: Site, reachable: str, effective: EffectiveConfig, unbatched: Unbatched | None,
            key: str, needs: list[str]) -> tuple[str, str, Unbatched | None, bool | None]:
    """(verdict, why it is undecided, why it runs unbatched, runs_batched) of a site whose
    reachability is `reachable`; the arguments as `site_doc`'s."""
    undecided = coalescing_undecided(site, effective, key) \
        if unbatched is None and reachable == YES else ""
    runs_batched = None if undecided else unbatched is None
    batch_cfg = effective.value("batch_p2p_comm") if "batch_p2p_comm" in needs else UNKNOWN
    backend = effective.value(PIPELINE_BACKEND)
    v = verdict.site_verdict(reachable, runs_batched, batch_cfg, backend, unbatched is ON_ITS_OWN)
    if v == "ok" and unbatched is not None and backend in OP_BY_OP_POSTED:
        unbatched = Unbatched(unbatched.cause, unbatched.fix, op_by_op_words(backend))
    paired = "batch_p2p_comm" not in needs and unbatched is ON_ITS_OWN \
        and effective.value(PAIRED) is True
    if v == "unknown" and reachable == YES and not undecided and paired:
        # No batching setting, but the stack's schedule pairs each blocking op with its
        # neighbour's in one order (rules: DeepSpeed's pipeline engine): nothing to replay.
        v = "ok"
        unbatched = Unbatched(ON_ITS_OWN.cause, ON_ITS_OWN.fix, f"in a paired order: {_provenance(effective, PAIRED)}")
    if v == "unknown" and reachable == YES and not undecided and backend in OP_BY_OP_POSTED \
            and unbatched is ON_ITS_OWN:
        undecided = (f"issued on its own on {backend}, where a send waits for its receive; "
                     "whether the order of such ops hangs is not replayed by scan")
    one_way = effective.value(ONE_WAY)
    if (v == "contradiction" or undecided) and reachable == YES and key == "torch_batch_coalesces" \
            and site.issues in BATCH_ISSUED and one_way is not False:
        if one_way is True:
            v, undecided = "ok", ""
            unbatched = Unbatched(TORCH_OP_BY_OP.cause if unbatched else "whether torch coalesces it does not matter",
                                  TORCH_OP_BY_OP.fix, f"one-way exchanges: {_provenance(effective, ONE_WAY)}")
        elif v == "contradiction":
            v, undecided = "unknown", f"whether the exchanges are one-way is undecided: {_provenance(effective, ONE_WAY)}"
    if v == "unknown" and reachable == YES and not undecided:
        undecided = (f"batch_p2p_comm is undecided ({_provenance(effective, 'batch_p2p_comm')})"
                     if "batch_p2p_comm" in needs else
                     "issued on its own (this stack has no batching setting); whether the order of "
                     "such ops hangs is not replayed by scan")
    return v, undecided, unbatched, runs_batched


def _provenance(effective: EffectiveConfig, key: str) -> str:
    v = effective.get(key)
    return v.provenance if v else f"{key} was never derived"


def site_findings(site_docs: list[dict[str, Any]], unbatched: dict[str, Unbatched | None],
                  patches: list[AttrPatch], nccl: bool = True) -> list[Finding]:
    """`nccl`: the run may be on NCCL (its backend is NCCL or unknown); NCCL's lazily created
    communicators are not those of another backend (Ascend's HCCL, rules [[backend]])."""
    findings: list[Finding] = []
    by_cause: dict[Unbatched, list[dict[str, Any]]] = {}
    for d in site_docs:
        why = unbatched[d["id"]]
        if d["verdict"] == "contradiction" and why is not None:
            by_cause.setdefault(why, []).append(d)
    for why, docs in by_cause.items():
        first = docs[0]
        path = " -> ".join(first["paths"][0]) if first["paths"] else first["function"]
        groups = sorted({g for d in docs for g in d["groups"]})
        findings.append(Finding(
            "unbatched-contradiction", "error",
            f"{len(docs)} reachable P2P site(s) will run unbatched although batch_p2p_comm=True "
            f"({why.cause}); e.g. {first['path']}:{first['line']} {first['api']} via {path}, "
            f"group: {', '.join(groups) or 'unknown'}. Under lazy NCCL init each unbatched op "
            "creates a 2-rank communicator for its pair, and ranks that reach different "
            "communicator creations first wait on each other forever (no timeout covers it).",
            fix=why.fix,
            site_ids=[d["id"] for d in docs],
            where=f"{first['path']}:{first['line']}",
            detail={"headline": f"{len(docs)} reachable P2P site(s) will run unbatched although "
                                f"batch_p2p_comm=True ({why.cause}): neighbouring stages can "
                                "create their 2-rank NCCL communicators in different orders and "
                                "hang"},
        ))
    groups_by_site = {d["id"]: set(d["groups"]) - {"unknown"} for d in site_docs
                      if SiteStatus.of(d).reached and d["paths"]}
    distinct = sorted(set().union(*groups_by_site.values())) if groups_by_site else []
    if len(distinct) > 1 and nccl:
        users = {g: sorted(sid for sid, gs in groups_by_site.items() if g in gs) for g in distinct}
        on_paths = {name for d in site_docs if d["id"] in groups_by_site for path in d["paths"] for name in path}
        patches = [p for p in patches if p.short in on_paths]
        findings.append(Finding(
            "split-communicators", "warning",
            "pipeline neighbours talk over more than one process group: "
            + "; ".join(f"{g}: {len(ids)} site(s)" for g, ids in users.items())
            + ". Each group has its own NCCL communicator, created lazily at its first use, so "
            "the same pair of ranks depends on two rendezvous"
            + (f" (installed by {', '.join(sorted({p.replacement for p in patches}))})" if patches else ""),
            fix="make every pipeline op use one group (e.g. drop the patch that overrides the "
                "group), or initialise eagerly with init_process_group(device_id=...)",
            site_ids=sorted({sid for ids in users.values() for sid in ids}),
            detail={"groups": users},
        ))
    return findings
