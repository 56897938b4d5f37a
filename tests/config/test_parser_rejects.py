"""A flag the entry's own parser, read whole, lacks stops the run whatever stack it would run;
one a parser read only in part lacks leaves whether it starts undecided, never clean.

Reproduces microsoft/DeepSpeedExamples@83757d9c937daabd1089a08051061706cb73900d
training/DeepSpeed-Domino/pretrain_gpt3_6.7b.sh: `deepspeed --num_gpus 2 pretrain_gpt.py` with
`--no-gradient-accumulation-fusion` (:48); pretrain_gpt.py calls initialize_domino (:79,
domino/initialize.py:24), whose parser (domino/arguments.py:77 `ArgumentParser(allow_abbrev=
False)`, :210 `parser.parse_args()`) lacks it, and domino/tensor_parallel/partition.py:15 imports
megatron, a stack the scan does not follow. Before: INCONCLUSIVE on that stack, the rejection an
error no answer counted; argparse exits 2 on every rank first.

And NVIDIA/Megatron-LM@0d7e02bd2625ec8a1ee9b4a4a8f6cfd6cadd4db4 pretrain_gpt.py: its
`extra_args_provider=add_modelopt_args if has_nvidia_modelopt else None` (:239), imported in a
top-level `try` (:29-35) from megatron/post_training/arguments.py, was not read, so `--foo 1`
was "not known to be rejected" and the run read CLEAN.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor import cli
from tests.config.test_own_parser import checkout

PARTITION = "import megatron.mpu\n"
ENTRY = """import deepspeed
from domino.initialize import initialize_domino
from domino.training import pretrain
from domino.partition import split
def main():
    initialize_domino()
    engine, *_ = deepspeed.initialize(model=None)
    pretrain(None, None, None, None)
if __name__ == "__main__":
    main()
"""


def scan(script: Path, capsys) -> dict:
    capsys.readouterr()
    cli.main(["scan", "--config", str(script), "--torch", "2.10.0", "--format", "json"])
    return json.loads(capsys.readouterr().out)


def domino(tmp_path: Path, flags: str) -> Path:
    script = checkout(tmp_path)
    (tmp_path / "domino" / "partition.py").write_text(PARTITION + "def split():\n    pass\n")
    (tmp_path / "megatron" / "mpu.py").write_text("")
    (tmp_path / "pretrain_llama.py").write_text(ENTRY)
    script.write_text(f"deepspeed --num_gpus 2 pretrain_llama.py --num-layers 2 {flags}\n")
    return script


def test_a_flag_the_entry_s_own_parser_lacks_does_not_start(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    doc = scan(domino(tmp_path, "--llama-model --no-gradient-accumulation-fusion"), capsys)
    head = doc["verdict"]["headline"]
    assert head.startswith("DOES NOT START: `--no-gradient-accumulation-fusion` does not exist"), head
    assert "domino/arguments.py, was read: parse_args() at line 6" in head and head.endswith("run.sh:1)."), head


def test_every_flag_the_parser_has_leaves_the_stack_s_answer(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    doc = scan(domino(tmp_path, "--llama-model"), capsys)
    assert not doc["verdict"]["headline"].startswith("DOES NOT START"), doc["verdict"]["headline"]


ARGUMENTS = """import argparse
def parse_args(extra_args_provider=None, ignore_unknown_args=False):
    parser = argparse.ArgumentParser(description='Megatron-LM Arguments', allow_abbrev=False)
    parser.add_argument('--num-layers', type=int)
    if extra_args_provider is not None:
        parser = extra_args_provider(parser)
    if ignore_unknown_args:
        args, _ = parser.parse_known_args()
    else:
        args = parser.parse_args()
    return args
"""
MODELOPT = """def add_modelopt_args(parser):
    group = parser.add_argument_group(title="modelopt-generic")
    group.add_argument("--export-model-type", type=str, default="GPTModel")
    return parser
"""
PRETRAIN = """from megatron.training import pretrain
try:
    from megatron.post_training.arguments import add_modelopt_args
    has_nvidia_modelopt = True
except ImportError:
    has_nvidia_modelopt = False
if __name__ == "__main__":
    pretrain(None, None, None, extra_args_provider=PROVIDER)
