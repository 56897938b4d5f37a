"""Issue 22 item 11: a torch-launched entry that imports megatron but reaches no pipeline
schedule (a checkpoint conversion, an inference) is NOT A PIPELINE RUN, from the call graph
(auditor/analysis/schedule_reach.py, rules/stacks.toml [[schedule_entry]]).

CONVERT is written after FlagOpen/FlagScale tools/checkpoint/qwen2_5_vl/
hf2mcore_qwen2.5_vl_convertor.sh (commit da4935ec60193e735bc70b81e259ed04eefd0132): `cmd="torchrun
${DISTRIBUTED_ARGS} hf2mcore_qwen2.5_vl.py ... --target-pipeline-model-parallel-size ${PP} ..."`
then `eval $cmd`, PP a positional argument; its hf2mcore_qwen2.5_vl.py imports megatron, builds
the model with megatron-core, converts the weights and saves them: no training schedule. Before
this, the scan read CLEAN "... at 2, 4 the run does not start" (a false DOES NOT START to anyone
reading the headline). TRAIN is the same script stepping megatron-core's schedule, as
Megatron-LM's pretrain_gpt.py does through train_step (megatron/training/training.py): the
analysis keeps it. Code the walk cannot see (importlib) keeps it too (fail closed).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import jsonschema
import pytest

from auditor import cli, rulebook
from auditor.analysis.schedule_reach import KIND

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "schema" / "scan-document.schema.json").read_text())

CONVERT_SH = """#!/bin/bash
# megatron-core==0.19.2 torch==2.11.0
set -e
TP=$4
PP=$5
DISTRIBUTED_ARGS="--nproc_per_node 1 --nnodes 1 --node_rank 0"
cmd="torchrun ${DISTRIBUTED_ARGS} hf2mcore.py \\
    --load $2 \\
    --save $3 \\
    --target-tensor-model-parallel-size ${TP} \\
    --target-pipeline-model-parallel-size ${PP} \\
    --micro-batch-size 1"
echo $cmd
eval $cmd
"""
CONVERT_PY = """import argparse
import torch
from megatron.core import parallel_state
from megatron.core.transformer.transformer_config import TransformerConfig
from utils import save_state_dict


def convert(args):
    state = torch.load(args.load)
    save_state_dict(args, {k: v for k, v in state.items()})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--load")
    parser.add_argument("--save")
    parser.add_argument("--target-tensor-model-parallel-size", type=int)
    parser.add_argument("--target-pipeline-model-parallel-size", type=int)
    parser.add_argument("--micro-batch-size", type=int)
    args = parser.parse_args()
    convert(args)
"""
MAIN = """

if __name__ == "__main__":
    main()
"""
UTILS_PY = """import os
import torch


def save_state_dict(args, state):
    os.makedirs(args.save, exist_ok=True)
    torch.save(state, os.path.join(args.save, "model_optim_rng.pt"))
"""
# The training twin: megatron-core's dispatcher and the function it returns, called.
TRAIN = """
from megatron.core.pipeline_parallel import get_forward_backward_func


def train_step(data, model):
    forward_backward_func = get_forward_backward_func()
    return forward_backward_func(forward_step_func=None, data_iterator=data, model=model,
                                 num_microbatches=1, seq_length=1, micro_batch_size=1)


def convert(args):
    train_step(None, None)
