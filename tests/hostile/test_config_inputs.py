"""`--config` naming what is not a launch script, for every command that takes one.

A device (`--config /dev/zero`, a tab-completed `/dev/sda`) was read to its end: /dev/zero never
ends, so `scan` grew until the kernel killed it (122 s, the machine's memory gone) instead of one
line. `gate --format sarif` (which runs `fix`'s pipeline) met a directory as an internal error.
Each gets exit 2 and the one line naming the input; a pipe (`--config /dev/stdin`) stays readable.
"""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.errors import EXIT_INPUT

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / "ci" / "baseline" / "glm5_1_lora_pp4.megatron-core-0.17.0.json"
COMMANDS = {
    "scan": [],
    "fix": [],
    "simulate": [],
    "gate": ["--baseline", str(BASELINE)],
    "gate-sarif": ["--baseline", str(BASELINE), "--format", "sarif"],
}


def _bounded() -> None:
    """The child may not take the machine down if the bug is back: 1 GiB of address space."""
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def _run(command: str, config: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "auditor", command.split("-")[0], "--config", config,
            *COMMANDS[command]]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT,
                          stdin=subprocess.DEVNULL, preexec_fn=_bounded)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_device_is_refused_before_it_is_read(command):
    done = _run(command, "/dev/zero")
    name = command.split("-")[0]
    assert done.returncode == EXIT_INPUT, done.stderr[-2000:]
    assert done.stderr.strip() == f"p2paudit {name}: error: /dev/zero: is a device, not a launch script"


@pytest.mark.parametrize("command", ["gate-sarif"])
def test_a_directory_is_one_line(command, tmp_path):
    done = _run(command, str(tmp_path))
    assert done.returncode == EXIT_INPUT
    assert done.stderr.strip() == f"p2paudit gate: error: {tmp_path}: is a directory, not a launch script"
