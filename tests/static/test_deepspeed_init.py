"""DeepSpeed's own facts about a pipeline run, as rules/deepspeed.toml states them per release:
the backend and init_process_group keywords deepspeed.init_distributed gives torch (device_id from
0.17.3, on torch outside 2.6.0 < torch < 2.7.1), and the order its pipeline engine issues its
blocking send/recv in, checked here against the real releases from PyPI (via the cache).

The launch scripts reproduce microsoft/Megatron-DeepSpeed (commit
f4157bea69f3df8c6cb66f2ebcda66ba03d1288e) examples_deepspeed/pretrain_llama2_distributed.sh:
`torchrun ... pretrain_gpt.py --pipeline-model-parallel-size 2 ... $ds_args` with
`ds_args=" --deepspeed ${ds_args}"`; its megatron/initialize.py:233 calls
`deepspeed.init_distributed()` under --deepspeed.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

from auditor import sources
from auditor.analysis.verdict import judge
from auditor.config.derive import derive
from auditor.config.launch import read_launch
from auditor.rulebook.stages import load_rulebook
from auditor.scan import ScanInputs, run_scan
from tests.realscripts.test_megatron_deepspeed import LLAMA2, checkout


def llama2(tmp_path: Path, torch: str | None, detail: bool = False) -> Path:
    text = LLAMA2.format(torch=torch or "", detail="export TORCH_DISTRIBUTED_DEBUG=DETAIL" if detail else "")
    if torch is None:
        text = text.replace("# torch==\n", "")
    return checkout(tmp_path, "pretrain_llama2_distributed.sh", text)


# (deepspeed, torch, device_id given): deepspeed/comm/torch.py TorchBackend.init_process_group
INIT = [
    ("0.14.5", "2.10.0", False),  # VALID: no device_id before 0.17.3, on any torch
    ("0.17.2", "2.10.0", False),
    ("0.17.3", "2.10.0", True),   # VALID: from 0.17.3, device_id=cuda:LOCAL_RANK
    ("0.18.4", "2.7.0", False),   # INVALID for eager: 2.6.0 < torch < 2.7.1 is left lazy
    ("0.18.4", "2.8.0", True),
    ("0.19.8", "2.7.0", False),
    ("0.19.8", "2.13.0", True),   # 0.19: and a world size not known to be 1 (here 8 ranks)
]


@pytest.mark.parametrize("deepspeed,torch,eager", INIT)
def test_init_distributed_backend_and_device_id_per_release_and_torch(tmp_path, deepspeed, torch, eager):
    config = derive(read_launch(llama2(tmp_path, torch)), {"deepspeed": deepspeed}, None, torch)
    assert config.value("distributed_backend") == "nccl"
    assert config.value("init_device_id_given") is eager
    assert config.value("torch_eager_init") is eager
    assert ("lazy-init-unbounded" in {f.kind for f in config.findings}) is not eager
    assert not [u for u in config.undecided if "lazy-init" in u]


def test_a_rule_selected_by_torch_holds_nowhere_when_torch_is_unknown():
    """Fail closed: with torch's release unknown no variant of deepspeed.init-device-id holds,
    so what it decides is uncovered (unknown), never a guess."""
    book = load_rulebook({"deepspeed": "0.18.4", "torch": None})
    assert "deepspeed.init-device-id" in book.uncovered
    known = load_rulebook({"deepspeed": "0.18.4", "torch": "2.8.0"})
    assert "deepspeed.init-device-id" not in known.uncovered


def test_no_torch_stated_is_decided_with_the_release_that_stays_lazy_named(tmp_path):
    """Judged across torch 2.7.0-2.15.0 on deepspeed 0.18.4: the lazy-init warning holds on 2.7.0
    only (DeepSpeed leaves device_id out there), said with that release; the P2P verdict holds on
    every release: CLEAN, not INCONCLUSIVE."""
    doc = run_scan(ScanInputs(str(llama2(tmp_path, None)), targets=["deepspeed==0.18.4"], jobs=1))
    (lazy,) = [f for f in doc["findings"] if f["kind"] == "lazy-init-unbounded"]
    assert lazy["detail"]["torch"] == ["2.7.0"] and lazy["message"].startswith("on torch 2.7.0 only")
    assert judge(doc).status == "clean", doc["verdict"]


def test_the_engine_s_blocking_sites_are_ok_in_their_paired_order_and_unknown_without_it(tmp_path):
    """VALID: send/recv issued on their own, in the order the schedule pairs: ok, CLEAN on the
    release's rules. INVALID: with the order not known to be paired (`--set p2p_order_paired=false`)
    nothing decides them: unknown, INCONCLUSIVE, never clean."""
    script = str(llama2(tmp_path, "2.13.0"))
    doc = run_scan(ScanInputs(script, targets=["deepspeed==0.16.0"], jobs=1))
    reached = [s for s in doc["sites"] if s["reachable"] == "yes"]
    assert {s["function"] for s in reached} == {"TorchBackend.send", "TorchBackend.recv"}
    assert all(s["verdict"] == "ok" and "paired order" in s["unbatched_reason"] for s in reached)
    assert judge(doc).status == "clean"
    unpaired = run_scan(ScanInputs(script, targets=["deepspeed==0.16.0"], jobs=1,
                                   overrides={"p2p_order_paired": "false"}))
    assert {s["verdict"] for s in unpaired["sites"] if s["reachable"] == "yes"} == {"unknown"}
    assert judge(unpaired).status == "inconclusive"


def test_detail_leaves_deepspeed_s_engine_clean_on_2_10(tmp_path):
    """TORCH_DISTRIBUTED_DEBUG=DETAIL un-batches batch_isend_irecv; the engine issues none
    (deepspeed.pipe-no-batching): torch.detail-unbatches is decided not raised, the run CLEAN."""
    doc = run_scan(ScanInputs(str(llama2(tmp_path, "2.10.0", detail=True)), targets=["deepspeed==0.18.4"], jobs=1))
    assert doc["config"]["effective"]["batch_p2p_comm"] is False
    assert not [f for f in doc["findings"] if f["kind"] == "batch-runs-unbatched"]
    assert judge(doc).status == "clean", doc["verdict"]


# --- the pairing, run on each release's own schedule.py -----------------------------------------

RELEASES = ["0.14.5", "0.16.0", "0.17.3", "0.18.4", "0.19.8"]
P2P = {"SendActivation": (+1, "send"), "RecvActivation": (-1, "recv"),
       "SendGrad": (-1, "send"), "RecvGrad": (+1, "recv")}


def schedules(version: str) -> dict:
    """deepspeed/runtime/pipe/schedule.py of the release, run as shipped; its one import,
    `call_to_str` of deepspeed/runtime/utils.py (which imports torch and CUDA helpers), is that
    release's own function taken from the file."""
    root = sources.resolve(f"deepspeed=={version}").root / "deepspeed" / "runtime"
    utils = (root / "utils.py").read_text()
    node = next(n for n in ast.parse(utils).body if isinstance(n, ast.FunctionDef) and n.name == "call_to_str")
    namespace: dict = {"__name__": f"deepspeed_{version.replace('.', '_')}_schedule"}
    exec(ast.get_source_segment(utils, node) or "", namespace)  # noqa: S102 - the release's own code
    text = (root / "pipe" / "schedule.py").read_text().replace("from ..utils import call_to_str\n", "")
    exec(compile(text, str(root / "pipe" / "schedule.py"), "exec"), namespace)  # noqa: S102
    return namespace