"""


def _conversion(tmp_path: Path, extra: str = "") -> Path:
    (tmp_path / "hf2mcore.py").write_text(CONVERT_PY + extra + MAIN, encoding="utf-8")
    (tmp_path / "utils.py").write_text(UTILS_PY, encoding="utf-8")
    script = tmp_path / "convertor.sh"
    script.write_text(CONVERT_SH, encoding="utf-8")
    return script


def _scan(capsys, script: Path) -> tuple[int, dict]:
    code = cli.main(["scan", "--config", str(script), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_a_conversion_reaching_no_schedule_is_no_pipeline_run(capsys, tmp_path):
    code, doc = _scan(capsys, _conversion(tmp_path))
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    head = doc["verdict"]["headline"]
    assert doc["verdict"]["status"] == "not-pipeline" and code == doc["verdict"]["exit_code"] == 0, head
    assert head.startswith("NOT A PIPELINE RUN: hf2mcore.py reaches no pipeline schedule: no call path "
                           "from it to megatron-core's forward_backward functions")
    assert "at any pipeline size" in head and "does not start" not in head
    assert "1 local module(s)" in head
    assert any(f["kind"] == KIND for f in doc["findings"])


@pytest.mark.heavy
@pytest.mark.parametrize("extra", [
    TRAIN,  # the schedule is called: a training run, judged as before
    "\nimport importlib\n\ndef convert(args):\n    importlib.import_module(args.load).main()\n",  # unseen
    "\ndef convert(args):\n    args.engine.train_batch()\n",  # an engine the walk lost, by its name
    "\nimport accelerate\n\ndef convert(args):\n    accelerate.Accelerator().prepare(args)\n",  # not read
    "\nfrom deepspeed.pipe import PipelineModule\n",  # a pipeline builder, imported: its module runs
])
def test_what_may_reach_a_schedule_keeps_the_analysis(capsys, tmp_path, extra):
    code, doc = _scan(capsys, _conversion(tmp_path, extra))
    assert doc["verdict"]["status"] != "not-pipeline", doc["verdict"]["headline"]
    assert not any(f["kind"] == KIND for f in doc["findings"])


def _defined(path: Path, qualname: str) -> bool:
    """Whether the module file at `path` defines `qualname` (a function or Class.method)."""
    body: list[ast.stmt] = ast.parse(path.read_text(encoding="utf-8")).body
    for part in qualname.split("."):
        found = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == part), None)
        if found is None:
            return False
        body = found.body
    return True


def test_schedule_entries_exist_in_the_releases_named(release):
    """Each [[schedule_entry]] name is defined in each release its `checked` names (torch: the
    installed one)."""
    for entry in rulebook.load("stacks").data["schedule_entry"]:
        rel = entry["module"].replace(".", "/") + ".py"
        for pin in entry["checked"]:
            if pin == "torch":
                import torch
                path = Path(torch.__file__).parent.parent / rel
            else:
                path = release(pin).root / rel
            missing = [n for n in entry["names"] if not _defined(path, n)]
            assert not missing, f"{pin} {entry['module']}: {missing}"


# NVIDIA-NeMo/Megatron-Bridge examples/models/falcon_h1/inference.sh (commit
# 067f987df03b8355b03192d88d70f1709fedf51a): `uv run python -m torch.distributed.run
# --nproc_per_node=1 scripts/inference/text_generation.py ...`, whose helpers come from the
# checkout's own package in the src layout (`from megatron.bridge.inference.text_generation
# import ...`, src/megatron/bridge/), installed by `uv run`.
GENERATE_SH = """#!/usr/bin/env bash
# megatron-core==0.19.2 torch==2.11.0
set -euo pipefail
uv run python -m torch.distributed.run --nproc_per_node=1 scripts/inference/generate.py --tp 1 --pp 1
"""
GENERATE_PY = """import argparse
from megatron.core import parallel_state
from mybridge.inference.helpers import generate

parser = argparse.ArgumentParser()
parser.add_argument("--tp", type=int)
parser.add_argument("--pp", type=int)
generate(parser.parse_args())
"""
HELPERS = """import torch
from megatron.core.pipeline_parallel import get_forward_backward_func


def generate(args):
    return torch.zeros(1){call}
