"""`p2paudit fix` on a trainer's own P2P code: the three libcst codemods (auditor/fix/p2pcode.py)
keep every byte outside their edit, each is attached to the finding that calls for it
(rules/torch.toml: lazy-init-unbounded's `eager-init`, [[finding_remedy]] of
unbatched-contradiction and split-communicators), and a patch is offered as verified only when
the re-scan of the patched trainer shows its finding gone and nothing new.

The trainers reproduce upstream constructs:
- init_process_group without device_id, LOCAL_RANK read from the environment: pytorch/PiPPy
  examples/basic/example.py (1bcb2bfb2d6cc4ac2125c0edb37c35585bb9695f) lines 58 and 95;
  Megatron-LM megatron/training/initialize.py:356 (rules/megatron-lm.toml mlm.no-device-id).
- unbatched isend/irecv to the next/previous stage, back to back, each request waited:
  megatron-core 0.17.0 megatron/core/pipeline_parallel/p2p_communication.py `_p2p_ops`.
- P2POps of one batch, one on the pipeline group and one on the default group: ms-swift 4.3.0
  swift/megatron/init.py `_patch__batched_p2p_ops` (group=None), docs/findings.md section 2.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.fix import p2pcode, plan
from auditor.fix.verify import GONE
from auditor.scan import ScanInputs

INIT = '''import os

import torch
import torch.distributed as dist


def setup():
    # LOCAL_RANK: torchrun sets it (PiPPy examples/basic/example.py reads RANK the same way)
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group(
        backend="nccl",  # the pipeline's backend
        world_size=int(os.environ["WORLD_SIZE"]),
    )
    return local_rank


if __name__ == "__main__":
    setup()
'''

PAIRS = '''import torch
import torch.distributed as dist


def exchange(rank, world, x, y):
    """Activations forward, gradients back (megatron-core _p2p_ops, unbatched)."""
    prev, nxt = (rank - 1) % world, (rank + 1) % world
    # to the next stage first
    send_next = dist.isend(x, nxt)  # activations
    recv_prev = dist.irecv(y, prev)
    send_next.wait()
    recv_prev.wait()
    return y
'''

GROUPS = '''import torch
import torch.distributed as dist


def exchange(rank, world, x, y, pp_group):
    prev, nxt = (rank - 1) % world, (rank + 1) % world
    ops = [
        dist.P2POp(dist.isend, x, nxt, group=pp_group),
        dist.P2POp(dist.irecv, y, prev),  # default group, as ms-swift's patch makes it
    ]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    return y
'''


def outside_equal(old: str, new: str, start: str, end: str) -> None:
    """`new` is `old` byte for byte before `start` (the first text the edit changes) and from
    `end` (the first text after it) on."""
    a = old.index(start)
    assert new[:a] == old[:a]
    tail = old[old.index(end):]
    assert new.endswith(tail)


def test_eager_init_adds_device_id_with_the_local_rank_and_keeps_the_layout():
    new = p2pcode.eager_init(INIT)
    assert '        world_size=int(os.environ["WORLD_SIZE"]),\n' \
           '        device_id=torch.device("cuda", local_rank),\n    )\n' in new
    assert new.replace('        device_id=torch.device("cuda", local_rank),\n', "") == INIT


def test_eager_init_finds_an_annotated_local_rank():
    """NVIDIA/Megatron-LM examples/run_simple_mcore_train_loop.py (d98e8a64dd) lines 44-49:
    `local_rank: int = int(os.environ["LOCAL_RANK"])`, then a two-line init_process_group."""
    mcore = ('import os\nimport torch\n\ndef initialize_distributed():\n'
             '    local_rank: int = int(os.environ["LOCAL_RANK"])\n'
             '    torch.distributed.init_process_group(\n'
             '        backend="nccl", rank=rank, world_size=world_size\n    )\n')
    assert p2pcode.eager_init(mcore) == mcore.replace(
        "world_size=world_size\n", 'world_size=world_size, device_id=torch.device("cuda", local_rank)\n')


def test_eager_init_without_a_local_rank_reads_local_rank_or_refuses():
    top = 'import os\nimport torch\nimport torch.distributed as dist\n\ndist.init_process_group(rank=r)  # c\n'
    assert p2pcode.eager_init(top).splitlines()[4] == (
        'dist.init_process_group(rank=r, device_id=torch.device("cuda", '
        'int(os.environ["LOCAL_RANK"])))  # c')
    # `import torch as th` (seba-1511/dist_tuto.pth allreduce.py): the alias builds the device
    aliased = top.replace("import torch\n", "import torch as th\n")
    assert 'device_id=th.device("cuda", int(os.environ["LOCAL_RANK"]))' in p2pcode.eager_init(aliased)
    with pytest.raises(p2pcode.Refused, match="import os"):
        p2pcode.eager_init(top.replace("import os\n", ""))
    with pytest.raises(p2pcode.Refused, match="without device_id"):
        p2pcode.eager_init(p2pcode.eager_init(top))
    with pytest.raises(p2pcode.Refused, match=r"\*\*kwargs"):
        p2pcode.eager_init(top.replace("rank=r", "**kw"))


def test_batch_pairs_makes_one_batch_and_keeps_every_byte_outside_it():
    new = p2pcode.batch_pairs(PAIRS, {9, 10})
    assert "    send_next, recv_prev = dist.batch_isend_irecv([\n" \
           "        dist.P2POp(dist.isend, x, nxt),  # activations\n" \
           "        dist.P2POp(dist.irecv, y, prev),\n    ])\n" in new
    outside_equal(PAIRS, new, "    send_next = ", "    send_next.wait()")
    assert new[:PAIRS.index("    send_next = ") + len("    send_next")] == \
        PAIRS[:PAIRS.index("    send_next = ") + len("    send_next")]
    assert "    # to the next stage first\n    send_next, recv_prev" in new  # its comment kept


def test_batch_pairs_refuses_a_lone_op_and_a_mix_of_dropped_requests():
    with pytest.raises(p2pcode.Refused, match="partner"):
        p2pcode.batch_pairs(PAIRS, {9})
    dropped = PAIRS.replace("    send_next = dist.isend", "    dist.send").replace(
        "    recv_prev = dist.irecv", "    dist.irecv")
    with pytest.raises(p2pcode.Refused, match="blocking and non-blocking"):
        p2pcode.batch_pairs(dropped, {9, 10})


def test_a_dropped_request_stays_dropped():
    mixed = PAIRS.replace("    recv_prev = dist.irecv(y, prev)", "    dist.irecv(y, prev)")
    assert "    send_next, _ = dist.batch_isend_irecv([\n" in p2pcode.batch_pairs(mixed, {9, 10})


def test_the_tutorials_isend_and_blocking_recv_waits_on_the_recv():
    """seba-1511/dist_tuto.pth allreduce.py (a552567061a9985cdcfe72ecb9b47e4630d6a7fe), the ring
    of the PyTorch distributed tutorial: `send_req = dist.isend(...)` then a blocking
    `dist.recv(...)`; the batch keeps send_req and waits on the receive where recv returned."""
    ring = ("import torch.distributed as dist\n\ndef ring(send_buff, recv_buff, left, right):\n"
            "    # Send send_buff\n    send_req = dist.isend(send_buff, right)\n"
            "    dist.recv(recv_buff, left)\n    send_req.wait()\n")
    assert p2pcode.batch_pairs(ring, {5, 6}) == ring.replace(
        "    send_req = dist.isend(send_buff, right)\n    dist.recv(recv_buff, left)\n",
        "    send_req, recv_work = dist.batch_isend_irecv([\n"
        "        dist.P2POp(dist.isend, send_buff, right),\n"
        "        dist.P2POp(dist.irecv, recv_buff, left),\n    ])\n    recv_work.wait()\n")


def test_blocking_pairs_wait_on_each_request():
    blocking = "import torch.distributed as dist\n\ndef f(x, y, n, p):\n    dist.send(x, n)\n    dist.recv(y, p)\n"
    assert p2pcode.batch_pairs(blocking, {4, 5}).endswith(
        "    for work in dist.batch_isend_irecv([\n        dist.P2POp(dist.isend, x, n),\n"
        "        dist.P2POp(dist.irecv, y, p),\n    ]):\n        work.wait()\n")


def test_pass_group_passes_the_neighbours_group_or_refuses_two():
    new = p2pcode.pass_group(GROUPS, {9})
    assert new == GROUPS.replace("dist.P2POp(dist.irecv, y, prev)", "dist.P2POp(dist.irecv, y, prev, group=pp_group)")
    two = GROUPS.replace("    ops = [", "    dist.send(x, nxt, group=other)\n    ops = [")
    with pytest.raises(p2pcode.Refused, match="2 groups"):
        p2pcode.pass_group(two, {10})


def _trainer(tmp_path: Path, name: str, text: str) -> tuple[str, str]:
    (tmp_path / f"{name}.py").write_text(text)
    run = tmp_path / "run.sh"
    run.write_text(f"#!/bin/bash\ntorchrun --nproc_per_node 4 {name}.py\n")
    return str(run), str(tmp_path / f"{name}.py")


PP = {"pipeline_model_parallel_size": "4", "distributed_backend": "nccl"}


def test_fix_eager_init_is_verified_by_the_rescan(tmp_path):
    """lazy-init-unbounded: the scan reads init_device_id_given from the entry script, so the
    patched trainer's device_id removes the finding."""
    # The trainer builds its stages with megatron-core (not read here): a pipeline run, which an
    # entry importing only torch, with no P2P of its own, would not be (config.entry_stack).
    text = INIT.replace("import torch\n", "import megatron.core  # the model's stages\nimport torch\n", 1)
    run, train = _trainer(tmp_path, "train", text)
    made = plan.make(ScanInputs(run, [train], PP, "2.10.0", jobs=1), {"eager-init"}, False)
    (p,) = [p for p in made.proposals if p.option.option == "eager-init"]
    assert made.doc["findings"][p.cause.index]["kind"] == "lazy-init-unbounded"
    assert p.verified and made.verified and made.exit_code == 0
    assert made.patched[train] == p2pcode.eager_init(text)


