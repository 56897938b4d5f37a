"""Issue 22 items 9 and 11: OpenRLHF's launches are read for what they run. OpenRLHF trains with
DeepSpeed's ZeRO engine on Hugging Face models (rules/openrlhf.toml): no release builds pipeline
stages, so every `openrlhf.cli.*` entry is NOT A PIPELINE RUN, however it is started.

The scripts are written after OpenRLHF/OpenRLHF (commit 3c3be6234e0cb353e76bb8019947db9dfe99fca7):
DPO after examples/scripts/train_dpo_llama.sh (`read -r -d '' training_commands <<EOF` holding the
module and its flags with backslash-newlines, then `deepspeed --module $training_commands` inside
`if [[ ${1} != "slurm" ]]`), PPO after README.md:445-447 (`ray job submit --address=... --
python3 -m openrlhf.cli.train_ppo_ray ...`) and examples/scripts/train_ppo_ray_hybrid_engine.sh
(`python3 -m openrlhf.cli.train_ppo_ray` itself).
"""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path

import pytest

from auditor import cli, rulebook
from auditor.config.frontends.module_flags import ModuleFlagsReader
from auditor.config.launch import parse_launch

DPO = """set -x

read -r -d '' training_commands <<EOF
openrlhf.cli.train_dpo \\
   --ckpt.output_dir ./checkpoint/llama3-8b-dpo \\
   --train.batch_size 256 \\
   --model.model_name_or_path OpenRLHF/Llama-3-8b-sft-mixture \\
   --ds.zero_stage 3 \\
   --data.apply_chat_template
EOF

if [[ ${1} != "slurm" ]]; then
    deepspeed --module $training_commands
fi
"""

RAY_JOB = """ray job submit --address="http://127.0.0.1:8265" \\
   --runtime-env-json='{"working_dir": "/openrlhf"}' \\
   -- python3 -m openrlhf.cli.train_ppo_ray \\
   --ref.num_nodes 1 \\
   --actor.num_gpus_per_node 8 \\
   --ds.zero_stage 3
"""

PYTHON_M = """set -x

python3 -m openrlhf.cli.train_ppo_ray \\
   --actor.num_nodes 1 \\
   --actor.num_gpus_per_node 8 \\
   --vllm.num_engines 4 \\
   --ds.zero_stage 3
"""


def _scan(capsys, tmp_path: Path, text: str) -> tuple[int, dict]:
    script = tmp_path / "run.sh"
    script.write_text(text, encoding="utf-8")
    code = cli.main(["scan", "--config", str(script), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("text, module", [(DPO, "openrlhf.cli.train_dpo"),
                                          (RAY_JOB, "openrlhf.cli.train_ppo_ray"),
                                          (PYTHON_M, "openrlhf.cli.train_ppo_ray")],
                         ids=["deepspeed-module-read-heredoc", "ray-job-submit", "python-m"])
def test_an_openrlhf_entry_is_not_a_pipeline_run(capsys, tmp_path, text, module):
    code, doc = _scan(capsys, tmp_path, text)
    assert doc["verdict"]["status"] == "not-pipeline", doc["verdict"]["headline"]
    assert code == 0
    assert module in doc["verdict"]["headline"] and "ZeRO" in doc["verdict"]["headline"]


def test_the_module_is_the_program_and_its_flags_are_read_as_written(tmp_path):
    """`python3 -m openrlhf.cli.train_ppo_ray --flags`: the module runs, no script beside the launch
    script; its own flags (`--actor.num_gpus_per_node`) are its argparse's, not Megatron-LM's."""
    config = parse_launch(PYTHON_M, str(tmp_path / "run.sh"))
    assert config.style == ModuleFlagsReader.style
    assert any(d.kind == "launch.not-pipeline" for d in config.diagnostics)
    assert config.launcher == "python -m openrlhf.cli.train_ppo_ray"
    assert config.flags["actor.num_gpus_per_node"].value == "8"


def test_a_module_of_no_framework_stays_with_the_analysis(capsys, tmp_path):
    """Fail closed: `deepspeed --module` of a module no rules file names is not said to be no
    pipeline run by these rules (DeepSpeed's own reader judges its script)."""
    _, doc = _scan(capsys, tmp_path, DPO.replace("openrlhf.cli.train_dpo", "mylab.train_pipe"))
    assert doc["verdict"]["status"] != "not-pipeline" or "OpenRLHF" not in doc["verdict"]["headline"]


# --- the rules against the OpenRLHF releases they describe ------------------------------------

RULES = rulebook.load("openrlhf").data
# What would build pipeline stages or issue pipeline P2P: DeepSpeed's pipeline module, torch's
# pipelining and P2P API, Megatron.
PIPELINE_SIGNS = ("deepspeed.pipe", "PipelineModule", "torch.distributed.pipelining", "isend(", "irecv(",
                  "batch_isend_irecv", "dist.send(", "dist.recv(", "megatron")


def _package(root: Path) -> Path:
    """The `openrlhf` package inside a release as unpacked (wheels keep it under *.data/purelib)."""
    return next(p.parent for p in sorted(root.rglob("openrlhf/__init__.py")))


@pytest.mark.wheels
@pytest.mark.parametrize("version", RULES["entry_module"][0]["checked"])
def test_no_checked_release_builds_a_pipeline(release, version):
    """Each release the rules name: every cli module is one an entry names, none of its modules
    names a pipeline construct, and the `code` each entry quotes is in the file it cites."""
    package = _package(Path(release(f"openrlhf=={version}").root))
    entries = [e for e in RULES["entry_module"] if version in e["checked"]]
    modules = [f"openrlhf.cli.{p.stem}" for p in (package / "cli").glob("*.py") if p.stem != "__init__"]
    assert "openrlhf.cli.train_sft" in modules and "openrlhf.cli.train_ppo_ray" in modules
    assert all(any(fnmatch.fnmatchcase(m, pattern) for e in entries for pattern in e["modules"]) for m in modules)
    for module in package.rglob("*.py"):
        text = module.read_text(encoding="utf-8")
        assert not [s for s in PIPELINE_SIGNS if s in text], module
    for rule in entries:
        path = rule["source"].split()[1].split(":")[0]
        assert rule["code"] in (package.parent / path).read_text(encoding="utf-8")