"""


@pytest.mark.parametrize("call, status", [("", "not-pipeline"), (" if get_forward_backward_func() else None", "")])
def test_a_checkout_s_src_package_is_walked(capsys, monkeypatch, tmp_path, call, status):
    monkeypatch.chdir(tmp_path)  # run from the checkout's root, as the script's authors do
    (tmp_path / "scripts" / "inference").mkdir(parents=True)
    (tmp_path / "scripts" / "inference" / "generate.py").write_text(GENERATE_PY, encoding="utf-8")
    package = tmp_path / "src" / "mybridge" / "inference"
    package.mkdir(parents=True)
    (package.parent / "__init__.py").write_text("", encoding="utf-8")
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "helpers.py").write_text(HELPERS.format(call=call), encoding="utf-8")
    script = tmp_path / "examples" / "inference.sh"
    script.parent.mkdir()
    script.write_text(GENERATE_SH, encoding="utf-8")
    code, doc = _scan(capsys, script)
    assert (doc["verdict"]["status"] == "not-pipeline") == (status == "not-pipeline"), doc["verdict"]["headline"]


# microsoft/DeepSpeedExamples@83757d9c937daabd1089a08051061706cb73900d applications/DeepSpeed-Chat/
# e2e_rlhf.py:159-173: the entry builds `cmd = f"bash {script} {output_dir} {zero_stage}"` at run
# time and starts it with `subprocess.Popen(cmd, cwd=working_dir, shell=True)`; here the command it
# builds is a torchrun of a pipeline run. Before, the scan read the entry's own settings (PP 1 on
# megatron-core's defaults): CLEAN, the command never read.
DRIVER_SH = "#!/bin/bash\n# megatron-core==0.19.2 torch==2.11.0\n{launcher} e2e.py --pp 4\n"
DRIVER_PY = """import argparse
import subprocess
{more}

def get_cmd(args):
    return (f"torchrun --nproc_per_node 8 pretrain_gpt.py "
            f"--pipeline-model-parallel-size {{args.pp}}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pp", type=int, default=1)
    args = parser.parse_args()
    {run}


if __name__ == "__main__":
    main()
