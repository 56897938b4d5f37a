"""Holes in the `**`-call exemption of an entry's local modules (h33-review3 H1-H6): each is a
script at a real pipeline size 2 that must not read NOT A PIPELINE RUN.

Modelled on Megatron-Bridge (NVIDIA-NeMo/Megatron-Bridge, commit
067f987df03b8355b03192d88d70f1709fedf51a) examples/conversion/hf_to_megatron_generate_vlm.py and
its local module examples/conversion/vlm_generate_utils.py, whose patched classmethod
`_patched_from_dict` returns `cls(media_proc_cfg=media_proc_cfg, **config, **kwargs)` (:54-60):
the one constructing shape exempted. A provider handed to a local class by keyword
(`ProviderOverrides(provider=p, **overrides)`, which calls the provider's
apply_overrides_and_finalize, src/megatron/bridge/models/model_provider.py:143), written by
`object.__setattr__`, or reached through a metaclass's `__call__` may have any size written.
"""

from __future__ import annotations

import ast
import textwrap

from auditor.config.entry_stores import opaque_keywords, unnamed_stores
from auditor.config.expr import UNKNOWN
from auditor.config.launch import parse_launch
from tests.config.test_entry_assign import GENERATE, _config, _not_pipeline
from tests.config.test_entry_assign_constructs import PATCH, _with_utils

PP = "pipeline_model_parallel_size"

# H1: a local class handed the provider by keyword writes every override on it.
CTORKW = PATCH + '''

class ProviderOverrides:
    def __init__(self, provider=None, **overrides):
        self.provider = provider
        if provider is not None:
            provider.apply_overrides_and_finalize(overrides=overrides)


def apply_provider_overrides(model_provider, overrides):
    return ProviderOverrides(provider=model_provider, **overrides)
'''

# H2: the frozen-dataclass idiom writes past a __setattr__ guard.
DUNDER = PATCH + '''

def apply_provider_overrides(model_provider, overrides):
    for key, value in overrides.items():
        object.__setattr__(model_provider, key, value)
'''

# H3: a metaclass's __call__ returns a registered provider it wrote, not a new object.
META = PATCH + '''

_ACTIVE = {}


class _Applies(type):
    def __call__(cls, **overrides):
        provider = _ACTIVE["provider"]
        provider.apply_overrides_and_finalize(overrides=overrides)
        return provider


class ProviderOverrides(metaclass=_Applies):
    pass


def apply_provider_overrides(model_provider, overrides):
    _ACTIVE["provider"] = model_provider
    return ProviderOverrides(**overrides)
'''

# A classmethod of a class the module defines (not a patched one): `cls` is that class, whose
# constructor is read as the module's code, not a new object of a class not read.
IN_CLASS = PATCH + '''

class Overrides:
    @classmethod
    def apply(cls, config):
        return cls(**config)
'''

# The patched shape, but handed the provider by keyword.
PATCH_KW = PATCH + '''

def patch_other(klass, provider):
    @classmethod
    def _from(cls, config):
        return cls(provider=provider, **config)

    klass.from_config = _from
'''


def test_a_constructor_handed_the_provider_by_keyword_may_write_it(tmp_path) -> None:
    config = _with_utils(tmp_path, CTORKW)
    assert config.entry_values[PP][0] is UNKNOWN and not _not_pipeline(config)


def test_object_setattr_with_a_name_not_written_may_write_any_size(tmp_path) -> None:
    config = _with_utils(tmp_path, DUNDER)
    assert config.entry_values[PP][0] is UNKNOWN and not _not_pipeline(config)
    assert "gen_utils.py:" in config.entry_values[PP][1]


def test_a_class_with_a_metaclass_is_no_new_object(tmp_path) -> None:
    config = _with_utils(tmp_path, META)
    assert config.entry_values[PP][0] is UNKNOWN and not _not_pipeline(config)


def test_cls_of_a_classmethod_in_a_class_body_is_not_exempt(tmp_path) -> None:
    config = _with_utils(tmp_path, IN_CLASS)
    assert config.entry_values[PP][0] is UNKNOWN and not _not_pipeline(config)


def test_the_patched_shape_handed_a_name_by_keyword_is_not_exempt(tmp_path) -> None:
    config = _with_utils(tmp_path, PATCH_KW)
    assert config.entry_values[PP][0] is UNKNOWN and not _not_pipeline(config)


