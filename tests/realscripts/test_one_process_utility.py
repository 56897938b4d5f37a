"""A one-process conversion script that copies files with a wholly literal command line
(`os.system("mkdir -p out")`) still runs one process and builds no pipeline; a command line with
a piece computed at run time, a program that runs others through its options, or a call that is
not a command runner at all stays code run unseen (config/shell_command.py).

CONVERT_PY is written after alibaba/Pai-Megatron-Patch toolkits/model_checkpoints_convertor/
baichuan2/checkpoint_reshaping_and_interoperability.py and falcon40b/ (commit a098ca5acb), run by
their model_convertor.sh as `python checkpoint_reshaping_and_interoperability.py --load_path ...
--save_path ...`: they convert weights with torch and copy the tokenizer and config files with
`os.system("cp -rf " + args.load_path + "/*.json " + args.save_path)` and `os.system(f'mkdir -p
{args.save_path}')`. The spliced `args.load_path` may hold `; torchrun ...` (a default, a
variable holding ` && torchrun ...`), which `sh -c` reads as another command, so that command is
not read as inert: only a literal one is. An argv list run with no shell is read as inert
whatever its computed operands hold: they are arguments of its literal program.
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
os.system("cp -rf " + "in/*.json " + "out")
os.system(f'mkdir -p out')
"""
SPLICED = 'os.system("cp -rf " + args.load_path + "/*.json " + args.save_path)\n'


