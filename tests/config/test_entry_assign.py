"""A Python entry with its own argparse that sets the model config's parallel sizes itself: the
run's sizes are read from the entry file (its flags, their argparse defaults, the attributes they
set), never restated by hand.

After Megatron-Bridge (NVIDIA-NeMo/Megatron-Bridge, commit
067f987df03b8355b03192d88d70f1709fedf51a) examples/conversion/hf_to_megatron_generate_text.py:
`tp = args.tp; pp = args.pp` (:176-177), then on both branches of `if args.megatron_model_path:`
`model_provider.pipeline_model_parallel_size = pp` (:200, :258) and a `mp_overrides` dict with
the same values (:229-235); `--pp` is `add_argument("--pp", type=int, default=1)` (:421).
examples/models/deepseek_v4/inference.sh:56-63 launches it with `--tp ${TP} --pp ${PP} --ep ${EP}`.
"""

from __future__ import annotations

import ast

import pytest

from auditor import rulebook, sources
from auditor.config.entry_assign import read_entry_assignments
from auditor.config.expr import UNKNOWN
from auditor.config.launch import parse_launch

GENERATE = '''"""Greedy generation from a Megatron model (hf_to_megatron_generate_text.py's shape)."""
import argparse

from megatron.bridge import AutoBridge
from megatron.core.pipeline_parallel.schedules import get_forward_backward_func


def main(args):
    tp = args.tp
    pp = args.pp
    bridge = AutoBridge.from_hf_pretrained(args.hf_model_path)
    if args.megatron_model_path:
        model_provider = bridge.to_megatron_provider(load_weights=False)
        model_provider.tensor_model_parallel_size = tp
        model_provider.pipeline_model_parallel_size = pp
        mp_overrides = {"tensor_model_parallel_size": tp, "pipeline_model_parallel_size": pp}
        model = bridge.load_megatron_model(args.megatron_model_path, mp_overrides=mp_overrides)
    else:
        model_provider = bridge.to_megatron_provider(load_weights=True)
        model_provider.tensor_model_parallel_size = tp
        model_provider.pipeline_model_parallel_size = pp
        model = model_provider.provide_distributed_model(wrap_with_ddp=False)
    return get_forward_backward_func()(forward_step_func=None, data_iterator=None, model=model,
                                       num_microbatches=1, forward_only=True, seq_length=8,
                                       micro_batch_size=1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--hf_model_path", type=str, required=True)
    parser.add_argument("--megatron_model_path", type=str, default=None)
    parser.add_argument("--tp", type=int, default=1)
    parser.add_argument("--pp", type=int, default=1)
    main(parser.parse_args())
'''


def _config(tmp_path, code: str, flags: str):
    conversion = tmp_path / "examples" / "conversion"
    conversion.mkdir(parents=True, exist_ok=True)
    (conversion / "hf_to_megatron_generate_text.py").write_text(code)
    script = tmp_path / "inference.sh"
    script.write_text("uv run python -m torch.distributed.run --nproc_per_node=4 "
                      f"examples/conversion/hf_to_megatron_generate_text.py --hf_model_path x/y {flags}\n")
    return parse_launch(script.read_text(), str(script))


def test_the_flag_the_launch_gives_sets_the_provider_s_pipeline_size(tmp_path) -> None:
    config = _config(tmp_path, GENERATE, "--tp 1 --pp 4")
    value, why, at = config.entry_values["pipeline_model_parallel_size"]
    assert value == 4
    assert "--pp 4" in why and at.endswith("hf_to_megatron_generate_text.py:15")
    assert config.entry_values["tensor_model_parallel_size"][0] == 1


def test_an_absent_flag_is_its_argparse_default(tmp_path) -> None:
    config = _config(tmp_path, GENERATE, "--tp 2")
    value, why, _ = config.entry_values["pipeline_model_parallel_size"]
    assert value == 1 and "default of --pp" in why
    assert config.entry_values["tensor_model_parallel_size"][0] == 2


