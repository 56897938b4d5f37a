"""Issue 22 items 9 and 11: NeMo-RL's `uv run python examples/run_grpo.py --config X.yaml a.b=c` is
read for the policy's backend (rules/nemo-rl.toml): DTensor issues no pipeline P2P (NOT A
PIPELINE RUN); Megatron runs megatron-core's schedules on megatron-core's defaults, which NeMo-RL
leaves alone (judged at its size, one stage included; its model_overrides:
test_nemo_rl_any_config.py); a backend not known is INCONCLUSIVE.

The launches are written after NVIDIA-NeMo/RL (commit 7ea279abfbeb698b092856d0dab61e7cf39bc909)
README.md:329-357 (`uv run python examples/run_grpo.py --config
examples/configs/grpo_math_1B_megatron.yaml`, `cluster.gpus_per_node=8` overrides); the configs
after examples/configs/grpo_math_1B.yaml (policy.dtensor_cfg.enabled: true,
policy.megatron_cfg.enabled: false, pipeline_model_parallel_size: 1) and
grpo_math_1B_megatron.yaml (`defaults: "grpo_math_1B.yaml"`, the Megatron backend on, DTensor off).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from auditor import cli, rulebook
from auditor.config.frontends.nemo_rl import NemoRlReader

BASE = """grpo:
  num_prompts_per_step: 32
policy:
  model_name: "Qwen/Qwen2.5-1.5B"
  dtensor_cfg:
    enabled: true
    tensor_parallel_size: 1
  megatron_cfg:
    enabled: false
    tensor_model_parallel_size: 1
    pipeline_model_parallel_size: 1
cluster:
  gpus_per_node: 1
  num_nodes: 1
"""
MEGATRON = """defaults: "grpo_math_1B.yaml"
policy:
  dtensor_cfg:
    enabled: false
  megatron_cfg:
    enabled: true
    pipeline_model_parallel_size: {pp}
"""
RUN = "uv run python examples/run_grpo.py --config examples/configs/{config} {overrides}\n"


def _scan(capsys, tmp_path: Path, config: str, overrides: str = "", pp: object = 1) -> dict:
    configs = tmp_path / "examples" / "configs"
    configs.mkdir(parents=True, exist_ok=True)
    (configs / "grpo_math_1B.yaml").write_text(BASE, encoding="utf-8")
    (configs / "grpo_math_1B_megatron.yaml").write_text(MEGATRON.format(pp=pp), encoding="utf-8")
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\nset -x\n" + RUN.format(config=config, overrides=overrides), encoding="utf-8")
    cli.main(["scan", "--config", str(script), "--format", "json"])
    return json.loads(capsys.readouterr().out)


def test_the_dtensor_backend_is_not_a_pipeline_run(capsys, tmp_path):
    doc = _scan(capsys, tmp_path, "grpo_math_1B.yaml", "cluster.gpus_per_node=8")
    assert doc["verdict"]["status"] == "not-pipeline", doc["verdict"]["headline"]
    assert "DTensor" in doc["verdict"]["headline"]


def test_megatron_at_one_stage_through_the_parent_config(capsys, tmp_path):
    """A Megatron policy at one stage runs megatron-core's forward_backward_no_pipelining: judged
    at PP 1 as any Megatron run there (CLEAN, no pipeline site reached), not taken for a run
    with no Megatron in it."""
    doc = _scan(capsys, tmp_path, "grpo_math_1B_megatron.yaml")
    assert doc["verdict"]["status"] == "clean", doc["verdict"]["headline"]
    assert doc["config"]["effective"]["pipeline_model_parallel_size"] == 1
    assert "Megatron backend at pipeline_model_parallel_size 1" in doc["config"]["provenance"][
        "pipeline_model_parallel_size"]


@pytest.mark.parametrize("pp, status", [(1, "clean"), (2, "not-covered")])
def test_model_overrides_matter_only_on_pipeline_stages(capsys, tmp_path, pp, status):
    """nemo_rl/models/megatron/setup.py:664-673 (commit above): model_overrides are merged first,
    then pipeline_model_parallel_size is set from megatron_cfg (an override of it is refused), so
    at one stage they change no pipeline P2P; at two they may set batch_p2p_comm (NOT COVERED)."""
    doc = _scan(capsys, tmp_path, "grpo_math_1B_megatron.yaml",
                "++policy.megatron_cfg.model_overrides.overlap_p2p_comm=true", pp=pp)
    assert doc["verdict"]["status"] == status, doc["verdict"]["headline"]


def test_megatron_at_two_stages_by_an_override_is_judged_at_two(capsys, tmp_path):
    doc = _scan(capsys, tmp_path, "grpo_math_1B_megatron.yaml", "policy.megatron_cfg.pipeline_model_parallel_size=2")
    assert doc["verdict"]["status"] == "clean", doc["verdict"]["headline"]
    assert doc["config"]["effective"]["pipeline_model_parallel_size"] == 2
    assert doc["config"]["effective"]["distributed_backend"] == "nccl"


def test_an_override_turning_megatron_on_over_dtensor(capsys, tmp_path):
    doc = _scan(capsys, tmp_path, "grpo_math_1B.yaml",
                "policy.dtensor_cfg.enabled=false policy.megatron_cfg.enabled=true "
                "++policy.megatron_cfg.pipeline_model_parallel_size=4")
    assert doc["config"]["effective"]["pipeline_model_parallel_size"] == 4, doc["verdict"]["headline"]


@pytest.mark.parametrize("overrides, pp", [("${EXTRA_ARGS}", 1), ("", "${oc.env:PP}")],
                         ids=["unknown-word", "interpolated-size"])
def test_what_is_not_known_is_inconclusive(capsys, tmp_path, overrides, pp):
    doc = _scan(capsys, tmp_path, "grpo_math_1B_megatron.yaml", overrides, pp=pp)
    assert doc["verdict"]["status"] == "inconclusive", doc["verdict"]["headline"]
    assert "policy.megatron_cfg" in doc["verdict"]["headline"]


def test_a_missing_parent_is_never_a_default(capsys, tmp_path):
    doc = _scan(capsys, tmp_path, "grpo_math_1B_megatron.yaml")
    (tmp_path / "examples" / "configs" / "grpo_math_1B.yaml").unlink()
    cli.main(["scan", "--config", str(tmp_path / "run.sh"), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"]["status"] == "inconclusive", doc["verdict"]["headline"]


# examples/run_grpo.py:84-87 (commit above): the config it loads without --config.
RUN_GRPO = """import os

