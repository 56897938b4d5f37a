"""config/entry_stores.py: the stores an entry makes that no reader of one attribute sees by name.
Shapes from Megatron-Bridge@067f987df0 src/megatron/bridge/inference/text_generation.py:140
(`setattr(model_provider, key, value)` over a dict) and examples/conversion/
hf_to_megatron_generate_text.py (`**_hf_revision_kwargs(...)`, a dict the file spells out)."""

from __future__ import annotations

import ast

from auditor.config.entry_stores import nested_attr_stores, opaque_keywords, unnamed_stores


def nodes(text: str) -> tuple[ast.Module, list[ast.AST]]:
    tree = ast.parse(text)
    return tree, list(ast.walk(tree))


def test_a_computed_name_or_a_namespace_store_is_unnamed():
    _, body = nodes("for k, v in o.items():\n    setattr(p, k, v)\n"
                    "vars(p)['pp'] = 2\np.__dict__.update(o)\nsetattr(p, 'tp', 1)\n")
    assert sorted(unnamed_stores(body)) == [2, 3, 4]


def test_an_attribute_inside_a_tuple_target_is_a_nested_store():
    _, body = nodes("p.tp, p.pipeline_model_parallel_size = 1, 2\np.pipeline_model_parallel_size = 4\n")
    assert nested_attr_stores(body, "pipeline_model_parallel_size") == [1]


def test_keywords_the_file_spells_out_are_not_opaque():
    tree, body = nodes("def kw():\n    return {'revision': None}\n"
                       "def main(o):\n    build(**kw())\n    build(**o)\n")
    main = tree.body[1]
    assert opaque_keywords(list(ast.walk(main)), main, tree) == [5]