"""


def _driver(tmp_path: Path, run: str, launcher: str = "python", more: str = "") -> Path:
    (tmp_path / "e2e.py").write_text(DRIVER_PY.format(run=run, more=more), encoding="utf-8")
    script = tmp_path / "driver.sh"
    script.write_text(DRIVER_SH.format(launcher=launcher), encoding="utf-8")
    return script


@pytest.mark.heavy
@pytest.mark.parametrize("run, launcher, more", [
    ("p = subprocess.Popen(get_cmd(args), shell=True)\n    p.wait()", "python", ""),
    ("subprocess.run(get_cmd(args).split(), check=True)", "torchrun --nproc_per_node 1", ""),
    ("os.system(get_cmd(args))", "python", "import os\nfrom megatron.training import get_args"),
    # the standard library's other process starters, and one bound to a name (review
    # r36-falseclean 3: each read NOT A PIPELINE RUN, the command neither run nor unseen code)
    ("print(subprocess.getoutput(get_cmd(args)))", "python", ""),
    ("os.execvpe('bash', ['bash', '-c', get_cmd(args)], os.environ)", "python", "import os"),
    ("os.spawnvp(os.P_WAIT, 'bash', ['bash', '-c', get_cmd(args)])", "python", "import os"),
    ("asyncio.run(asyncio.create_subprocess_shell(get_cmd(args)))", "python", "import asyncio"),
    ("pty.spawn(['bash', '-c', get_cmd(args)])", "python", "import pty"),
    ("run(get_cmd(args), shell=True)", "python", "run = subprocess.run"),
    ("sp.call(get_cmd(args), shell=True)", "python", "sp = subprocess"),
])
def test_an_entry_running_a_command_it_builds_is_undecided(capsys, tmp_path, run, launcher, more):
    code, doc = _scan(capsys, _driver(tmp_path, run, launcher, more))
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    verdict = doc["verdict"]
    assert verdict["status"] == "inconclusive" and code == 1, verdict["headline"]
    [said] = [f for f in doc["findings"] if f["kind"] == "entry.runs-command"]
    line = DRIVER_PY.format(run=run, more=more).split("\n").index(f"    {run.splitlines()[0]}") + 1
    assert said["detail"]["commands"] == [f"e2e.py:{line}"]
    assert f"the command e2e.py:{line} runs" in verdict["headline"]
    assert f"--command 'CMD ...' giving the command e2e.py:{line} runs" in verdict["headline"]
    assert not any(f["kind"] == KIND for f in doc["findings"])


# A starter the entry reaches otherwise than by calling it by name (review of turn 17: each read
# NOT A PIPELINE RUN on the entry's own code, the torchrun it starts never read): handed on as a
# value (a helper's `functools.partial(subprocess.run, ...)`, as public launchers bind a runner;
# `multiprocessing.Process(target=os.system, args=(cmd,))`, the form of TensorBoard starters),
# through a name this reader cannot resolve or an asyncio loop's method. `at`: the text of the
# line the command is said at.
@pytest.mark.heavy
@pytest.mark.parametrize("run, more, at", [
    ("functools.partial(subprocess.run, get_cmd(args), shell=True)()", "import functools", ""),
    ("ThreadPoolExecutor().submit(subprocess.run, get_cmd(args), shell=True).result()",
     "from concurrent.futures import ThreadPoolExecutor", ""),
    ("multiprocessing.Process(target=os.system, args=(get_cmd(args),)).start()", "import multiprocessing, os", ""),
    ("threading.Thread(target=subprocess.call, args=(get_cmd(args),), kwargs={'shell': True}).start()",
     "import threading", ""),
    ("list(map(os.system, [get_cmd(args)]))", "import os", ""),
    ("getattr(subprocess, 'run')(get_cmd(args), shell=True)", "", ""),
    ("getattr(os, 'sys' + 'tem')(get_cmd(args))", "import os", ""),
    ("getoutput(get_cmd(args))", "from subprocess import *", ""),
    ("run(get_cmd(args), shell=True)", "from typing import Callable\nrun: Callable = subprocess.run",
     "run: Callable = subprocess.run"),
    ("r(get_cmd(args), shell=True)", "r = subprocess.Popen\nr = r", "r = subprocess.Popen"),
    ("asyncio.run(asyncio.get_event_loop().subprocess_shell(asyncio.SubprocessProtocol, get_cmd(args)))",
     "import asyncio", ""),
    ("os.startfile(get_cmd(args))", "import os", ""),
])
def test_an_entry_reaching_a_starter_otherwise_is_undecided(capsys, tmp_path, run, more, at):
    code, doc = _scan(capsys, _driver(tmp_path, run, "python", more))
    verdict = doc["verdict"]
    assert verdict["status"] == "inconclusive" and code == 1, verdict["headline"]
    [said] = [f for f in doc["findings"] if f["kind"] == "entry.runs-command"]
    lines = DRIVER_PY.format(run=run, more=more).split("\n")
    line = lines.index(at or f"    {run}") + 1
    assert said["detail"]["commands"][0] == f"e2e.py:{line}"
    assert f"the command e2e.py:{line} runs" in verdict["headline"]


# A command library (microsoft/DeepSpeedExamples@83757d9c937daabd1089a08051061706cb73900d
# training/HelloDeepSpeed/train_bert_ds.py:498 runs `sh.git.log(...)`): a package no allow-list
# reads, so the run was undecided before too (its stack unknown); kept so, the library named.
@pytest.mark.parametrize("run, more, library", [
    ("sh.bash('-c', get_cmd(args))", "import sh", "sh"),
    ("invoke.run(get_cmd(args))", "import invoke", "invoke"),
    ("local['bash']('-c', get_cmd(args))", "from plumbum import local", "plumbum"),
])
def test_an_entry_running_a_command_library_is_undecided(capsys, tmp_path, run, more, library):
    code, doc = _scan(capsys, _driver(tmp_path, run, "python", more))
    verdict = doc["verdict"]
    assert verdict["status"] == "inconclusive" and code == 1, verdict["headline"]
    assert f"runs {library}," in verdict["headline"] or "the command e2e.py:" in verdict["headline"]


def test_a_literal_file_utility_is_no_command_to_read(capsys, tmp_path):
    """`os.system("mkdir -p out")` starts no program this audit should read."""
    code, doc = _scan(capsys, _driver(tmp_path, 'os.system("mkdir -p out")', "torchrun --nproc_per_node 1",
                                      "import os\nfrom megatron.training import get_args"))
    assert not any(f["kind"] == "entry.runs-command" for f in doc["findings"])
    assert doc["verdict"]["status"] == "not-pipeline", doc["verdict"]["headline"]


@pytest.mark.parametrize("run, program", [
    ('os.system("cp -rf " + args.load_path + "/*.json " + args.save_path)', "cp"),
    ('os.system(f"mkdir -p {args.save_path}")', "mkdir"),
])
def test_a_file_utility_with_spliced_operands_names_its_line(capsys, tmp_path, run, program):
    """alibaba/Pai-Megatron-Patch@a098ca5acbdeaf7172ce0393fa309b39a77506db toolkits/
    model_checkpoints_convertor/baichuan2/hf2te.py:257 runs `os.system("cp -rf "+args.load_path+
    "/*.json "+args.save_path)`; its checkpoint_reshaping_and_interoperability.py:897 runs
    `os.system(f'mkdir -p {args.save_path}')`. sh reads the spliced operands again, so the command
    stays unread (INCONCLUSIVE), but the step names the line, its program and what --command is
    for: a `cp` line is no training command to give it (before: `--command 'CMD ...' giving the
    command e2e.py:N runs, as it builds it`, which --command refuses for a `cp`)."""
    code, doc = _scan(capsys, _driver(tmp_path, run, "python", "import os\nfrom megatron.training import get_args"))
    verdict = doc["verdict"]
    assert verdict["status"] == "inconclusive" and code == 1, verdict["headline"]
    [said] = [f for f in doc["findings"] if f["kind"] == "entry.runs-command"]
    line = DRIVER_PY.format(run=run, more="").split("\n").index(f"    {run}") + 2  # `more` is two lines
    assert said["detail"]["undecided"].startswith(f"what sh runs for e2e.py:{line} `{run}`: `{program}` with operands")
    assert said["detail"]["decide"] == (f"--command 'CMD ...' giving the training command e2e.py:{line} starts, "
                                        f"should its operands hold one (plain paths run only `{program}`: check that line)")


@pytest.mark.parametrize("run", [
    'os.system("cp a b; torchrun --nproc_per_node 8 pretrain_gpt.py --pp " + str(args.pp))',
    'os.system("cp -r " + args.load + " out && torchrun pretrain_gpt.py")',
    'os.system(f"cp {args.load} out; bash train.sh")',
    'os.system(f"mkdir -p {args.save} | tee log; python -m torch.distributed.run pretrain_gpt.py")',
])
def test_a_file_utility_whose_literal_text_runs_more_is_not_named(capsys, tmp_path, run):
    """The spliced `cp` line of alibaba/Pai-Megatron-Patch@a098ca5acbdeaf7172ce0393fa309b39a77506db
    toolkits/model_checkpoints_convertor/baichuan2/hf2te.py:257, with literal text after a `;`,
    `&&` or `|` that runs another program (`torchrun`, `bash train.sh`): naming `cp` and saying
    plain paths run only `cp` would mislead, so the step asks for the command the line runs, as
    for any other command string (before: `plain paths run only `cp``)."""
    code, doc = _scan(capsys, _driver(tmp_path, run, "python", "import os\nfrom megatron.training import get_args"))
    verdict = doc["verdict"]
    assert verdict["status"] == "inconclusive" and code == 1, verdict["headline"]
    [said] = [f for f in doc["findings"] if f["kind"] == "entry.runs-command"]
    line = DRIVER_PY.format(run=run, more="").split("\n").index(f"    {run}") + 2  # `more` is two lines
    assert said["detail"]["undecided"].startswith(f"the command e2e.py:{line} runs (`os.system(...)`)")
    assert said["detail"]["decide"] == f"--command 'CMD ...' giving the command e2e.py:{line} runs, as it builds it"


# hiyouga/LLaMA-Factory@ff6d4d12eeb035d6ce06805a5733dd7b29f2ac30 src/llamafactory/v1/launcher.py:
# launch() (:34), a function of the module the CLI imports, starts the training itself with
# `subprocess.run(torchrun_args + script_args, ...)` (:72-117). Here such a helper, in a local
# module, starts a literal torchrun of a pipeline run; the entry also trains through megatron's
# pretrain (the walk reaches a schedule), or loads code the walk cannot follow (importlib). Both
# read CLEAN before: the torchrun it starts was never judged.
HELPER_PY = """import subprocess as sp