def warm_up(stage: int, stages: int) -> list[tuple[int, str]]:
    """PipelineEngine.__init__'s communicator warm-up (engine.py "Initialize pipeline
    communicators. Just send a 0."): even stages send then receive, odd ones the reverse."""
    send = [(stage + 1, "send")] if stage < stages - 1 else []
    recv = [(stage - 1, "recv")] if stage > 0 else []
    return send + recv if stage % 2 == 0 else recv + send


def ops(namespace: dict, kind: str, stage: int, stages: int, micro_batches: int) -> list[tuple[int, str]]:
    sched = namespace[kind](micro_batches=micro_batches, stages=stages, stage_id=stage)
    return [(stage + P2P[type(c).__name__][0], P2P[type(c).__name__][1])
            for step in sched for c in step if type(c).__name__ in P2P]


def completes(programs: list[list[tuple[int, str]]]) -> bool:
    """Blocking send/recv as rendezvous: a stage's next op completes only with its peer's
    matching next op. True when every program runs to its end."""
    pc = [0] * len(programs)
    moved = True
    while moved:
        moved = False
        for s, prog in enumerate(programs):
            if pc[s] == len(prog):
                continue
            peer, what = prog[pc[s]]
            other = programs[peer][pc[peer]] if pc[peer] < len(programs[peer]) else None
            if other == (s, "recv" if what == "send" else "send"):
                pc[s] += 1
                pc[peer] += 1
                moved = True
    return all(p == len(prog) for p, prog in zip(pc, programs))


@pytest.mark.parametrize("version", RELEASES)
def test_each_release_s_schedules_pair_every_blocking_op(version):
    """deepspeed.pipe-paired-order, on the release's code: for 2-5 stages and 1-8 micro-batches,
    the engine's warm-up then TrainSchedule (train_batch) or InferenceSchedule (eval_batch) runs
    to its end with blocking send/recv: each op meets its neighbour's, in one order."""
    namespace = schedules(version)
    engine = (sources.resolve(f"deepspeed=={version}").root / "deepspeed/runtime/pipe/engine.py").read_text()
    assert "# Initialize pipeline communicators. Just send a 0." in engine
    for kind, stages, micro_batches in itertools.product(("TrainSchedule", "InferenceSchedule"),
                                                         range(2, 6), range(1, 9)):
        programs = [warm_up(s, stages) + ops(namespace, kind, s, stages, micro_batches) for s in range(stages)]
        assert completes(programs), (version, kind, stages, micro_batches)


def test_a_schedule_out_of_pair_does_not_complete():
    """INVALID: the same check on an order that is not paired (both neighbours send first)."""
    assert not completes([[(1, "send"), (1, "recv")], [(0, "send"), (0, "recv")]])
    assert completes([[(1, "send"), (1, "recv")], [(0, "recv"), (0, "send")]])


def test_the_pipeline_engine_batches_nothing_in_any_release():
    """deepspeed.pipe-no-batching: no batch_isend_irecv in the engine's modules."""
    for version in RELEASES:
        pipe = sources.resolve(f"deepspeed=={version}").root / "deepspeed/runtime/pipe"
        for name in ("engine.py", "p2p.py", "schedule.py"):
            assert "batch_isend_irecv" not in (pipe / name).read_text(), (version, name)
