"""`p2paudit scan` of torch.distributed.pipelining schedules: from a training script's step
(examples/pipelining_train.py, the entry points), Schedule1F1B, ScheduleGPipe and
ScheduleInterleaved1F1B reach the schedule's `_batch_p2p` and the stages' P2POps with call
paths, on the installed torch 2.13 and on torch 2.10.0 (wheel from PyPI via the cache); and
rules/torch.toml's [[batch_wrapper]] decides how `_batch_p2p` issues them per release."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor import rulebook as rules, sources
from auditor.scan import ScanInputs, run_scan

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "pipelining_pp2.sh"
TRAIN = str(ROOT / "examples" / "pipelining_train.py")
STAGE = "torch/distributed/pipelining/stage.py"
SCHEDULES = "torch/distributed/pipelining/schedules.py"
# The stages' P2POps a schedule step issues (stage.py, torch 2.13.0 lines in comments).
STEP_OPS = {"_PipelineStageBase._get_recv_ops",  # 370: fwd and bwd recvs
            "_PipelineStageBase.get_fwd_send_ops",  # 507
            "_PipelineStageBase.get_bwd_send_ops"}  # 587, 600


def scan(entry: str, torch_target: str, torch_version: str) -> dict:
    return run_scan(ScanInputs(str(SCRIPT), targets=[TRAIN, torch_target], torch_version=torch_version,
                               entries=[f"pipelining_train:{entry}"], jobs=1))


def reached(doc: dict, path: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for s in doc["sites"]:
        if s["path"] == path and s["reachable"] == "yes":
            out.setdefault(s["function"], []).append(s)
    return out


@pytest.fixture(scope="module", params=[("train_1f1b", "Schedule1F1B"), ("train_gpipe", "ScheduleGPipe")])
def single(request) -> tuple[str, str, dict]:
    entry, schedule = request.param
    return entry, schedule, scan(entry, "torch", "2.13.0")


def test_single_stage_schedules_reach_the_stage_ops_through_the_schedule(single):
    entry, schedule, doc = single
    ops = reached(doc, STAGE)
    assert STEP_OPS <= set(ops)
    for function in STEP_OPS:
        for s in ops[function]:
            assert s["api"] == "P2POp" and s["batched"] is True
            path = s["paths"][0]
            assert path[:3] == [f"pipelining_train.{entry}", "schedules.PipelineScheduleSingle.step",
                                f"schedules.{schedule}._step_microbatches"]
            assert path[-1] == f"stage.{function}"


def test_torch_213_issues_the_stage_ops_op_by_op_but_not_the_mixed_batch(single):
    """From 2.12 `_batch_p2p` runs an all-send or all-recv batch op by op: every stage op may
    run unbatched. The batch_isend_irecv call it keeps for mixed batches follows torch's own
    coalescing rule instead: the script's `dist.init_process_group("gloo")` (read from the
    script, auditor/config/pipelining_script.py) gives a backend that does not coalesce."""
    _, _, doc = single
    assert doc["config"]["effective"]["torch_pipelining_batches_coalesce"] is False
    ops = reached(doc, STAGE)
    for s in (s for f in STEP_OPS for s in ops[f]):
        assert s["runs_batched"] is False and s["unbatched_reason"].startswith("its batch runs op by op")
    (batch,) = reached(doc, SCHEDULES)["_batch_p2p"]
    assert doc["config"]["effective"]["distributed_backend"] == "gloo"
    assert batch["api"] == "batch_isend_irecv" and "supports_coalescing = False" in batch["unbatched_reason"]


def test_interleaved_reaches_the_batch_and_the_stage_ops():
    """ScheduleInterleaved1F1B keeps its stages in a dict comprehension
    (`{stage.stage_index: stage for stage in self._stages}`), built here from a list
    comprehension: the IR carries the stages through both, so the stage ops are reached from
    the schedule's step, and `_batch_p2p` with its path."""
    doc = scan("train_interleaved", "torch", "2.13.0")
    (batch,) = reached(doc, SCHEDULES)["_batch_p2p"]
    assert batch["paths"][0][:3] == ["pipelining_train.train_interleaved", "schedules.PipelineScheduleMulti.step",
                                     "schedules._PipelineScheduleRuntime._step_microbatches"]
    ops = reached(doc, STAGE)
    assert STEP_OPS <= set(ops)
    for s in (s for f in STEP_OPS for s in ops[f]):
        assert s["paths"][0][:3] == ["pipelining_train.train_interleaved", "schedules.PipelineScheduleMulti.step",
                                     "schedules._PipelineScheduleRuntime._step_microbatches"]
    assert doc["verdict"]["status"] != "clean"


def test_torch_210_batches_every_list_and_reaches_the_same_ops():
    """torch 2.10.0's `_batch_p2p` is batch_isend_irecv of the list: the stage ops coalesce as
    torch's batch does, which for the script's gloo backend (its init_process_group) is op by
    op because of the backend, not because of pipelining's _batch_p2p."""
    doc = scan("train_1f1b", "torch==2.10.0", "2.10.0")
    assert {t["name"]: t["version"] for t in doc["targets"]}["torch"] == "2.10.0"
    ops = reached(doc, STAGE)
    assert STEP_OPS <= set(ops)
    assert all(s["paths"][0][2] == "schedules.Schedule1F1B._step_microbatches" for f in STEP_OPS for s in ops[f])
    assert "hands every batch to batch_isend_irecv" in doc["config"]["provenance"]["torch_pipelining_batches_coalesce"]
    for s in (s for f in STEP_OPS for s in ops[f]):
        assert "hands every batch to batch_isend_irecv, which coalesces = False" in s["unbatched_reason"]


def test_the_batch_p2p_rules_hold_the_code_of_the_release_read():
    """rules/torch.toml's `_batch_p2p` entries against the wheels they were read in: 2.10.0's
    plain batch_isend_irecv (VALID there, INVALID in 2.13.0: not at that line) and the 2.13.0
    op-by-op split (checked in the installed torch by tests/rules/test_rules_agree.py)."""
    entries = {e["read"]: e for e in rules.load("torch").data["rule"] if e["id"] == "torch.pipelining-batch-p2p"}
    old = entries["2.10.0"]
    path, _, line = old["source"].rpartition(":")
    for version, holds in (("2.10.0", True), ("2.13.0", False)):
        root = sources.resolve(f"torch=={version}" if version == "2.10.0" else "torch").root
        text = (root / path).read_text().splitlines()
        assert (old["code"] in text[int(line) - 1]) is holds, version
        assert (old["code"] in "\n".join(text)) is True  # 2.13.0 keeps it for mixed batches
