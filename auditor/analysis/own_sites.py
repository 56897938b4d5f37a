"""The verdict on the entry's own P2P sites (config.pipelining_script.own_entry): judged on what
its code does, never through a framework's batching setting (megatron-core's batch_p2p_comm,
which the entry's own code never reads).

- a batch_isend_irecv whose list holds two ops or more, where torch runs batches op by op
  (TORCH_DISTRIBUTED_DEBUG=DETAIL on torch < 2.11, rules/torch.toml): a contradiction, each op
  creating its pair's communicator lazily in the order the rank lists them;
- one op per rank (one op issued on its own to a literal peer on each branch, or a batch of one
  op): one peer, one communicator, so no order of communicator creation can hang: ok;
- anything else reached (a blocking send-first ring, a batch whose size is not read): unknown,
  naming the site, decided by a recorded run's replay, never CLEAN."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from auditor.analysis.batching import BATCH_ISSUED, TORCH_OP_BY_OP, Unbatched
from auditor.config.effective import EffectiveConfig
from auditor.findings import Finding
from auditor.static.sites.sites import Site

DECIDE = "`p2paudit record` of a run, then `p2paudit report` (its replay decides the order)"


def judge(docs: list[dict[str, Any]], sites: dict[str, Site], root: Path, effective: EffectiveConfig,
          keys: dict[str, str]) -> list[Finding]:
    """Re-judge the site docs `docs` of the entry's own code (its folder `root`) in place; the
    findings on them. An unknown one carries the step that decides it (`decide`)."""
    trees: dict[str, ast.Module | None] = {}
    reached = [d for d in docs if d.get("reachable") == "yes"]
    alone = [sites[d["id"]] for d in reached if not sites[d["id"]].batched]
    single = len(alone) == len(reached) and _one_op_per_rank(alone, root, trees)
    for d in docs:
        site = sites[d["id"]]
        if d.get("reachable") != "yes":
            continue  # not reached: schedule_reach.own_unjudged says so
        verdict, undecided, unbatched = _verdict(site, root, trees, effective, keys[site.id], single)
        d.update(verdict=verdict, undecided=undecided, runs_batched=None if verdict == "unknown" and site.batched
                 else unbatched is None, unbatched_reason=unbatched.words if unbatched else "")
        if verdict == "unknown":
            d["decide"] = DECIDE
    bad = [d for d in docs if d.get("verdict") == "contradiction"]
    if not bad:
        return []
    first = bad[0]
    return [Finding(
        "entry.own-batch-op-by-op", "error",
        f"{len(bad)} reachable P2P site(s) of the entry's own code run a batch of two ops or more "
        f"op by op ({TORCH_OP_BY_OP.cause}); e.g. {first['path']}:{first['line']} {first['api']}. "
        "Under lazy NCCL init each op creates its pair's 2-rank communicator in the order the rank "
        "lists them, and ranks that list their peers in different orders wait on each other forever.",
        fix=TORCH_OP_BY_OP.fix, site_ids=[d["id"] for d in bad], where=f"{first['path']}:{first['line']}",
        detail={"headline": f"{len(bad)} reachable P2P site(s) of the entry's own code run their batch op "
                            "by op: neighbouring ranks can create their 2-rank NCCL communicators in "
                            "different orders and hang"})]


def _verdict(site: Site, root: Path, trees: dict[str, ast.Module | None], effective: EffectiveConfig,
             key: str, single: bool) -> tuple[str, str, Unbatched | None]:
    """(verdict, why undecided, why it runs unbatched) of one reached own site."""
    at = f"{site.path}:{site.line}"
    if not site.batched or site.issues not in BATCH_ISSUED:
        if single:
            return "ok", "", Unbatched("issued on its own", "", "one op per rank to a literal peer: one "
                                       "communicator, no order to hang")
        return "unknown", (f"the entry's own op at {at} is issued on its own; whether the order of its "
                           "ops across ranks hangs (a blocking send-first ring) is not replayed by scan"), None
    width = _batch_width(site, root, trees)
    coalesces = effective.value(key)
    if width == 1:
        return "ok", "", None if coalesces is True else Unbatched(
            "a batch of one op", "", "one peer per rank: one communicator, no order to hang")
    if coalesces is True:
        return "ok", "", None
    if width is None:
        return "unknown", f"how many ops the entry's own batch at {at} holds is not read statically", None
    if coalesces is False:
        said = effective.get(key)
        return "contradiction", "", Unbatched(TORCH_OP_BY_OP.cause, TORCH_OP_BY_OP.fix, said.provenance if said else "")
    return "unknown", f"whether torch runs the entry's own batch at {at} coalesced is undecided", None


def _tree(site: Site, root: Path, trees: dict[str, ast.Module | None]) -> ast.Module | None:
    if site.path not in trees:
        try:
            trees[site.path] = ast.parse((root / site.path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            trees[site.path] = None
    return trees[site.path]


def _function(tree: ast.Module, line: int) -> ast.AST:
    """The innermost function holding `line` (the module where none does)."""
    best: ast.AST = tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.lineno <= line <= (node.end_lineno or node.lineno):
            if best is tree or node.lineno >= getattr(best, "lineno", 0):
                best = node
    return best


def _batch_width(site: Site, root: Path, trees: dict[str, ast.Module | None]) -> int | None:
    """The most ops a batch_isend_irecv of the site's function is handed (list literals, or a
    name bound only to them, a conditional choosing between them); None where not read."""
    tree = _tree(site, root, trees)
    if tree is None:
        return None
    scope = _function(tree, site.line)
    calls = [n for n in ast.walk(scope) if isinstance(n, ast.Call) and n.args
             and (getattr(n.func, "attr", None) or getattr(n.func, "id", None)) == "batch_isend_irecv"]
    widths = [_width(c.args[0], scope) for c in calls]
    return None if not widths or None in widths else max(w for w in widths if w is not None)


def _width(node: ast.expr, scope: ast.AST) -> int | None:
    if isinstance(node, (ast.List, ast.Tuple)):
        return None if any(isinstance(e, ast.Starred) for e in node.elts) else len(node.elts)
    if isinstance(node, ast.IfExp):
        a, b = _width(node.body, scope), _width(node.orelse, scope)
        return None if a is None or b is None else max(a, b)
    if isinstance(node, ast.Name):
        values = []
        for n in ast.walk(scope):
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == node.id for t in n.targets):
                values.append(n.value)
            elif isinstance(n, (ast.AugAssign, ast.AnnAssign)) and isinstance(n.target, ast.Name) \
                    and n.target.id == node.id:
                return None
            elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == node.id:
                return None  # ops.append(...): grown where the list is not read
            elif isinstance(n, (ast.For, ast.comprehension)) and isinstance(n.target, ast.Name) \
                    and n.target.id == node.id:
                return None
        widths = [_width(v, scope) for v in values]
        return None if not widths or None in widths else max(w for w in widths if w is not None)
    return None


def _one_op_per_rank(alone: list[Site], root: Path, trees: dict[str, ast.Module | None]) -> bool:
    """Whether the reached own ops issued on its own are each on its own branch of one `if` (so a
    rank issues one of them) and each names a literal peer: a rank talks to one peer only."""
    if not alone or len({s.path for s in alone}) != 1 or not all(_literal_peer(s) for s in alone):
        return False
    tree = _tree(alone[0], root, trees)
    if tree is None:
        return False
    if len(alone) == 1:
        return True
    branches = _branches(_function(tree, alone[0].line))
    at = [next((i for i, (lo, hi) in enumerate(branches) if lo <= s.line <= hi), None) for s in alone]
    return None not in at and len(set(at)) == len(at) and len(alone) <= len(branches)


def _literal_peer(site: Site) -> bool:
    """A direct call (no alias, no reference) naming a literal peer on the default group, as the
    site finder read its arguments (a group handed in may be one of several)."""
    return site.form == "call" and site.via is None and site.group == "default" \
        and site.peer is not None and site.peer.isdigit()


def _branches(scope: ast.AST) -> list[tuple[int, int]]:
    """The line spans of the two branches of the first `if ... else` in `scope` that has both."""
    for n in ast.walk(scope):
        if isinstance(n, ast.If) and n.body and n.orelse:
            return [(n.body[0].lineno, n.body[-1].end_lineno or n.body[-1].lineno),
                    (n.orelse[0].lineno, n.orelse[-1].end_lineno or n.orelse[-1].lineno)]
    return []
