"""Code in a function nothing calls never runs: a program it would start is no unread code of
the run (config/uncalled.py), and timm builds no pipeline (rules/stacks.toml [no_pipeline]).

After microsoft/DeepSpeedExamples@83757d9c937daabd1089a08051061706cb73900d
training/data_efficiency/vit_finetuning: utils/utils.py:34-41 `def run_cmd(cmd_str, prev_sp=None):
... return subprocess.Popen(cmd_str, shell=True)`, re-exported by utils/__init__.py:15 and its
`__all__` (:18), imported by main_cifar.py:33 and never called; utils/utils.py:49-50 builds the
model by `models.__dict__[model_name]`, utils/get_data.py:22 loads by `globals()[f'get_{...}']`;
models/vit.py:33-40 imports timm; bash_script/run_cifar_random_ltd.sh:19 starts
`deepspeed --num_nodes 1 --num_gpus 1 main_cifar.py ...`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from auditor.config.launch import read_launch
from auditor.config.uncalled import uncalled

MAIN = '''
import deepspeed
import models
from utils import get_model, get_dataset, run_cmd

model = get_model("vits16r224")
engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters())
{tail}
'''
UTILS = '''
import subprocess
import models


def run_cmd(cmd_str, prev_sp=None):
    if prev_sp is not None:
        prev_sp.wait()
    return subprocess.Popen(cmd_str, shell=True)


def get_model(model_name):
    return models.__dict__[model_name](num_classes=10)
{extra}'''
GET_DATA = '''
def get_cifar(name):
    return name


def get_dataset(name):
    return globals()[f"get_{name}"](name)
'''
INIT = ('from .utils import get_model, run_cmd\nfrom .get_data import get_dataset\n'
        '__all__ = ["get_dataset", "get_model", "run_cmd"]\n')
VIT = 'import torch\nimport timm\nfrom timm.models.registry import register_model\n\n\ndef vits16r224(num_classes):\n    return torch.nn.Linear(4, num_classes)\n'


def _diagnostics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tail: str = "", extra: str = "",
                 get_data: str = GET_DATA) -> list:
    files = {"main_cifar.py": MAIN.format(tail=tail), "utils/__init__.py": INIT,
             "utils/utils.py": UTILS.format(extra=extra), "utils/get_data.py": get_data,
             "models/__init__.py": "from .vit import *\n", "models/vit.py": VIT,
             "run.sh": "#!/bin/bash\ndeepspeed --num_nodes 1 --num_gpus 1 main_cifar.py --deepspeed\n"}
    for name, body in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    monkeypatch.chdir(tmp_path)
    return read_launch("run.sh").diagnostics


def _not_pipeline(diagnostics: list) -> bool:
    return any(d.kind == "launch.not-pipeline" for d in diagnostics)


def _unread(diagnostics: list) -> str:
    assert not _not_pipeline(diagnostics)
    (said,) = [d for d in diagnostics if d.kind == "launch.unknown-stack"]
    return str(said.message)


def test_a_program_started_only_in_a_function_nothing_calls_is_no_unread_code(tmp_path, monkeypatch):
    assert _not_pipeline(_diagnostics(tmp_path, monkeypatch))


@pytest.mark.parametrize("tail", [
    'run_cmd("python other.py")',
    'import utils\nutils.run_cmd("python other.py")',
    'from utils import run_cmd as rc\nrc("python other.py")',
    'import sys, utils\ngetattr(utils, sys.argv[1])("python other.py")',
    'import sys, utils\nvars(utils)[sys.argv[1]]("python other.py")',
    'import sys\nsys.modules["utils"].run_cmd("x")',
    'import sys\nf = {"go": "run_cmd"}[sys.argv[1]]',
    'import utils\nimport sys\nm = utils\nm.__dict__[sys.argv[1]]("x")',
    # the module itself handed to a call that may look names up in it (review r46-b)
    'import inspect, sys\nfrom utils import utils as uu\ndict(inspect.getmembers(uu))[sys.argv[1]]("x")',
    'import operator, sys, utils\noperator.attrgetter(sys.argv[1])(utils)("x")',
    'import fire\nimport utils.utils as uu\nfire.Fire(uu)',
    'import sys, utils.utils\nregistry = [utils.utils]\ngetattr(registry[0], sys.argv[1])("x")',
    # a dotted string names its last part
    'import operator, utils\noperator.attrgetter("utils.run_cmd")(utils)("x")',
    # the caller's namespace read by python-fire, any namespace through a frame
    'import fire\nif __name__ == "__main__":\n    fire.Fire()',
    'from fire import Fire as F\nF(name="x")',
    'import sys\nsys._getframe(0).f_globals[sys.argv[1]]("x")',
])
def test_a_function_that_may_be_called_still_runs_what_it_starts(tmp_path, monkeypatch, tail):
    assert "runs code not read here" in _unread(_diagnostics(tmp_path, monkeypatch, tail=tail))


def test_a_function_named_on_the_launch_line_may_be_called(tmp_path):
    """`main.py run_cmd ...`: a dispatcher this reader does not model may take the word."""
    (tmp_path / "utils.py").write_text(UTILS.format(extra=""))
    closure = [(tmp_path / "utils.py", ast.parse(UTILS.format(extra="")))]
    assert "run_cmd" in uncalled(closure)[tmp_path / "utils.py"]
    assert "run_cmd" not in uncalled(closure, frozenset({"run_cmd", "pipe_train.py"})).get(tmp_path / "utils.py", ())
    assert "run_cmd" not in uncalled(closure, frozenset({"utils.run_cmd"})).get(tmp_path / "utils.py", ())


def test_its_own_files_namespace_looked_up_by_name_may_call_it(tmp_path, monkeypatch):
    extra = '\n\ndef by_name(name):\n    return globals()[name]()\n\n\nby_name("get_model")\n'
    assert "runs code not read here" in _unread(_diagnostics(tmp_path, monkeypatch, extra=extra))


def test_a_decorated_function_may_be_registered_and_called(tmp_path, monkeypatch):
    extra = '\n\nimport atexit\nCMD = open("cmd.txt").read()\n\n\n@atexit.register\ndef cleanup():\n    subprocess.Popen(CMD, shell=True)\n'
    assert "runs code not read here" in _unread(_diagnostics(tmp_path, monkeypatch, extra=extra))


def test_a_program_started_at_module_level_still_is_unread_code(tmp_path, monkeypatch):
    extra = "\nsubprocess.Popen(open(\"cmd.txt\").read(), shell=True)\n"
    assert "runs code not read here" in _unread(_diagnostics(tmp_path, monkeypatch, extra=extra))
