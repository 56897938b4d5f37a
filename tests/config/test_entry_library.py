"""An entry that hands its parallel sizes to a model loader of its checkout's own src/, which
setattr()s them on the provider from its keyword arguments: the sizes are read through that call;
at a pipeline size of 1 an entry generating with megatron-core's inference engine is NOT A
PIPELINE RUN.

After Megatron-Bridge (NVIDIA-NeMo/Megatron-Bridge, commit
067f987df03b8355b03192d88d70f1709fedf51a) scripts/inference/text_generation.py: argparse groups
from src/megatron/bridge/inference/text_generation.py (`add_parallelism_args`, :443-458), then
`load_bridge_model(tp=args.tp, pp=args.pp, ...)` (:212-226), which calls
`_apply_provider_parallelism(provider, **parallelism)` with `parallelism = dict(tp=tp, pp=pp)` on
both branches (:234-265); that function starts `setattr(provider, "pipeline_model_parallel_size",
pp)` (:140-141). examples/models/falcon_h1/inference.sh:27-32 launches it with `--tp 1 --pp 1`.
"""

from __future__ import annotations

import ast
from pathlib import Path

from auditor.config.entry_inference import read_inference_entry
from auditor.config.entry_library import library_sizes
from auditor.config.entry_script import argparse_options
from auditor.config.expr import UNKNOWN
from auditor.config.launch import parse_launch

ENTRY = '''"""Offline text generation (scripts/inference/text_generation.py's shape)."""
import argparse

from megatron.core.inference.engines.static_engine import StaticInferenceEngine
from megatron.bridge.inference.text_generation import add_parallelism_args, load_bridge_model


def main():
    parser = argparse.ArgumentParser()
    add_parallelism_args(parser)
    parser.add_argument("--use-legacy-generation", action="store_true")
    args = parser.parse_args()
    model = load_bridge_model(hf_model_path="x", tp=args.tp, pp=args.pp)
    StaticInferenceEngine(model).generate(prompts=["hi"])


if __name__ == "__main__":
    main()
'''

LIBRARY = '''"""The loader (src/megatron/bridge/inference/text_generation.py's shape)."""
from megatron.bridge import AutoBridge


def _apply_provider_parallelism(provider, *, tp, pp):
    setattr(provider, "tensor_model_parallel_size", tp)
    setattr(provider, "pipeline_model_parallel_size", pp)


def _overrides(provider, *, tp, pp):
    return {"tensor_model_parallel_size": tp, "pipeline_model_parallel_size": pp}


def load_bridge_model(*, hf_model_path, tp, pp, megatron_model_path=None):
    parallelism = dict(tp=tp, pp=pp)
    bridge = AutoBridge.from_hf_pretrained(hf_model_path)
    if megatron_model_path:
        provider = bridge.to_megatron_provider(load_weights=False)
        _apply_provider_parallelism(provider, **parallelism)
        return bridge.load_megatron_model(megatron_model_path, mp_overrides=_overrides(provider, **parallelism))
    provider = bridge.to_megatron_provider(load_weights=True)
    _apply_provider_parallelism(provider, **parallelism)
    return provider.provide_distributed_model()


def add_parallelism_args(parser):
    group = parser.add_argument_group("Parallelism")
    group.add_argument("--tp", type=int, default=1)
    group.add_argument("--pp", type=int, default=1)
    return parser
'''


def _config(tmp_path, flags: str, library: str = LIBRARY, entry: str = ENTRY):
    (tmp_path / "scripts" / "inference").mkdir(parents=True, exist_ok=True)
    (tmp_path / "scripts" / "inference" / "text_generation.py").write_text(entry)
    lib = tmp_path / "src" / "megatron" / "bridge" / "inference"
    lib.mkdir(parents=True, exist_ok=True)
    (lib / "text_generation.py").write_text(library)
    script = tmp_path / "inference.sh"
    script.write_text("uv run python -m torch.distributed.run --nproc_per_node=4 "
                      f"scripts/inference/text_generation.py {flags}\n")
    return parse_launch(script.read_text(), str(script))


def _not_pipeline(config) -> list[str]:
    return [d.message for d in config.diagnostics if d.kind == "launch.not-pipeline"]


def test_the_flag_reaches_the_provider_through_the_checkout_s_loader(tmp_path) -> None:
    config = _config(tmp_path, "--tp 2 --pp 2")
    value, why, _ = config.entry_values["pipeline_model_parallel_size"]
    assert value == 2 and "--pp 2" in why and "load_bridge_model" in why
    assert config.entry_values["tensor_model_parallel_size"][0] == 2
    assert not _not_pipeline(config)  # two stages: the engine sends activations between them


def test_at_pp_1_the_inference_engine_is_not_a_pipeline_run(tmp_path) -> None:
    config = _config(tmp_path, "--tp 1")  # --pp left out: add_parallelism_args' default, 1
    assert config.entry_values["pipeline_model_parallel_size"][0] == 1
    said = _not_pipeline(config)
    assert said and "inference engine" in said[0] and "pipeline size 1" in said[0]


