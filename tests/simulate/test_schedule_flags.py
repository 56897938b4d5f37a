"""The one list of schedule settings a simulated rank hands TransformerConfig
(auditor.simulate.schedule_flags), held to megatron-core's ModelParallelConfig as released
(megatron/core/model_parallel_config.py, megatron-core 0.17.0): every setting is a field of it,
and each default the plan falls back to is the field's own."""

from __future__ import annotations

import ast

from auditor.simulate.schedule_flags import SCHEDULE_FLAGS


def test_every_setting_is_a_config_field_with_the_default_the_plan_assumes(real_sources):
    path = real_sources["megatron-core"].root / "megatron/core/model_parallel_config.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    config = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelParallelConfig")
    fields = {s.target.id: s.value for s in config.body
              if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
    for key, default in SCHEDULE_FLAGS.items():
        assert key in fields, f"{key} is no field of ModelParallelConfig"
        if default is not None:
            assert ast.literal_eval(fields[key]) is default, key
