"""An entry read as Megatron-LM's front end only as a guess (`torchrun train.py`, no framework
named) that issues torch P2P itself: its own ops are sites the scan judges (config/own_p2p.py,
the one reader; config/pipelining_script.py own_entry/script_sources), and what of them is not
reached or not read is undecided, never CLEAN 0 sites (review r39-starters, r39-ds).

The ring is the example of torch's own `batch_isend_irecv` docstring (torch 2.10.0
torch/distributed/distributed_c10d.py batch_isend_irecv: `P2POp(dist.isend, send_tensor,
(rank + 1) % world_size)`, `P2POp(dist.irecv, recv_tensor, (rank - 1 + world_size) % world_size)`,
`reqs = batch_isend_irecv([send_op, recv_op])`); the Trainer subclass overrides `training_step`
as transformers' docs say a Trainer is customised ("subclass them and override the methods",
docs/source/en/main_classes/trainer.md, transformers v4.57.0)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from auditor import cli
from auditor.analysis.own_sites import DECIDE
from auditor.config.own_p2p import of_tree

RING = """import argparse
import torch
import torch.distributed as dist
{more}


def exchange(buf, rank, world):
{body}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--pipeline-model-parallel-size", type=int, default=2)
    args = parser.parse_args()
    dist.init_process_group("nccl")
    exchange(torch.zeros(4, device="cuda"), dist.get_rank(), dist.get_world_size())