def test_fix_batches_unbatched_pairs_verified(tmp_path):
    run, train = _trainer(tmp_path, "pairs", PAIRS)
    inputs = ScanInputs(run, [train], {**PP, "batch_p2p_comm": "true"}, "2.10.0",
                        ["pairs:exchange"], jobs=1)
    made = plan.make(inputs, None, False)
    (p,) = [p for p in made.proposals if p.option.option == "batch"]
    assert made.doc["findings"][p.cause.index]["kind"] == "unbatched-contradiction"
    assert p.verified and made.outcome is not None and made.outcome.states[p.cause.index] == GONE
    assert made.patched[train] == p2pcode.batch_pairs(PAIRS, {9, 10})


def test_eager_init_does_not_verify_for_unbatched_pairs(tmp_path):
    """docs/findings.md sections 1 and 4: eager init serialises the unbatched ops, which still
    run unbatched: the re-scan keeps the finding, so that patch is not offered as verified."""
    run, train = _trainer(tmp_path, "pairs", PAIRS.replace("import torch\n", "import os\nimport torch\n")
                          + "\n\ndist.init_process_group(device_id=None) if False else dist.init_process_group()\n")
    inputs = ScanInputs(run, [train], {**PP, "batch_p2p_comm": "true"}, "2.10.0",
                        ["pairs:exchange"], jobs=1)
    made = plan.make(inputs, {"eager-init"}, False)
    (p,) = [p for p in made.proposals if p.option.option == "eager-init"
            and made.doc["findings"][p.cause.index]["kind"] == "unbatched-contradiction"]
    assert not p.verified and not made.verified and made.exit_code == 1


