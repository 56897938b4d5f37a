"""A valid script whose training command cannot be followed is INCONCLUSIVE (exit 1), saying what
could not be followed, and `--command` gives the command line by hand (issue 22 item 10).

The hidden command is the cluster-wrapper shape: `$LAUNCHER pretrain_gpt.py ...` with LAUNCHER set
by the environment (as in Megatron-LM's examples/academic_paper_scripts/sc21/SBATCH.sh, NVIDIA/Megatron-LM
commit d98e8a64ddf34856e74b24714e3bedb2f5a39553, whose command comes from variables CONFIG.sh sets).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from auditor.config.launch import CommandNotFollowed, parse_launch
from auditor.errors import InputError

HIDDEN = "#!/bin/bash\nPP=4\nexport TORCH_DISTRIBUTED_DEBUG=DETAIL\n$LAUNCHER pretrain_gpt.py --pipeline-model-parallel-size $PP\n"


def test_an_unfollowed_command_says_what_could_not_be_followed() -> None:
    with pytest.raises(CommandNotFollowed) as caught:
        parse_launch(HIDDEN, "hidden.sh")
    assert "line 4 runs `$LAUNCHER`" in caught.value.cause and "--command" in caught.value.cause


def test_the_scan_is_inconclusive_exit_1(tmp_path: Path) -> None:
    script = tmp_path / "hidden.sh"
    script.write_text(HIDDEN)
    done = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1, done.stderr
    assert "INCONCLUSIVE" in done.stdout and "$LAUNCHER" in done.stdout


def test_command_gives_the_training_command_with_the_scripts_variables() -> None:
    config = parse_launch(HIDDEN, "hidden.sh",
                          command="torchrun --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size $PP")
    assert config.launcher == "torchrun pretrain_gpt.py" and config.world_size == 8
    assert config.flags["pipeline_model_parallel_size"].value == "4"  # PP from the script
    assert config.env["TORCH_DISTRIBUTED_DEBUG"].value == "DETAIL"
    assert any(d.kind == "launch.given-command" for d in config.diagnostics)


def test_a_command_that_is_no_training_command_is_bad_input() -> None:
    with pytest.raises(InputError) as caught:
        parse_launch(HIDDEN, "hidden.sh", command="echo hello")
    assert caught.value.subject == "--command"