def start():
    sp.run(["torchrun", "--nproc_per_node", "8", "pretrain_gpt.py",
            "--pipeline-model-parallel-size", "4"], check=True)
"""
STARTS_PY = """{more}from megatron.training import pretrain
from tools.launch import start


def model_provider(pre_process=True, post_process=True):
    return None


if __name__ == "__main__":
    start()
    {run}
"""


@pytest.mark.parametrize("more, run, launcher", [
    ("", "pretrain(None, model_provider, None, None)", '"torchrun"'),
    ("import importlib\n", "importlib.import_module('tools.extra')", '"torchrun"'),
    ("", "pretrain(None, model_provider, None, None)", '"python", "-m", "torch.distributed.run"'),
])
def test_a_program_a_local_helper_starts_is_named(capsys, tmp_path, more, run, launcher):
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "tools" / "launch.py").write_text(HELPER_PY.replace('"torchrun"', launcher), encoding="utf-8")
    (tmp_path / "e2e.py").write_text(STARTS_PY.format(more=more, run=run), encoding="utf-8")
    script = tmp_path / "driver.sh"
    script.write_text(DRIVER_SH.format(launcher="python"), encoding="utf-8")
    code, doc = _scan(capsys, script)
    verdict = doc["verdict"]
    assert verdict["status"] == "inconclusive" and code == 1, verdict["headline"]
    [said] = [f for f in doc["findings"] if f["kind"] == "entry.runs-command"]
    assert said["detail"]["commands"] == ["tools/launch.py:5"]
    shown = launcher.replace('"', "").replace(", ", " ")
    assert (f"--command '{shown} --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size 4', "
            "the command tools/launch.py:5 runs") in verdict["headline"]


# microsoft/Megatron-DeepSpeed@f4157bea69f3df8c6cb66f2ebcda66ba03d1288e pretrain_gpt.py:331-347:
# beside its training, the entry asks `type git` and `git rev-parse --short HEAD` (the command in
# a name bound once): programs that start no training, so no other run to judge.
GIT_INFO = '''import subprocess


def command_exists(cmd):
    result = subprocess.Popen(f'type {cmd}', stdout=subprocess.PIPE, shell=True)
    return result.wait() == 0


def start():
    git_hash_cmd = "git rev-parse --short HEAD"
    if command_exists('git'):
        subprocess.check_output(git_hash_cmd, shell=True)
'''


# NVIDIA/Megatron-LM@d98e8a64dd examples/multimodal/evaluation/evaluate_mmmu.py:91-101, which
# examples/multimodal/train.py's closure holds: `subprocess.run(["python", "examples/multimodal/
# MMMU/mmmu/main_eval_only.py", "--output_path", result_file, ...])`: a script the checkout does
# not hold (a clone of MMMU the user makes): the caller's file, as launched here it starts nothing.
EVAL = """import subprocess


