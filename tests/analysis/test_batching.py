"""auditor.analysis.batching: whether a reached P2P site runs coalesced at run time. The sites
are megatron-core 0.17.0 p2p_communication.py `_batched_p2p_ops` (P2POp descriptors, then
`torch.distributed.batch_isend_irecv(ops)`) and `_p2p_ops` (isend on its own), and a descriptor
made in torch.distributed.pipelining, whose schedule issues the batches (rules/torch.toml
[[batch_wrapper]]). The effective config is derived from a launch script as a scan derives it:
torch 2.10.0 under TORCH_DISTRIBUTED_DEBUG=DETAIL issues a batch op by op (pytorch PR #173599
fixed it in 2.11)."""

from __future__ import annotations

import pytest

from auditor.analysis.batching import (ON_ITS_OWN, TORCH_OP_BY_OP, coalesces_key, coalescing_undecided,
                                       effectively_batched, site_doc)
from auditor.config.derive import derive
from auditor.config.expr import UNKNOWN
from auditor.config.launch import parse_launch
from auditor.rulebook.apis import batch_wrappers
from auditor.static.interp.reach import SiteReach
from auditor.static.sites.sites import Site

P2P = "megatron/core/pipeline_parallel/p2p_communication.py"
DESCRIPTOR = Site("d", "megatron-core", P2P, 90, 90, "_batched_p2p_ops", "P2POp", True, "pp",
                  op="isend", issues="descriptor", module="megatron.core.pipeline_parallel.p2p_communication")
BATCH = Site("b", "megatron-core", P2P, 120, 120, "_batched_p2p_ops", "batch_isend_irecv", True, "pp",
             issues="batch", module="megatron.core.pipeline_parallel.p2p_communication")
ALONE = Site("a", "megatron-core", P2P, 150, 150, "_p2p_ops", "isend", False, "pp",
             module="megatron.core.pipeline_parallel.p2p_communication")
PIPELINING = Site("p", "torch", "torch/distributed/pipelining/stage.py", 500, 500, "get_fwd_send_ops",
                  "P2POp", True, "pp", op="isend", issues="descriptor", module="torch.distributed.pipelining.stage")


def effective(debug: str, torch: str | None):
    launch = parse_launch(f"export TORCH_DISTRIBUTED_DEBUG={debug}\n"
                          "torchrun --nproc_per_node 4 pretrain_gpt.py --pipeline-model-parallel-size 4\n", "run.sh")
    return derive(launch, {"megatron-core": "0.17.0"}, torch_version=torch)


def test_which_setting_says_a_site_coalesces():
    wrappers = batch_wrappers("2.10.0")
    assert coalesces_key(DESCRIPTOR, wrappers) == coalesces_key(BATCH, wrappers) == "torch_batch_coalesces"
    assert coalesces_key(PIPELINING, wrappers) == "torch_pipelining_batches_coalesce"
    assert coalesces_key(PIPELINING, []) == "torch_batch_coalesces"


@pytest.mark.parametrize("site", [DESCRIPTOR, BATCH])
def test_a_batch_runs_op_by_op_under_detail_on_torch_2_10_only(site):
    key = "torch_batch_coalesces"
    fallback = effectively_batched(site, effective("DETAIL", "2.10.0"), key)
    assert fallback is not None and fallback.cause == TORCH_OP_BY_OP.cause and fallback.fix == TORCH_OP_BY_OP.fix
    assert fallback.words.startswith("torch will run this batch op by op: torch 2.10.0: ")
    assert effectively_batched(site, effective("INFO", "2.10.0"), key) is None
    assert effectively_batched(site, effective("DETAIL", "2.12.0"), key) is None


def test_an_op_on_its_own_is_unbatched_whatever_torch_does():
    assert effectively_batched(ALONE, effective("INFO", "2.12.0"), "torch_batch_coalesces") is ON_ITS_OWN
    assert coalescing_undecided(ALONE, effective("DETAIL", None), "torch_batch_coalesces") == ""


