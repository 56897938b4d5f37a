"""The `p2paudit fix` command that `scan` and `gate` print beside a cause (auditor/fix/pointer.py)
gives `fix` the scan's own inputs: read back by the real CLI parser, it names the same script,
targets, torch and --set values, whatever the script's path holds."""

from __future__ import annotations

import shlex

import pytest

from auditor.cli import build_parser
from auditor.fix.pointer import command
from auditor.scan import ScanInputs


@pytest.mark.parametrize("inputs", [
    ScanInputs(config_path="examples/glm5_1_lora_pp4.sh"),
    ScanInputs(config_path="my runs/train $PP 'x'.sh", targets=["megatron-core==0.17.0", "ms-swift==4.3.0"],
               torch_version="2.10.0", overrides={"batch_p2p_comm": "False", "pipeline_model_parallel_size": "4"}),
])
def test_the_printed_command_reads_back_as_the_scans_inputs(inputs: ScanInputs) -> None:
    argv = shlex.split(command(inputs))
    assert argv[:2] == ["p2paudit", "fix"]
    args = build_parser("fix").parse_args(argv[1:])
    assert args.config == inputs.config_path
    assert (args.target or None) == inputs.targets
    assert args.torch == inputs.torch_version
    assert args.set == [f"{k}={v}" for k, v in (inputs.overrides or {}).items()]
