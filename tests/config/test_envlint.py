"""Environment lint: every [[env_var]] rule by its own VALID/INVALID examples, and the seed script.

The facts behind the rules (NCCL_TIMEOUT read by nobody, NCCL_* aliases deprecated in c10d) are
from docs/findings.md section 4 and the sources cited in rules/torch.toml; the deprecated
aliases' declarations are checked against the installed torch in test_rules_agree.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor import rulebook
from auditor.config.envlint import lint
from auditor.config.launch import parse_launch, read_launch
from auditor.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
COMMAND = "NPROC_PER_NODE=8 NNODES=16 megatron sft --model ZhipuAI/GLM-5.1 --pipeline_model_parallel_size 4\n"


def env_cases() -> list:
    out = []
    for entry in rulebook.load("torch").data.get("env_var", []):
        for kind in ("valid", "invalid"):
            for n, example in enumerate(entry.get(kind, [])):
                out.append(pytest.param(entry["name"], example, kind == "invalid",
                                        id=f"{entry['name']}:{kind}{n}"))
    return out


@pytest.mark.parametrize("name,example,fires", env_cases())
def test_env_var_examples(name, example, fires):
    launch = parse_launch(example + "\n" + COMMAND, "run.sh")
    found = [f for f in lint(launch, "2.10.0") if f.detail["variable"] == name]
    assert bool(found) is fires, (example, found)
    for f in found:
        line = launch.env[name].line
        assert f.where == f"run.sh:{line}"
        assert f.fix


def test_every_env_rule_has_examples():
    for entry in rulebook.load("torch").data.get("env_var", []):
        assert entry.get("valid") and entry.get("invalid"), entry["name"]


def test_seed_report_environment():
    launch = read_launch(ROOT / "examples" / "glm5_1_lora_pp4.sh")
    found = {f.detail["variable"]: f for f in lint(launch, "2.10.0")}
    assert set(found) == {"NCCL_TIMEOUT", "NCCL_ASYNC_ERROR_HANDLING"}
    assert found["NCCL_TIMEOUT"].kind == "env-unread"
    assert "--ddp_timeout" in found["NCCL_TIMEOUT"].fix
    assert found["NCCL_ASYNC_ERROR_HANDLING"].kind == "env-deprecated"
    assert "TORCH_NCCL_ASYNC_ERROR_HANDLING" in found["NCCL_ASYNC_ERROR_HANDLING"].fix
    assert found["NCCL_TIMEOUT"].where == f"{launch.path}:{launch.env['NCCL_TIMEOUT'].line}"


def test_deprecated_alias_flagged_when_torch_unknown():
    launch = parse_launch("export NCCL_ASYNC_ERROR_HANDLING=1\n" + COMMAND, "run.sh")
    assert [f.kind for f in lint(launch, None)] == ["env-deprecated"]


def test_symbolic_value_is_not_judged():
    launch = parse_launch("export TORCH_DISTRIBUTED_DEBUG=${DEBUG_LEVEL}\n" + COMMAND, "run.sh")
    assert lint(launch, "2.11.0") == []


def test_bad_rules_status_is_an_input_error(tmp_path):
    (tmp_path / "torch.toml").write_text('[framework]\nname = "torch"\n\n'
                                         '[[env_var]]\nname = "X"\nstatus = "maybe"\n')
    launch = parse_launch("export X=1\n" + COMMAND, "run.sh")
    with pytest.raises(InputError, match="status 'maybe'"):
        lint(launch, "2.10.0", tmp_path)
