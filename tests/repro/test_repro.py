"""`p2paudit repro`: the gloo variants run for real under torchrun on CPU, and the op orders the
fallback-1f1b case issues are megatron-core 0.17.0's own, read from the real wheel."""

from __future__ import annotations

import ast
import re
import json

import pytest
import torch

from auditor import cli
from auditor.repro import fallback_1f1b

P2P = "megatron/core/pipeline_parallel/p2p_communication.py"


def repro(capsys, *argv: str) -> tuple[int, str]:
    code = cli.main(["repro", *argv])
    out, err = capsys.readouterr()
    return code, out.strip() + err.strip()


# --- gloo, real torch.distributed ---------------------------------------------------------------
def test_lazy_init_completes_on_gloo_and_says_why(capsys):
    code, line = repro(capsys, "lazy-init", "--backend", "gloo", "--nproc", "3", "--timeout", "20")
    assert code == 0, line
    assert "completed in" in line
    assert "batch_isend_irecv ran op by op (observed)" in line  # gloo never coalesces
    assert "cannot hang on gloo" in line


@pytest.mark.heavy
def test_gloo_buffers_nothing_so_send_first_hangs_even_at_4_bytes(capsys, tmp_path):
    code, line = repro(capsys, "fallback-1f1b", "--backend", "gloo", "--size", "4",
                       "--variable-seq-lengths", "false", "--timeout", "3", "--keep", str(tmp_path))
    assert code == 1, line
    assert re.search(r": HUNG after \d+ s: ", line)
    assert "rank 0 blocked in isend to 1 (4 B) in send_forward_recv_backward" in line
    assert "rank 1 blocked in isend to 0 (4 B) in send_backward_recv_forward" in line
    assert "wait-for model (gloo, 0 B buffered): hang, agrees" in line
    saved = json.loads((tmp_path / "verdict.json").read_text())
    assert saved["status"] == "hung" and saved["model"]["hang"] is True
    # The first exchange completed: the hang is at the first steady-state one.
    assert saved["ranks"]["0"]["ops"][0]["state"] == "done"


def test_even_odd_order_completes_on_gloo(capsys):
    code, line = repro(capsys, "fallback-1f1b", "--backend", "gloo", "--size", "64KiB",
                       "--variable-seq-lengths", "false", "--fix", "evenodd", "--timeout", "20")
    assert code == 0, line
    assert "completed in" in line and "no hang, agrees" in line


def test_real_batch_isend_irecv_completes_on_gloo_without_coalescing(capsys):
    code, line = repro(capsys, "fallback-1f1b", "--backend", "gloo", "--size", "64KiB",
                       "--fix", "coalesced", "--timeout", "20")
    assert code == 0, line
    assert "batch_isend_irecv ran op by op (observed)" in line
    assert "no hang, agrees" in line


@pytest.mark.heavy
def test_eager_serialisation_still_hangs_on_gloo(capsys):
    code, line = repro(capsys, "fallback-1f1b", "--backend", "gloo", "--size", "64KiB",
                       "--variable-seq-lengths", "false", "--fix", "eager", "--timeout", "3")
    assert code == 1, line
    assert "on communicator default_pg;" in line  # one group communicator, not a pair's
    assert "hang, agrees" in line


@pytest.mark.heavy
def test_four_stage_even_odd_moves_correct_data_on_gloo(capsys):
    code, line = repro(capsys, "fallback-1f1b", "--backend", "gloo", "--nproc", "4",
                       "--size", "1KiB", "--variable-seq-lengths", "false", "--fix", "evenodd",
                       "--timeout", "30")
    assert code == 0, line
    assert "wrong data" not in line and "4 stages x 4 micro-batches" in line


# --- predictions and bad input ------------------------------------------------------------------
@pytest.mark.parametrize("transport, size, will, code", [
    # docs/findings.md §4, measured over NVLink and over the network transport of a host
    # without IB (NET/Socket): 32 MiB hangs on the network only; 4 MiB and 16 KiB complete.
    ("net-socket", "32MiB", "yes", 1), ("nvlink", "32MiB", "no", 0),
    ("net-socket", "4MiB", "no", 0), ("net", "16KiB", "no", 0),
    # `net` leaves NET/IB possible too, whose one-channel bound (2 MiB) 4 and 32 MiB exceed
    # while all its channels (256 MiB) would hold them: undecided, never clean.
    ("net", "4MiB", "undecided", 1), ("net", "32MiB", "undecided", 1)])
def test_predict_matches_findings_4(capsys, transport, size, will, code):
    got, text = repro(capsys, "fallback-1f1b", "--backend", "nccl", "--transport", transport,
                      "--size", size, "--predict")
    assert got == code, text
    assert f"will deadlock here: {will} (over {transport}," in text
    assert "can deadlock: yes" in text  # both neighbours send first in every one of them