def test_fix_passes_the_pipeline_group_verified(tmp_path):
    run, train = _trainer(tmp_path, "groups", GROUPS)
    inputs = ScanInputs(run, [train], {**PP, "batch_p2p_comm": "true"}, "2.10.0",
                        ["groups:exchange"], jobs=1)
    made = plan.make(inputs, None, False)
    (p,) = made.proposals
    assert made.doc["findings"][p.cause.index]["kind"] == "split-communicators"
    assert p.verified and made.verified
    assert made.patched[train] == p2pcode.pass_group(GROUPS, {9})


def test_pairs_on_two_groups_batch_and_the_split_stays_with_its_own_remedy(tmp_path):
    """Batching pairs whose neighbours use two groups removes the unbatched ops; pipeline
    neighbours still talk over two groups, now at the new P2POp sites: split-communicators is
    still there (not gone and new). Its own pass-group edit overlaps the batch's and waits for
    the next `fix`, which passes the group on the batched code."""
    mixed = PAIRS.replace("dist.isend(x, nxt)", "dist.isend(x, nxt, group=pp_group)").replace(
        "def exchange(rank, world, x, y):", "def exchange(rank, world, x, y, pp_group):")
    run, train = _trainer(tmp_path, "mixed", mixed)
    inputs = ScanInputs(run, [train], {**PP, "batch_p2p_comm": "true"}, "2.10.0",
                        ["mixed:exchange"], jobs=1)
    made = plan.make(inputs, None, False)
    kinds = [f["kind"] for f in made.doc["findings"]]
    assert made.verified and made.outcome is not None and not made.outcome.new
    assert made.outcome.states[kinds.index("unbatched-contradiction")] == GONE
    assert made.outcome.states[kinds.index("split-communicators")] == "still there"
    assert made.patched[train] == p2pcode.batch_pairs(mixed, {9, 10})
    Path(train).write_text(made.patched[train])
    again = plan.make(inputs, None, False)
    (p,) = again.proposals
    assert p.option.option == "pass-group" and again.verified
    assert "dist.P2POp(dist.irecv, y, prev, group=pp_group)," in again.patched[train]


