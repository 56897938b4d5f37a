"""auditor.config.frontends.checkout_args: an [[arg]] read from the parser of the Megatron-LM
checkout the run reads, where its rules are not confirmed there (issue 22 item 6). The checkout is
tests/config/test_checkout_rules.py's cut-down NVIDIA/Megatron-LM core_v0.15.0 (0d7e02bd26)."""

from __future__ import annotations

from auditor.config.frontends.checkout_args import arg_from_checkout
from auditor.config.launch import read_launch
from tests.config.test_checkout_rules import checkout


def test_a_flag_the_launch_gives_is_its_value(tmp_path):
    script = checkout(tmp_path, tp=2)
    launch = read_launch(script)
    got = arg_from_checkout({"key": "tensor_model_parallel_size", "type": "int"}, tmp_path,
                            "megatron-lm 0.15.0", launch)
    assert got is not None and got[0] == 2 and "--tensor-model-parallel-size" in got[1]


def test_a_flag_not_given_is_its_literal_default(tmp_path):
    launch = read_launch(checkout(tmp_path, tp=1))
    got = arg_from_checkout({"key": "distributed_timeout_minutes", "type": "int"}, tmp_path,
                            "megatron-lm 0.15.0", launch)
    assert got is not None and got[0] == 10 and "defaults to 10" in got[1]


def test_a_setting_no_flag_sets_does_not_exist_in_that_release(tmp_path):
    launch = read_launch(checkout(tmp_path, tp=1))
    got = arg_from_checkout({"key": "use_torch_fsdp2", "type": "bool"}, tmp_path,
                            "megatron-lm 0.15.0", launch)
    assert got is not None and got[0] is None and "no flag of the parser" in got[1]
