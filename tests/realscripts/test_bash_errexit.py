"""`set -e` and `X=$( dirname $( dirname ${UNSET}))`: the script stops there (issue 22 item 4).

The first script reproduces alibaba/Pai-Megatron-Patch@a098ca5acbdeaf7172ce0393fa309b39a77506db
examples/qwen1_5/run_finetune_megatron_qwen.sh:3-6: `set -e`, `ENV=$1`, `MEGATRON_PATCH_PATH=$2`,
then `MEGATRON_PATCH_PATH=$( dirname $( dirname ${CURRENT_DIR}))` with CURRENT_DIR set nowhere.
Each case is also run by bash itself (the training command replaced by `echo reached`): the
reader says the script stops exactly where bash stops it.
"""

from __future__ import annotations

import subprocess

import pytest

from auditor.bash.errexit import errexit_change
from auditor.config.launch import ScriptExits, parse_launch

TRAIN = "torchrun --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size 2\n"
PAI = "#!/bin/bash\nset -e\nENV=$1\nMEGATRON_PATCH_PATH=$2\nMEGATRON_PATCH_PATH=$( dirname $( dirname ${CURRENT_DIR}))\n"

CASES = {  # name: (script before the training command, the caller's environment, stops)
    "pai": (PAI, {}, True),
    "caller-sets-it": (PAI, {"CURRENT_DIR": "/w/Pai-Megatron-Patch/examples/qwen1_5"}, False),
    "no-set-e": (PAI.replace("set -e\n", ""), {}, False),
    "set-plus-e-after": (PAI.replace("ENV=$1\n", "ENV=$1\nset +e\n"), {}, False),
    "set-o-errexit": (PAI.replace("set -e\n", "set -o errexit\n"), {}, True),
    "quoted-operand": ("#!/bin/bash\nset -e\nD=\"$(dirname \"${CURRENT_DIR}\")\"\n", {}, False),
    "default-operand": ("#!/bin/bash\nset -e\nD=$(dirname ${CURRENT_DIR:-/a/b})\n", {}, False),
    "or-true": ("#!/bin/bash\nset -e\nD=$(dirname ${CURRENT_DIR}) || true\n", {}, False),
    "set-e-in-a-branch": ("#!/bin/bash\nif [ -n \"$1\" ]; then set -e; fi\nD=$(dirname ${CURRENT_DIR})\n", {}, False),
    "home-is-set": ("#!/bin/bash\nset -e\nD=$(dirname $HOME)\n", {"HOME": "/root"}, False),
    "assigned-earlier": ("#!/bin/bash\nset -e\nCURRENT_DIR=/a/b\nD=$(dirname ${CURRENT_DIR})\n", {}, False),
    "basename-too": ("#!/bin/bash\nset -ex\nN=$(basename $MODEL_PATH)\n", {}, True),
}


def _bash_reaches(prefix: str, env: dict[str, str]) -> bool:
    proc = subprocess.run(["bash", "-c", prefix + "echo reached\n"], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", **env}, timeout=30)
    return "reached" in proc.stdout


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_script_stops_where_bash_stops_it(name: str) -> None:
    prefix, env, stops = CASES[name]
    assert _bash_reaches(prefix, env) is not stops  # the case is what bash does
    text = prefix + TRAIN
    if not stops:
        assert parse_launch(text, "run.sh", environ=env).launcher == "torchrun pretrain_gpt.py"
        return
    with pytest.raises(ScriptExits) as stopped:
        parse_launch(text, "run.sh", environ=env)
    assert "`set -e` (line 2) ends the script" in stopped.value.what
    assert "from the caller's environment" in stopped.value.what


def test_the_headline_names_the_line_the_program_and_the_unless() -> None:
    with pytest.raises(ScriptExits) as stopped:
        parse_launch(PAI + TRAIN, "run.sh")
    what = stopped.value.what
    assert "line 5" in what and "`dirname` with no operand fails" in what and "(line 2)" in what
    assert "unless CURRENT_DIR comes from the caller's environment" in what


@pytest.mark.parametrize("args,change", [(["-e"], True), (["-ex"], True), (["-o", "errexit"], True),
                                         (["+e"], False), (["+o", "errexit"], False), (["-x"], None),
                                         (["-o", "pipefail"], None), (["-euo", "pipefail"], True)])
def test_errexit_change(args: list[str], change: bool | None) -> None:
    assert errexit_change(args) is change
