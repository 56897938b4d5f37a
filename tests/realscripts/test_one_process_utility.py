"""A one-process conversion script that copies files with `os.system("cp ...")` still runs one
process and builds no pipeline (config/shell_command.py).

CONVERT_PY is written after alibaba/Pai-Megatron-Patch toolkits/model_checkpoints_convertor/
baichuan2/checkpoint_reshaping_and_interoperability.py (commit a098ca5acb), run by its
model_convertor.sh as `python checkpoint_reshaping_and_interoperability.py --load_path ...
--save_path ...`: it converts weights with torch and copies the tokenizer and config files with
`os.system("cp -rf " + args.load_path + "/*.json " + args.save_path)`. Read as a process starter
and as code run unseen, that `cp` made the world unknown and left the scan INCONCLUSIVE on
megatron-core's pipeline checks; a command line that may run Python stays both.
"""

from __future__ import annotations

import ast

import pytest

from auditor.bash.values import Symbolic
from auditor.config.entry_stack import runs_code
from auditor.config.launch import read_launch
from auditor.config.shell_command import runs_only_utility
from auditor.rulebook import load
from tests.realscripts.test_one_process import _scan, _tree

CONVERT = "python checkpoint_reshaping_and_interoperability.py --load_path in --save_path out\n"
CONVERT_PY = """import argparse
import os

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--load_path")
parser.add_argument("--save_path")
args = parser.parse_args()
torch.save(torch.load(args.load_path + "/pytorch_model.bin"), args.save_path + "/model.pt")
os.system("cp -rf " + args.load_path + "/*.json " + args.save_path)
os.system(f'mkdir -p {args.save_path}')
"""


@pytest.mark.parametrize("call, inert", [
    ('os.system("cp -rf " + src + "/*.json " + dst)', True),
    ("os.system(f'mkdir -p {dst}')", True),
    ('subprocess.run(["cp", src, dst])', True),
    ('os.system("cp " + src + " " + dst + "; python train.py")', False),  # a second program
    ('os.system("python convert.py " + src)', False),
    ('os.system(cmd)', False),
    ('os.system("cpx " + src)', False),
    ('subprocess.run(["torchrun", "train.py"])', False),
])
def test_only_a_literal_file_utility_runs_no_code(call: str, inert: bool) -> None:
    node = ast.parse(call).body[0].value  # type: ignore[attr-defined]
    assert runs_only_utility(node) is inert
    dynamic = load("stacks").data["no_pipeline"]["dynamic"]
    assert runs_code(ast.parse(call), dynamic) is not inert


def test_a_converter_copying_files_is_one_process_that_builds_no_pipeline(capsys, tmp_path, monkeypatch):
    script = _tree(tmp_path, monkeypatch, CONVERT, {"checkpoint_reshaping_and_interoperability.py": CONVERT_PY})
    config = read_launch(script)
    assert (config.nproc_per_node, config.nnodes) == (1, 1)
    code, doc = _scan(capsys, script)
    assert doc["verdict"]["status"] == "not-pipeline" and code == 0, doc["verdict"]["headline"]


def test_a_command_that_may_run_python_still_starts_processes(tmp_path, monkeypatch):
    runs = CONVERT_PY.replace('"cp -rf "', '"python copy.py "')
    config = read_launch(_tree(tmp_path, monkeypatch, CONVERT, {"checkpoint_reshaping_and_interoperability.py": runs}))
    assert isinstance(config.nproc_per_node, Symbolic)
    assert "calls `os.system`" in config.world_source["nproc_per_node"]
