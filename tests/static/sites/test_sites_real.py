"""The inventory on the real releases: every site docs/findings.md section 2 names, exactly.

Counts are asserted per file, so a missed site or a duplicate fails.
"""

from __future__ import annotations

from collections import Counter

import pytest

from auditor.rulebook.apis import load_table
from auditor.static.inventory import inventory
from auditor.static.sites.sites import find_sites

EXPECTED_FILES = {
    "megatron-core": {
        "megatron/core/pipeline_parallel/p2p_communication.py": 20,
        "megatron/core/pipeline_parallel/bridge_communicator.py": 15,
        "megatron/core/transformer/multi_token_prediction.py": 8,
        "megatron/core/inference/communication_utils.py": 4,
        "megatron/core/resharding/copy_services/gloo_copy_service.py": 3,
        "megatron/core/resharding/copy_services/nccl_copy_service.py": 3,
    },
    "ms-swift": {"swift/sequence_parallel/utils.py": 3},
    "mcore-bridge": {"mcore_bridge/utils/megatron_utils.py": 4},
}


@pytest.fixture(scope="module")
def inventories(real_sources):
    return {name: inventory(src) for name, src in real_sources.items()}


def _by_function(inv, path):
    out: dict[str, list] = {}
    for s in inv.sites:
        if s.path == path:
            out.setdefault(s.function, []).append(s)
    return out


@pytest.mark.parametrize("package", sorted(EXPECTED_FILES))
def test_sites_per_file(inventories, package):
    inv = inventories[package]
    assert inv.analysis.errors == []
    assert dict(Counter(s.path for s in inv.sites)) == EXPECTED_FILES[package]


def test_batched_p2p_ops(inventories):
    fns = _by_function(inventories["megatron-core"], "megatron/core/pipeline_parallel/p2p_communication.py")
    sites = fns["_batched_p2p_ops"]
    assert [(s.api, s.op, s.batched, s.group) for s in sites] == [
        ("P2POp", "isend", True, "group"),
        ("P2POp", "irecv", True, "group"),
        ("P2POp", "isend", True, "group"),
        ("P2POp", "irecv", True, "group"),
        ("batch_isend_irecv", None, True, "group"),
    ]
    assert [s.line for s in sites] == [29, 34, 39, 44, 49]
    assert sites[-1].id == (
        "megatron-core:megatron.core.pipeline_parallel.p2p_communication._batched_p2p_ops:"
        "batch_isend_irecv:0"
    )


def test_p2p_ops_is_eight_unbatched_ops_in_even_odd_order(inventories):
    fns = _by_function(inventories["megatron-core"], "megatron/core/pipeline_parallel/p2p_communication.py")
    sites = fns["_p2p_ops"]
    assert [s.api for s in sites] == ["isend", "irecv", "isend", "irecv", "irecv", "isend", "irecv", "isend"]
    assert not any(s.batched for s in sites)
    assert {s.group for s in sites} == {"even_send_odd_recv_group", "even_recv_odd_send_group"}
    assert [s.peer for s in sites[:2]] == ["next_pipeline_rank", "prev_pipeline_rank"]
    assert [s.id.rsplit(":", 2)[-2:] for s in sites][:3] == [["isend", "0"], ["irecv", "0"], ["isend", "1"]]


def test_communicate_shapes_is_batched_on_the_pp_group(inventories):
    fns = _by_function(inventories["megatron-core"], "megatron/core/pipeline_parallel/p2p_communication.py")
    sites = fns["P2PCommunicator._communicate_shapes"]
    assert [s.api for s in sites] == ["ring_exchange", "P2POp", "P2POp", "P2POp", "P2POp", "batch_isend_irecv"]
    assert all(s.batched for s in sites)
    assert {s.group for s in sites} == {"self.pp_group"}
    wrapper = fns["P2PCommunicator._communicate.<locals>._ring_exchange_wrapper"]
    assert [(w.api, w.issues) for w in wrapper] == [("ring_exchange", "fused")]


def test_default_group_unbatched_sites_reached_with_context_parallelism(inventories):
    mtp = _by_function(inventories["megatron-core"], "megatron/core/transformer/multi_token_prediction.py")
    assert sorted(mtp) == ["_roll_tensor_packed_seq", "roll_tensor"]
    bridge = _by_function(inventories["mcore-bridge"], "mcore_bridge/utils/megatron_utils.py")
    for sites in [*mtp.values(), *bridge.values()]:
        assert [(s.batched, s.group) for s in sites] == [(False, "default")] * 4
        assert sorted(s.api for s in sites) == ["irecv", "irecv", "isend", "isend"]


def test_bridge_communicator_plain_send_recv(inventories):
    fns = _by_function(inventories["megatron-core"], "megatron/core/pipeline_parallel/bridge_communicator.py")
    plain = [(f, s.api) for f, sites in fns.items() for s in sites if s.api in ("send", "recv")]
    assert plain == [
        ("BridgeCommunicator.send_forward", "send"),
        ("BridgeCommunicator.recv_forward", "recv"),
        ("BridgeCommunicator.send_backward", "send"),
        ("BridgeCommunicator.recv_backward", "recv"),
    ]
    assert all(not s.batched for sites in fns.values() for s in sites if s.api in ("send", "recv"))


def test_swift_sequence_parallel_ring(inventories):
    sites = inventories["ms-swift"].sites
    assert [(s.function, s.api, s.op, s.batched) for s in sites] == [
        ("RingComm.send_recv", "P2POp", "isend", True),
        ("RingComm.send_recv", "P2POp", "irecv", True),
        ("RingComm.commit", "batch_isend_irecv", None, True),
    ]
    assert sites[0].group == "self._process_group"


def test_sockets_and_pipes_in_swift_are_not_sites(real_sources):
    """rollout.py sends on zmq sockets and multiprocessing connections: no P2P there."""
    src = real_sources["ms-swift"]
    path = "swift/pipelines/infer/rollout.py"
    text = (src.root / path).read_text()
    assert "socket.send(" in text and "connection.recv(" in text
    assert find_sites(text, path, src.module_name(path), src.name, load_table()) == []


def test_second_run_reads_the_cache(real_sources):
    first = inventory(real_sources["mcore-bridge"])
    second = inventory(real_sources["mcore-bridge"])
    assert second.analysis.files_analyzed == 0
    assert second.analysis.cache_hits == len(real_sources["mcore-bridge"].files)
    assert [s.to_json() for s in second.sites] == [s.to_json() for s in first.sites]