@pytest.mark.parametrize("code, inert", [
    ('import os\nos.system("cp -rf " + "in/*.json " + "out")', True),
    ("import os\nos.system(f'mkdir -p out')", True),
    ('import subprocess\nsubprocess.run(["cp", "-r", "in", "out"])', True),
    ('import subprocess as sp\nsp.run(["mkdir", "-p", "out"])', True),
    # a piece computed at run time may hold a shell operator (review 4: hidden_var, fstring_var)
    ('import os\nos.system("cp -rf " + src + "/*.json " + dst)', False),
    ('import os\nthen = " && torchrun --nproc_per_node 8 pretrain_gpt.py"\nos.system("cp -rf a b" + then)', False),
    ('import os\nos.system(f"cp -rf {src}/*.json {dst} {args.post_cmd}")', False),
    ("import os\nos.system(f'mkdir -p {dst}')", False),
    # an argv list runs with no shell: a computed word is one operand of the literal program
    # (NVIDIA-NeMo/Megatron-Bridge@067f987df0 tests/functional_tests/test_groups/data/builders/
    # test_gpt_sft_builder.py:107 `subprocess.run(["touch", npy_path])`), unless a shell reads it
    ('import subprocess\nsubprocess.run(["cp", src, dst])', True),
    ('import subprocess\nsubprocess.run(["touch", npy_path])', True),
    ('import subprocess\nsubprocess.run(["cp", "-r", *srcs, dst], check=True)', True),
    ('import subprocess\nsubprocess.run(["cp", src, dst], shell=True)', False),
    ('import subprocess\nsubprocess.run(["cp", src, dst], shell=flag)', False),
    ('import subprocess\nsubprocess.run([prog, src, dst])', False),
    ('import subprocess\nsubprocess.run([*cmd, dst])', False),
    # a list bound to a name may be changed in place before it runs (review r48-conv 1: s1, s4)
    ('import subprocess\ncmd = ["echo", x]\ncmd[0] = "torchrun"\nsubprocess.run(cmd)', False),
    ('import subprocess\ncmd = ["echo", "x"]\ncmd[0] = "torchrun"\nsubprocess.run(cmd)', False),
    ('import subprocess\ncmd = ["echo", x]\ncmd.pop(0)\nsubprocess.run(cmd)', False),
    ('import subprocess\ncmd = ["echo", x]\ndel cmd[0]\nsubprocess.run(cmd)', False),
    ('import subprocess\ncmd = ["echo", x]\ncmd[:1] = ["torchrun"]\nsubprocess.run(cmd)', False),
    ('import subprocess\ncmd = ["echo", x]\nfill(cmd)\nsubprocess.run(cmd)', False),
    ('import subprocess\ncmd = ["echo", x]\ndef f():\n    cmd.insert(0, "torchrun")\nsubprocess.run(cmd)', False),
    ('import subprocess\ncmd = ["echo", x]\nsubprocess.run(cmd)', True),
    ('import subprocess\ncmd = ("echo", x)\nprint(cmd)\nsubprocess.run(cmd)', True),  # a tuple cannot change
    # a positional after the command is Popen's bufsize, executable, ... (review r48-conv 2: s3);
    # env= may set PATH or LD_PRELOAD; cwd= does not move a bare program name
    ('import subprocess\nsubprocess.Popen(["cp", x], -1, "/usr/local/bin/torchrun")', False),
    ('import subprocess\nsubprocess.Popen(["cp", "a", "b"], -1, "/usr/local/bin/torchrun")', False),
    ('import subprocess\nsubprocess.run(["cp", x], env={"PATH": "/opt/launch"})', False),
    ('import subprocess\nsubprocess.run(["cp", "a", "b"], env=env)', False),
    ('import subprocess\nsubprocess.run(["cp", x, y], cwd=d)', True),
    ('import os\nos.system("cp a b; python train.py")', False),  # a second program
    ('import os\nos.system("python convert.py in")', False),
    ('import os\nos.system("cpx in")', False),
    # not a command runner, whatever its first argument reads (review 4: exec_py)
    ("exec(\"cat = __import__('torch.multiprocessing').multiprocessing.spawn(print, nprocs=8)\")", False),
    ('eval("ls")', False),
    # programs that run others through their options (review 4: tar_exec, rsync_e)
    ("import os\nos.system(\"tar -xf a.tar --checkpoint=1 --checkpoint-action=exec='torchrun w.py'\")", False),
    ('import subprocess\nsubprocess.run(["rsync", "-a", "--rsync-path=torchrun w.py", "x", "h:y"])', False),
    # keywords that run another program or Python (review 4: executable_kw)
    ('import subprocess\nsubprocess.run(["echo", "w.py"], executable="torchrun")', False),
    ('import subprocess\nsubprocess.run(["ls"], preexec_fn=main)', False),
    ('import subprocess\nsubprocess.run(["ls"], **kw)', False),
    # the runner through an import alias (review 4: sp_alias, alias_run)
    ('import subprocess as sp\nsp.run(["torchrun", "--nproc_per_node", "8", "pretrain_gpt.py"])', False),
    ('from subprocess import run\nrun(["torchrun", "--nproc_per_node", "8", "pretrain_gpt.py"])', False),
    ('from os import system\nsystem("torchrun train.py")', False),
    # a starter not called by its name: handed on, through getattr, a star import, a library
    ('import functools, subprocess\nfunctools.partial(subprocess.run, cmd)()', False),
    ('import os\nlist(map(os.system, cmds))', False),
    ('import os\ngetattr(os, name)(cmd)', False),
    ('import subprocess\nhelper(subprocess)', False),
    ('from subprocess import *\nPopen(cmd)', False),
    ('import sh\nsh.git.log("-1", format="%H")', False),  # DeepSpeedExamples HelloDeepSpeed/train_bert_ds.py:498
    ('import invoke\ninvoke.run(cmd)', False),
    # ... but not what names no starter: Megatron-LM@d98e8a64dd megatron/rl/rollout_bank.py:199,
    # megatron/core/inference/inference_request.py:655 (`sp` a local, no module), an alias bound
    # once to a runner that only runs a file utility, in a function or under a private name
    ('import os\nfd = os.open(p, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))', True),
    ('import os\nif hasattr(os, "sched_getaffinity"): n = len(os.sched_getaffinity(0))', True),
    ('def meta(sp):\n    return [getattr(sp, f) for f in FIELDS]', True),
    ('import subprocess\ndef f():\n    run = subprocess.run\n    run(["mkdir", "-p", "out"])', True),
    ('import subprocess\n_run = subprocess.run\n_run(["mkdir", "-p", "out"])', True),
    # ... but a public module-level one: another module may import it and run anything with it
    # (`from launch_utils import run`; review r38-starters 2)
    ('import subprocess\nrun = subprocess.run\nrun(["mkdir", "-p", "out"])', False),
    # a type only: huggingface/nanotron@2411b022a7 src/nanotron/s3_checkpoints/s3_mover.py:84
    ('import subprocess\nprocess: Optional[subprocess.Popen] = None\nok = isinstance(process, subprocess.Popen)', True),
    ('import subprocess\ndef wait(p: subprocess.Popen) -> subprocess.CompletedProcess: ...', True),
], ids=lambda v: v if isinstance(v, bool) else v.splitlines()[-1][:40])
def test_only_a_literal_command_of_a_file_utility_runs_no_code(code: str, inert: bool) -> None:
    tree = ast.parse(code)
    dynamic = load("stacks").data["no_pipeline"]["dynamic"]
    assert runs_code(tree, dynamic) is not inert


