"""Argparse constructs that must not be read as a parser rejecting a flag (h33-review4 holes).

Each script reproduces an upstream construct; a parser read wrongly would turn a run that starts
into DOES NOT START. Base: bigcode-project/Megatron-LM@7c325cd34a109880a3fc03432e8b3e4576b22701
megatron/arguments.py (argparse.Action subclasses inside `_add_data_args`, :1110-1195, whose
`--*-weighted-split-paths-path` flags the launch examples/pretrain_bigcode_1b.slurm passes).
"""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from auditor.config.frontend_parser import read_parser
from auditor.config.launch import read_launch
from auditor.config.launch_options import KIND, check

ARGUMENTS = '''
import argparse

def parse_args(extra_args_provider=None, ignore_unknown_args=False):
    parser = argparse.ArgumentParser(description='Megatron-LM Arguments', allow_abbrev=False)
    parser = _add_distributed_args(parser)
    parser = _add_data_args(parser)
    args = parser.parse_args()
    return args

def _add_distributed_args(parser):
    group = parser.add_argument_group(title='distributed')
    group.add_argument('--local_rank', type=int, default=None)
    return parser

def _add_data_args(parser):
    group = parser.add_argument_group(title='data and dataloader')
BODY
    return parser
'''

# megatron/arguments.py:1182-1200 with the add_argument calls moved into a classmethod the
# function calls while building the parser: they run at build time, only `__call__` at parse time.
CLASSMETHOD = '''
    class parse_data_paths_path(argparse.Action):
        @classmethod
        def add_to(cls, group):
            group.add_argument('--train-weighted-split-paths-path', type=str, action=cls, default=None)

        def __call__(self, parser, args, values, option_string=None):
            setattr(args, self.dest, values)

    parse_data_paths_path.add_to(group)
'''

# The same flag added by a loop over splits with an f-string spelling (not read: unknown).
FSTRING = '''
    for split in ('train', 'valid', 'test'):
        group.add_argument(f'--{split}-weighted-split-paths-path', type=str, default=None)
'''

# An action class and, elsewhere, a plain helper class of the same name called at build time.
SAME_NAME = '''
    def _actions():
        class adder(argparse.Action):
            def __call__(self, parser, args, values, option_string=None):
                setattr(args, self.dest, values)
        return adder

    class adder:
        def __call__(self, group):
            group.add_argument('--train-weighted-split-paths-path', type=str, default=None)

    adder()(group)
'''

MAIN = '''
from megatron.initialize import initialize_megatron

if __name__ == '__main__':
    initialize_megatron()
'''

SLURM = '''#!/bin/bash
python -m torch.distributed.launch --nproc_per_node 8 pretrain_gpt.py \\
    --local_rank 0 \\
    --train-weighted-split-paths-path /data/train.txt
'''


def _checkout(tmp_path: Path, body: str) -> Path:
    files = {"megatron/arguments.py": ARGUMENTS.replace("BODY", dedent(body).replace("\n", "\n    ")),
             "pretrain_gpt.py": MAIN, "examples/pretrain_bigcode_1b.slurm": SLURM}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(dedent(text))
    read_parser.cache_clear()
    return tmp_path / "examples" / "pretrain_bigcode_1b.slurm"


def _spelling(path: Path) -> list[str]:
    return [d.severity for d in read_launch(path).diagnostics if d.kind == "launch.megatron-spelling"]


def test_an_action_s_classmethod_adds_flags_when_built(tmp_path: Path) -> None:
    script = _checkout(tmp_path, CLASSMETHOD)
    front = read_parser(tmp_path / "megatron" / "arguments.py", tmp_path / "pretrain_gpt.py")
    assert front is not None and "--train-weighted-split-paths-path" in front.flags
    assert _spelling(script) == []


def test_a_spelling_not_written_literally_leaves_the_parser_incomplete(tmp_path: Path) -> None:
    script = _checkout(tmp_path, FSTRING)
    front = read_parser(tmp_path / "megatron" / "arguments.py", tmp_path / "pretrain_gpt.py")
    assert front is not None and not front.complete and "not read" in front.why_incomplete
    assert "error" not in _spelling(script)


def test_only_the_action_class_itself_is_parse_time(tmp_path: Path) -> None:
    script = _checkout(tmp_path, SAME_NAME)
    front = read_parser(tmp_path / "megatron" / "arguments.py", tmp_path / "pretrain_gpt.py")
    assert front is not None and "--train-weighted-split-paths-path" in front.flags
    assert "error" not in _spelling(script)


# NVIDIA/Megatron-LM@d98e8a64dd megatron/training/arguments.py:2769
# `group.add_argument('--rl-partial-rollouts', action=argparse.BooleanOptionalAction, ...)`:
# argparse adds `--no-rl-partial-rollouts` too (Lib/argparse.py, BooleanOptionalAction.__init__).
BOOLEAN = '''
    group.add_argument('--rl-partial-rollouts', action=argparse.BooleanOptionalAction, default=False)
'''


def test_boolean_optional_action_takes_the_no_spelling(tmp_path: Path) -> None:
    _checkout(tmp_path, BOOLEAN)
    front = read_parser(tmp_path / "megatron" / "arguments.py", tmp_path / "pretrain_gpt.py")
    assert front is not None and front.complete
    assert front.flags["--rl-partial-rollouts"]["action"] == "store_true"
    assert front.flags["--no-rl-partial-rollouts"]["action"] == "store_false"
    assert front.flags["--no-rl-partial-rollouts"]["dest"] == "rl_partial_rollouts"


