"""A generate entry that binds its sizes by tuple unpacking, `tp, pp, ep = args.tp, args.pp,
args.ep`, then writes `model_provider.pipeline_model_parallel_size = pp`: the size is the flag's.

After Megatron-Bridge (NVIDIA-NeMo/Megatron-Bridge, commit
067f987df03b8355b03192d88d70f1709fedf51a)
examples/models/vlm/ernie_vl/hf_to_megatron_generate_ernie_vl.py: `tp, pp, ep = args.tp, args.pp,
args.ep` (:205), the provider's sizes (:214-216), get_forward_backward_func()(...,
forward_only=True) per token (:283), `--pp` an argparse int defaulting to 1 (:344);
examples/models/vlm/ernie_vl/inference.sh:30-37 launches it with `--tp 2 --pp 1 --ep 4`, in a
folder no script rule names (its front end is a guess).
"""

from __future__ import annotations

import pytest

from auditor.config.expr import UNKNOWN
from auditor.config.launch import parse_launch

GENERATE = '''"""Greedy generation (hf_to_megatron_generate_ernie_vl.py's shape)."""
import argparse

from megatron.bridge import AutoBridge
from megatron.core.pipeline_parallel.schedules import get_forward_backward_func


def main(args):
    tp, pp, ep = args.tp, args.pp, args.ep
    bridge = AutoBridge.from_hf_pretrained(args.hf_model_path)
    model_provider = bridge.to_megatron_provider(load_weights=True)
    model_provider.tensor_model_parallel_size = tp
    model_provider.pipeline_model_parallel_size = pp
    model_provider.expert_model_parallel_size = ep
    model = model_provider.provide_distributed_model(wrap_with_ddp=False)
    for step in range(args.max_new_tokens):
        get_forward_backward_func()(forward_step_func=None, data_iterator=None, model=model,
                                    num_microbatches=1, forward_only=True, seq_length=8,
                                    micro_batch_size=1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--hf_model_path", type=str, required=True)
    parser.add_argument("--max_new_tokens", type=int, default=50)
    parser.add_argument("--tp", type=int, default=1)
    parser.add_argument("--pp", type=int, default=1)
    parser.add_argument("--ep", type=int, default=1)
    main(parser.parse_args())
'''
UNPACK = "    tp, pp, ep = args.tp, args.pp, args.ep\n"


@pytest.fixture(autouse=True)
def _tree_root(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # the launch line's entry is relative: run from the tree root


def _config(tmp_path, code: str, flags: str):
    folder = tmp_path / "examples" / "models" / "vlm" / "ernie_vl"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hf_to_megatron_generate_ernie_vl.py").write_text(code)
    script = folder / "inference.sh"
    script.write_text("set -e\nuv run python -m torch.distributed.run --nproc_per_node=8 \\\n"
                      "    examples/models/vlm/ernie_vl/hf_to_megatron_generate_ernie_vl.py \\\n"
                      f"    --hf_model_path baidu/x {flags} --trust_remote_code\n")
    return parse_launch(script.read_text(), str(script))


def _not_pipeline(config) -> list[str]:
    return [d.message for d in config.diagnostics if d.kind == "launch.not-pipeline"]


def test_a_size_bound_by_tuple_unpacking_is_the_flag_s(tmp_path) -> None:
    config = _config(tmp_path, GENERATE, "--tp 2 --pp 4 --ep 4")
    assert config.entry_values["pipeline_model_parallel_size"][0] == 4
    assert config.entry_values["tensor_model_parallel_size"][0] == 2
    assert config.entry_values["expert_model_parallel_size"][0] == 4


def test_a_forward_only_entry_at_one_stage_so_bound_is_no_pipeline_run(tmp_path) -> None:
    said = _not_pipeline(_config(tmp_path, GENERATE, "--tp 2 --pp 1 --ep 4"))
    assert len(said) == 1 and "pipeline size 1" in said[0] and "pp = args.pp" in said[0], said


def test_a_starred_unpacking_decides_nothing(tmp_path) -> None:
    code = GENERATE.replace(UNPACK, "    tp, *rest, pp = args.tp, args.ep, args.pp\n    ep = args.ep\n")
    config = _config(tmp_path, code, "--pp 1")
    assert config.entry_values["pipeline_model_parallel_size"][0] is UNKNOWN
    assert not _not_pipeline(config)


def test_unpacking_a_call_decides_nothing(tmp_path) -> None:
    code = GENERATE.replace(UNPACK, "    tp, pp, ep = sizes(args)\n")
    config = _config(tmp_path, code, "--pp 1")
    assert config.entry_values["pipeline_model_parallel_size"][0] is UNKNOWN
    assert not _not_pipeline(config)


def test_a_name_bound_twice_decides_nothing(tmp_path) -> None:
    code = GENERATE.replace(UNPACK, UNPACK + "    if args.ep > 1:\n        pp = 2\n")
    config = _config(tmp_path, code, "--pp 1")
    assert config.entry_values["pipeline_model_parallel_size"][0] is UNKNOWN
    assert not _not_pipeline(config)


@pytest.mark.parametrize("bound", [UNPACK, "    tp = args.tp\n    pp = args.pp\n    ep = args.ep\n"])
def test_a_name_a_nested_function_rebinds_decides_nothing(tmp_path, bound) -> None:
    """Review r46-b: `def bump(): nonlocal pp; pp = 2` then `bump()` makes pp 2 at run time."""
    code = GENERATE.replace(UNPACK, bound + "    def bump():\n        nonlocal pp\n        pp = 2\n    bump()\n")
    config = _config(tmp_path, code, "--pp 1")
    assert config.entry_values["pipeline_model_parallel_size"][0] is UNKNOWN
    assert not _not_pipeline(config)
