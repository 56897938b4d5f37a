"""The parser a training script really builds, where it calls a parser entry by name that is
not Megatron-LM's (config/own_parser.py).

Reproduces microsoft/DeepSpeedExamples@83757d9c937daabd1089a08051061706cb73900d
training/DeepSpeed-Domino: pretrain_llama.py imports `pretrain` from domino.training and calls
`initialize_domino()` (domino/initialize.py:19-24), which calls domino/arguments.py's
`parse_args` (`argparse.ArgumentParser(description='Domino Arguments', allow_abbrev=False)`, :77,
`--llama-model` at :188, `parser.parse_args()` at :210); the checkout also holds a Megatron-LM
megatron/arguments.py without `--llama-model`. pretrain_llama_13b.sh passes `--llama-model` and
`--causal-lm`: before, both were judged against megatron/arguments.py (the entry is named
`pretrain`) and `--llama-model` was a false error; domino's parser, run on that command line,
rejects `--causal-lm` only (with `--disable-bias-linear`, `--no-gradient-accumulation-fusion`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.config.frontend_parser import locate

MEGATRON = """import argparse
def parse_args(extra_args_provider=None, ignore_unknown_args=False):
    parser = argparse.ArgumentParser(description='Megatron-LM Arguments', allow_abbrev=False)
    parser.add_argument('--num-layers', type=int)
    parser.add_argument('--causal-lm', action='store_true')
    return parser.parse_args()
"""
DOMINO_ARGS = """import argparse
def parse_args():
    parser = argparse.ArgumentParser(description='Domino Arguments', allow_abbrev=False)
    parser.add_argument('--num-layers', type=int, default=None)
    parser.add_argument('--llama-model', action='store_true', help='Use LLaMA model.')
    args = parser.parse_args()
    return args
"""
INITIALIZE = """from domino.arguments import parse_args
def initialize_domino():
    args = parse_args()
"""
TRAINING = """def pretrain(base_model, train_ds, valid_ds, test_ds):
    pass
"""
ENTRY = """from domino.initialize import initialize_domino
from domino.training import pretrain
def main():
    initialize_domino()
    pretrain(None, None, None, None)
if __name__ == "__main__":
    main()
"""


def checkout(tmp_path: Path, initialize: str = INITIALIZE) -> Path:
    files = {"megatron/__init__.py": "", "megatron/arguments.py": MEGATRON, "domino/__init__.py": "",
             "domino/arguments.py": DOMINO_ARGS, "domino/initialize.py": initialize,
             "domino/training.py": TRAINING, "pretrain_llama.py": ENTRY,
             "run.sh": "deepspeed --num_gpus 2 pretrain_llama.py --llama-model --causal-lm\n"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path / "run.sh"


def test_the_parser_the_entry_s_calls_reach_is_read(tmp_path):
    front = locate(str(checkout(tmp_path)), "pretrain_llama.py")
    assert front is not None and front.path.endswith("domino/arguments.py"), front
    assert front.complete and "--llama-model" in front.flags and "--causal-lm" not in front.flags
    assert front.origin == f"the checkout {tmp_path}"


def test_no_parser_reached_leaves_megatron_s_unsure(tmp_path):
    """The entry's calls reach no ArgumentParser (here initialize_domino parses nothing): which
    parser the run builds is not known, so megatron/arguments.py decides no error."""
    front = locate(str(checkout(tmp_path, "def initialize_domino():\n    pass\n")), "pretrain_llama.py")
    assert front is not None and front.path.endswith("megatron/arguments.py")
    assert not front.complete and "not bound from Megatron-LM" in front.why_incomplete


THROWAWAY = """import argparse
def tokenizer_defaults():
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument('--vocab-extra')
    return p.parse_args(ARGS)
"""


@pytest.mark.parametrize("args", ["[]", "['--vocab-extra', '1']", "args=[]"])
def test_a_parser_given_its_own_words_is_not_the_run_s(tmp_path, args):
    """Review r43-scan-flags caseA: a helper the entry reaches builds a throwaway parser and
    parses a list of its own; it rejects no flag of the run, so it is not taken for the run's
    parser (before: DOES NOT START, `--num-layers` "does not exist in the checkout")."""
    init = ("from domino.data import tokenizer_defaults\ndef initialize_domino():\n"
            "    tokenizer_defaults()\n")
    script = checkout(tmp_path, init)
    (tmp_path / "domino" / "data.py").write_text(THROWAWAY.replace("ARGS", args))
    front = locate(str(script), "pretrain_llama.py")
    assert front is not None and not front.path.endswith("domino/data.py"), front
    assert not front.complete


@pytest.mark.parametrize("args", ["", "None", "sys.argv[1:]", "args=None"])
def test_a_parser_reading_the_command_line_is_the_run_s(tmp_path, args):
    domino = DOMINO_ARGS.replace("import argparse", "import argparse, sys").replace(
        "parser.parse_args()", f"parser.parse_args({args})")
    script = checkout(tmp_path)
    (tmp_path / "domino" / "arguments.py").write_text(domino)
    front = locate(str(script), "pretrain_llama.py")
    assert front is not None and front.path.endswith("domino/arguments.py") and front.complete


def test_built_parsers_follows_the_calls_to_the_parsing_file(tmp_path):
    import ast

    from auditor.config.own_parser import built_parsers
    script = checkout(tmp_path)
    entry = tmp_path / "pretrain_llama.py"
    assert built_parsers(ast.parse(entry.read_text()), entry) == {
        (tmp_path / "domino" / "arguments.py").resolve()}
    assert script.is_file()
