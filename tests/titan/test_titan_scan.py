"""`p2paudit scan` of torchtitan launches, on the torchtitan releases from PyPI.

The launch is torchtitan's README's (`MODULE=llama3 CONFIG=llama3_8b ./run_train.sh` with PP on
the command line): run_train.sh's torchrun line (pytorch/torchtitan main b5bcd76c, run_train.sh;
v0.2.2 73a0e697 for the TOML form) with its `"$@"` spelled out. rules/torchtitan.toml's entry
point steps the schedule torchtitan's own builder makes from `[parallelism]`; the schedule name
on the command line picks torch's class (get_schedule_class), whose step reaches the stage ops.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from auditor import rulebook, sources
from auditor.config.launch import read_launch
from auditor.scan import ScanInputs, run_scan

STAGE = "torch/distributed/pipelining/stage.py"
STEP_OPS = {"_PipelineStageBase._get_recv_ops", "_PipelineStageBase.get_fwd_send_ops",
            "_PipelineStageBase.get_bwd_send_ops"}
RUN_TRAIN_030 = """\
NGPU=${NGPU:-"8"}
MODULE=${MODULE:-"llama3"}
CONFIG=${CONFIG:-"llama3_8b"}
torchrun --nproc_per_node=${NGPU} --rdzv_backend c10d --rdzv_endpoint="localhost:0" \\
  --local-ranks-filter 0 --role rank --tee 3 \\
  -m torchtitan.train --module ${MODULE} --config ${CONFIG} {overrides}
"""
RUN_TRAIN_022 = """\
NGPU=${NGPU:-"8"}
CONFIG_FILE=${CONFIG_FILE:-"./torchtitan/models/llama3/train_configs/llama3_8b.toml"}
TRAIN_FILE=${TRAIN_FILE:-"torchtitan.train"}
torchrun --nproc_per_node=${NGPU} --rdzv_backend c10d --rdzv_endpoint="localhost:0" \\
  --local-ranks-filter 0 --role rank --tee 3 \\
  -m ${TRAIN_FILE} --job.config_file ${CONFIG_FILE} {overrides}
"""
# The settings the builder's choice of schedule and micro-batch count reads; a run whose config
# function or TOML sets them is read with them unknown (the last test).
PP = ("--parallelism.pipeline_parallel_degree 4 --parallelism.pipeline_parallel_schedule {schedule} "
      "--parallelism.pipeline_parallel_microbatch_size 1 --parallelism.pipeline_parallel_schedule_csv ''")


def script(tmp_path: Path, template: str, overrides: str) -> str:
    path = tmp_path / "run_train.sh"
    path.write_text(template.replace("{overrides}", overrides))
    return str(path)


def test_the_command_line_overrides_are_the_parallelism_settings(tmp_path):
    launch = read_launch(script(tmp_path, RUN_TRAIN_030, PP.format(schedule="Interleaved1F1B")))
    assert launch.launcher == "torchrun torchtitan.train"
    assert launch.flags["parallelism.pipeline_parallel_schedule"].value == "Interleaved1F1B"


@pytest.mark.wheels
@pytest.mark.parametrize("release", ["0.1.0", "0.2.2", "0.3.0"])
def test_each_entry_point_names_the_release_s_schedule_builder(release):
    """The entry point a release selects imports a builder that release defines at `source`."""
    entries = list(rulebook.load("torchtitan", release).table("entry_point"))
    assert len(entries) == 1
    (entry,) = entries
    root = sources.resolve(f"torchtitan=={release}").root
    path, _, line = entry["source"].rpartition(":")
    text = (root / path).read_text().splitlines()
    imported = {a.name for node in ast.walk(ast.parse(entry["code"])) if isinstance(node, ast.ImportFrom)
                and node.module and node.module.startswith("torchtitan.distributed") for a in node.names}
    (builder,) = imported
    assert text[int(line) - 1].startswith(f"def {builder}(")


def scan(tmp_path: Path, template: str, overrides: str, release: str) -> dict:
    return run_scan(ScanInputs(script(tmp_path, template, overrides), targets=[f"torchtitan=={release}", "torch"],
                               torch_version="2.13.0", jobs=1))


def reached(doc: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for s in doc["sites"]:
        if s["path"] == STAGE:
            out.setdefault(s["function"], []).append(s)
    return out


@pytest.mark.wheels
@pytest.mark.heavy
@pytest.mark.parametrize("release,template,schedule,step", [
    ("0.3.0", RUN_TRAIN_030, "Interleaved1F1B", "schedules._PipelineScheduleRuntime._step_microbatches"),
    ("0.3.0", RUN_TRAIN_030.replace("llama3", "deepseek_v3"), "1F1B", "schedules.Schedule1F1B._step_microbatches"),
    ("0.2.2", RUN_TRAIN_022, "1F1B", "schedules.Schedule1F1B._step_microbatches"),
])
def test_readme_launch_with_pp_reaches_the_configured_schedule_s_stage_ops(tmp_path, release, template,
                                                                         schedule, step):
    doc = scan(tmp_path, template, PP.format(schedule=schedule), release)
    assert doc["entries"] == ["torchtitan pipeline schedule"]
    effective = doc["config"]["effective"]
    assert (effective["pipeline_parallel_degree"], effective["pipeline_parallel_schedule"]) == (4, schedule)
    ops = reached(doc)
    for function in STEP_OPS:
        for s in ops[function]:
            assert s["reachable"] == "yes", s
            assert step in s["paths"][0], s["paths"][0]


@pytest.mark.wheels
@pytest.mark.heavy
def test_a_schedule_left_to_the_config_function_is_the_function_s_and_reaches_the_stage_ops(tmp_path):
    """llama3_8b() (torchtitan 0.3.0 models/llama3/config_registry.py) sets no schedule: the
    ParallelismConfig default, read from the release, not a guess (auditor/config/titan.py)."""
    doc = scan(tmp_path, RUN_TRAIN_030, "--parallelism.pipeline_parallel_degree 4", "0.3.0")
    assert doc["config"]["effective"]["pipeline_parallel_schedule"] == "1F1B"
    assert "torchtitan/config/configs.py" in doc["config"]["provenance"]["pipeline_parallel_schedule"]
    for function in STEP_OPS:
        for s in reached(doc)[function]:
            assert s["reachable"] == "yes", s
