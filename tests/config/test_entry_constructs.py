"""Which `**` calls only build a new object (config/entry_constructs.py), unit by unit: the one
shape Megatron-Bridge examples/conversion/vlm_generate_utils.py:54-60 (067f987df0) has, and the
shapes a hostile review (h33-review3 H1-H3) showed may write the provider."""

from __future__ import annotations

import ast

import pytest

from auditor.config.entry_constructs import constructs

PATCHED = '''
@classmethod
def from_dict(cls, config, **kwargs):
    media_proc_cfg = config.pop("media_proc_cfg", {})
    return CALL
'''


def _judge(source: str, call: str) -> bool:
    tree = ast.parse(source.replace("CALL", call))
    scope = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
    node = next(n for n in ast.walk(scope) if isinstance(n, ast.Call) and ast.unparse(n) == call)
    return constructs(node, scope, tree)


def test_the_patched_classmethod_builds_a_new_object() -> None:
    assert _judge(PATCHED, "cls(media_proc_cfg=media_proc_cfg, **config, **kwargs)")


@pytest.mark.parametrize("call", [
    "cls(provider, **config)",           # a positional argument may be the provider
    "cls(provider=provider, **config)",  # so may a keyword not taken out of the dicts
])
def test_an_argument_that_may_be_the_provider_counts_as_a_write(call: str) -> None:
    assert not _judge(PATCHED, call)


def test_the_same_method_in_a_class_body_counts_as_a_write() -> None:
    assert not _judge("class P:\n" + "\n".join("    " + line for line in PATCHED.splitlines()),
                      "cls(**config, **kwargs)")
