"""Code a checkout's parser runs when it parses, not when it is built (issue 22, item 6).

bigcode-project/Megatron-LM@7c325cd34a109880a3fc03432e8b3e4576b22701 megatron/arguments.py:
`_add_data_args` defines `class parse_data_paths(argparse.Action)` (:1110) and `class
parse_data_paths_path(argparse.Action)` (:1182-1195), whose `__call__` hands the parser on:
`parse_data_paths(option_strings=[...], dest=...)(parser, args, values, option_string=...)`.
argparse runs an action's `__call__` after it has sorted the command line against the flags
defined, so that call adds nothing the run accepts, and the parser is read whole: its
examples/finetune_race_distributed.sh (`python -m torch.distributed.launch ... ./tasks/main.py`,
`--activations-checkpoint-method uniform` at :32, which the fork does not define; `--local_rank`
only, :1045) does not start. The mini checkout below reproduces those constructs.
"""

from __future__ import annotations

import argparse
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
    if extra_args_provider is not None:
        parser = extra_args_provider(parser)
    if ignore_unknown_args:
        args, _ = parser.parse_known_args()
    else:
        args = parser.parse_args()
    return args

def _add_distributed_args(parser):
    group = parser.add_argument_group(title='distributed')
    group.add_argument('--tensor-model-parallel-size', type=int, default=1)
    group.add_argument('--local_rank', type=int, default=None)
    return parser

def _add_data_args(parser):
    group = parser.add_argument_group(title='data and dataloader')

    class parse_data_paths(argparse.Action):
        def __call__(self, parser, args, values, option_string=None):
            setattr(args, self.dest, values)

    group.add_argument('--train-weighted-split-paths', nargs='*', default=None,
                       action=parse_data_paths)

    class parse_data_paths_path(BASE):
        def __call__(self, parser, args, values, option_string=None):
            with open(values) as fi:
                values = fi.read().split()
            parse_data_paths(option_strings=['--train-weighted-split-paths'],
                             dest='train_weighted_split_paths')(parser, args, values)
            LATE

    group.add_argument('--train-weighted-split-paths-path', type=str,
                       action=parse_data_paths_path, default=None)
    return parser
'''

# tasks/main.py (same commit): `initialize_megatron(extra_args_provider=get_tasks_args)`.
TASKS_MAIN = '''
from megatron.initialize import initialize_megatron

def get_tasks_args(parser):
    group = parser.add_argument_group(title='tasks')
    group.add_argument('--task', type=str, required=True)
    return parser

if __name__ == '__main__':
    initialize_megatron(extra_args_provider=get_tasks_args)
'''

LAUNCH = '''#!/bin/bash
DISTRIBUTED_ARGS="--nproc_per_node 8 --nnodes 1 --node_rank 0 --master_addr localhost --master_port 6000"
python -m torch.distributed.launch $DISTRIBUTED_ARGS ./tasks/main.py \\
       --task RACE \\
       --tensor-model-parallel-size 1 \\
       --activations-checkpoint-method uniform
'''


def _checkout(tmp_path: Path, base: str = "argparse.Action", late: str = "pass") -> Path:
    files = {"megatron/arguments.py": ARGUMENTS.replace("BASE", base).replace("LATE", late),
             "tasks/main.py": TASKS_MAIN, "examples/finetune_race_distributed.sh": LAUNCH}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(dedent(text))
    read_parser.cache_clear()
    return tmp_path / "examples" / "finetune_race_distributed.sh"


def _spelling(config) -> list[tuple[str, str]]:
    return [(d.severity, d.message) for d in config.diagnostics if d.kind == "launch.megatron-spelling"]


@pytest.mark.parametrize("base", ["argparse.Action", "parse_data_paths"])
def test_an_action_s_call_leaves_the_parser_whole(tmp_path: Path, base: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    script = _checkout(tmp_path, base)
    monkeypatch.chdir(tmp_path)  # run from the checkout's root, as `./tasks/main.py` says
    front = read_parser(tmp_path / "megatron" / "arguments.py", tmp_path / "tasks" / "main.py")
    assert front is not None and front.complete, front.why_incomplete if front else None
    config = read_launch(script)
    (error,) = _spelling(config)
    assert error[0] == "error" and "`--activations-checkpoint-method` does not exist" in error[1]
    # the launcher's `--local-rank=N` (torch >= 2.0) against a parser with only `--local_rank`
    (refused,) = [f for f in check(config, ("2.10.0",)) if f.kind == KIND]
    assert refused.severity == "error" and "knows only `--local_rank`" in refused.message


def test_a_flag_an_action_adds_while_parsing_is_still_rejected(tmp_path: Path) -> None:
    """What the rule says, as argparse does it: a flag added from `__call__` is unrecognised."""
    class Late(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[override]
            parser.add_argument("--late")
    parser = argparse.ArgumentParser(allow_abbrev=False, exit_on_error=False)
    parser.add_argument("--early", action=Late)
    with pytest.raises(SystemExit):  # "unrecognized arguments: --late 1"
        parser.parse_args(["--early", "x", "--late", "1"])
    script = _checkout(tmp_path, late="parser.add_argument('--activations-checkpoint-method')")
    assert [s for s, _ in _spelling(read_launch(script))] == ["error"]


def test_a_class_of_another_base_may_add_flags_when_built(tmp_path: Path) -> None:
    """Not an argparse action (a helper class of the file): handing it the parser leaves the
    table incomplete, so a flag missing from it is only a warning."""
    script = _checkout(tmp_path, base="object")
    front = read_parser(tmp_path / "megatron" / "arguments.py", tmp_path / "tasks" / "main.py")
    assert front is not None and not front.complete
    assert [s for s, _ in _spelling(read_launch(script))] == ["warning"]


# A training script's own argparse with the same construct (an action's `__call__` handing the
# parser on, as megatron/arguments.py:1195 above) and `--local_rank` only, launched by
# torch.distributed.launch: the launcher's `--local-rank=N` is rejected all the same.
OWN_PARSER = '''import argparse


def load_paths(parser, args, values):
    setattr(args, "paths", values)


class paths_from_file(BASE):
    def __call__(self, parser, args, values, option_string=None):
        load_paths(parser, args, values)


def parse_args():
    parser = argparse.ArgumentParser(allow_abbrev=False)
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.add_argument("--paths-file", action=paths_from_file)
    return parser.parse_args()


if __name__ == "__main__":
    parse_args()
'''


@pytest.mark.parametrize("base, refused", [("argparse.Action", True), ("object", False)])
def test_a_script_s_own_action_leaves_its_parser_decided(tmp_path: Path, base: str, refused: bool) -> None:
    (tmp_path / "train.py").write_text(OWN_PARSER.replace("BASE", base))
    path = tmp_path / "run.sh"
    path.write_text("python -m torch.distributed.launch --nproc_per_node 2 train.py --paths-file p\n")
    found = [f for f in check(read_launch(path), ("2.10.0",)) if f.kind == KIND]
    assert [f.severity for f in found] == (["error"] if refused else [])
    if refused:
        assert "train.py:17 parse_args" in found[0].message
