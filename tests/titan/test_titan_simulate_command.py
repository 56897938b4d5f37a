"""`--command` reaches `p2paudit simulate` as it reaches `scan`: a launch whose PP settings are
only in the command line `--command` gives (run_train.sh's `"$@"`) is simulated at them, and the
scan's headline, which leaves the stage-op order to simulate, names the same `--command`.

The script is run_train.sh's torchrun line with its `"$@"` left empty (pytorch/torchtitan main
b5bcd76c, run_train.sh); the settings come from tests/titan/test_titan_simulate.py's SETTINGS."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

import pytest

from auditor.scan import ScanInputs, run_scan
from tests.titan.test_titan_simulate import ROOT, RUN_TRAIN, SETTINGS

pytestmark = pytest.mark.wheels
COMMAND = ("torchrun --nproc_per_node=2 -m torchtitan.train --module llama3 --config llama3_8b "
           + SETTINGS.format(pp=2, schedule="1F1B", batch=4, seq=16, dtype="float32", csv=""))


def _script(tmp_path):
    path = tmp_path / "run_train.sh"
    path.write_text(RUN_TRAIN.replace("{ngpu}", "2").replace("{overrides}", ""))
    return path


def test_the_scan_headline_names_the_command_simulate_needs(tmp_path):
    path = _script(tmp_path)
    doc = run_scan(ScanInputs(str(path), ["torchtitan==0.3.0"], torch_version="2.13.0", jobs=1,
                              command=COMMAND))
    assert doc["launch"]["command"] == COMMAND
    wanted = f"left to `p2paudit simulate --config {path} --command {shlex.quote(COMMAND)}`"
    assert wanted in doc["verdict"]["headline"], doc["verdict"]["headline"]


@pytest.mark.heavy
def test_simulate_runs_at_the_settings_command_gives(tmp_path):
    out = tmp_path / "sim.json"
    done = subprocess.run([sys.executable, "-m", "auditor", "simulate", "--config", str(_script(tmp_path)),
                           "--command", COMMAND, "--target", "torchtitan==0.3.0", "--target", "torch",
                           "--torch", "2.13.0", "--set", "hidden_size=32", "--format", "json", "-o", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    sim = json.loads(out.read_text())["simulation"]
    assert (sim["verdict"], sim["schedule"], sim["microbatches"]) == ("completes", "Schedule1F1B", 4)
    assert len(sim["ranks"]) == 2
