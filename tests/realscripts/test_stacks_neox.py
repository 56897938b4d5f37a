"""Issue 22 items 9 and 11: GPT-NeoX's `python ./deepy.py train.py CONFIG.yml ...` is read for what
its config files make it (rules/gpt-neox.toml): pipe_parallel_size 0 or 1 issues no pipeline P2P
(NOT A PIPELINE RUN), 2 or more trains GPT-NeoX's PipelineModule with DeepSpeed's PipelineEngine
(megatron/training.py:1393 `model.train_batch`), judged on rules/deepspeed.toml with the backend
the configs give; a size not known is INCONCLUSIVE.

The launch is written after EleutherAI/gpt-neox (commit ea7aefd8f8e183256992d9fede4d7c71a46d67a5)
README.md:523 (`python ./deepy.py train.py [path/to/config1.yml] [path/to/config2.yml] ...`) and
:533 (`-d configs 125M.yml local_setup.yml`); the configs after configs/125M.yml (JSON-style YAML
with comments, `"pipe_parallel_size": 1`) and its dashed spelling (`"pipe-parallel-size"`, as
some configs/ files have it).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from auditor import cli, rulebook
from auditor.analysis.verdict import judge
from auditor.config.derive import derive
from auditor.config.launch import read_launch
from auditor.config.frontends.neox import NeoxReader
from auditor.scan import ScanInputs, run_scan

# DeeperSpeed@91d1c55, which the checkout's requirements pin, is deepspeed 0.16.5 (its version.txt)
DS_RELEASE = "0.16.5"

MODEL = """# GPT-2 pretraining setup
{{
   # parallelism settings
   "{key}": {size},
   "model_parallel_size": 1,
   "num_layers": 12,
}}
"""
SETUP = '{\n  "data_path": "data/enwik8/enwik8_text_document",\n  "launcher": "pdsh",\n}\n'


def _scan(capsys, tmp_path: Path, size: object, key: str = "pipe_parallel_size",
          command: str = "python ./deepy.py train.py configs/125M.yml configs/local_setup.yml") -> dict:
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "125M.yml").write_text(MODEL.format(key=key, size=size), encoding="utf-8")
    (tmp_path / "configs" / "local_setup.yml").write_text(SETUP, encoding="utf-8")
    script = tmp_path / "run.sh"
    script.write_text(f"#!/bin/bash\n{command}\n", encoding="utf-8")
    cli.main(["scan", "--config", str(script), "--format", "json"])
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("size", [0, 1])
def test_one_stage_or_none_is_not_a_pipeline_run(capsys, tmp_path, size):
    doc = _scan(capsys, tmp_path, size)
    assert doc["verdict"]["status"] == "not-pipeline", doc["verdict"]["headline"]
    assert f"pipe_parallel_size {size}" in doc["verdict"]["headline"]
    assert doc["launch"]["launcher"] == "python deepy.py"


def _launch(tmp_path: Path, size: object, key: str = "pipe_parallel_size", extra: str = "",
            command: str = "python ./deepy.py train.py configs/125M.yml configs/local_setup.yml",
            head: str = "") -> Path:
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "125M.yml").write_text(MODEL.format(key=key, size=size), encoding="utf-8")
    (tmp_path / "configs" / "local_setup.yml").write_text(SETUP.replace("}", extra + "}"), encoding="utf-8")
    script = tmp_path / "run.sh"
    script.write_text(f"#!/bin/bash\n{head}{command}\n", encoding="utf-8")
    return script


def test_the_dashed_key_and_the_config_directory_are_read(tmp_path):
    launch = read_launch(_launch(tmp_path, 4, key="pipe-parallel-size",
                                 command="python ./deepy.py train.py -d configs 125M.yml local_setup.yml"))
    config = derive(launch, {"deepspeed": DS_RELEASE}, None, "2.13.0")
    assert config.value("pipeline_model_parallel_size") == 4


def test_two_stages_run_deepspeed_s_pipeline_engine(tmp_path):
    # GPT-NeoX trains a PipelineModule with the engine's train_batch (megatron/training.py:1393),
    # initialised by deepspeed.init_distributed(dist_backend=neox_args.distributed_backend)
    launch = read_launch(_launch(tmp_path, 2))
    assert launch.launcher == "python deepy.py"
    assert not [d for d in launch.diagnostics if d.kind in ("launch.not-covered", "launch.not-pipeline")]
    config = derive(launch, {"deepspeed": DS_RELEASE}, None, "2.13.0")
    assert config.value("pipeline_model_parallel_size") == 2
    assert config.value("distributed_backend") == "nccl"  # neox_args.py:874, no config gives it
    assert config.value("batch_p2p_comm") is False  # rules deepspeed.pipe-no-batching


def test_the_backend_the_configs_give(tmp_path):
    launch = read_launch(_launch(tmp_path, 2, extra='  "distributed-backend": "gloo",\n'))
    assert derive(launch, {"deepspeed": DS_RELEASE}, None, "2.13.0").value("distributed_backend") == "gloo"


def test_detail_un_batches_nothing_on_the_engine(tmp_path):
    script = _launch(tmp_path, 2, head="# torch==2.10.0\nexport TORCH_DISTRIBUTED_DEBUG=DETAIL\n")
    doc = run_scan(ScanInputs(str(script), targets=[f"deepspeed=={DS_RELEASE}"], jobs=1))
    assert doc["entries"] == ["deepspeed pipeline engine"]
    v = judge(doc)
    assert v.status == "clean", v.headline
    assert not [f for f in doc["findings"] if f["kind"] == "unbatched-contradiction"]


def test_a_size_not_known_is_inconclusive(capsys, tmp_path):
    doc = _scan(capsys, tmp_path, 1, command="python ./deepy.py train.py configs/125M.yml configs/$CLUSTER.yml")
    assert doc["verdict"]["status"] == "inconclusive", doc["verdict"]["headline"]
    assert "pipe_parallel_size" in doc["verdict"]["headline"]
    assert doc["launch"]["launcher"] == "python deepy.py"


def test_the_launcher_rule_names_this_reader():
    assert rulebook.load("gpt-neox").data["launcher"][0]["style"] == NeoxReader.style


def test_an_unreadable_config_is_never_the_default(capsys, tmp_path):
    doc = _scan(capsys, tmp_path, 0, command="python ./deepy.py train.py configs/125M.yml configs/missing.yml")
    assert doc["verdict"]["status"] == "inconclusive", doc["verdict"]["headline"]


# --- the rules against the GPT-NeoX checkout they quote ----------------------------------------

CHECKOUT = Path(os.environ.get("P2PAUDIT_NEOX_CHECKOUT", "/work/upstream/real_scripts/EleutherAI+gpt-neox@ea7aefd8f8"))


@pytest.mark.skipif(not (CHECKOUT / "deepy.py").is_file(), reason="the GPT-NeoX checkout is not here")
def test_the_rules_quote_the_checkout():
    data = rulebook.load("gpt-neox").data
    rule = data["neox_pipeline"]
    quoted = [(e["source"], e["code"]) for e in (data["launcher"][0], rule)]
    quoted += [(rule["backend_source"], rule["backend_code"]), (rule["engine_source"], rule["engine_code"])]
    quoted += [(stop["source"], stop["code"]) for stop in data["neox_stop"]]
    for source, code in quoted:
        path, line = source.split()[1].rsplit(":", 1)
        assert code in (CHECKOUT / path).read_text(encoding="utf-8").splitlines()[int(line) - 1]
    fork = rule["fork"].replace("@", ".git@", 1)
    assert fork in (CHECKOUT / "requirements/requirements.txt").read_text(encoding="utf-8").splitlines()[0]
    args = (CHECKOUT / "megatron/neox_arguments/neox_args.py").read_text(encoding="utf-8")
    assert f"{data['neox_pipeline']['key']}: int = {data['neox_pipeline']['default']}" in args


FORK = Path(os.environ.get("P2PAUDIT_DEEPERSPEED_CHECKOUT", "/work/upstream/DeeperSpeed@91d1c55ba0"))


@pytest.mark.skipif(not (FORK / "deepspeed/runtime/pipe/p2p.py").is_file(), reason="the DeeperSpeed checkout is not here")
def test_the_fork_runs_the_release_s_pipeline_code(release):
    rule = rulebook.load("gpt-neox").data["neox_pipeline"]
    assert (FORK / "version.txt").read_text(encoding="utf-8").strip() == rule["fork_release"]
    shipped = release(f"deepspeed=={rule['fork_release']}")
    for name in rule["fork_same"]:
        ours = (shipped.root / name).read_text(encoding="utf-8").replace("\r\n", "\n")
        assert (FORK / name).read_text(encoding="utf-8") == ours, name


# --- what stops a pipeline run of GPT-NeoX before it trains (rules/gpt-neox.toml [[neox_stop]]) ---
# A post-training config (post-training/configs/llama3-8b-dpo.yml: `"train_impl": "dpo"`, ZeRO
# `"stage": 1`) given pipe_parallel_size 2: get_batch_pipe asserts at the first micro-batch
# (megatron/training.py:488-492); ZeRO stage 2 or 3 with a PipelineModule: build_model calls
# exit() (megatron/training.py:878-888).

@pytest.mark.parametrize("extra,said", [
    ('  "train_impl": "dpo",\n', "train_impl dpo"),
    ('  "zero_optimization": {"stage": 2, "allgather_partitions": true},\n', "zero_optimization.stage 2"),
])
def test_a_pipeline_gpt_neox_stops_on_what_it_does_not_support(tmp_path, extra, said):
    script = _launch(tmp_path, 2, extra=extra)
    doc = run_scan(ScanInputs(str(script), targets=[f"deepspeed=={DS_RELEASE}"], jobs=1))
    v = judge(doc)
    assert v.headline.startswith("DOES NOT START") and said in v.headline, v.headline


@pytest.mark.parametrize("extra", ['  "train_impl": "reinforce",\n', '  "zero_optimization": {"stage": 1},\n'])
def test_what_it_supports_does_not_stop_it(tmp_path, extra):
    launch = read_launch(_launch(tmp_path, 2, extra=extra))
    assert not [d for d in launch.diagnostics if d.severity == "error"], launch.diagnostics


def test_a_pipeline_run_asks_nothing_of_another_front_end(tmp_path):
    # GPT-NeoX's configs are its front end (rules/gpt-neox.toml [[stage]] neox-configs): no
    # Megatron-DeepSpeed argument check is left undecided for it, so the verdict asks nothing
    script = _launch(tmp_path, 2, head="# torch==2.13.0\n")
    v = judge(run_scan(ScanInputs(str(script), targets=[f"deepspeed=={DS_RELEASE}"], jobs=1)))
    assert v.status == "clean" and not v.undecided and not v.startup, (v.headline, v.startup)
