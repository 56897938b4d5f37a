"""An entry that passes `forward_only=True` to megatron-core's schedule through a mapping it
spells out, `forward_kwargs = {..., "forward_only": True, ...}` then
`fwd_bwd_function(forward_step_func=f, data_iterator=it, **forward_kwargs)`, directly or through
a helper of its own that forwards `**kwargs`: the call's `forward_only` is the mapping's.

After Megatron-Bridge (NVIDIA-NeMo/Megatron-Bridge, commit
067f987df03b8355b03192d88d70f1709fedf51a)
examples/conversion/compare_hf_and_megatron/compare.py: `_run_megatron_forward(fwd_bwd_function,
**kwargs)` calls `fwd_bwd_function(**kwargs)` (:372-375); `forward_kwargs = {"model": ...,
"num_microbatches": 1, "forward_only": True, ...}` (:935-942) reaches the schedule as
`fwd_bwd_function(forward_step_func=vlm_forward_step, data_iterator=iterator, **forward_kwargs)`
(:952-956) or `_run_megatron_forward(fwd_bwd_function, forward_step_func=inference_forward_step,
data_iterator=iterator, **forward_kwargs)` (:968-973); the provider's pipeline size is `pp =
args.pp` (:707, :721), `--pp` an argparse int defaulting to 1 (:1077).
examples/models/vlm/ernie_vl/conversion.sh:28-53 runs `convert.sh import`, compare.py at
`--tp 2 --pp 1 --ep 4` on 8 processes, `convert.sh export` and a round trip.
"""

from __future__ import annotations

import pytest

from auditor.config.launch import parse_launch

COMPARE = '''"""HF vs Megatron logits (compare.py's shape)."""
import argparse

from megatron.bridge import AutoBridge
from megatron.core.pipeline_parallel.schedules import get_forward_backward_func


def _run_megatron_forward(fwd_bwd_function, **kwargs):
    return fwd_bwd_function(**kwargs)


def main(args):
    tp, pp = args.tp, args.pp
    bridge = AutoBridge.from_hf_pretrained(args.hf_model_path)
    model_provider = bridge.to_megatron_provider(load_weights=True)
    model_provider.tensor_model_parallel_size = tp
    model_provider.pipeline_model_parallel_size = pp
    model = model_provider.provide_distributed_model(wrap_with_ddp=False)
    fwd_bwd_function = get_forward_backward_func()
    forward_kwargs = {
        "model": model,
        "num_microbatches": 1,
        "forward_only": True,
        "seq_length": 8,
        "micro_batch_size": 1,
    }
    if args.vl:
        out = fwd_bwd_function(forward_step_func=None, data_iterator=None, **forward_kwargs)
    else:
        out = _run_megatron_forward(fwd_bwd_function, forward_step_func=None, data_iterator=None,
                                    **forward_kwargs)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--hf_model_path", type=str, required=True)
    parser.add_argument("--vl", action="store_true")
    parser.add_argument("--tp", type=int, default=1)
    parser.add_argument("--pp", type=int, default=1)
    main(parser.parse_args())
'''
FORWARD_ONLY = '        "forward_only": True,\n'


@pytest.fixture(autouse=True)
def _tree_root(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # the launch line's entry is relative: run from the tree root


def _config(tmp_path, code: str, flags: str):
    folder = tmp_path / "examples" / "conversion" / "compare_hf_and_megatron"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "compare.py").write_text(code)
    script = tmp_path / "conversion.sh"
    script.write_text("set -e\nuv run python -m torch.distributed.run --nproc_per_node=8 \\\n"
                      "    examples/conversion/compare_hf_and_megatron/compare.py \\\n"
                      f"    --hf_model_path baidu/x {flags}\n")
    return parse_launch(script.read_text(), str(script))


def _not_pipeline(config) -> list[str]:
    return [d.message for d in config.diagnostics if d.kind == "launch.not-pipeline"]


def test_forward_only_in_a_spelled_out_mapping_at_one_stage_is_no_pipeline_run(tmp_path) -> None:
    said = _not_pipeline(_config(tmp_path, COMPARE, "--tp 2 --pp 1"))
    assert len(said) == 1 and "forward_only=True at compare.py:" in said[0] and "pipeline size 1" in said[0], said


def test_at_two_stages_the_forward_only_schedule_is_scanned(tmp_path) -> None:
    config = _config(tmp_path, COMPARE, "--tp 2 --pp 2")
    assert config.entry_values["schedule_forward_only"][0] is True
    assert config.entry_values["schedule_microbatches"][0] == 1
    assert not _not_pipeline(config)


