"""A Megatron-LM MIMO entry: an encoder grid and the language grid on disjoint ranks, joined by
megatron-core's MultiModulePipelineCommunicator, on the stock pretrain.

After NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553 examples/mimo/pretrain_mimo.py:
it copies --llm-tp/--llm-pp/... onto the stock sizes (:46-52) and calls pretrain(...,
skip_model_parallel_init=True, p2p_communicator=communicator) (:136-145); the communicator is
built by model_providers/nemotron_moe_vlm.py:268-280 with the graph {encoder: [language],
language: []}; examples/mimo/training/args.py:15-60 defines the grid flags (--llm-only drops the
encoder). examples/mimo/scripts/run_hetero_nemotron_20l_mock_train.sh launches it on 8 ranks
with --llm-pp 1.
"""

from __future__ import annotations

from auditor.config.expr import UNKNOWN
from auditor.config.launch import parse_launch
from auditor.config.mlm_mimo import read_mlm_mimo
from auditor.config.pyenv import read_entry

ENTRY = '''"""Heterogeneous MIMO training through the stock pretrain loop."""
from examples.mimo.training.args import add_hetero_grid_args
from examples.mimo.provider import build_communicator
from megatron.training.arguments import parse_args
from megatron.training.training import pretrain


def main():
    args = parse_args(add_hetero_grid_args)
    args.pipeline_model_parallel_size = args.llm_pp
    communicator = build_communicator(args)
    pretrain(None, None, None, None, skip_model_parallel_init=True, p2p_communicator=communicator)


if __name__ == "__main__":
    main()
'''

ARGS = '''import argparse


def add_hetero_grid_args(parser):
    grid = parser.add_argument_group("hetero module grids")
    grid.add_argument("--encoder-tp", type=int, default=2)
    grid.add_argument("--llm-tp", type=int, default=2)
    grid.add_argument("--llm-pp", type=int, default=1)
    grid.add_argument("--llm-cp", type=int, default=1)
    grid.add_argument("--llm-ep", type=int, default=1)
    grid.add_argument("--llm-expt-tp", type=int, default=None)
    grid.add_argument("--llm-only", action="store_true")
    return parser
'''

PROVIDER = '''from megatron.core.pipeline_parallel.multimodule_communicator import MultiModulePipelineCommunicator

ENCODER = "radio"
LANGUAGE = "language"


def build_communicator(args, grids=None, config=None):
    return MultiModulePipelineCommunicator(grids, GRAPH, config, dim_mapping={"s": 0, "h": 2, "b": 1})
'''

JOINED = "{ENCODER: [LANGUAGE], LANGUAGE: []}"


def _config(tmp_path, args: str = "", graph: str = JOINED, prefix: str = ""):
    mimo = tmp_path / "examples" / "mimo"
    (mimo / "training").mkdir(parents=True, exist_ok=True)
    for folder in (tmp_path / "examples", mimo, mimo / "training"):
        (folder / "__init__.py").write_text("")
    (mimo / "pretrain_mimo.py").write_text(ENTRY)
    (mimo / "training" / "args.py").write_text(ARGS)
    (mimo / "provider.py").write_text(PROVIDER.replace("GRAPH", graph))
    script = tmp_path / "run.sh"
    script.write_text(f"set -euo pipefail\n{prefix}python -m torch.distributed.run --standalone --nproc-per-node 8 "
                      f"-m examples.mimo.pretrain_mimo --encoder-tp 2 --llm-tp 2 {args}\n")
    return parse_launch(script.read_text(), str(script))


def _values(config) -> dict:
    return {k: v[0] for k, v in config.entry_values.items()}


def test_modules_on_disjoint_ranks_batch_between_them_at_a_language_pp_of_1(tmp_path) -> None:
    values = _values(_config(tmp_path, "--llm-pp 1"))
    assert values["pipeline_batches_between_modules"] is True
    assert values["pipeline_model_parallel_size"] == 1 and values["tensor_model_parallel_size"] == 2
    assert values["expert_tensor_parallel_size"] == 1  # --llm-expt-tp None: `args.llm_expt_tp or 1`
    # skip_model_parallel_init=True: no initialize_model_parallel over the whole world
    assert values["initializes_model_parallel"] is False


def test_the_language_grid_s_flags_are_the_run_s_sizes(tmp_path) -> None:
    values = _values(_config(tmp_path, "--llm-pp 2 --llm-ep 2"))
    assert values["pipeline_model_parallel_size"] == 2 and values["expert_model_parallel_size"] == 2
    assert values["context_parallel_size"] == 1  # not given: the parser's default


def test_the_language_module_alone_has_no_bridge(tmp_path) -> None:
    assert _values(_config(tmp_path, "--llm-only"))["pipeline_batches_between_modules"] is False
    graph = "{LANGUAGE: []}"
    assert _values(_config(tmp_path, graph=graph))["pipeline_batches_between_modules"] is False


def test_a_graph_or_flag_not_known_statically_leaves_it_unknown(tmp_path) -> None:
    assert _values(_config(tmp_path, graph="load_graph()"))["pipeline_batches_between_modules"] is UNKNOWN
    assert _values(_config(tmp_path, '$(cat extra.txt)'))["pipeline_batches_between_modules"] is UNKNOWN


def test_an_entry_without_the_communicator_is_left_alone(tmp_path) -> None:
    config = _config(tmp_path)
    (tmp_path / "examples" / "mimo" / "provider.py").write_text("def build_communicator(args):\n    return None\n")
    config = parse_launch((tmp_path / "run.sh").read_text(), str(tmp_path / "run.sh"))
    read_mlm_mimo(config)
    assert "pipeline_batches_between_modules" not in config.entry_values


def test_detail_on_torch_2_10_hangs_the_exchange_between_modules(tmp_path) -> None:
    from auditor.config.derive import derive

    def fired(torch: str) -> bool:
        config = _config(tmp_path, "--llm-pp 1", prefix="export TORCH_DISTRIBUTED_DEBUG=DETAIL\n")
        read_entry(config)
        derived = derive(config, {"megatron-core": "0.17.0"}, None, torch)
        return any(f.detail.get("rule") == "torch.detail-unbatches" for f in derived.findings)

    assert fired("2.10.0")
    assert not fired("2.11.0")