"""


def megatron_lm(tmp_path: Path, provider: str) -> Path:
    tmp_path.mkdir(exist_ok=True)
    files = {"megatron/training/__init__.py": "from megatron.training.training import pretrain\n",
             "megatron/training/training.py": "def pretrain(*a, **k):\n    pass\n",
             "megatron/training/arguments.py": ARGUMENTS,
             "megatron/post_training/arguments.py": MODELOPT,
             "pretrain_gpt.py": PRETRAIN.replace("PROVIDER", provider),
             "run.sh": "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2 --foo 1\n"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path / "run.sh"


def test_a_provider_imported_in_a_try_is_read(tmp_path):
    from auditor.config.frontend_parser import locate
    front = locate(str(megatron_lm(tmp_path, "add_modelopt_args if has_nvidia_modelopt else None")), "pretrain_gpt.py")
    assert front is not None and front.complete, front
    assert "--export-model-type" in front.flags and front.parsed_at == 10


def test_a_flag_a_partly_read_parser_lacks_is_undecided(tmp_path):
    """`--foo` where the provider is not read (another package's): argparse exits on it unless
    that provider adds it, so whether the run starts is undecided (was: a warning, and CLEAN)."""
    from auditor.config.flags import not_in_parser
    from auditor.config.frontend_parser import locate
    front = locate(str(megatron_lm(tmp_path, "other.add_args")), "pretrain_gpt.py")
    assert front is not None and not front.complete
    said = not_in_parser(front, "--foo", "run.sh:1")
    assert said.severity == "warning" and "`--foo`" in said.detail["undecided"], said
    assert "--help" in said.detail["decide"]


# Review r49-parser: each of these started under real python3 (the flag never reaches a parse
# that rejects it), yet read DOES NOT START.
LENIENT_ARGS = """import argparse
def parse_args(ignore_unknown_args=False):
    parser = argparse.ArgumentParser(description='Domino Arguments', allow_abbrev=False)
    parser.add_argument('--num-layers', type=int, default=None)
    parser.add_argument('--llama-model', action='store_true')
    if ignore_unknown_args:
        args, _ = parser.parse_known_args()
    else:
        args = parser.parse_args()
    return args
"""


def test_a_wrapper_parsing_with_ignore_unknown_args_takes_the_flag(tmp_path, capsys, monkeypatch):
    """initialize_domino (the module the entry's call reaches, not the entry) passes
    `parse_args(ignore_unknown_args=True)`: the parser takes unknown flags (parse_known_args)."""
    monkeypatch.chdir(tmp_path)
    script = domino(tmp_path, "--llama-model --foo 1")
    (tmp_path / "domino" / "arguments.py").write_text(LENIENT_ARGS)
    (tmp_path / "domino" / "initialize.py").write_text(
        "from domino.arguments import parse_args\ndef initialize_domino():\n"
        "    args = parse_args(ignore_unknown_args=True)\n")
    head = scan(script, capsys)["verdict"]["headline"]
    assert not head.startswith("DOES NOT START"), head


@pytest.mark.parametrize("rewrite", [
    "import sys\ni = sys.argv.index('--foo'); del sys.argv[i:i+2]\n",
    "import argparse, sys\np = argparse.ArgumentParser()\np.add_argument('--foo')\n"
    "a, rest = p.parse_known_args()\nsys.argv = sys.argv[:1] + rest\n"])
def test_an_entry_that_rewrites_sys_argv_is_no_certain_rejection(tmp_path, capsys, monkeypatch, rewrite):
    """The entry deletes `--foo` from sys.argv, or its own parser takes it (parse_known_args)
    and hands on the rest, before the parse that lacks it: what that parse sees is not known."""
    monkeypatch.chdir(tmp_path)
    script = domino(tmp_path, "--llama-model --foo 1")
    (tmp_path / "pretrain_llama.py").write_text(rewrite + ENTRY)
    head = scan(script, capsys)["verdict"]["headline"]
    assert not head.startswith("DOES NOT START"), head
    mlm = megatron_lm(tmp_path / "mlm", "None")
    entry = mlm.parent / "pretrain_gpt.py"
    entry.write_text(rewrite + entry.read_text())
    from auditor.config.frontend_parser import locate
    front = locate(str(mlm), "pretrain_gpt.py")
    assert front is not None and not front.complete and "rewrites sys.argv" in front.why_incomplete


def test_a_provider_bound_in_try_and_except_is_either_module_s(tmp_path):
    """`try: from megatron.post_training.arguments import add_modelopt_args as add_args` /
    `except ImportError: from fallback_args import add_args`: a flag either adds is taken, and
    with the fallback module not found the parser is not wholly read."""
    from auditor.config.frontend_parser import locate
    for folder, fallback in (("both", True), ("one", False)):
        run = megatron_lm(tmp_path / folder, "add_args")
        if fallback:
            (run.parent / "fallback_args.py").write_text(
                "def add_args(parser):\n    parser.add_argument('--bar', type=int)\n    return parser\n")
        (run.parent / "pretrain_gpt.py").write_text(PRETRAIN.replace("PROVIDER", "add_args").replace(
            "import add_modelopt_args\n    has_nvidia_modelopt = True\nexcept ImportError:\n"
            "    has_nvidia_modelopt = False",
            "import add_modelopt_args as add_args\nexcept ImportError:\n    from fallback_args import add_args"))
        front = locate(str(run), "pretrain_gpt.py")
        assert front is not None and front.complete is fallback, front
        assert {"--bar", "--export-model-type"} <= set(front.flags) if fallback else "add_args" in front.why_incomplete