def test_dunder_setattr_is_a_store_by_a_name_not_written() -> None:
    tree = ast.parse("object.__setattr__(p, k, v)\np.__setattr__(k, v)\n")
    assert unnamed_stores(list(ast.walk(tree))) == [1, 2]


def test_an_override_forwarding_to_super_setattr_adds_no_store() -> None:
    """ChatLearn@b7af31a972 chatlearn/utils/arguments.py:155-158: the `x.name = v` that calls the
    override is the store, read by its name."""
    tree = ast.parse("class A:\n    def __setattr__(self, name, value):\n        super().__setattr__(name, value)\n"
                     "    def set(self, k, v):\n        super().__setattr__(k, v)\n")
    assert unnamed_stores(list(ast.walk(tree))) == [5]


# H4: a pipeline size reaching the keyword dict through a loop over literal key names.
LOOP = '''

def sized(provider, sizes):
    parallel = {}
    for key in ("tensor_model_parallel_size", "pipeline_model_parallel_size"):
        if key in sizes:
            parallel[key] = sizes[key]
    return provider.copy_with(**parallel)
'''


def test_a_loop_over_a_size_key_may_write_that_size(tmp_path) -> None:
    code = GENERATE.replace("\n\ndef main(args):", LOOP + "\n\ndef main(args):")
    config = _config(tmp_path, code, "--tp 1 --pp 1")
    assert config.entry_values[PP][0] is UNKNOWN and not _not_pipeline(config)


def _opaque(code: str) -> list[int]:
    tree = ast.parse(textwrap.dedent(code))
    scope = tree.body[0]
    return opaque_keywords(list(ast.walk(scope)), scope, tree)


# H5: the loop name bound otherwise too: the key is not only a literal of the loop.
def test_a_loop_name_that_is_also_a_parameter_is_not_a_literal_key() -> None:
    assert _opaque('''
        def overrides_for(args, key=None, value=None):
            d = {}
            if key is not None:
                d[key] = value
            for key in ("input_ids",):
                d[key] = args.x
            return Foo(**d)
        ''') == [8]


def test_a_loop_name_bound_by_except_import_or_match_is_not_a_literal_key() -> None:
    body = '''
        def f(args):
            d = {}
            BIND
            d[key] = 1
            for key in ("input_ids",):
                d[key] = args.x
            return Foo(**d)
        '''
    for bind in ("import key", "from m import key", "try:\n                pass\n            except E as key:\n"
                 "                pass", "match args:\n                case [*key]:\n                    pass",
                 "match args:\n                case {'a': key}:\n                    pass"):
        assert _opaque(body.replace("BIND", bind)), bind


def test_the_literal_loop_alone_stays_spelled() -> None:
    assert _opaque('''
        def f(args):
            d = {}
            for key in ("input_ids",):
                d[key] = args.x
            return Foo(**d)
        ''') == []



# H6: a `cd` before the command; the conversion-name rule holds only for a file read.
def _cd_launch(tmp_path, code: str | None, cd: str | None):
    folder = tmp_path / ("checkout" if cd else "") / "examples" / "conversion"
    folder.mkdir(parents=True)
    if code is not None:
        (folder / "hf_to_megatron_generate_text.py").write_text(code)
    script = tmp_path / "inference.sh"
    script.write_text(("" if cd is None else f"cd {cd}\n") + "uv run python -m torch.distributed.run --nproc_per_node=4 "
                      "examples/conversion/hf_to_megatron_generate_text.py --hf_model_path x/y --tp 2 --pp 2\n")
    return parse_launch(script.read_text(), str(script))


def test_a_generate_script_after_a_cd_is_no_conversion(tmp_path) -> None:
    for cd in ("checkout", str(tmp_path / "checkout")):
        config = _cd_launch(tmp_path / cd.replace("/", "_"), GENERATE, cd)
        assert not any("conversion" in m for m in _not_pipeline(config)), (cd, _not_pipeline(config))


def test_a_conversion_name_of_a_file_not_read_is_not_decided_by_name(tmp_path) -> None:
    config = _cd_launch(tmp_path, None, "elsewhere")
    assert not _not_pipeline(config), _not_pipeline(config)


def test_a_conversion_script_read_naming_no_schedule_is_no_pipeline_run(tmp_path) -> None:
    config = _cd_launch(tmp_path, "def main(model):\n    model.train()\n", None)
    assert any("conversion" in m for m in _not_pipeline(config)), _not_pipeline(config)
