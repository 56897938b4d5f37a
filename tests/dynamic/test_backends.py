"""The backend model (auditor.dynamic.backends): what each backend can do, and which one a
recorded run ran on, read from the recorded fixtures' group lines."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from auditor.dynamic.backends import GLOO, NCCL, backend, default, of_groups
from auditor.dynamic.trace import read_trace_dir

FIXTURES = Path(__file__).parents[1] / "record_fixtures"


def test_gloo_differs_from_nccl_in_every_capability():
    assert (GLOO.lazy_communicators, GLOO.coalesces, GLOO.stream_order, GLOO.runs_nccl) == \
        (False, False, False, False)
    assert (NCCL.lazy_communicators, NCCL.coalesces, NCCL.stream_order, NCCL.runs_nccl) == \
        (True, True, True, True)
    assert (GLOO.device, NCCL.device) == ("cpu", "cuda")


def test_a_backend_is_found_by_its_name_and_an_unknown_one_is_not():
    assert backend("gloo") is GLOO and backend("nccl") is NCCL
    with pytest.raises(KeyError):
        backend("mpi")


@pytest.mark.parametrize("fixture, expected", [("pipeline", GLOO), ("hang", GLOO),
                                               ("eager_nccl", NCCL)])
def test_a_recorded_run_ran_on_the_backend_its_groups_name(fixture, expected):
    trace = read_trace_dir(FIXTURES / fixture)
    assert of_groups(g for rt in trace.ranks.values() for g in rt.groups) is expected


def test_a_run_that_recorded_no_group_is_judged_as_nccl():
    """The questions are NCCL's: a trace silent about its groups is asked them."""
    assert of_groups([]) is NCCL


def test_the_default_is_nccl_only_where_cuda_is():
    assert default() is (NCCL if torch.cuda.is_available() else GLOO)
