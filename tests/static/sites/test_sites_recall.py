"""Recall and `batched` on real code beyond the home frameworks: DeepSpeed 0.16.0 and ColossalAI
0.4.9 (sdists: no cp312 wheel exists, so `NAME==VERSION` falls back to them), torch's own
`distributed_c10d.py` from the installed torch, and the megatron-core 0.9-0.19 sweep."""

from __future__ import annotations

import importlib.metadata
from collections import Counter
from pathlib import Path

import pytest

from auditor.sources import SourceSet
from auditor.static.inventory import inventory


def test_deepspeed_gets_torch_through_a_star_import(release):
    """deepspeed/comm/torch.py imports torch only via `from .comm import *`."""
    inv = inventory(release("deepspeed==0.16.0"))
    assert inv.source.kind == "sdist"
    got = [(s.path, s.line, s.api, s.batched, s.function) for s in inv.sites]
    assert got == [
        ("deepspeed/comm/torch.py", 296, "send", False, "TorchBackend.send"),
        ("deepspeed/comm/torch.py", 300, "recv", False, "TorchBackend.recv"),
        ("deepspeed/comm/torch.py", 304, "isend", False, "TorchBackend.isend"),
        ("deepspeed/comm/torch.py", 308, "irecv", False, "TorchBackend.irecv"),
    ]


def test_colossalai_queue_filler_ops_are_batched_descriptors(release):
    """`_filling_ops_queue(t, dist.isend, ...)` hands the op to the P2POp of line 210, which goes
    into `batch_isend_irecv`: line 210 is batched, the 12 call lines are no sites of their own."""
    inv = inventory(release("colossalai==0.4.9"))
    p2p = [s for s in inv.sites if s.path == "colossalai/pipeline/p2p.py"]
    (filler,) = [s for s in p2p if s.line == 210]
    assert (filler.api, filler.batched, filler.function) == ("P2POp", True, "_filling_ops_queue")
    assert [s for s in p2p if 250 <= s.line <= 341 and s.api != "batch_isend_irecv"] == []
    assert [s for s in p2p if not s.batched] == []


def _installed_torch() -> SourceSet:
    dist = importlib.metadata.distribution("torch")
    root = Path(dist.locate_file("")).resolve()
    return SourceSet("torch", dist.version, "installed", root, "torch", ["torch/distributed/distributed_c10d.py"])


@pytest.mark.skipif(not importlib.metadata.version("torch").startswith("2.13."),
                    reason="the line counts below are read from torch 2.13")
def test_torch_own_module_names_its_functions_bare():
    """send_object_list/recv_object_list call the module's own `send`, `recv`, `P2POp(isend, ...)`
    and `batch_isend_irecv` without a prefix; `isinstance(op, P2POp)` is no site."""
    inv = inventory(_installed_torch())
    per_function = Counter((s.function, s.api, s.batched) for s in inv.sites)
    for fn, one, _many in (("send_object_list", "send", "isend"), ("recv_object_list", "recv", "irecv")):
        assert per_function[(fn, one, False)] == 2
        assert per_function[(fn, "batch_isend_irecv", True)] == 2
        assert per_function[(fn, "P2POp", True)] == 2
    assert [s for s in inv.sites if s.function == "_check_p2p_op_list"] == []
    assert {s.op for s in inv.sites if s.api == "P2POp"} == {"isend", "irecv"}


# (sites, batched) per release of megatron-core: main at 03099af found the same sites, each with
# the same line, API, form and `batched`, before names crossed modules and `batched` followed data.
SWEEP = {
    "0.9.0": (24, 16),
    "0.10.0": (24, 16),
    "0.11.0": (24, 16),
    "0.12.0": (24, 16),
    "0.13.0": (24, 16),
    "0.14.0": (28, 16),
    "0.15.0": (43, 27),
    "0.16.1": (53, 33),
    "0.17.0": (53, 33),
    "0.18.0": (56, 36),
    "0.19.2": (56, 36),
}


@pytest.mark.parametrize("version", sorted(SWEEP))
def test_megatron_core_sweep(version, release):
    inv = inventory(release(f"megatron-core=={version}"))
    assert inv.analysis.errors == []
    batched = sum(1 for s in inv.sites if s.batched)
    assert (len(inv.sites), batched) == SWEEP[version]