def test_a_mapping_without_forward_only_leaves_a_training_step(tmp_path) -> None:
    config = _config(tmp_path, COMPARE.replace(FORWARD_ONLY, ""), "--pp 1")
    assert config.entry_values.get("schedule_forward_only", (None,))[0] is not True
    assert not _not_pipeline(config)


def test_a_name_also_bound_to_a_mapping_without_it_decides_nothing(tmp_path) -> None:
    """Every binding of the `**` name must give forward_only: one that does not trains."""
    code = COMPARE.replace("    if args.vl:\n",
                           "    if args.train:\n        forward_kwargs = {\"model\": model, \"num_microbatches\": 4}\n"
                           "    if args.vl:\n")
    config = _config(tmp_path, code, "--pp 1")
    assert config.entry_values.get("schedule_forward_only", (None,))[0] is not True
    assert not _not_pipeline(config)


def test_forward_only_false_in_the_mapping_is_a_training_step(tmp_path) -> None:
    config = _config(tmp_path, COMPARE.replace(FORWARD_ONLY, '        "forward_only": False,\n'), "--pp 1")
    assert config.entry_values.get("schedule_forward_only", (None,))[0] is not True
    assert not _not_pipeline(config)


def test_a_mapping_changed_before_its_call_decides_nothing(tmp_path) -> None:
    """`forward_kwargs.update(forward_only=args.train)` may make the call a training step."""
    code = COMPARE.replace("    if args.vl:\n", "    forward_kwargs.update(forward_only=args.train)\n    if args.vl:\n")
    config = _config(tmp_path, code, "--pp 1")
    assert config.entry_values.get("schedule_forward_only", (None,))[0] is not True
    assert not _not_pipeline(config)


HELPER = "def _run_megatron_forward(fwd_bwd_function, **kwargs):\n    return fwd_bwd_function(**kwargs)\n"
POPS = ("def _run_megatron_forward(fwd_bwd_function, **kwargs):\n    kwargs.pop(\"forward_only\")\n"
        "    return fwd_bwd_function(**kwargs)\n")
SWALLOWS = ("def _run_megatron_forward(fwd_bwd_function, forward_only=None, **kwargs):\n"
            "    return fwd_bwd_function(**kwargs)\n")
EXPLICIT = ("out = _run_megatron_forward(fwd_bwd_function, forward_step_func=None, data_iterator=None,\n"
            "                                    model=model, num_microbatches=1, forward_only=True)")


def _helper_only(code: str, helper: str, explicit: bool) -> str:
    """compare.py with the helper as given, its one call of the schedule the helper's call (the
    direct `fwd_bwd_function(...)` branch gone), passing forward_only by mapping or by name."""
    code = code.replace(HELPER, helper).replace(
        "    if args.vl:\n        out = fwd_bwd_function(forward_step_func=None, data_iterator=None, **forward_kwargs)\n"
        "    else:\n        out", "    out")
    code = code.replace("                                    **forward_kwargs)", "                                    **forward_kwargs)\n")
    if explicit:
        code = code.replace("out = _run_megatron_forward(fwd_bwd_function, forward_step_func=None, data_iterator=None,\n"
                            "                                    **forward_kwargs)", EXPLICIT)
    assert helper in code and "if args.vl" not in code and (EXPLICIT in code) is explicit
    return code


@pytest.mark.parametrize("explicit", [False, True], ids=["mapping", "by-name"])
def test_a_helper_passing_its_keywords_on_whole_keeps_forward_only(tmp_path, explicit: bool) -> None:
    said = _not_pipeline(_config(tmp_path, _helper_only(COMPARE, HELPER, explicit), "--pp 1"))
    assert len(said) == 1 and "pipeline size 1" in said[0], said


@pytest.mark.parametrize("helper", [POPS, SWALLOWS], ids=["pops", "swallows"])
@pytest.mark.parametrize("explicit", [False, True], ids=["mapping", "by-name"])
def test_a_helper_that_drops_forward_only_runs_a_training_step(tmp_path, helper: str, explicit: bool) -> None:
    """`kwargs.pop("forward_only")`, or a parameter named forward_only taking it out of
    `**kwargs`: the schedule gets its default, forward_only=False, a training step (review
    r47-what a10/a13: a false CLEAN at PP 2 under TORCH_DISTRIBUTED_DEBUG=DETAIL)."""
    for pp in (1, 2):
        config = _config(tmp_path, _helper_only(COMPARE, helper, explicit), f"--pp {pp}")
        assert config.entry_values.get("schedule_forward_only", (None,))[0] is not True, pp
        assert not _not_pipeline(config), pp