# A training script's own parser, launched by torch.distributed.launch (which passes
# `--local-rank=N` on torch >= 2.0). Modelled on DeepSpeedExamples' run_glue_no_trainer.py
# (microsoft/DeepSpeedExamples compression/bert/run_glue_no_trainer.py: parse_args() called from
# main() under `if __name__ == "__main__"`), with the construct each case names.
OWN = {
    # H1b: the flags registered by an Action's classmethod at build time, spellings from a tuple
    "classmethod": '''import argparse


class LocalRankAction(argparse.Action):
    SPELLINGS = ("--local_rank", "--local-rank")

    @classmethod
    def register(cls, group):
        group.add_argument(*cls.SPELLINGS, dest="local_rank", type=int, default=-1, action=cls)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, int(values))


def parse_args():
    parser = argparse.ArgumentParser()
    LocalRankAction.register(parser.add_argument_group("distributed"))
    return parser.parse_args()


if __name__ == "__main__":
    parse_args()
''',
    # H3: both spellings by two add_argument calls with one dest
    "same_dest": '''import argparse


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local-rank", type=int, default=-1, dest="local_rank")
    parser.add_argument("--local_rank", type=int, default=-1)
    return parser.parse_args()


if __name__ == "__main__":
    parse_args()
''',
    # H4: a parent parser (another module) holds the flags
    "parents": '''import argparse
from common import base_parser


def parse_args():
    parser = argparse.ArgumentParser(parents=[base_parser()])
    parser.add_argument("--lr", type=float, default=1e-4)
    return parser.parse_args()


if __name__ == "__main__":
    parse_args()
''',
    # H5: the parse lives in a helper nothing calls; the run reads LOCAL_RANK
    "unreached": '''import argparse
import os


def legacy_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    return parser.parse_args()


def main():
    print(int(os.environ.get("LOCAL_RANK", "0")))


if __name__ == "__main__":
    main()
''',
    # H6: sys.argv rewritten before the parse
    "argv": '''import argparse
import sys

sys.argv = [a.replace("--local-rank", "--local_rank") for a in sys.argv]


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    return parser.parse_args()


if __name__ == "__main__":
    parse_args()
''',
    "argv_append": '''import argparse
import sys


def main():
    sys.argv.append("--fp16")
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.parse_args()


if __name__ == "__main__":
    main()
''',
}


def _own(tmp_path: Path, text: str) -> list:
    (tmp_path / "train.py").write_text(text)
    (tmp_path / "common.py").write_text(
        "import argparse\n\n\ndef base_parser():\n    p = argparse.ArgumentParser(add_help=False)\n"
        "    p.add_argument('--local_rank', '--local-rank', type=int, default=-1)\n    return p\n")
    path = tmp_path / "run.sh"
    path.write_text("python -m torch.distributed.launch --nproc_per_node 2 train.py\n")
    return [f for f in check(read_launch(path), ("2.10.0",)) if f.kind == KIND]


@pytest.mark.parametrize("name", sorted(OWN))
def test_scripts_whose_parser_is_not_known_to_reject(tmp_path: Path, name: str) -> None:
    assert _own(tmp_path, OWN[name]) == []


def test_a_parse_reached_through_main_still_rejects(tmp_path: Path) -> None:
    """The fail-closed side: the same script reaching its `--local_rank`-only parse from main()."""
    text = OWN["unreached"].replace('print(int(os.environ.get("LOCAL_RANK", "0")))', "legacy_args()")
    [found] = _own(tmp_path, text)
    assert found.severity == "error" and "knows only `--local_rank`" in found.message


def test_what_runs_and_argv_rewrites() -> None:
    """config/script_run.py directly: a function used only as a callback counts as run (fail
    closed), a function nothing names does not; each form of store to sys.argv is a rewrite."""
    import ast

    from auditor.config.script_run import reached, writes_argv

    tree = ast.parse("import torch.multiprocessing as mp\n\ndef worker(i):\n    x = 1\n\n"
                     "def unused():\n    y = 2\n\nif __name__ == '__main__':\n    mp.spawn(worker)\n")
    run = reached(tree)
    assigns = {n.targets[0].id: id(n) in run for n in ast.walk(tree) if isinstance(n, ast.Assign)}
    assert assigns == {"x": True, "y": False}
    for text in ("import sys\nsys.argv[1:] = []\n", "import sys\ndel sys.argv[1]\n",
                 "from sys import argv\nargv += ['--x']\n", "import sys\nsys.argv.insert(1, '-v')\n"):
        assert writes_argv(ast.parse(text)), text
    assert not writes_argv(ast.parse("import sys\nprint(sys.argv[1:])\n"))


def test_options_of_one_dest_merge_spellings() -> None:
    """Two add_argument calls with one dest: both spellings, the first call's default (argparse
    sets a dest's default from its first action), and no type where they disagree."""
    import ast

    from auditor.config.entry_script import argparse_options

    text = OWN["same_dest"].replace("\n    return parser", "\n    parser.add_argument('--seed', type=int, default=1)"
                                    "\n    parser.add_argument('--rng', dest='seed', default='x')\n    return parser")
    options = argparse_options(ast.parse(text))
    assert options["local_rank"]["spellings"] == ["--local-rank", "--local_rank"]
    assert options["local_rank"]["type"] == "int"
    assert options["seed"]["spellings"] == ["--seed", "--rng"]
    assert options["seed"]["type"] == "?" and options["seed"]["default"] == 1
