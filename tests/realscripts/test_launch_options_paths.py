"""A refusal of the launcher's `--local-rank` (auditor/config/launch_options.py) is a definite
verdict, so the script's parse must run on every path (h33-review6 H4): a parse under an if, a
conditional expression, a boolean operator, a loop or a try, or reached only through such a call,
or after an early return, may not run: whether the run starts is undecided (info naming the fix).
A parse whose SystemExit a handler around it catches (bare except, SystemExit, BaseException)
does not stop the run: nothing is said.

Shape from DeepSpeedExamples (microsoft/DeepSpeedExamples, commit
83757d9c937daabd1089a08051061706cb73900d): compression/bert/run_glue_no_trainer.py builds one
parser with `--local_rank` only and calls parser.parse_args() from parse_args(), which main() calls
under `if __name__ == "__main__":`; compression/bert/bash_script/XTC/quant_1bit.sh:20-21 runs it
through `python -m torch.distributed.launch`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.config.launch import parse_launch
from auditor.config.launch_options import KIND, check
from auditor.rulebook import files

COVERED = tuple(files.load("torch").section("framework")["releases"])

HEAD = '''import argparse
import os


def build():
    parser = argparse.ArgumentParser(description="glue")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--local_rank", type=int, default=-1)
    return parser
'''

RUNS = {  # the parse on every path: the launcher's `--local-rank=N` stops the run
    "main_guard": '''
def parse_args():
    args = build().parse_args()
    return args


def main():
    args = parse_args()
    print(args)


if __name__ == "__main__":
    main()
''',
    "module_level": "\nargs = build().parse_args()\n",  # h33-review6 dns2/
    "in_a_with_and_an_if_test": '''
with open(os.devnull) as sink:
    if build().parse_args().seed:
        print("seeded", file=sink)
''',
    "try_finally_only": "\ntry:\n    args = build().parse_args()\nfinally:\n    print('done')\n",
}

CAUGHT = {  # a handler around the parse catches argparse's exit: the run goes on
    "bare_except": '''
try:
    args = build().parse_args()
except:  # noqa: E722
    args = argparse.Namespace(seed=1)
''',  # h33-review6 dns/
    "except_system_exit": '''
def main():
    try:
        args = build().parse_args()
    except SystemExit:
        args = None
    print(args)


main()
''',
}

MAY_NOT = {  # the parse may not run: whether the run starts is undecided
    "if_exp": '''
def cli_args():
    return build().parse_args()


if __name__ == "__main__":
    seed = 10 if os.environ.get("CONFIG_FILE") else cli_args().seed
''',  # h33-review6 dns3/
    "caller_in_try": '''
def main():
    print(build().parse_args())


try:
    main()
except BaseException:
    pass
''',
    "if_branch": '''
if os.environ.get("CONFIG_FILE"):
    args = None
else:
    args = build().parse_args()
''',
    "caller_under_if": '''
def main():
    print(build().parse_args())


if os.environ.get("LEGACY"):
    main()
''',
    "bool_op": "\nargs = os.environ.get('ARGS') or build().parse_args()\n",
    "loop": "\nfor _ in range(int(os.environ.get('N', '1'))):\n    args = build().parse_args()\n",
    "early_return": '''
def main():
    if os.environ.get("CONFIG_FILE"):
        return None
    return build().parse_args()


if __name__ == "__main__":
    main()
''',
    "callback_only": '''
import torch.multiprocessing as mp


def worker(i):
    print(build().parse_args())


if __name__ == "__main__":
    mp.spawn(worker, nprocs=1)
''',
}


def _refusals(tmp_path: Path, body: str) -> list:
    (tmp_path / "run_glue_no_trainer.py").write_text(HEAD + body)
    path = tmp_path / "quant_1bit.sh"
    path.write_text("#!/bin/bash\npython -m torch.distributed.launch --nproc_per_node=1 run_glue_no_trainer.py "
                    "--seed 42\n")
    return [f for f in check(parse_launch(path.read_text(), str(path)), COVERED) if f.kind == KIND]


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_parse_on_every_path_does_not_start(tmp_path: Path, name: str) -> None:
    [found] = _refusals(tmp_path, RUNS[name])
    assert found.severity == "error" and "knows only `--local_rank`" in found.message


@pytest.mark.parametrize("name", sorted(CAUGHT))
def test_a_parse_whose_exit_is_caught_refuses_nothing(tmp_path: Path, name: str) -> None:
    assert _refusals(tmp_path, CAUGHT[name]) == []


@pytest.mark.parametrize("name", sorted(MAY_NOT))
def test_a_parse_that_may_not_run_leaves_the_start_undecided(tmp_path: Path, name: str) -> None:
    [found] = _refusals(tmp_path, MAY_NOT[name])
    assert found.severity == "info" and "knows only `--local_rank`" in found.message
    assert "some paths only" in found.detail["undecided"]
    assert found.detail["decide"].startswith("accept `--local-rank` in run_glue_no_trainer.py's parser")
