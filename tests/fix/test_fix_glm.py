"""`p2paudit fix` on the shipped GLM-5.1 script (ms-swift #9451): the patch removes the DETAIL
contradiction and the timeout warning, a re-scan of the patched copy says so, `--apply` writes it
after a backup and `scan` then exits 0. Always on a copy in tmp_path, never examples/ itself."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from auditor import cli
from auditor.commands import fix as fix_command
from auditor.errors import InputError
from auditor.fix import plan as fix_plan
from auditor.scan import ScanInputs

pytestmark = pytest.mark.usefixtures("real_sources")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "glm5_1_lora_pp4.sh"


@pytest.fixture
def script(tmp_path: Path) -> Path:
    copy = tmp_path / "run.sh"
    shutil.copy(EXAMPLE, copy)
    return copy


@pytest.mark.heavy  # runs `simulate` of the patched script (~15-30 s)
def test_fix_prints_a_verified_diff_that_removes_detail_and_the_timeout(script, capsys):
    code = cli.main(["fix", "--config", str(script), "--torch", "2.10.0"])
    out, err = capsys.readouterr()
    assert code == 0
    removed = [line for line in out.splitlines() if line.startswith("-") and not line.startswith("---")]
    added = [line for line in out.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert "-export TORCH_DISTRIBUTED_DEBUG=DETAIL" in removed
    assert "+    --ddp_timeout 1800 \\" in added
    assert "+export TORCH_NCCL_ASYNC_ERROR_HANDLING=1" in added
    assert added[1:3] == ["+export TORCH_NCCL_USE_COMM_NONBLOCKING=1",
                          "+export TORCH_NCCL_NONBLOCKING_TIMEOUT=600"]
    # The re-scan's word per finding, under its cause.
    assert "re-scanned" in err
    # Simulated too: the schedule of the patched run completes (the original's can deadlock).
    assert "simulated (p2paudit simulate of the patched copy" in err and "CLEAN: completes" in err
    gone = {line.split()[2] for line in err.splitlines() if line.strip().startswith("gone")}
    assert {"batch-runs-unbatched", "unbatched-contradiction", "timeout-too-large",
            "lazy-init-unbounded"} <= gone
    assert "new:" not in err
    assert "patch: verified; exit 0" in err
    assert script.read_text() == EXAMPLE.read_text()  # printing a diff writes nothing


@pytest.mark.heavy
def test_apply_then_scan_exits_0(script, capsys):
    assert cli.main(["scan", "--config", str(script), "--torch", "2.10.0"]) == 1
    assert cli.main(["fix", "--config", str(script), "--torch", "2.10.0", "--apply", "--no-simulate"]) == 0
    backup = Path(str(script) + fix_command.BACKUP)
    assert backup.read_text() == EXAMPLE.read_text()
    assert "TORCH_DISTRIBUTED_DEBUG" not in script.read_text()
    capsys.readouterr()
    assert cli.main(["scan", "--config", str(script), "--torch", "2.10.0"]) == 0
    # A second --apply would overwrite the backup of the original: refused.
    shutil.copy(EXAMPLE, script)
    assert cli.main(["fix", "--config", str(script), "--torch", "2.10.0", "--apply", "--no-simulate"]) == 2
    assert "backup" in capsys.readouterr().err


@pytest.mark.heavy
def test_option_picks_another_remedy(script, capsys):
    code = cli.main(["fix", "--config", str(script), "--torch", "2.10.0", "--option", "info",
                     "--no-simulate"])
    out = capsys.readouterr().out
    assert code == 0
    assert "+export TORCH_DISTRIBUTED_DEBUG=INFO" in out.splitlines()
    assert cli.main(["fix", "--config", str(script), "--torch", "2.10.0", "--option", "nosuch",
                     "--no-simulate"]) == 2


def test_output_naming_the_script_is_refused(script, capsys):
    assert cli.main(["fix", "--config", str(script), "--torch", "2.10.0", "-o", str(script)]) == 2
    assert "an input" in capsys.readouterr().err
    assert script.read_text() == EXAMPLE.read_text()


@pytest.mark.heavy
def test_a_script_changed_since_the_scan_is_not_written(script):
    plan = fix_plan.make(ScanInputs(str(script), torch_version="2.10.0"), simulate=False)
    assert plan.verified
    script.write_text(script.read_text() + "# edited meanwhile\n")
    with pytest.raises(InputError, match="changed since the scan"):
        fix_command.apply(plan)
    assert script.read_text().endswith("# edited meanwhile\n")
    assert not Path(str(script) + fix_command.BACKUP).exists()


def test_a_patch_that_leaves_its_finding_is_not_offered(script, capsys):
    """DETAIL exported twice: the scan reads the later line, and removing it leaves the first,
    so the re-scan still finds the contradiction. The other causes are fixed by hand first, so
    this option is the only one: no verified patch, nothing written, exit 1."""
    text = (script.read_text()
            .replace("export NCCL_DEBUG=WARN\n",
                     "export NCCL_DEBUG=WARN\nexport TORCH_DISTRIBUTED_DEBUG=DETAIL\n")
            .replace("export NCCL_TIMEOUT=1800\nexport NCCL_ASYNC_ERROR_HANDLING=1\n", "")
            .replace("    --agent_template", "    --ddp_timeout 1800 \\\n    --agent_template"))
    script.write_text(text)
    plan = fix_plan.make(ScanInputs(str(script), torch_version="2.10.0"), simulate=False)
    [detail] = plan.proposals
    assert detail.option.option == "remove-detail" and detail.edits and not detail.verified
    assert detail.outcome is not None and detail.outcome.states[detail.cause.index] == "still there"
    assert not plan.verified and plan.exit_code == 1
    with pytest.raises(InputError, match="did not verify"):
        fix_command.apply(plan)
    assert cli.main(["fix", "--config", str(script), "--torch", "2.10.0", "--apply", "--no-simulate"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "NOT verified" in err and "nothing written" in err
    assert script.read_text() == text
    assert not Path(str(script) + fix_command.BACKUP).exists()
