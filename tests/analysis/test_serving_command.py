"""An entry that reaches no pipeline schedule and only serves a model: before, the scan read
INCONCLUSIVE "the command src/server.py:42 runs ... the training it may start" for
microsoft/DeepSpeedExamples@83757d9c937daabd1089a08051061706cb73900d benchmarks/inference/mii/
run_example.sh, whose src/server.py:29-44 starts `("python", "-m", "vllm.entrypoints.api_server",
..., "--tensor-parallel-size", str(args.tp_size), "--model", args.model)` with subprocess.Popen
and :109-112 stops it with `vllm_cmd = ("pkill", "-f", "vllm.entrypoints.api_server")`,
`subprocess.Popen(vllm_cmd, ...)`: an inference server and a signal, no training
(rules/stacks.toml [no_pipeline] `serving_modules`, `inert_programs`). A command that may still
train (a shell line with a word computed at run time, a module that is no server) stays undecided.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.analysis.test_schedule_reach import _scan

SH = "#!/bin/bash\n# torch==2.11.0\npython bench.py --model m --tp 2\n"
PY = """import argparse
import subprocess


def start(args):
    cmd = ("python", "-m", {module!r}, "--tensor-parallel-size", str(args.tp), "--model", args.model)
    p = subprocess.Popen(cmd{shell}, stdout=subprocess.DEVNULL)
    return p


def stop(args):
    stop_cmd = {stop}
    subprocess.Popen(stop_cmd{stop_shell}).wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model")
    parser.add_argument("--tp", type=int, default=1)
    args = parser.parse_args()
    start(args)
    stop(args)


if __name__ == "__main__":
    main()
"""
PKILL = '("pkill", "-f", "vllm.entrypoints.api_server")'


def _bench(tmp_path: Path, module: str = "vllm.entrypoints.api_server", shell: str = "",
           stop: str = PKILL, stop_shell: str = "") -> Path:
    (tmp_path / "bench.py").write_text(PY.format(module=module, shell=shell, stop=stop, stop_shell=stop_shell),
                                       encoding="utf-8")
    script = tmp_path / "run.sh"
    script.write_text(SH, encoding="utf-8")
    return script


def test_a_benchmark_that_serves_and_stops_a_model_is_no_pipeline_run(capsys, tmp_path):
    code, doc = _scan(capsys, _bench(tmp_path))
    head = doc["verdict"]["headline"]
    assert doc["verdict"]["status"] == "not-pipeline" and code == 0, head
    assert head.startswith("NOT A PIPELINE RUN: bench.py reaches no pipeline schedule"), head
    assert not any(f["kind"] == "entry.runs-command" for f in doc["findings"])


@pytest.mark.heavy
@pytest.mark.parametrize("module, shell, stop, stop_shell, line", [
    ("pretrain_gpt", "", PKILL, "", 7),  # a module that is no server: it may train
    ("vllm.entrypoints.api_server", ", shell=True", PKILL, "", 7),  # a shell: `args.model` may hold `; torchrun`
    ("vllm.entrypoints.api_server", "", '"pkill -f " + args.model', ", shell=True", 13),  # a computed shell line
    # review r44-scan m3: `executable=` runs another program than the words name (rules/stacks.toml
    # runner_keywords, as runs_only_utility reads them); main read NOT A PIPELINE RUN
    ("vllm.entrypoints.api_server", ', executable="/opt/train.sh"', PKILL, "", 7),
    ("vllm.entrypoints.api_server", ", **{}", PKILL, "", 7),
])
def test_a_command_that_may_train_stays_undecided(capsys, tmp_path, module, shell, stop, stop_shell, line):
    code, doc = _scan(capsys, _bench(tmp_path, module, shell, stop, stop_shell))
    head = doc["verdict"]["headline"]
    assert doc["verdict"]["status"] == "inconclusive" and code == 1, head
    [said] = [f for f in doc["findings"] if f["kind"] == "entry.runs-command"]
    assert said["detail"]["commands"][0] == f"bench.py:{line}", said
