"""Every Policy a NeMo-RL run script builds picks its own backend (rules/nemo-rl.toml `roles`):
a distillation teacher on Megatron at two stages keeps the run (judged at its size on
megatron-core's defaults), though the student is on DTensor;
and a Hydra override of a section a YAML alias copied changes that section only.

Written after NVIDIA-NeMo/RL (commit 7ea279abfbeb698b092856d0dab61e7cf39bc909)
nemo_rl/algorithms/distillation.py:487 (`teacher_policy = Policy(config=teacher_config)`, built
from `master_config.teacher`, :224) and examples/configs/distillation_math.yaml (`policy:
&POLICY_BASE`, `teacher: <<: *POLICY_BASE`), launched as `uv run python
examples/run_distillation.py --config examples/configs/distillation_math.yaml`.
"""

from __future__ import annotations

import json
from pathlib import Path

from auditor import cli

ALIASED = """policy: &POLICY_BASE
  model_name: "Qwen/Qwen3-1.7B-Base"
  dtensor_cfg: &DTENSOR_BASE
    enabled: true
    tensor_parallel_size: 2
  megatron_cfg: &MEGATRON_BASE
    enabled: false
    pipeline_model_parallel_size: 2
teacher:
  <<: *POLICY_BASE
  model_name: "Qwen/Qwen3-4B"
  dtensor_cfg:
    <<: *DTENSOR_BASE
cluster:
  gpus_per_node: 8
  num_nodes: 1
"""
TEACHER_MEGATRON = """policy:
  dtensor_cfg:
    enabled: true
  megatron_cfg:
    enabled: false
teacher:
  dtensor_cfg:
    enabled: false
  megatron_cfg:
    enabled: true
    pipeline_model_parallel_size: {pp}
"""


def _scan(capsys, tmp_path: Path, script: str, config: str, text: str, overrides: str = "") -> dict:
    configs = tmp_path / "examples" / "configs"
    configs.mkdir(parents=True, exist_ok=True)
    (configs / config).write_text(text, encoding="utf-8")
    run = tmp_path / "run.sh"
    run.write_text(f"#!/bin/bash\nuv run python examples/{script} --config examples/configs/{config} {overrides}\n",
                   encoding="utf-8")
    cli.main(["scan", "--config", str(run), "--format", "json"])
    return json.loads(capsys.readouterr().out)


def _staged(doc: dict, role: str) -> None:
    """The run is judged at the size of `role`, which keeps it a pipeline run."""
    assert doc["verdict"]["status"] == "clean", doc["verdict"]["headline"]
    assert doc["config"]["effective"]["pipeline_model_parallel_size"] == 2
    assert f"trains its {role} " in doc["config"]["provenance"]["pipeline_model_parallel_size"]


def test_a_megatron_teacher_at_two_stages_keeps_the_run(capsys, tmp_path):
    _staged(_scan(capsys, tmp_path, "run_distillation.py", "t.yaml", TEACHER_MEGATRON.format(pp=2)), "teacher")


def test_the_teacher_at_one_stage_and_the_student_on_dtensor(capsys, tmp_path):
    """The Megatron teacher runs megatron-core at one stage: judged there, as any PP 1 run."""
    doc = _scan(capsys, tmp_path, "run_distillation.py", "t.yaml", TEACHER_MEGATRON.format(pp=1))
    assert doc["verdict"]["status"] == "clean", doc["verdict"]["headline"]
    assert doc["config"]["effective"]["pipeline_model_parallel_size"] == 1
    assert "trains its teacher " in doc["config"]["provenance"]["pipeline_model_parallel_size"]


def test_the_teacher_section_is_read_only_for_scripts_that_build_one(capsys, tmp_path):
    doc = _scan(capsys, tmp_path, "run_grpo.py", "t.yaml", TEACHER_MEGATRON.format(pp=2))
    assert doc["verdict"]["status"] == "not-pipeline", doc["verdict"]["headline"]


def test_an_override_of_an_aliased_section_changes_that_section_only(capsys, tmp_path):
    doc = _scan(capsys, tmp_path, "run_distillation.py", "distillation_math.yaml", ALIASED,
                "teacher.dtensor_cfg.enabled=false teacher.megatron_cfg.enabled=true")
    _staged(doc, "teacher")


def test_a_teacher_list_builds_one_policy_per_item(capsys, tmp_path):
    text = TEACHER_MEGATRON.format(pp=1).replace("teacher:", "teachers:\n  - dtensor_cfg: {enabled: true}\n  -").replace(
        "\n  dtensor_cfg:\n    enabled: false", "\n    dtensor_cfg:\n      enabled: false", 1)
    text = text.replace("  megatron_cfg:\n    enabled: true\n    pipeline_model_parallel_size: 1",
                        "    megatron_cfg:\n      enabled: true\n      pipeline_model_parallel_size: 2")
    doc = _scan(capsys, tmp_path, "run_xtoken_off_policy_distillation.py", "x.yaml", text)
    _staged(doc, "teachers[1]")


def test_a_student_undecided_beside_a_megatron_teacher_stays_undecided(capsys, tmp_path):
    """The teacher's stages make it a pipeline run, but the student's backend is not known."""
    text = TEACHER_MEGATRON.format(pp=2).replace("    enabled: true\n  megatron_cfg:\n    enabled: false",
                                                 "    enabled: true\n  megatron_cfg:\n    enabled: true", 1)
    doc = _scan(capsys, tmp_path, "run_distillation.py", "t.yaml", text)
    assert doc["verdict"]["status"] == "inconclusive", doc["verdict"]["headline"]
    assert "policy.megatron_cfg.enabled is True and policy.dtensor_cfg.enabled is True" in doc["verdict"]["headline"]


def test_grpo_with_on_policy_distillation_teachers_is_inconclusive(capsys, tmp_path):
    """grpo.py:783 builds Megatron teacher worker groups (opd.py TeacherResourceConfig) when
    on_policy_distillation is on; their sizes are not read."""
    text = TEACHER_MEGATRON.format(pp=1) + "on_policy_distillation:\n  enabled: true\n"
    doc = _scan(capsys, tmp_path, "run_grpo.py", "g.yaml", text)
    assert doc["verdict"]["status"] == "inconclusive", doc["verdict"]["headline"]
    assert "on_policy_distillation.enabled" in doc["verdict"]["headline"]