def test_the_callee_not_the_position_decides() -> None:
    """`exec("cat = ...")` starts with an inert program's name but runs Python."""
    tree = ast.parse('exec("cat = 1")')
    node = tree.body[0].value  # type: ignore[attr-defined]
    assert not runs_only_utility(node, "exec", tree)
    assert runs_only_utility(node, "os.system", tree)  # the same text as a command line runs `cat`


def test_a_converter_copying_files_is_one_process_that_builds_no_pipeline(capsys, tmp_path, monkeypatch):
    script = _tree(tmp_path, monkeypatch, CONVERT, {"checkpoint_reshaping_and_interoperability.py": CONVERT_PY})
    config = read_launch(script)
    assert (config.nproc_per_node, config.nnodes) == (1, 1)
    code, doc = _scan(capsys, script)
    assert doc["verdict"]["status"] == "not-pipeline" and code == 0, doc["verdict"]["headline"]


def test_a_converter_copying_computed_paths_with_an_argv_list_builds_no_pipeline(capsys, tmp_path, monkeypatch):
    """The Pai converters' copy (module docstring) as an argv list: no shell reads the paths, so
    `cp` is all it runs, whatever they hold; the one process stays one (config.one_process)."""
    runs = CONVERT_PY.replace("import os\n", "import os\nimport subprocess\n") + (
        'subprocess.run(["cp", "-rf", args.load_path, args.save_path], check=True)\n')
    script = _tree(tmp_path, monkeypatch, CONVERT, {"checkpoint_reshaping_and_interoperability.py": runs})
    config = read_launch(script)
    assert (config.nproc_per_node, config.nnodes) == (1, 1)
    code, doc = _scan(capsys, script)
    assert doc["verdict"]["status"] == "not-pipeline" and code == 0, doc["verdict"]["headline"]


@pytest.mark.parametrize("line", [
    SPLICED,  # the upstream shape: args.load_path is spliced into the shell text
    'then_train = " && torchrun --nproc_per_node 8 pretrain_gpt.py"\nos.system("cp -rf a b" + then_train)\n',
    'import subprocess as sp\nsp.run(["torchrun", "--nproc_per_node", "8", "pretrain_gpt.py"])\n',
    # a starter reached otherwise than by a call of its name: each read one process before
    'import functools, subprocess\nfunctools.partial(subprocess.run, ["torchrun", "pretrain_gpt.py"])()\n',
    'import multiprocessing\nmultiprocessing.Process(target=os.system, args=("torchrun pretrain_gpt.py",)).start()\n',
    'name = "sys" + "tem"\ngetattr(os, name)("torchrun pretrain_gpt.py")\n',
    'from subprocess import *\ncheck_call(["torchrun", "pretrain_gpt.py"])\n',
    'from typing import Callable\nimport subprocess\nstart: Callable = subprocess.Popen\nstart(["torchrun", "x.py"])\n',
    'import asyncio\nloop = asyncio.new_event_loop()\n'
    'loop.run_until_complete(loop.subprocess_exec(asyncio.SubprocessProtocol, "torchrun", "x.py"))\n',
], ids=["spliced", "hidden-var", "alias", "partial", "process-target", "getattr", "star", "annotated", "loop"])
def test_a_command_that_may_run_python_still_starts_processes(tmp_path, monkeypatch, line):
    runs = CONVERT_PY + line
    config = read_launch(_tree(tmp_path, monkeypatch, CONVERT, {"checkpoint_reshaping_and_interoperability.py": runs}))
    assert isinstance(config.nproc_per_node, Symbolic)


def test_a_hidden_torchrun_through_an_alias_is_not_read_as_no_pipeline(capsys, tmp_path, monkeypatch):
    """`import subprocess as sp; sp.run([... torchrun ...])` ran unseen code under another name."""
    runs = CONVERT_PY.replace("import os\n", "import os\nimport subprocess as sp\n") + (
        'sp.run(["torchrun", "--nproc_per_node", "8", "pretrain_gpt.py", "--pipeline-model-parallel-size", "4"])\n')
    script = _tree(tmp_path, monkeypatch, CONVERT, {"checkpoint_reshaping_and_interoperability.py": runs})
    code, doc = _scan(capsys, script)
    assert doc["verdict"]["status"] != "not-pipeline", doc["verdict"]["headline"]
