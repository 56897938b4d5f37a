"""The `p2paudit fix` command that `scan` and `gate` print beside a cause (auditor/fix/pointer.py)
gives `fix` the scan's own inputs: read back by the real CLI parser, it names the same script,
targets, torch and --set values, whatever the script's path holds. It is printed only for a cause
`fix` makes a patch for (fix.plan.propose decides both)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.analysis import causes
from auditor.cli import build_parser
from auditor.fix import plan, pointer
from auditor.fix.pointer import command
from auditor.scan import ScanInputs, read_config, run_scan
from tests.launches import QWEN3_MOE


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


@pytest.mark.wheels
def test_a_cause_is_pointed_to_fix_only_where_fix_makes_its_patch(tmp_path):
    """modelscope/ms-swift examples/megatron/moe/qwen3_moe.sh (commit 2d3694fb18, v4.3.0): its
    split-communicators sites are megatron-core's, two of them on the default group only through
    ms-swift's patch of `_batched_p2p_ops`, none on the default group in code of the run's own:
    `fix` has no edit for its pass-group remedy ("no patch: none of the finding's sites is one
    ... edits"), so scan names no `p2paudit fix` for it, and still does for the causes it
    patches (the nonblocking init and the timeout, launch-script edits)."""
    script = tmp_path / "qwen3_moe.sh"
    script.write_text(QWEN3_MOE, encoding="utf-8")
    inputs = ScanInputs(str(script), torch_version="2.10.0")
    doc = run_scan(inputs)
    pointer.point(doc, inputs)
    by_kind = {f["kind"]: f for f in doc["findings"]}
    assert "fix_command" not in by_kind["split-communicators"]
    assert by_kind["lazy-init-unbounded"]["fix_command"]["command"] == command(inputs)
    on = plan.bench(inputs, read_config(str(script), None), script.read_text(encoding="utf-8"))
    for cause in causes.group(doc["findings"]):
        proposal = plan.propose(on, doc, cause, set())
        pointed = "fix_command" in doc["findings"][cause.index]
        assert pointed == bool(proposal is not None and proposal.edits), doc["findings"][cause.index]["kind"]


@pytest.mark.wheels
def test_the_pointer_plans_from_the_config_the_scan_read(tmp_path, monkeypatch):
    """The script of the test above (a `# megatron-core==...` pin: no release choice) is read
    once per scan: the pointer plans from the read the scan kept (ScanInputs.reads), with the
    pointers a fresh read gives; before, it read the script and its releases again for each
    scan with a mechanical finding."""
    script = tmp_path / "qwen3_moe.sh"
    script.write_text(QWEN3_MOE, encoding="utf-8")
    fresh = ScanInputs(str(script), torch_version="2.10.0")
    expected = run_scan(fresh)
    pointer.point(expected, fresh)
    inputs = ScanInputs(str(script), torch_version="2.10.0", reads={})
    doc = run_scan(inputs)

    def read_again(*args: object, **kwargs: object) -> None:
        raise AssertionError("the pointer read the config the scan read")

    monkeypatch.setattr(pointer, "read_config", read_again)
    pointer.point(doc, inputs)
    pointed = {f["kind"]: f["fix_command"] for f in doc["findings"] if "fix_command" in f}
    assert pointed and pointed == {f["kind"]: f["fix_command"] for f in expected["findings"]
                                   if "fix_command" in f}


def test_a_cli_start_imports_no_codemod_library() -> None:
    """Every `scan`, `gate` and `fix` process imports fix.pointer and fix.plan, and libcst cost
    each start ~0.2 s of CPU (hundreds of CLI runs in the tests); it is imported where a codemod
    runs (fix.trainer, fix.script)."""
    code = ("import sys, auditor.cli, auditor.commands.scan, auditor.commands.gate, "
            "auditor.commands.fix; print(sorted(m for m in sys.modules if m.startswith('libcst')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