from nemo_rl.algorithms.grpo import grpo_train


def main():
    args, overrides = parse_args()
    if not args.config:
        args.config = os.path.join(
            os.path.dirname(__file__), "configs", "grpo_math_1B.yaml"
        )
"""


def test_without_config_the_run_scripts_own_default_is_read(capsys, tmp_path, monkeypatch):
    """README.md:329 `uv run python examples/run_grpo.py`: the script's default, beside it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "run_grpo.py").write_text(RUN_GRPO, encoding="utf-8")
    doc = _scan(capsys, tmp_path, "grpo_math_1B.yaml")
    script = tmp_path / "run.sh"
    script.write_text("uv run python examples/run_grpo.py cluster.gpus_per_node=8\n", encoding="utf-8")
    cli.main(["scan", "--config", str(script), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"]["status"] == "not-pipeline", doc["verdict"]["headline"]
    assert "DTensor" in doc["verdict"]["headline"]
    (tmp_path / "examples" / "run_grpo.py").unlink()  # not found: undecided, never a default
    cli.main(["scan", "--config", str(script), "--format", "json"])
    assert json.loads(capsys.readouterr().out)["verdict"]["status"] == "inconclusive"


def test_the_launcher_rule_names_this_reader():
    assert rulebook.load("nemo-rl").data["launcher"][0]["style"] == NemoRlReader.style


# --- the rules against the NeMo-RL checkout they quote -----------------------------------------

CHECKOUT = Path(os.environ.get("P2PAUDIT_NEMO_RL_CHECKOUT", "/work/upstream/nemo-rl@7ea279abfb"))


@pytest.mark.skipif(not (CHECKOUT / "nemo_rl").is_dir(), reason="the NeMo-RL checkout is not here")
def test_the_rules_quote_the_checkout():
    data = rulebook.load("nemo-rl").data
    for entry in (data["launcher"][0], data["nemo_rl_policy"]):
        path, line = entry["source"].split()[1].rsplit(":", 1)
        assert entry["code"] in (CHECKOUT / path).read_text(encoding="utf-8").splitlines()[int(line) - 1]
    policy = (CHECKOUT / "nemo_rl/models/policy/lm_policy.py").read_text(encoding="utf-8")
    assert 'config.get("dtensor_cfg", {}).get("enabled", False)' in policy
    assert 'pp_size = config["megatron_cfg"]["pipeline_model_parallel_size"]' in policy
    inherit = (CHECKOUT / "nemo_rl/utils/config.py").read_text(encoding="utf-8")
    rule = data["nemo_rl_policy"]
    assert f'if "{rule["inherit_key"]}" in config:' in inherit and f'"{rule["override_marker"]}"' in inherit


@pytest.mark.skipif(not (CHECKOUT / "nemo_rl/models/megatron/setup.py").is_file(),
                    reason="the NeMo-RL checkout's megatron code is not here")
def test_the_code_names_no_p2p_switch():
    """What lets megatron-core's defaults hold: no NeMo-RL code names the switches, and
    model_overrides is how a config sets a TransformerConfig field."""
    rule = rulebook.load("nemo-rl").data["nemo_rl_policy"]
    path, line = rule["backend_source"].split()[1].rsplit(":", 1)
    assert rule["backend_code"] in (CHECKOUT / path).read_text(encoding="utf-8").splitlines()[int(line) - 1]
    code = "\n".join(p.read_text(encoding="utf-8") for p in (CHECKOUT / "nemo_rl").rglob("*.py"))
    assert all(name not in code for name in ("batch_p2p_comm", "overlap_p2p_comm", "comm_overlap"))
    assert f'config["megatron_cfg"].get("{rule["model_overrides_key"].split(".")[-1]}")' in code


def test_an_echo_naming_a_run_script_is_no_command(tmp_path):
    """NVIDIA-NeMo/RL@7ea279abfb examples/nemo_gym/nemotron-3-super-omni/super_omni_launch.sh:223
    prints `echo " Entrypoint : ${ENTRYPOINT}"` (a run_*_nemo_gym.py): the launcher's script pattern
    matched echo's word, and the scan exited 2 ("which frameworks does this launcher run?")."""
    from auditor.config.launch import NotAPipelineRun, parse_launch

    script = tmp_path / "launch.sh"
    script.write_text('ENTRYPOINT="${ENTRYPOINT:-examples/nemo_gym/run_grpo_nemo_gym.py}"\n'
                      'echo " Entrypoint : ${ENTRYPOINT}"\n')
    with pytest.raises(NotAPipelineRun, match="`echo`"):  # it runs only echo: no training process
        parse_launch(script.read_text(), str(script))