"""
BATCH = ("    ops = [dist.P2POp(dist.isend, buf, (rank + 1) % world),\n"
         "           dist.P2POp(dist.irecv, buf, (rank - 1 + world) % world)]\n"
         "    for req in dist.batch_isend_irecv(ops):\n        req.wait()\n")
DETAIL_SH = "export TORCH_DISTRIBUTED_DEBUG=DETAIL\ntorchrun --nproc-per-node 2 train.py --pipeline-model-parallel-size 2\n"
SETS = ["--target", "megatron-core==0.19.2", "--set", "pipeline_model_parallel_size=1", "--set", "batch_p2p_comm=true"]


def _scan(capsys, script: Path, *more: str) -> dict:
    cli.main(["scan", "--config", str(script), "--format", "json", *more])
    return json.loads(capsys.readouterr().out)


def _own(doc: dict, package: str = "train") -> list[dict]:
    return [s for s in doc["sites"] if s["package"] == package]


@pytest.mark.parametrize("torch, status", [("2.10.0", "findings"), ("2.11.0", "clean")])
def test_an_entry_s_own_batch_under_detail_is_judged(capsys, tmp_path, torch, status):
    """Before: CLEAN 0 sites on 2.10 (the entry's sites not in the inventory). DETAIL on 2.10
    un-batches the two-op batch (rules/torch.toml); on 2.11 the wrapper forwards coalescing."""
    (tmp_path / "train.py").write_text(RING.format(more="", body=BATCH))
    (tmp_path / "run.sh").write_text(DETAIL_SH)
    doc = _scan(capsys, tmp_path / "run.sh", "--torch", torch, *SETS)
    own = _own(doc)
    assert {s["api"] for s in own} == {"P2POp", "batch_isend_irecv"}, doc["sites"]
    assert all(s["reachable"] == "yes" for s in own)
    assert "train.py (run as __main__)" in doc["entries"]
    assert doc["verdict"]["status"] == status, doc["verdict"]["headline"]
    assert any(s["verdict"] == "contradiction" for s in own) == (status == "findings")


def test_a_local_module_s_own_p2p_is_judged(capsys, tmp_path):
    """The entry's P2P in a local module it imports (`from ring import exchange`)."""
    (tmp_path / "ring.py").write_text("import torch.distributed as dist\n\n\ndef exchange(buf, rank, world):\n" + BATCH)
    text = RING.format(more="from ring import exchange", body="    pass").replace(
        "\n\ndef exchange(buf, rank, world):\n    pass\n", "")
    (tmp_path / "train.py").write_text(text)
    (tmp_path / "run.sh").write_text(DETAIL_SH)
    doc = _scan(capsys, tmp_path / "run.sh", "--torch", "2.10.0", *SETS)
    own = [s for s in _own(doc) if s["path"] == "ring.py"]
    assert own and all(s["reachable"] == "yes" for s in own), doc["sites"]
    assert doc["verdict"]["status"] == "findings", doc["verdict"]["headline"]


TRAINER = """import torch
import torch.distributed as dist
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
{more}


class MyTrainer(Trainer):
    def training_step(self, model, inputs, num_items_in_batch=None):
{body}


model = AutoModelForCausalLM.from_pretrained("gpt2")
MyTrainer(model=model, args=TrainingArguments(output_dir="out")).train()
"""


@pytest.mark.heavy
@pytest.mark.parametrize("more, body", [
    # its own ring in training_step: transformers' loop (not read) calls it
    ("", "        rank, world = dist.get_rank(), dist.get_world_size()\n        buf = torch.zeros(4)\n"
         + BATCH.replace("    ", "        ", 1).replace("\n    ", "\n        ")
         + "        return super().training_step(model, inputs, num_items_in_batch)\n"),
    # torch's pipelining stepped from training_step: the pipelining reader, its schedule unreached
    ("from torch.distributed.pipelining import PipelineStage, ScheduleGPipe",
     "        stage = PipelineStage(model, self.args.process_index, self.args.world_size, model.device)\n"
     "        return ScheduleGPipe(stage, 4).step(inputs['input_ids'])\n"),
])
def test_a_trainer_subclass_s_own_p2p_is_never_clean(capsys, tmp_path, more, body):
    """Before: CLEAN 0 sites (Megatron-LM's reading, or the pipelining one with the schedule
    never reached from `__main__`)."""
    (tmp_path / "train.py").write_text(TRAINER.format(more=more, body=body))
    (tmp_path / "run.sh").write_text("torchrun --nproc-per-node 2 train.py\n")
    doc = _scan(capsys, tmp_path / "run.sh", "--torch", "2.11.0")
    assert doc["verdict"]["status"] == "inconclusive", doc["verdict"]["headline"]
    assert any(f["kind"] in ("entry.own-p2p-unreached", "entry.schedule-unreached") for f in doc["findings"])


@pytest.mark.parametrize("text, sites", [
    ("from torch.distributed import *\n\ndef f(t):\n    isend(t, 1)\n    irecv(t, 0)\n", 2),
    ("import torch.distributed as dist\n\ndef f(t):\n    g = dist.new_group([0, 1])\n    g.send([t], 1, 0)\n"
     "    g.recv([t], 0, 0)\n", 2),
    ("import torch.distributed as dist\n\ndef f(t):\n    getattr(dist, 'send')(t, 1)\n", 1),
])
def test_the_reader_finds_each_spelling(text, sites):
    """Star import, a process group's own methods, a literal getattr: each the finder's site."""
    found = of_tree(ast.parse(text))
    assert len(found.sites) == sites and found.issues


def test_a_computed_name_on_torch_distributed_is_undecided():
    found = of_tree(ast.parse("import torch.distributed as dist\n\ndef f(t, op):\n    getattr(dist, op)(t, 1)\n"))
    assert not found.sites and found.computed and found.issues


def test_a_socket_s_send_is_unsure_not_p2p():
    found = of_tree(ast.parse("import socket\nconn = socket.socket()\nconn.send(b'x')\n"))
    assert not found.issues and found.may


@pytest.mark.parametrize("more, body, status", [
    ("from torch.distributed import *", "    isend(buf, (rank + 1) % world).wait()\n    irecv(buf).wait()\n", None),
    ("", "    group = dist.new_group([0, 1])\n    group.send([buf], (rank + 1) % world, 0)\n"
         "    group.recv([buf], (rank - 1) % world, 0)\n", None),
    ("", "    getattr(dist, 'send' if rank % 2 == 0 else 'recv')(buf, 1 - rank)\n", "inconclusive"),
])
def test_each_spelling_of_the_entry_s_p2p_is_judged_or_undecided(capsys, tmp_path, more, body, status):
    """Before: CLEAN 0 sites, each spelling missed by the reader that decides the entry's P2P."""
    (tmp_path / "train.py").write_text(RING.format(more=more, body=body))
    (tmp_path / "run.sh").write_text(DETAIL_SH)
    doc = _scan(capsys, tmp_path / "run.sh", "--torch", "2.11.0", *SETS)
    head = doc["verdict"]["headline"]
    assert not head.startswith("CLEAN: 0 reachable"), head
    if status is None:
        assert _own(doc) and all(s["reachable"] == "yes" for s in _own(doc)), doc["sites"]
    else:
        assert doc["verdict"]["status"] == status and "not known statically" in json.dumps(doc["findings"]), head


def test_a_trainer_under_torchrun_is_an_unknown_stack(capsys, tmp_path):
    """Before: CLEAN 0 sites on megatron-core's defaults. transformers' Trainer runs its own loop
    (its Accelerator may turn accelerate's Megatron-LM plugin on: rules/stacks.toml)."""
    (tmp_path / "train.py").write_text(TRAINER.format(more="", body="        return 0.0\n"))
    (tmp_path / "run.sh").write_text("torchrun --nproc-per-node 2 train.py\n")
    doc = _scan(capsys, tmp_path / "run.sh", "--torch", "2.11.0")
    head = doc["verdict"]["headline"]
    assert doc["verdict"]["status"] == "inconclusive" and "transformers.Trainer" in head, head


def test_pipelining_in_a_local_module_is_torch_s_pipelining(capsys, tmp_path):
    """Before: CLEAN 0 sites (read as Megatron-LM's front end): the schedule is built in a local
    module the entry imports (pytorch/PiPPy@1bcb2bfb examples keep it in the script; a run split
    into train.py + pipe.py does the same)."""
    (tmp_path / "pipe.py").write_text(
        "import torch\nfrom torch.distributed.pipelining import PipelineStage, ScheduleGPipe\n\n\n"
        "def run(rank, world):\n    stage = PipelineStage(torch.nn.Linear(8, 8), rank, world, torch.device('cpu'))\n"
        "    schedule = ScheduleGPipe(stage, 4)\n    if rank == 0:\n        schedule.step(torch.randn(8, 8))\n"
        "    else:\n        schedule.step()\n")
    (tmp_path / "train.py").write_text(
        "import torch.distributed as dist\nfrom pipe import run\n\nif __name__ == '__main__':\n"
        "    dist.init_process_group('gloo')\n    run(dist.get_rank(), dist.get_world_size())\n")
    (tmp_path / "run.sh").write_text("torchrun --nproc-per-node 2 train.py\n")
    doc = _scan(capsys, tmp_path / "run.sh", "--torch", "2.11.0")
    assert doc["launch"]["launcher"] == "pipelining train.py"
    assert any(s.get("reachable") == "yes" for s in doc["sites"]), doc["verdict"]["headline"]
    assert doc["verdict"]["status"] != "clean", doc["verdict"]["headline"]


@pytest.mark.parametrize("how", ["export PYTHONPATH=.\n", "sys.path"])
def test_own_p2p_outside_the_entry_s_folder_is_undecided(capsys, tmp_path, how):
    """Before: CLEAN 0 sites (review r40-ownp2p c4): the ring in common/ring.py, found on
    PYTHONPATH or a sys.path insert of the parent, outside the folder the scan reads as source."""
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "__init__.py").write_text("")
    (tmp_path / "common" / "ring.py").write_text("import torch.distributed as dist\n\n\ndef exchange(buf, rank, world):\n" + BATCH)
    more = "from common.ring import exchange"
    if how == "sys.path":
        more = "import os\nimport sys\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))\n" + more
    text = RING.format(more=more, body="    pass").replace("\n\ndef exchange(buf, rank, world):\n    pass\n", "")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "train.py").write_text(text)
    (tmp_path / "run.sh").write_text((how if how.startswith("export") else "") + DETAIL_SH.replace("train.py", "scripts/train.py"))
    doc = _scan(capsys, tmp_path / "run.sh", "--torch", "2.10.0", *SETS)
    assert doc["verdict"]["status"] in ("inconclusive", "findings"), doc["verdict"]["headline"]
    assert "ring.py" in json.dumps(doc["verdict"]), doc["verdict"]["headline"]