def test_predict_shows_both_verdicts_and_exits_as_the_verdict_says(capsys):
    """simulate and report give MUST's two verdicts and take the exit status from the verdict
    module; --predict used to print one replay's hang or not and exit by it."""
    argv = ["fallback-1f1b", "--backend", "nccl", "--size", "24MiB", "--predict"]
    for extra, status in ((["--transport", "net"], "inconclusive"),
                          (["--transport", "net", "--fix", "detail-off"], "clean"),
                          (["--transport", "net-socket"], "findings")):
        code, text = repro(capsys, *argv, *extra, "--format", "json")
        doc = json.loads(text)
        assert doc["verdict"]["status"] == status and doc["verdict"]["exit_code"] == code, text
        assert doc["verdict"]["deadlock"] == doc["deadlock"]
    code, text = repro(capsys, *argv, "--transport", "net")
    head, can, will = text.splitlines()[:3]
    assert head.endswith(": INCONCLUSIVE: this op order can deadlock; whether it will over net is "
                         "undecided") and code == 1
    assert can.startswith("can deadlock: yes") and will.startswith("will deadlock here: undecided")
    assert "decide with: --transport net-socket or net-ib" in text
    assert "the replay under the case's conditions: HANG (lazy init" in text


def test_predict_names_the_lazy_creation_cycle(capsys):
    code, text = repro(capsys, "lazy-init", "--backend", "nccl", "--nproc", "3", "--predict")
    assert code == 1
    assert "rank 0 (inside the creation of communicator default_pg) waits for rank 1" in text
    assert "rank 2: inside the creation of communicator default_pg:1-2" in text


@pytest.mark.parametrize("argv, needle", [
    (["lazy-init", "--fix", "evenodd"], "--fix: lazy-init has no fix 'evenodd'"),
    (["lazy-init", "--size", "4"], "fallback-1f1b"),
    (["fallback-1f1b", "--backend", "gloo", "--transport", "net"], "--transport"),
    (["fallback-1f1b", "--nproc", "1"], "--nproc"),
    (["fallback-1f1b", "--nproc", "4", "--microbatches", "2"], "--microbatches"),
    (["lazy-init", "--backend", "gloo", "--fix", "eager"], "eager init is NCCL's"),
])
def test_bad_input_exits_2_naming_it(capsys, argv, needle):
    code, text = repro(capsys, *argv)
    assert code == 2
    assert needle in text


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without GPUs")
def test_nccl_without_gpus_is_bad_input(capsys):
    code, text = repro(capsys, "lazy-init", "--backend", "nccl")
    assert code == 2 and "no CUDA device" in text


def test_bad_size_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["repro", "fallback-1f1b", "--size", "lots"])
    assert exc.value.code == 2
    assert "not a size in bytes: 'lots'" in capsys.readouterr().err


# --- the op orders are megatron-core 0.17.0's -----------------------------------------------------
def _function(tree: ast.Module, name: str) -> ast.FunctionDef:
    return next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name)


def _appended_order(function: ast.FunctionDef) -> tuple[str, ...]:
    """`ops.append(send_prev_op)` ... -> ("send_prev", ...), in source order."""
    calls = sorted((c.lineno, c.args[0].id) for c in ast.walk(function)
                   if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                   and c.func.attr == "append" and c.args and isinstance(c.args[0], ast.Name))
    return tuple(name.removesuffix("_op") for _, name in calls)


def _reqs_order(body: list[ast.stmt]) -> tuple[str, ...]:
    """`reqs["send_next"] = ...` keys in source order within one branch."""
    keys = [(t.lineno, t.slice.value) for stmt in body for node in ast.walk(stmt)
            if isinstance(node, ast.Assign) for t in node.targets
            if isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant)]
    return tuple(k for _, k in sorted(keys))


@pytest.mark.wheels
def test_op_orders_are_megatron_core_0_17_0s(real_sources):
    source = real_sources["megatron-core"]
    tree = ast.parse((source.root / P2P).read_text(encoding="utf-8"))
    assert _appended_order(_function(tree, "_batched_p2p_ops")) == fallback_1f1b.BATCHED_ORDER
    assert _appended_order(_function(tree, "_communicate_shapes")) == fallback_1f1b.BATCHED_ORDER
    parity = next(n for n in ast.walk(_function(tree, "_p2p_ops")) if isinstance(n, ast.If)
                  and "% 2 == 0" in ast.unparse(n.test))
    assert _reqs_order(parity.body) == fallback_1f1b.EVEN_ORDER
    assert _reqs_order(parity.orelse) == fallback_1f1b.ODD_ORDER


@pytest.mark.wheels
def test_schedule_calls_are_p2p_communicator_methods(real_sources):
    source = real_sources["megatron-core"]
    tree = ast.parse((source.root / P2P).read_text(encoding="utf-8"))
    communicator = next(n for n in ast.walk(tree)
                        if isinstance(n, ast.ClassDef) and n.name == "P2PCommunicator")
    methods = {n.name for n in communicator.body if isinstance(n, ast.FunctionDef)}
    schedules = (source.root / "megatron/core/pipeline_parallel/schedules.py").read_text()
    without = schedules[schedules.index("def forward_backward_pipelining_without_interleaving"):]
    for stages in (2, 4):
        for stage in range(stages):
            for name, _ in fallback_1f1b.schedule(stage, stages, 4):
                assert name in methods
                assert f"p2p_communicator.{name}(" in without