def test_the_scan_reads_device_id_only_where_every_call_agrees():
    from auditor.config.pyenv import init_values
    assert init_values(INIT, "t.py") == {"init_device_id_given": (
        False, "t.py:11: init_process_group(...) does not pass device_id", "t.py:11"),
        "distributed_backend": ("nccl", "t.py:11: init_process_group('nccl')", "t.py:11")}
    assert init_values(p2pcode.eager_init(INIT), "t.py")["init_device_id_given"][0] is True
    both = INIT + "\ndist.init_process_group(device_id=torch.device('cuda', 0))\n"
    assert init_values(both, "t.py") == {}  # two calls disagree: unknown
    assert init_values(INIT.replace('backend="nccl",', "**kwargs,"), "t.py") == {}
    assert init_values("import torch\n", "t.py") == {}  # the script inits nothing itself


def test_sarif_fixes_carry_the_codemod(tmp_path):
    """The trainer's patch as SARIF `fixes`, valid against SARIF 2.1.0: its replacements, made
    on the file as scanned, give the patched trainer."""
    import json

    import jsonschema

    from auditor.fix import edits, report
    from auditor.report.sarif import to_sarif

    root = Path(__file__).resolve().parents[2]
    schema = json.loads((root / "tests" / "sarif" / "sarif-schema-2.1.0.json").read_text())
    run, train = _trainer(tmp_path, "pairs", PAIRS)
    made = plan.make(ScanInputs(run, [train], {**PP, "batch_p2p_comm": "true"}, "2.10.0",
                                ["pairs:exchange"], jobs=1), None, False)
    log = to_sarif(report.attach(made))
    assert list(jsonschema.Draft4Validator(schema).iter_errors(log)) == []
    (result,) = [r for r in log["runs"][0]["results"] if r["ruleId"] == "unbatched-contradiction"]
    changes = {c["artifactLocation"]["uri"]: c["replacements"]
               for fix in result["fixes"] for c in fix["artifactChanges"]}
    made_edits = [edits.TextEdit(train, x["deletedRegion"]["charOffset"], x["deletedRegion"]["charLength"],
                                 x.get("insertedContent", {}).get("text", "")) for x in changes[train]]
    assert edits.apply(PAIRS, made_edits) == made.patched[train]


def test_pass_group_refuses_where_the_function_has_no_grouped_neighbour():
    """pytorch/PiPPy pippy/ManualPipelineStage.py (1bcb2bfb2d6cc4ac2125c0edb37c35585bb9695f):
    `_get_stage_shapes` sends the shapes with dist.recv/dist.send on the default group ("TODO:
    send/recv should take a group"), while the stage's P2POps elsewhere pass self.group. The
    group of another function is not in scope here: no patch."""
    stage = '''import torch.distributed as dist


def _get_stage_shapes(meta, prev_rank, next_rank):
    # TODO: send/recv should take a group, rather than use the default group
    dist.recv(meta, prev_rank)
    dist.send(meta, next_rank)


class Stage:
    def ops(self, t):
        return [dist.P2POp(dist.irecv, t, self.prev_stage, self.group)]
'''
    with pytest.raises(p2pcode.Refused, match="0 groups"):
        p2pcode.pass_group(stage, {6, 7})