# What the entry's own code does decides, never megatron-core's batch_p2p_comm (review r40-ownp2p c1-c3)
ONE_OP_BATCH = ("    ops = [dist.P2POp(dist.isend, buf, 1)] if rank == 0 else [dist.P2POp(dist.irecv, buf, 0)]\n"
                "    for req in dist.batch_isend_irecv(ops):\n        req.wait()\n")
ONE_OP = ("    if rank == 0:\n        req = dist.isend(buf, 1)\n    else:\n        req = dist.irecv(buf, 0)\n"
          "    req.wait()\n")
SEND_FIRST = ("    out = torch.empty_like(buf)\n    dist.send(buf, (rank + 1) % world)\n"
              "    dist.recv(out, (rank - 1 + world) % world)\n")


@pytest.mark.parametrize("name", ["train", "pretrain_gpt"])
@pytest.mark.parametrize("body", [ONE_OP_BATCH, ONE_OP])
def test_one_op_per_rank_is_no_ordering_hang(capsys, tmp_path, body, name):
    """Before: FINDINGS worded as batch_p2p_comm's two-communicator hang; each rank talks to one
    peer, so there is one communicator and no order of creating them. An entry named with an
    underscore (Megatron-LM's pretrain_gpt.py) too: its source's name is canonical
    (`pretrain-gpt`), and the scan once matched it against the file's stem, so its own sites
    went the batch_p2p_comm way (false FINDINGS)."""
    (tmp_path / f"{name}.py").write_text(RING.format(more="", body=body))
    (tmp_path / "run.sh").write_text(DETAIL_SH.replace("train.py", f"{name}.py"))
    doc = _scan(capsys, tmp_path / "run.sh", "--torch", "2.10.0", *SETS)
    own = _own(doc, name.replace("_", "-"))
    assert own and all(s["reachable"] == "yes" for s in own), doc["sites"]
    assert doc["verdict"]["status"] == "clean", doc["verdict"]["headline"]


