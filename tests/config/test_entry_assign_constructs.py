"""A local module's `**` call that only constructs a new object writes no attribute of the model
provider the entry script configured: the sizes the script sets stay read.

Megatron-Bridge (NVIDIA-NeMo/Megatron-Bridge, commit 067f987df03b8355b03192d88d70f1709fedf51a)
examples/conversion/hf_to_megatron_generate_vlm.py imports examples/conversion/vlm_generate_utils.py
(:37-44), whose patch_kimi_vision_processor defines a `@classmethod` `_patched_from_dict(cls,
config_dict, **kwargs)` returning `cls(media_proc_cfg=media_proc_cfg, **config, **kwargs)` (:54-60):
a new processor built from a config dict (the keyword `media_proc_cfg` an item taken out of the
dict it hands), no store into the provider the script sets
`pipeline_model_parallel_size = pp` on (:204, :235). examples/models/exaone/exaone45/inference.sh
runs it with `--tp 4 --pp 1` (:19-27): forward only (:373) at one stage, NOT A PIPELINE RUN.
A `**` call into anything else (a function that may be handed the provider) still writes every
key, as before.
"""

from __future__ import annotations

from auditor.config.expr import UNKNOWN
from tests.config.test_entry_assign import GENERATE, _config, _not_pipeline

PP = "pipeline_model_parallel_size"

# vlm_generate_utils.py:38-63's shape: a classmethod patched onto a class not read, constructing.
PATCH = '''"""Shared utilities for generation scripts."""


def patch_processor(klass):
    @classmethod
    def _patched_from_dict(cls, config_dict, **kwargs):
        config = config_dict.copy()
        for key in list(kwargs.keys()):
            config.pop(key, None)
        media_proc_cfg = config.pop("media_proc_cfg", {})
        return cls(media_proc_cfg=media_proc_cfg, **config, **kwargs)

    klass.from_dict = _patched_from_dict
'''

# A class the module defines, built from a dict: its metaclass, decorators or methods may write
# any object (h33-review3 H1-H3), so it is not read as a new object.
OPTIONS = '''

class Options:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


def options(config):
    return Options(**config)
'''

# The same module where the `**` call may write an object it is handed.
APPLY = PATCH + '''

def apply(provider, config):
    provider.update(**config)
'''

USES = GENERATE.replace("import argparse\n", "import argparse\n\nimport gen_utils\n")


def _with_utils(tmp_path, utils: str):
    folder = tmp_path / "examples" / "conversion"
    folder.mkdir(parents=True)
    (folder / "gen_utils.py").write_text(utils)
    return _config(tmp_path, USES, "--tp 1 --pp 1")


def test_a_local_module_constructing_with_keywords_leaves_the_size_read(tmp_path) -> None:
    config = _with_utils(tmp_path, PATCH)
    assert config.entry_values[PP][0] == 1, config.entry_values[PP]
    assert _not_pipeline(config)


def test_a_class_the_module_defines_built_from_a_dict_may_write_any_size(tmp_path) -> None:
    config = _with_utils(tmp_path, PATCH + OPTIONS)
    assert config.entry_values[PP][0] is UNKNOWN and not _not_pipeline(config)


def test_a_local_module_calling_with_keywords_on_a_handed_object_may_write_it(tmp_path) -> None:
    config = _with_utils(tmp_path, APPLY)
    assert config.entry_values[PP][0] is UNKNOWN and not _not_pipeline(config)
    assert "gen_utils.py:" in config.entry_values[PP][1]


def test_a_provider_the_local_module_builds_keeps_its_keywords(tmp_path) -> None:
    """The script's provider bound from the module's constructing call: that object is written."""
    folder = tmp_path / "examples" / "conversion"
    folder.mkdir(parents=True)
    (folder / "gen_utils.py").write_text(PATCH + OPTIONS)
    code = USES.replace("bridge.to_megatron_provider(load_weights=True)", "gen_utils.options({})")
    assert code != USES
    config = _config(tmp_path, code, "--tp 1 --pp 1")
    assert config.entry_values[PP][0] is UNKNOWN and not _not_pipeline(config)


# hf_to_megatron_generate_vlm.py:109-132: a forward step filling its keyword dict by a loop over
# literal key names, then `model(**forward_args)`.
STEP = '''

def forward_step(batch, model):
    forward_args = {"input_ids": batch["tokens"]}
    for key in ("pixel_values", "image_grid_thw"):
        if key in batch:
            forward_args[key] = batch[key]
    return model(**forward_args)
'''


def test_keys_a_loop_over_literal_names_adds_are_spelled_out(tmp_path) -> None:
    config = _config(tmp_path, GENERATE.replace("\n\ndef main(args):", STEP + "\n\ndef main(args):"), "--tp 1 --pp 1")
    assert config.entry_values[PP][0] == 1, config.entry_values[PP]


def test_keys_a_loop_over_names_not_written_adds_may_be_any(tmp_path) -> None:
    step = STEP.replace('("pixel_values", "image_grid_thw")', "batch")
    config = _config(tmp_path, GENERATE.replace("\n\ndef main(args):", step + "\n\ndef main(args):"), "--tp 1 --pp 1")
    assert config.entry_values[PP][0] is UNKNOWN


def test_a_constructor_handed_an_object_may_write_it(tmp_path) -> None:
    """`Options(provider, **config)`: the new object's code is handed something to write."""
    config = _with_utils(tmp_path, PATCH + OPTIONS + "\n\ndef wrap(provider, config):\n    return Options(provider, **config)\n")
    assert config.entry_values[PP][0] is UNKNOWN and not _not_pipeline(config)


def _handed_provider(tmp_path, taken: str):
    """vlm_generate_utils.py:54-60's shape with the provider handed in and `taken` the item taken
    out of the dict (h33-review6 H3)."""
    utils = (PATCH.replace("def patch_processor(klass):", "def patch_processor(klass, provider):")
             .replace('config.pop("media_proc_cfg", {})', taken))
    folder = tmp_path / "examples" / "conversion"
    folder.mkdir(parents=True)
    (folder / "gen_utils.py").write_text(utils)
    code = USES.replace("        model = model_provider.provide_distributed_model",
                        "        gen_utils.patch_processor(Processor, model_provider)\n"
                        "        model = model_provider.provide_distributed_model")
    assert code != USES
    return _config(tmp_path, code, "--tp 1 --pp 1")


def test_an_item_taken_out_with_the_provider_as_default_may_hand_the_provider(tmp_path) -> None:
    for i, taken in enumerate(('config.pop("media_proc_cfg", provider)', 'config.get("media_proc_cfg", provider)',
                               'config.pop(key_name)', 'config.pop("media_proc_cfg", default=provider)')):
        (tmp_path / str(i)).mkdir()
        config = _handed_provider(tmp_path / str(i), taken)
        assert config.entry_values[PP][0] is UNKNOWN and not _not_pipeline(config), taken


def test_an_item_taken_out_with_a_literal_key_and_default_keeps_the_size_read(tmp_path) -> None:
    for i, taken in enumerate(('config.pop("media_proc_cfg", None)', 'config.get("media_proc_cfg")',
                               'config["media_proc_cfg"]')):
        (tmp_path / str(i)).mkdir()
        config = _handed_provider(tmp_path / str(i), taken)
        assert config.entry_values[PP][0] == 1, (taken, config.entry_values[PP])
