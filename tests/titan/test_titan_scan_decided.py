"""`p2paudit scan` of torchtitan's README launches decided: torchtitan.train's own front end (not
Megatron-LM's argparse), torch's pipelining read from the installed torch where no torch target is
given and scoped to it (rules/torchtitan.toml [torch_source]), the stack's settings shown, and a
headline that leaves only the stage-op order to `p2paudit simulate`.

The launches are run_train.sh's torchrun line (pytorch/torchtitan v0.2.2 73a0e697 run_train.sh
for the TOML form; main b5bcd76c run_train.sh for `--module/--config`) with PP on the command
line, as torchtitan's README launches them."""

from __future__ import annotations

import json

import pytest

from auditor.config.launch import read_launch
from auditor.report.text import scan_report
from auditor.scan import ScanInputs, run_scan
from tests.titan.test_titan_scan import RUN_TRAIN_022, RUN_TRAIN_030, script

PIPELINING = "torch/distributed/pipelining/"
# The job config run_train.sh names, as torchtitan's repository has it (v0.2.2 73a0e697,
# torchtitan/models/llama3/train_configs/llama3_8b.toml; its P2P-relevant tables).
LLAMA3_8B_TOML = """\
[model]
name = "llama3"
flavor = "8B"

[training]
local_batch_size = 1
seq_len = 8192

[parallelism]
tensor_parallel_degree = 1
pipeline_parallel_degree = 1
"""


def test_torchtitan_train_is_read_by_its_own_front_end_not_megatron_s_parser(tmp_path):
    """`-m torchtitan.train` parses `--section.key` overrides itself: no `front-end-unread`."""
    launch = read_launch(script(tmp_path, RUN_TRAIN_022, "--parallelism.pipeline_parallel_degree 2"))
    assert launch.style == "torchtitan"
    assert not [d for d in launch.diagnostics if d.kind == "launch.front-end-unread"]
    assert launch.flags["parallelism.pipeline_parallel_degree"].value == "2"


@pytest.mark.wheels
@pytest.mark.heavy
@pytest.mark.parametrize("release,template,overrides,step", [
    ("0.2.2", RUN_TRAIN_022, "--parallelism.pipeline_parallel_degree 2", "Schedule1F1B"),
    ("0.3.0", RUN_TRAIN_030, "--parallelism.pipeline_parallel_degree 4 "
     "--parallelism.pipeline_parallel_schedule Interleaved1F1B", "_PipelineScheduleRuntime"),
    ("0.3.0", RUN_TRAIN_030.replace("llama3", "deepseek_v3").replace("deepseek_v3_8b", "deepseek_v3_16b"),
     "--parallelism.pipeline_parallel_degree 4 --parallelism.pipeline_parallel_schedule ZBVZeroBubble",
     "_PipelineScheduleRuntime"),
])
def test_readme_launch_without_a_torch_target_is_decided_up_to_simulate(tmp_path, release, template,
                                                                         overrides, step):
    toml = tmp_path / "torchtitan/models/llama3/train_configs/llama3_8b.toml"
    toml.parent.mkdir(parents=True)
    toml.write_text(LLAMA3_8B_TOML)
    doc = run_scan(ScanInputs(script(tmp_path, template, overrides), targets=[f"torchtitan=={release}"],
                              torch_version="2.13.0", jobs=1))
    assert {t["name"] for t in doc["targets"]} == {"torchtitan", "torch"}
    assert doc["sites"] and all(s["path"].startswith(PIPELINING) for s in doc["sites"] if s["package"] == "torch")
    for s in doc["sites"]:  # every site of the pipeline found with a call path, its op decided
        assert s["reachable"] == "yes" and s["paths"], (s["path"], s["line"])
        assert s["op"] != "unknown" or s["api"] in ("batch_isend_irecv",), s
    assert any(step in " ".join(s["paths"][0]) for s in doc["sites"])
    assert doc["verdict"]["status"] == "inconclusive"
    assert doc["verdict"]["headline"].startswith("INCONCLUSIVE: no contradiction found; the schedule reaches")
    assert f"left to `p2paudit simulate --config {tmp_path / 'run_train.sh'}`" in doc["verdict"]["headline"]
    assert not [f for f in doc["findings"] if f["kind"] == "launch.front-end-unread"]
    text = scan_report(json.loads(json.dumps(doc)))
    config = text.split("Effective config", 1)[1].split("\n\n", 1)[0]
    assert "pipeline_parallel_schedule" in config and "megatron-core" not in config


@pytest.mark.wheels
@pytest.mark.parametrize("release,template", [("0.2.2", RUN_TRAIN_022), ("0.3.0", RUN_TRAIN_030)])
def test_an_override_the_release_s_config_class_lacks_is_said(tmp_path, release, template):
    """torchtitan's ConfigManager parses `--section.key` into the job config's dataclasses
    (0.2.2 torchtitan/config/job_config.py Parallelism, 0.3.0 torchtitan/config/configs.py
    ParallelismConfig) and rejects a key they lack; a key they have is accepted."""
    from auditor.scan import read_config
    path = script(tmp_path, template, "--parallelism.pipeline_parallel_degre 2 "
                                      "--parallelism.pipeline_parallel_schedule 1F1B")
    launch, _ = read_config(path, [f"torchtitan=={release}"])
    said = [d for d in launch.diagnostics if d.kind == "launch.titan-unknown-flag"]
    assert len(said) == 1 and "`--parallelism.pipeline_parallel_degre`" in said[0].message
    assert "pipeline_parallel_degree" in said[0].fix
