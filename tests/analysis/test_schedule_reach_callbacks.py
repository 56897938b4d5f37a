"""A function or class of the read code handed to code outside it (`mp.spawn(worker, ...)`,
`threading.Thread(target=worker)`, `atexit.register(pretrain, ...)`) runs there, unseen by the
call graph; a `getattr` of a computed name calls what the walk cannot name. Before this, the walk
took the callback for a plain value and read NOT A PIPELINE RUN of an entry that trains
(auditor/analysis/schedule_reach.py, interp/calls.py). Now a function handed out is walked with
unknown arguments (as it may be called with any), a class handed out or a computed getattr
leaves the reading uncertain, and a callback that reaches nothing keeps NOT A PIPELINE RUN.

The scripts are the conversion of test_schedule_reach.py (after FlagOpen/FlagScale
tools/checkpoint/qwen2_5_vl/hf2mcore_qwen2.5_vl.py, commit
da4935ec60193e735bc70b81e259ed04eefd0132) with a `convert` that hands its work to a worker
(the reviewer's reproducers B, C, D, F of turn 9).
"""

from __future__ import annotations

import pytest

from auditor.analysis.schedule_reach import KIND
from tests.analysis.test_schedule_reach import _conversion, _scan

SPAWN = """
import torch.multiprocessing as mp
from megatron.training.training import pretrain

def worker(rank, args):
    {body}

def convert(args):
    mp.spawn(worker, args=(args,), nprocs=1)
"""
THREAD = """
import threading
from megatron.core.pipeline_parallel import get_forward_backward_func

def worker(args):
    get_forward_backward_func()(forward_step_func=None, data_iterator=None, model=None,
                                num_microbatches=1, seq_length=1, micro_batch_size=1)

def convert(args):
    t = threading.Thread(target=worker, args=(args,))
    t.start(); t.join()
"""
GETATTR = """
import megatron.training.training as tr

def convert(args):
    getattr(tr, {name})(None, None, None, None)
"""
ATEXIT = """
import atexit
from megatron.training.training import pretrain

def convert(args):
    atexit.register(pretrain, None, None, None, None)
"""
PARTIAL = """
import functools
import torch.multiprocessing as mp
from megatron.training.training import pretrain

def convert(args):
    mp.spawn(functools.partial(pretrain, None), args=[(None, None)], nprocs=1)
"""
CLASS = """
import atexit
from megatron.training.training import pretrain

class Runner:
    def __init__(self):
        pretrain(None, None, None, None)

def convert(args):
    atexit.register(Runner)
"""
# a callee the walk does not resolve (a method of a context object), handed the worker (turn 10 review)
CONTEXT = """
import torch.multiprocessing as mp
from megatron.core.pipeline_parallel import get_forward_backward_func

def worker(args):
    get_forward_backward_func()(forward_step_func=None, data_iterator=None, model=None,
                                num_microbatches=1, seq_length=1, micro_batch_size=1)

def convert(args):
    ctx = mp.get_context("spawn")
    ctx.Process(target=worker, args=(args,)).start()
"""


@pytest.mark.heavy
@pytest.mark.parametrize("extra", [
    SPAWN.format(body="pretrain(None, None, None, None)"),
    THREAD,
    GETATTR.format(name='"pre" + "train"'),
    GETATTR.format(name='"pretrain"'),
    ATEXIT,
    PARTIAL,
    CLASS,
    CONTEXT,
], ids=["spawn", "thread", "getattr-computed", "getattr-constant", "atexit", "partial", "class", "context"])
def test_a_callback_handed_out_keeps_the_analysis(capsys, tmp_path, extra):
    code, doc = _scan(capsys, _conversion(tmp_path, extra))
    assert doc["verdict"]["status"] != "not-pipeline", doc["verdict"]["headline"]
    assert not any(f["kind"] == KIND for f in doc["findings"])


def test_a_callback_that_reaches_nothing_is_still_no_pipeline_run(capsys, tmp_path):
    code, doc = _scan(capsys, _conversion(tmp_path, SPAWN.format(body="save_state_dict(args, {})")))
    assert doc["verdict"]["status"] == "not-pipeline", doc["verdict"]["headline"]