def test_an_assignment_on_one_branch_only_decides_nothing(tmp_path) -> None:
    """On the other branch the provider keeps its own value (the Hugging Face config's): unknown."""
    code = GENERATE.replace("        model_provider.pipeline_model_parallel_size = pp\n"
                            "        model = model_provider.provide", "        model = model_provider.provide")
    config = _config(tmp_path, code, "--pp 2")
    assert config.entry_values["pipeline_model_parallel_size"][0] is UNKNOWN
    assert config.entry_values["tensor_model_parallel_size"][0] == 1


def test_assignments_that_disagree_decide_nothing(tmp_path) -> None:
    code = GENERATE.replace('"pipeline_model_parallel_size": pp}', '"pipeline_model_parallel_size": 2}')
    config = _config(tmp_path, code, "--pp 4")
    assert config.entry_values["pipeline_model_parallel_size"][0] is UNKNOWN


def test_a_value_not_known_statically_decides_nothing(tmp_path) -> None:
    code = GENERATE.replace("    pp = args.pp\n", "    pp = int(os.environ['PP'])\n")
    config = _config(tmp_path, code, "--pp 4")
    assert config.entry_values["pipeline_model_parallel_size"][0] is UNKNOWN


def test_a_flag_not_known_statically_decides_nothing(tmp_path) -> None:
    config = _config(tmp_path, GENERATE, "--pp ${PP}")
    assert config.entry_values["pipeline_model_parallel_size"][0] is UNKNOWN


def test_a_local_module_that_writes_the_size_too_decides_nothing(tmp_path) -> None:
    """A helper module of the script's own folder may set the size again after the script did."""
    code = GENERATE.replace("import argparse\n", "import argparse\n\nimport gen_utils\n")
    (tmp_path / "examples" / "conversion").mkdir(parents=True)
    (tmp_path / "examples" / "conversion" / "gen_utils.py").write_text(
        "def fix(provider):\n    provider.pipeline_model_parallel_size = 2\n")
    config = _config(tmp_path, code, "--pp 1")
    assert config.entry_values["pipeline_model_parallel_size"][0] is UNKNOWN
    assert config.entry_values["tensor_model_parallel_size"][0] == 1
    assert not _not_pipeline(config)


def test_a_megatron_lm_entry_is_not_read_so(tmp_path) -> None:
    """Megatron-LM's pretrain_gpt.py takes Megatron-LM's flags (its own parser): its sizes are
    the flags', not an entry's own argparse."""
    (tmp_path / "pretrain_gpt.py").write_text(GENERATE)
    script = tmp_path / "run.sh"
    script.write_text("torchrun --nproc_per_node=4 pretrain_gpt.py --pipeline-model-parallel-size 2\n")
    config = parse_launch(script.read_text(), str(script))
    before = dict(config.entry_values)
    read_entry_assignments(config)
    assert "pipeline_model_parallel_size" not in config.entry_values and config.entry_values == before