def test_no_torch_stated_leaves_coalescing_undecided_saying_what_decides():
    config = effective("DETAIL", None)
    assert config.value("torch_batch_coalesces") is UNKNOWN
    assert effectively_batched(BATCH, config, "torch_batch_coalesces") is None  # not a finding
    why = coalescing_undecided(BATCH, config, "torch_batch_coalesces")
    assert why.startswith("whether torch runs this batch_isend_irecv coalesced is undecided: torch ")
    assert why.endswith("pass --torch with the cluster's release")
    assert coalescing_undecided(BATCH, effective("INFO", "2.10.0"), "torch_batch_coalesces") == ""


# A site reached under a guard the config leaves undecided (megatron-core 0.19.2
# p2p_communication.py:322 `if config.variable_seq_lengths or config.mtp_standalone:` before
# _communicate_shapes, whose shape exchange is a batch_isend_irecv of P2POps, :234-257): judged as
# if reached, it is ok either way only where it would be ok when reached.
GUARDED = SiteReach("unknown", guards=["config.variable_seq_lengths or config.mtp_standalone  [unknown]"],
                    paths=[["schedules.forward_backward_pipelining_without_interleaving",
                            "p2p_communication.P2PCommunicator._communicate",
                            "p2p_communication.P2PCommunicator._communicate_shapes"]],
                    decided_by=["config.variable_seq_lengths", "config.mtp_standalone"])


def _doc(site: Site, reach: SiteReach, config) -> dict:
    key = "torch_batch_coalesces"
    return site_doc(site, reach, config, effectively_batched(site, config, key), key,
                    ["batch_p2p_comm", "pipeline_model_parallel_size"])


def test_an_undecided_guard_decides_nothing_where_the_site_is_ok_if_reached():
    """One-way exchanges (a forward-only schedule): a batch of this call runs op by op under
    DETAIL on 2.10 and still cannot make both neighbours send first, reached or not."""
    launch = parse_launch("export TORCH_DISTRIBUTED_DEBUG=DETAIL\n"
                          "torchrun --nproc_per_node 4 pretrain_gpt.py --pipeline-model-parallel-size 4\n", "run.sh")
    config = derive(launch, {"megatron-core": "0.17.0"}, {"pipeline_exchanges_one_way": "true"}, "2.10.0")
    d = _doc(DESCRIPTOR, GUARDED, config)
    assert d["verdict"] == "ok" and d["reachable"] == "unknown" and d["undecided"] == ""
    assert "ok if reached" in d["reason"] and "`config.mtp_standalone`" in d["reason"]


def test_an_undecided_guard_still_decides_a_site_that_would_break_if_reached():
    """A training step (exchanges not one-way), DETAIL on 2.10: reached, the two-op batch runs op
    by op although batch_p2p_comm=True (a contradiction), so the guard decides: unknown, never ok."""
    config = effective("DETAIL", "2.10.0")
    assert config.value("pipeline_exchanges_one_way") is False
    assert _doc(DESCRIPTOR, SiteReach("yes", paths=GUARDED.paths), config)["verdict"] == "contradiction"
    for site in (DESCRIPTOR, BATCH, ALONE):
        d = _doc(site, GUARDED, config)
        assert d["verdict"] == "unknown" and "ok if reached" not in d["reason"], d


def test_a_site_no_call_path_reaches_is_not_judged_as_if_reached():
    launch = parse_launch("torchrun --nproc_per_node 4 pretrain_gpt.py --pipeline-model-parallel-size 4\n", "run.sh")
    config = derive(launch, {"megatron-core": "0.17.0"}, {"pipeline_exchanges_one_way": "true"}, "2.12.0")
    unseen = SiteReach("unknown", reason="no call path from the entry points was found")
    assert _doc(DESCRIPTOR, unseen, config)["verdict"] == "unknown"