def test_a_setter_on_one_branch_only_sets_nothing_known(tmp_path) -> None:
    lib = LIBRARY.replace('''    provider = bridge.to_megatron_provider(load_weights=True)
    _apply_provider_parallelism(provider, **parallelism)''', '''    provider = bridge.to_megatron_provider(load_weights=True)''')
    config = _config(tmp_path, "--pp 1", library=lib)
    assert "pipeline_model_parallel_size" not in config.entry_values
    assert not _not_pipeline(config)


def test_a_key_the_library_writes_from_another_value_is_not_read(tmp_path) -> None:
    lib = LIBRARY.replace('"pipeline_model_parallel_size": pp}', '"pipeline_model_parallel_size": 4}')
    config = _config(tmp_path, "--pp 1", library=lib)
    assert "pipeline_model_parallel_size" not in config.entry_values
    assert not _not_pipeline(config)


def test_a_store_by_a_name_not_written_reads_nothing(tmp_path) -> None:
    lib = LIBRARY.replace('''    setattr(provider, "pipeline_model_parallel_size", pp)
''', '''    setattr(provider, "pipeline_model_parallel_size", pp)
    for k, v in OVERRIDES.items():
        setattr(provider, k, v)
''')
    config = _config(tmp_path, "--pp 1", library=lib)
    assert "pipeline_model_parallel_size" not in config.entry_values


def test_a_value_not_read_statically_is_unknown(tmp_path) -> None:
    entry = ENTRY.replace("pp=args.pp)", "pp=int(args.pp))")
    config = _config(tmp_path, "--pp 1", entry=entry)
    assert config.entry_values["pipeline_model_parallel_size"][0] is UNKNOWN
    assert not _not_pipeline(config)


def test_an_entry_that_also_runs_the_schedule_gets_no_note(tmp_path) -> None:
    entry = ENTRY.replace("import argparse\n", "import argparse\nfrom megatron.core.pipeline_parallel.schedules "
                                                "import get_forward_backward_func\n")
    config = _config(tmp_path, "--pp 1", entry=entry)
    assert config.entry_values["pipeline_model_parallel_size"][0] == 1
    assert not _not_pipeline(config)


def test_the_adders_options_join_the_entry_s_and_name_the_loader(tmp_path) -> None:
    config = _config(tmp_path, "--pp 2")
    entry = tmp_path / "scripts" / "inference" / "text_generation.py"
    tree = ast.parse(entry.read_text())
    options = argparse_options(tree)
    assert "pp" not in options
    found = library_sizes(config, Path(entry), tree, options, ["pipeline_model_parallel_size"])
    assert options["pp"]["default"] == 1  # add_parallelism_args, which the entry calls
    value, why, line = found["pipeline_model_parallel_size"]
    assert (value, line) == (2, 13) and "_apply_provider_parallelism" not in why


def test_no_note_where_the_pipeline_size_is_unknown(tmp_path) -> None:
    config = _config(tmp_path, "--pp ${PP}")
    read_inference_entry(config)
    assert not _not_pipeline(config)


DRAFT = "    load_draft(hf_model_path=\"d\", tp=1, pp=2)\n    StaticInferenceEngine(model)"


def test_a_second_name_for_the_loader_is_read_too(tmp_path) -> None:
    """h33-review7 hole 4 (mbC/i8_alias.sh): a draft model loaded at PP 2 through an alias."""
    entry = ENTRY.replace("import add_parallelism_args, load_bridge_model\n",
                          "import add_parallelism_args, load_bridge_model\n"
                          "from megatron.bridge.inference.text_generation import load_bridge_model as load_draft\n"
                          ).replace("    StaticInferenceEngine(model)", DRAFT)
    config = _config(tmp_path, "--pp 1", entry=entry)
    assert config.entry_values["pipeline_model_parallel_size"][0] is UNKNOWN
    assert not _not_pipeline(config)


def test_a_loader_reached_through_its_module_is_unknown(tmp_path) -> None:
    """h33-review7 hole 4 (mbB/i7_second_load.sh): `_tg.load_bridge_model(..., pp=2)`."""
    entry = ENTRY.replace("import add_parallelism_args, load_bridge_model\n",
                          "import add_parallelism_args, load_bridge_model\n"
                          "from megatron.bridge.inference import text_generation as _tg\n"
                          ).replace("    StaticInferenceEngine(model)",
                                    "    _tg.load_bridge_model(hf_model_path=\"d\", tp=1, pp=2)\n"
                                    "    StaticInferenceEngine(model)")
    config = _config(tmp_path, "--pp 1", entry=entry)
    assert config.entry_values["pipeline_model_parallel_size"][0] is UNKNOWN
    assert not _not_pipeline(config)


def test_a_loader_passed_on_is_unknown(tmp_path) -> None:
    entry = ENTRY.replace("import argparse\n", "import argparse\nimport functools\n").replace(
        "    StaticInferenceEngine(model)", "    functools.partial(load_bridge_model, pp=2)()\n"
                                            "    StaticInferenceEngine(model)")
    config = _config(tmp_path, "--pp 1", entry=entry)
    assert config.entry_values["pipeline_model_parallel_size"][0] is UNKNOWN
