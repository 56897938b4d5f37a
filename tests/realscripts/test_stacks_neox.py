"""Issue 22 items 9 and 11: GPT-NeoX's `python ./deepy.py train.py CONFIG.yml ...` is read for what
its config files make it (rules/gpt-neox.toml): pipe_parallel_size 0 or 1 issues no pipeline P2P
(NOT A PIPELINE RUN), 2 or more runs DeepSpeed's engine under GPT-NeoX's loop, which no rules
model (NOT COVERED, with the step that decides it), a size not known is INCONCLUSIVE.

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
from auditor.config.frontends.neox import NeoxReader

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


def test_the_dashed_key_and_the_config_directory_are_read(capsys, tmp_path):
    doc = _scan(capsys, tmp_path, 4, key="pipe-parallel-size",
                command="python ./deepy.py train.py -d configs 125M.yml local_setup.yml")
    assert doc["verdict"]["status"] == "not-covered", doc["verdict"]["headline"]
    assert "pipe_parallel_size 4" in doc["verdict"]["headline"]


def test_two_stages_are_not_covered_with_the_step_that_decides(capsys, tmp_path):
    doc = _scan(capsys, tmp_path, 2)
    assert doc["verdict"]["status"] == "not-covered", doc["verdict"]["headline"]
    assert "p2paudit record" in json.dumps(doc["verdict"])


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

CHECKOUT = Path(os.environ.get("P2PAUDIT_NEOX_CHECKOUT", "/work/upstream/gpt-neox@ea7aefd8f8"))


@pytest.mark.skipif(not (CHECKOUT / "deepy.py").is_file(), reason="the GPT-NeoX checkout is not here")
def test_the_rules_quote_the_checkout():
    data = rulebook.load("gpt-neox").data
    for entry in (data["launcher"][0], data["neox_pipeline"]):
        path, line = entry["source"].split()[1].rsplit(":", 1)
        assert entry["code"] in (CHECKOUT / path).read_text(encoding="utf-8").splitlines()[int(line) - 1]
    args = (CHECKOUT / "megatron/neox_arguments/neox_args.py").read_text(encoding="utf-8")
    assert f"{data['neox_pipeline']['key']}: int = {data['neox_pipeline']['default']}" in args