@pytest.mark.wheels
@pytest.mark.parametrize("version", ["0.12.0", "0.17.0", "0.19.2"])
def test_each_attribute_is_a_model_parallel_config_field(version) -> None:
    """rules/megatron-core.toml `[config_attribute]` names fields of ModelParallelConfig, the
    config the schedules read, in the oldest, the read and the newest release the rules cover."""
    data = rulebook.load("megatron-core").data["config_attribute"]
    text = (sources.resolve(f"megatron-core=={version}").root
            / "megatron/core/model_parallel_config.py").read_text(encoding="utf-8")
    cls = next(n for n in ast.parse(text).body if isinstance(n, ast.ClassDef) and n.name == "ModelParallelConfig")
    fields = {s.target.id for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
    assert set(data["keys"]) <= fields
    path, _, line = data["source"].rpartition(":")
    if version == "0.17.0":
        assert data["code"] in text.splitlines()[int(line) - 1]


def _not_pipeline(config) -> list[str]:
    return [d.message for d in config.diagnostics if d.kind == "launch.not-pipeline"]


def test_a_forward_only_entry_at_one_stage_is_no_pipeline_run(tmp_path) -> None:
    """hf_to_megatron_generate_text.py at --pp 1 (deepseek_v4/inference.sh's Flash default, :46-51):
    megatron-core runs forward_backward_no_pipelining, forward only: text generation, no P2P."""
    said = _not_pipeline(_config(tmp_path, GENERATE, "--tp 1 --pp 1"))
    assert len(said) == 1 and "forward_only=True" in said[0] and "pipeline size 1" in said[0], said


def test_the_argparse_default_of_one_stage_is_no_pipeline_run_either(tmp_path) -> None:
    assert _not_pipeline(_config(tmp_path, GENERATE, "--tp 2"))


def test_a_forward_only_entry_at_two_stages_is_a_pipeline_run(tmp_path) -> None:
    """At --pp 2 the forward-only schedule sends activations between the stages: scanned."""
    config = _config(tmp_path, GENERATE, "--pp 2")
    assert not _not_pipeline(config)
    assert config.entry_values["pipeline_model_parallel_size"][0] == 2


def test_an_entry_that_also_trains_is_a_pipeline_run(tmp_path) -> None:
    """A schedule call without forward_only=True (megatron-core's default, False) trains."""
    code = GENERATE.replace("    return get_forward_backward_func()(",
                            "    get_forward_backward_func()(forward_step_func=None, data_iterator=None, model=model,\n"
                            "                                num_microbatches=1, seq_length=8, micro_batch_size=1,\n"
                            "                                forward_only=args.eval_only)\n"
                            "    return get_forward_backward_func()(")
    assert not _not_pipeline(_config(tmp_path, code, "--pp 1"))


def test_an_unknown_pipeline_size_is_a_pipeline_run(tmp_path) -> None:
    assert not _not_pipeline(_config(tmp_path, GENERATE, "--pp ${PP}"))


@pytest.mark.wheels
@pytest.mark.parametrize("version", ["0.12.0", "0.17.0", "0.19.2"])
def test_forward_only_is_each_schedule_s_parameter_false_by_default(version) -> None:
    """rules/megatron-core.toml `[forward_only]`: every forward_backward_* of schedules.py takes
    it, False when left out (a training step)."""
    data = rulebook.load("megatron-core").data["forward_only"]
    text = (sources.resolve(f"megatron-core=={version}").root
            / "megatron/core/pipeline_parallel/schedules.py").read_text(encoding="utf-8")
    functions = [n for n in ast.parse(text).body
                 if isinstance(n, ast.FunctionDef) and n.name.startswith("forward_backward_")]
    assert len(functions) >= 3
    for f in functions:
        kw = dict(zip([a.arg for a in f.args.kwonlyargs], f.args.kw_defaults))
        assert isinstance(kw[data["param"]], ast.Constant) and kw[data["param"]].value is False, f.name
    if version == "0.17.0":
        assert data["code"] in text.splitlines()[int(data["source"].rpartition(":")[2]) - 1]


def test_an_entry_that_also_names_a_training_loop_is_a_pipeline_run(tmp_path) -> None:
    """Megatron-LM's pretrain() runs the schedule with forward_only=False inside the framework,
    where no keyword of the entry shows it."""
    code = GENERATE.replace("import argparse\n", "import argparse\n\nfrom megatron.training import pretrain\n")
    assert not _not_pipeline(_config(tmp_path, code, "--pp 1"))


def test_a_forward_only_false_in_a_kwargs_dict_is_a_pipeline_run(tmp_path) -> None:
    code = GENERATE.replace("    return get_forward_backward_func()(",
                            "    get_forward_backward_func()(**{'forward_only': False, 'model': model})\n"
                            "    return get_forward_backward_func()(")
    assert not _not_pipeline(_config(tmp_path, code, "--pp 1"))