@pytest.mark.parametrize("batch", ["true", "false", None])
def test_a_send_first_ring_is_never_clean_nor_batch_p2p_comm_s(capsys, tmp_path, batch):
    """Before: CLEAN with --set batch_p2p_comm=false, and an INCONCLUSIVE asking for
    batch_p2p_comm without it: a setting the entry's own code never reads."""
    (tmp_path / "train.py").write_text(RING.format(more="", body=SEND_FIRST))
    (tmp_path / "run.sh").write_text("torchrun --nproc-per-node 4 train.py --pipeline-model-parallel-size 2\n")
    sets = SETS[:4] + (["--set", f"batch_p2p_comm={batch}"] if batch else [])
    doc = _scan(capsys, tmp_path / "run.sh", "--torch", "2.11.0", *sets)
    head = doc["verdict"]["headline"]
    assert doc["verdict"]["status"] == "inconclusive", head
    assert "train.py:9" in head and "batch_p2p_comm" not in head, head
    assert any(u["decide"] == DECIDE for u in doc["verdict"]["undecided"]), doc["verdict"]["undecided"]


def test_a_closure_cut_at_max_modules_is_undecided(capsys, tmp_path):
    """Before: CLEAN (the two-op batch coalesces on 2.11): the local modules past
    entry_script.MAX_MODULES are not read, and may issue P2P of their own."""
    from auditor.config.entry_script import MAX_MODULES
    for i in range(MAX_MODULES + 5):
        (tmp_path / f"m{i}.py").write_text("")
    more = "\n".join(f"import m{i}" for i in range(MAX_MODULES + 5))
    (tmp_path / "train.py").write_text(RING.format(more=more, body=BATCH))
    (tmp_path / "run.sh").write_text(DETAIL_SH)
    doc = _scan(capsys, tmp_path / "run.sh", "--torch", "2.11.0", *SETS)
    assert doc["verdict"]["status"] == "inconclusive", doc["verdict"]["headline"]
    assert f"past the first {MAX_MODULES}" in json.dumps(doc["verdict"]), doc["verdict"]["headline"]


def test_every_computed_name_is_named(capsys, tmp_path):
    """Before: only the first `getattr(dist, NAME)` was named."""
    body = "    getattr(dist, 'send' if rank % 2 == 0 else 'recv')(buf, 1 - rank)\n    getattr(dist, OP)(buf, 0)\n"
    (tmp_path / "train.py").write_text(RING.format(more="OP = 'recv'", body=body))
    (tmp_path / "run.sh").write_text(DETAIL_SH)
    doc = _scan(capsys, tmp_path / "run.sh", "--torch", "2.11.0", *SETS)
    said = json.dumps([f for f in doc["findings"] if f["kind"] == "entry.own-p2p-unread"])
    assert "train.py:8" in said and "train.py:9 getattr(dist, OP)" in said, said