def start(result_file="out.json"):
    subprocess.run(["python", "examples/multimodal/MMMU/mmmu/main_eval_only.py", "--output_path", result_file])
"""


# Review r42-misses: ordinary programs a helper runs beside the training, their words partly
# computed (a folder, a file name, an f-string's checkpoint), start no training. Were INCONCLUSIVE
# with a `--command 'CMD ...'` step.
ORDINARY = [
    'import os, subprocess\n\ndef start():\n    subprocess.run(["make", "-C", os.path.dirname(os.path.abspath(__file__))])\n',
    'import subprocess\n\ndef start(d="logs"):\n    subprocess.Popen(["tensorboard", "--logdir", d])\n',
    'import os\n\ndef start(ckpt="c"):\n    os.system(f"aws s3 cp {ckpt} s3://bucket/ckpt")\n',
    'import subprocess\n\ndef start(out="o.tgz"):\n    subprocess.run(["tar", "czf", out, "ckpt"])\n',
]


@pytest.mark.parametrize("helper", [GIT_INFO, *ORDINARY, 'import subprocess\n\ndef start():\n    subprocess.run(["bash", "-c", "echo hi"])\n'],
                         ids=["git", "make", "tensorboard", "aws", "tar", "bash-c-echo"])
def test_a_query_beside_the_training_is_no_other_run(capsys, tmp_path, helper):
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "tools" / "launch.py").write_text(helper, encoding="utf-8")
    (tmp_path / "e2e.py").write_text(STARTS_PY.format(more="", run="pretrain(None, model_provider, None, None)"),
                                     encoding="utf-8")
    script = tmp_path / "driver.sh"
    script.write_text(DRIVER_SH.format(launcher="python"), encoding="utf-8")
    code, doc = _scan(capsys, script)
    assert not any(f["kind"] == "entry.runs-command" for f in doc["findings"])
    assert doc["verdict"]["status"] == "clean", doc["verdict"]["headline"]


# Review r42-misses: a local Python helper that itself runs torchrun (`python tools/launch_pp.py`,
# followed), DeepSpeed's runner as `python -m`, and an argv given as `args=`. Were CLEAN.
LAUNCH_PP = ('import subprocess\n\nsubprocess.run(["torchrun", "--nproc_per_node", "8", "pretrain_gpt.py", '
             '"--pipeline-model-parallel-size", "4"], check=True)\n')


@pytest.mark.parametrize("helper, step", [
    ('import subprocess\n\ndef start():\n    subprocess.run(["python", "tools/launch_pp.py", "--pp", "4"])\n',
     "--command 'python tools/launch_pp.py --pp 4'"),
    ('import subprocess\n\ndef start():\n    subprocess.run(["python", "-m", "deepspeed.launcher.runner", "train.py"])\n',
     "--command 'python -m deepspeed.launcher.runner train.py'"),
    ('import subprocess\n\ndef start():\n    subprocess.run(args=["torchrun", "--nproc_per_node", "8", "pretrain_gpt.py"])\n',
     "--command 'torchrun --nproc_per_node 8 pretrain_gpt.py'"),
], ids=["python-helper-runs-torchrun", "python-m-deepspeed", "args-keyword"])
def test_a_helper_that_starts_a_launcher_is_undecided(capsys, tmp_path, helper, step):
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "tools" / "launch.py").write_text(helper, encoding="utf-8")
    (tmp_path / "tools" / "launch_pp.py").write_text(LAUNCH_PP, encoding="utf-8")
    (tmp_path / "e2e.py").write_text(STARTS_PY.format(more="", run="pretrain(None, model_provider, None, None)"),
                                     encoding="utf-8")
    script = tmp_path / "driver.sh"
    script.write_text(DRIVER_SH.format(launcher="python"), encoding="utf-8")
    code, doc = _scan(capsys, script)
    verdict = doc["verdict"]
    assert verdict["status"] == "inconclusive" and code == 1, verdict["headline"]
    assert f"{step}, the command tools/launch.py:4 runs" in verdict["headline"]


# Review r43-scan-flags: python's options taking a value (`-W ignore`, `-X faulthandler`) read as
# the script's name, and a helper named from the run's working directory (the checkout root) not
# the entry's folder, left `python tools/launch_pp.py` (which runs torchrun) unread and the run
# CLEAN; a helper script found nowhere (Megatron-LM@d98e8a64dd examples/multimodal/evaluation/
# evaluate_mmmu.py:91-101 runs examples/multimodal/MMMU/mmmu/main_eval_only.py, a checkout of
# MMMU the user makes) is the caller's and starts nothing here (below). A shell's
# `-c` string is judged by its words, and the step is quoted so that it pastes into a shell.
@pytest.mark.parametrize("helper, entry_dir, step", [
    ('import subprocess\n\ndef start():\n    subprocess.run(["python", "-W", "ignore", "tools/launch_pp.py", "--pp", "4"])\n',
     ".", "--command 'python -W ignore tools/launch_pp.py --pp 4'"),
    ('import subprocess, sys\n\ndef start():\n    subprocess.run([sys.executable, "-X", "faulthandler", "tools/launch_pp.py"])\n',
     ".", "--command 'python -X faulthandler tools/launch_pp.py'"),
    ('import subprocess\n\ndef start():\n    subprocess.run(["python", "tools/launch_pp.py", "--pp", "4"])\n',
     "examples/sub", "--command 'python tools/launch_pp.py --pp 4'"),
    ('import subprocess\n\ndef start():\n    subprocess.run(["bash", "-c", "cd /x && torchrun train.py"])\n',
     ".", """--command 'bash -c '"'"'cd /x && torchrun train.py'"'"''"""),
], ids=["python-W", "python-X", "cwd-not-entry-folder", "bash-c-torchrun"])
def test_a_helper_read_as_python_and_the_shell_read_it(capsys, tmp_path, helper, entry_dir, step):
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "launch_pp.py").write_text(LAUNCH_PP, encoding="utf-8")
    here = tmp_path / entry_dir
    (here / "tools").mkdir(parents=True, exist_ok=True)
    (here / "tools" / "__init__.py").write_text("", encoding="utf-8")
    (here / "tools" / "launch.py").write_text(helper, encoding="utf-8")
    (here / "e2e.py").write_text(STARTS_PY.format(more="", run="pretrain(None, model_provider, None, None)"),
                                 encoding="utf-8")
    script = tmp_path / "driver.sh"
    script.write_text(DRIVER_SH.format(launcher="python").replace(" e2e.py", f" {entry_dir}/e2e.py"), encoding="utf-8")
    code, doc = _scan(capsys, script)
    verdict = doc["verdict"]
    assert verdict["status"] == "inconclusive" and code == 1, verdict["headline"]
    [said] = [f for f in doc["findings"] if f["kind"] == "entry.runs-command"]
    assert said["detail"]["decide"].startswith(step), said["detail"]["decide"]


def test_a_helper_found_in_the_working_directory_is_followed(capsys, tmp_path):
    """The helper the run's working directory holds is the one read: one that starts nothing
    leaves the run CLEAN (not undecided as a script found nowhere)."""
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "launch_pp.py").write_text("print('hi')\n", encoding="utf-8")
    here = tmp_path / "examples" / "sub"
    (here / "tools").mkdir(parents=True)
    (here / "tools" / "__init__.py").write_text("", encoding="utf-8")
    (here / "tools" / "launch.py").write_text(
        'import subprocess\n\ndef start():\n    subprocess.run(["python", "tools/launch_pp.py"])\n', encoding="utf-8")
    (here / "e2e.py").write_text(STARTS_PY.format(more="", run="pretrain(None, model_provider, None, None)"),
                                 encoding="utf-8")
    script = tmp_path / "driver.sh"
    script.write_text(DRIVER_SH.format(launcher="python").replace(" e2e.py", " examples/sub/e2e.py"), encoding="utf-8")
    code, doc = _scan(capsys, script)
    assert not any(f["kind"] == "entry.runs-command" for f in doc["findings"])
    assert doc["verdict"]["status"] == "clean", doc["verdict"]["headline"]


@pytest.mark.parametrize("helper", [
    'import subprocess, sys\n\ndef start():\n    subprocess.run([sys.executable, "tools/preprocess_data.py", "--input", "x"])\n',
    EVAL,
], ids=["missing-helper", "missing-eval"])
def test_a_helper_script_the_checkout_lacks_is_the_callers(capsys, tmp_path, helper):
    """A Python script the checkout does not hold, neither from the run's working directory nor
    beside the entry, is the caller's (a clone of MMMU): as launched here it starts nothing, so
    the run keeps its verdict (Megatron-LM@d98e8a64dd mlm-016-llava-pretrain and
    mlm-sft-mistral-clip read CLEAN, right, through evaluate_mmmu.py)."""
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "tools" / "launch.py").write_text(helper, encoding="utf-8")
    (tmp_path / "e2e.py").write_text(STARTS_PY.format(more="", run="pretrain(None, model_provider, None, None)"),
                                     encoding="utf-8")
    script = tmp_path / "driver.sh"
    script.write_text(DRIVER_SH.format(launcher="python").replace(" e2e.py", " ./e2e.py"), encoding="utf-8")
    code, doc = _scan(capsys, script)
    assert doc["verdict"]["status"] == "clean" and code == 0, doc["verdict"]["headline"]
    assert not [f for f in doc["findings"] if f["kind"] == "entry.runs-command"]
