"""ROLL (alibaba/ROLL) as a stack (issue 22 items 5, 9, 10): `python examples/start_rlvr_pipeline.py
--config_path $CONFIG_PATH --config_name NAME` composes a Hydra config whose megatron roles
(actor_train, reference, sft_train) are each judged; mcore_adapter decides their batching
(rules/roll.toml): overlap_p2p_comm defaults True, is kept only with virtual pipeline stages, and
batch_p2p_comm = not overlap_p2p_comm.

The scripts and YAML reproduce alibaba/ROLL at commit 8eb27cc2dc34c4d1310b169d9b86d339004d811a:
examples/qwen3-235BA22B-rlvr_megatron/run_rlvr_pipeline.sh (`set +x`,
`CONFIG_PATH=$(basename $(dirname $0))`, then the python line), its rlvr_config_140GB.yaml
(actor_train megatron_train PP=8 VPP=6, reference megatron_infer PP=4 VPP=6, actor_infer vllm,
`device_mapping: list(range(0,64))`), and examples/qwen2.5-7B-sft_megatron/sft_config.yaml
(sft_train megatron_train TP=2 PP=2 CP=2, no VPP, `list(range(0,8))`). The tree around them has
ROLL's layout: examples/start_*_pipeline.py and mcore_adapter/pyproject.toml (0.10.0.dev0).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from auditor import sources
from auditor.analysis import commandcases
from auditor.config.derive import derive
from auditor.config.expr import UNKNOWN
from auditor.config.frontends import for_style
from auditor.config.frontends.built_roles import built_roles
from auditor.config.frontends.hydra_compose import HydraComposeReader
from auditor.config.launch import CommandNotFollowed, NotAPipelineRun, parse_launch, refuse_not_pipeline
from auditor.config.releases import requirements
from auditor.config.source_tree import judge_on_source_tree
from auditor.scan import resolve_targets

ROOT = Path(__file__).resolve().parents[2]
RUN = """#!/bin/bash
set +x
{pre}
CONFIG_PATH=$(basename $(dirname $0))
python examples/start_{kind}_pipeline.py --config_path $CONFIG_PATH  --config_name {name}
"""
RLVR = """hydra:
  run:
    dir: .
  output_subdir: null
exp_name: "qwen3-235BA22B-rlvr-config"
offload_nccl: false
num_gpus_per_node: 8
actor_train:
  strategy_args:
    strategy_name: megatron_train
    strategy_config:
      tensor_model_parallel_size: 2
      pipeline_model_parallel_size: 8
      virtual_pipeline_model_parallel_size: 6
      expert_model_parallel_size: 4
  device_mapping: list(range(0,64))
  offload_nccl: ${offload_nccl}
actor_infer:
  strategy_args:
    strategy_name: vllm
    strategy_config:
      tensor_parallel_size: 8
  device_mapping: list(range(0,64))
reference:
  strategy_args:
    strategy_name: megatron_infer
    strategy_config:
      tensor_model_parallel_size: 1
      pipeline_model_parallel_size: 4
      virtual_pipeline_model_parallel_size: 6
  device_mapping: list(range(0,64))
"""
SFT = """exp_name: "qwen2.5-7B-sft-config"
sft_train:
  strategy_args:
    strategy_name: megatron_train
    strategy_config:
      tensor_model_parallel_size: 2
      sequence_parallel: true
      pipeline_model_parallel_size: 2
      context_parallel_size: 2
  device_mapping: list(range(0,8))
"""
PYPROJECT = """[project]
name = "mcore_adapter"
version = "0.10.0.dev0"
dependencies = ["megatron-core>=0.15.0,<0.19.0"]
"""


def roll_tree(root: Path, example: str, config: str, name: str, kind: str = "rlvr", pre: str = "") -> Path:
    """A ROLL checkout's shape: the example's run script and YAML, the entry script, mcore_adapter."""
    (root / "examples" / example).mkdir(parents=True)
    (root / "examples" / f"start_{kind}_pipeline.py").write_text("from hydra.experimental import compose\n")
    (root / "examples" / example / f"{name}.yaml").write_text(config)
    (root / "mcore_adapter" / "src" / "mcore_adapter").mkdir(parents=True)
    (root / "mcore_adapter" / "pyproject.toml").write_text(PYPROJECT)
    (root / "mcore_adapter" / "src" / "mcore_adapter" / "__init__.py").write_text("")
    script = root / "examples" / example / f"run_{kind}_pipeline.sh"
    script.write_text(RUN.format(kind=kind, name=name, pre=pre))
    return script


def _read(script: Path, which: int = 0):
    return parse_launch(script.read_text(), str(script), which=which)


def test_each_megatron_role_is_a_configuration_of_its_own(tmp_path):
    script = roll_tree(tmp_path, "qwen3-235BA22B-rlvr_megatron", RLVR, "rlvr_config_140GB")
    actor, reference = _read(script, 0), _read(script, 1)
    assert actor.launcher == "python start_rlvr_pipeline.py" and actor.commands == 2
    assert (actor.case_name, reference.case_name) == ("actor_train", "reference")
    assert actor.flags["pipeline_model_parallel_size"].value == "8"
    assert reference.flags["pipeline_model_parallel_size"].value == "4"
    assert (actor.nproc_per_node, actor.nnodes) == (64, 1)
    with pytest.raises(IndexError):
        _read(script, 2)  # actor_infer runs vllm: no pipeline schedule


def test_the_source_tree_is_the_release_judged(tmp_path):
    script = roll_tree(tmp_path / "ROLL", "qwen3-235BA22B-rlvr_megatron", RLVR, "rlvr_config_140GB")
    config = _read(script)
    assert config.pins["mcore-adapter"] == "0.10.0.dev0"
    assert config.source_dirs["mcore-adapter"] == (tmp_path / "ROLL" / "mcore_adapter").resolve()
    config.pins.clear()
    config.source_dirs.clear()
    judge_on_source_tree(config, tmp_path / "elsewhere" / "start.py", str(script))
    assert "mcore-adapter" not in config.pins  # no ROLL tree above it: the release stays unstated


def test_the_header_names_the_source_tree_from_where_the_scan_runs(tmp_path, monkeypatch):
    """alibaba/ROLL 8eb27cc2dc34c4d1310b169d9b86d339004d811a
    examples/agentic_deepeyes/run_agentic_pipeline.sh asks for a config the checkout lacks: the
    header's `mcore-adapter ... at /abs/ROLL/mcore_adapter` took two lines more at 80 columns,
    pushing the DOES NOT START cause past the first screen (issue 25). A tree below the directory
    the scan runs in is named relative to it; h48-screen2 (review r48-screen 5): one elsewhere
    keeps its absolute path, where `at mcore_adapter` would read as the current checkout's copy."""
    script = roll_tree(tmp_path / "ROLL", "agentic_deepeyes", SFT, "deepeyes", kind="agentic")
    (tmp_path / "ROLL" / "setup.py").write_text("")
    launch = _read(script)
    tree = str(launch.source_dirs["mcore-adapter"])
    monkeypatch.chdir(tmp_path / "ROLL")
    assert [s.label for s in resolve_targets(launch, [tree])] == ["mcore-adapter 0.10.0.dev0 at mcore_adapter"]
    monkeypatch.chdir(tmp_path)
    assert resolve_targets(launch, [tree])[0].label.endswith(" at ROLL/mcore_adapter")
    roll_tree(tmp_path / "other", "agentic_deepeyes", SFT, "deepeyes", kind="agentic")
    (tmp_path / "other" / "setup.py").write_text("")
    (tmp_path / "other" / "mcore_adapter").mkdir(exist_ok=True)
    monkeypatch.chdir(tmp_path / "other")  # the scan of ROLL's script from another checkout
    assert resolve_targets(launch, [tree])[0].label.endswith(f" at {tree}")


def test_vpp_keeps_overlap_so_nothing_is_batched(tmp_path):
    script = roll_tree(tmp_path, "qwen3-235BA22B-rlvr_megatron", RLVR, "rlvr_config_140GB")
    eff = derive(_read(script), {"mcore-adapter": "0.10.0.dev0", "megatron-core": "0.15.0"}, torch_version="2.10.0")
    assert eff.values["overlap_p2p_comm"].value is True
    assert eff.values["batch_p2p_comm"].value is False
    assert "model_config.py:336" in eff.values["batch_p2p_comm"].source
    assert eff.values["distributed_backend"].value == "nccl"
    assert eff.values["init_device_id_given"].value is False


def test_without_vpp_mcore_adapter_batches(tmp_path):
    script = roll_tree(tmp_path, "qwen2.5-7B-sft_megatron", SFT, "sft_config", kind="sft")
    eff = derive(_read(script), {"mcore-adapter": "0.10.0.dev0", "megatron-core": "0.15.0"}, torch_version="2.10.0")
    assert eff.values["pipeline_model_parallel_size"].value == 2
    assert eff.values["overlap_p2p_comm"].value is False
    assert "model_config.py:315" in eff.values["overlap_p2p_comm"].source
    assert eff.values["batch_p2p_comm"].value is True


def test_a_config_that_is_not_there_is_unknown_not_default(tmp_path):
    script = roll_tree(tmp_path, "qwen2.5-7B-sft_megatron", SFT, "sft_config", kind="sft")
    (script.parent / "sft_config.yaml").unlink()
    config = _read(script)
    assert any(d.kind == "launch.config-file-unread" for d in config.diagnostics)
    eff = derive(config, {"mcore-adapter": "0.10.0.dev0", "megatron-core": "0.15.0"}, torch_version="2.10.0")
    assert eff.values["pipeline_model_parallel_size"].value is UNKNOWN


def test_a_python_script_of_no_rules_is_still_not_followed(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("python train.py --config_path conf --config_name main\n")
    with pytest.raises(CommandNotFollowed):
        _read(script)


def _scan(script: Path, *extra: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "auditor", "scan", "--config", str(script), "--target",
         "megatron-core==0.15.0", "--target", str(script.parents[2] / "mcore_adapter"), "--format", "json", *extra],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    return json.loads(proc.stdout)


@pytest.mark.wheels
def test_vpp_roles_are_clean_with_detail(tmp_path):
    script = roll_tree(tmp_path, "qwen3-235BA22B-rlvr_megatron", RLVR, "rlvr_config_140GB",
                       pre="export TORCH_DISTRIBUTED_DEBUG=DETAIL")
    doc = _scan(script, "--torch", "2.10.0")
    assert doc["verdict"]["status"] == "clean", doc["verdict"]["headline"]
    assert [c["pipeline_model_parallel_size"] for c in doc["config"]["command_basis"]["commands"]] == [8, 4]


@pytest.mark.wheels
def test_sft_pp2_with_detail_on_2_10_has_findings(tmp_path):
    script = roll_tree(tmp_path, "qwen2.5-7B-sft_megatron", SFT, "sft_config", kind="sft",
                       pre="export TORCH_DISTRIBUTED_DEBUG=DETAIL")
    assert _scan(script, "--torch", "2.10.0")["verdict"]["status"] == "findings"
    assert _scan(script, "--torch", "2.11.0")["verdict"]["status"] == "clean"


# --- the rules against the ROLL checkout they quote ------------------------------------------

CHECKOUT = Path(os.environ.get("P2PAUDIT_ROLL_CHECKOUT", "/work/upstream/real_scripts/alibaba+ROLL@8eb27cc2dc"))
RULES = tomllib.loads((ROOT / "rules" / "roll.toml").read_text())
QUOTED = [e for table in RULES.values() if isinstance(table, list) for e in table
          if str(e.get("source", "")).startswith("alibaba/ROLL@8eb27cc2dc ")]


@pytest.mark.skipif(not (CHECKOUT / "mcore_adapter/pyproject.toml").is_file(),
                    reason="the ROLL checkout (benchmarks/real_scripts/fetch.py) is not here")
def test_the_rules_quote_the_roll_checkout():
    """Every entry's `code` is at the line its `source` names, and [framework] read is the
    version the checkout's mcore_adapter states."""
    assert len(QUOTED) >= 8
    for e in QUOTED:
        path, line = e["source"].split()[1].rsplit(":", 1)
        text = (CHECKOUT / path).read_text().splitlines()[int(line) - 1]
        assert e["code"].strip() in text, (e["source"], text)
    project = tomllib.loads((CHECKOUT / "mcore_adapter/pyproject.toml").read_text())["project"]
    assert project["version"] == RULES["framework"]["read"]


@pytest.mark.skipif(not (CHECKOUT / "mcore_adapter/pyproject.toml").is_file(),
                    reason="the ROLL checkout (benchmarks/real_scripts/fetch.py) is not here")
def test_the_arg_defaults_are_the_dataclass_fields():
    """Each [[arg]] of TrainingArguments' DistributingParallelArguments has the field's default
    (`field(default=...)`), read from the checkout's dataclass."""
    module = ast.parse((CHECKOUT / "mcore_adapter/src/mcore_adapter/training_args.py").read_text())
    fields = {}
    for node in ast.walk(module):
        if isinstance(node, ast.ClassDef) and node.name == "DistributingParallelArguments":
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.value, ast.Call):
                    given = [k.value for k in stmt.value.keywords if k.arg == "default"]
                    if given and isinstance(stmt.target, ast.Name):
                        fields[stmt.target.id] = ast.literal_eval(given[0])
    args = [a for a in RULES["arg"] if "training_args.py" in a["source"]]
    assert args
    for arg in args:
        assert fields[arg["key"]] == arg.get("default"), arg["key"]


# --- mcore_adapter's own trainer: torchrun run_train.py with HF-style underscore flags --------
# After alibaba/ROLL@8eb27cc2dc mcore_adapter/examples/train/run_sft_train.sh: `USE_MCA=true`,
# `mca_options` with `--pipeline_model_parallel_size ${PIPELINE_MODEL_PARALLEL_SIZE}`, a literal
# `if [ "$USE_MCA" = true ]`, `torchrun --nproc_per_node=$WORLD_SIZE $workdir/run_train.py $options`.
MCA_RUN = """workdir=$(cd $(dirname $0); pwd)
WORLD_SIZE=8
TENSOR_MODEL_PARALLEL_SIZE=2
PIPELINE_MODEL_PARALLEL_SIZE={pp}
USE_MCA=true
mca_options=" \\
       --tensor_model_parallel_size ${{TENSOR_MODEL_PARALLEL_SIZE}} \\
       --sequence_parallel \\
       --pipeline_model_parallel_size ${{PIPELINE_MODEL_PARALLEL_SIZE}} \\
       --use_distributed_optimizer"
options=" \\
       --do_train \\
       --stage=sft \\
       --bf16"
if [ "$USE_MCA" = true ]; then
    options="$options $mca_options --use_mca"
else
    WORLD_SIZE=$(($WORLD_SIZE / $TENSOR_MODEL_PARALLEL_SIZE / $PIPELINE_MODEL_PARALLEL_SIZE))
    options="$options --use_mca=False"
fi
torchrun --nproc_per_node=$WORLD_SIZE $workdir/run_train.py $options
"""


def mca_tree(root: Path, pp: int) -> Path:
    train = root / "mcore_adapter" / "examples" / "train"
    train.mkdir(parents=True)
    (train / "run_train.py").write_text("from transformers import HfArgumentParser\n")
    (root / "mcore_adapter" / "pyproject.toml").write_text(PYPROJECT)
    script = train / "run_sft_train.sh"
    script.write_text(MCA_RUN.format(pp=pp))
    return script


@pytest.mark.parametrize("pp", [1, 2])
def test_mcore_adapters_trainer_reads_its_underscore_flags(tmp_path, pp):
    config = _read(mca_tree(tmp_path, pp))
    assert config.launcher == "mca run_train.py"
    assert config.flags["pipeline_model_parallel_size"].value == str(pp)
    assert not [d for d in config.diagnostics if d.kind == "launch.megatron-spelling"]
    assert config.pins["mcore-adapter"] == "0.10.0.dev0" and config.world_size == 8
    eff = derive(config, {"mcore-adapter": "0.10.0.dev0", "megatron-core": "0.15.0"}, torch_version="2.10.0")
    assert eff.values["pipeline_model_parallel_size"].value == pp
    assert eff.values["batch_p2p_comm"].value is True  # no VPP: overlap off, batched


def test_hydras_own_spellings_and_the_equals_form(tmp_path):
    """`--config-path=DIR --config-name=NAME` (@hydra.main's spellings) read as ROLL's do."""
    script = roll_tree(tmp_path, "qwen2.5-7B-sft_megatron", SFT, "sft_config", kind="sft")
    script.write_text("python examples/start_sft_pipeline.py --config-path=qwen2.5-7B-sft_megatron "
                      "--config-name sft_config.yaml\n")
    config = _read(script)
    assert isinstance(for_style(config.style), HydraComposeReader)
    assert config.case_name == "sft_train" and config.flags["pipeline_model_parallel_size"].value == "2"
    assert config.world_size == 8


def test_a_megatron_reward_worker_is_a_role_too(tmp_path):
    """ROLL's `rewards:` maps reward workers, each with its own strategy_args."""
    rewards = RLVR + ("rewards:\n  math_rule:\n    strategy_args:\n      strategy_name: megatron_infer\n"
                      "      strategy_config:\n        pipeline_model_parallel_size: 2\n"
                      "    device_mapping: list(range(0,8))\n")
    script = roll_tree(tmp_path, "qwen3-235BA22B-rlvr_megatron", rewards, "rlvr_config_140GB")
    config = _read(script, 2)
    assert config.commands == 3 and config.case_name == "rewards.math_rule"
    assert config.flags["pipeline_model_parallel_size"].value == "2" and config.world_size == 8


def test_arguments_the_entry_is_also_given_leave_the_config_unknown(tmp_path):
    script = roll_tree(tmp_path, "qwen2.5-7B-sft_megatron", SFT, "sft_config", kind="sft")
    script.write_text(script.read_text().replace("--config_name sft_config", "--config_name sft_config ${EXTRA}"))
    config = _read(script)
    assert any(d.kind == "launch.config-file-unread" for d in config.diagnostics)
    eff = derive(config, {"mcore-adapter": "0.10.0.dev0", "megatron-core": "0.15.0"}, torch_version="2.10.0")
    assert eff.values["pipeline_model_parallel_size"].value is UNKNOWN


def test_the_launch_scripts_own_arguments_add_nothing_as_written(tmp_path):
    """alibaba/ROLL examples/qwen3-8B-onpolicy-distill-megatron/run_onpolicy_distill_pipeline.sh
    (same commit) :14-17 hands the entry `"$@"`: the script run as written (flags.unresolved) has
    none, so the composed config is read."""
    script = roll_tree(tmp_path, "qwen2.5-7B-sft_megatron", SFT, "sft_config", kind="sft")
    script.write_text(script.read_text().replace("--config_name sft_config", '--config_name sft_config \\\n    "$@"'))
    config = _read(script)
    assert not any(d.kind == "launch.config-file-unread" for d in config.diagnostics)
    assert any(d.kind == "launch.script-arguments" for d in config.diagnostics)
    assert config.flags["pipeline_model_parallel_size"].value == "2"


@pytest.mark.parametrize("args", ['', '"$OVERRIDES"', "$OVERRIDES"])
def test_a_sourced_files_arguments_are_its_own_not_the_scripts(tmp_path, monkeypatch, args):
    """`source FILE ARGS` gives FILE its ARGS as "$@" (bash(1) `source`), known or not: an inner
    script's `"$@"` handed to the entry is then `$OVERRIDES`, which may set any Hydra key (the
    pipeline size too), not the launch script's own arguments (none as written). Shape of
    alibaba/ROLL examples/qwen3-8B-onpolicy-distill-megatron/run_onpolicy_distill_pipeline.sh
    (same commit) :14-17 reached through `source`; without ARGS the file shares the script's."""
    roll_tree(tmp_path, "qwen2.5-7B-sft_megatron", SFT, "sft_config", kind="sft")
    inner = tmp_path / "examples" / "qwen2.5-7B-sft_megatron" / "inner.sh"
    inner.write_text("python examples/start_sft_pipeline.py --config_path qwen2.5-7B-sft_megatron "
                     '--config_name sft_config "$@"\n')
    launch = tmp_path / "launch.sh"
    launch.write_text(f"#!/bin/bash\nsource examples/qwen2.5-7B-sft_megatron/inner.sh {args}\n")
    monkeypatch.chdir(tmp_path)  # the job starts in the checkout, as the scan is run there
    config = _read(launch)
    if not args:
        assert any(d.kind == "launch.script-arguments" for d in config.diagnostics)
        assert config.flags["pipeline_model_parallel_size"].value == "2"
    else:
        assert not any(d.kind == "launch.script-arguments" for d in config.diagnostics)
        assert not isinstance(config.flags["pipeline_model_parallel_size"].value, str)  # not known


def test_a_source_trees_pyproject_bounds_the_releases_it_runs_with(tmp_path):
    """mcore_adapter/pyproject.toml states megatron-core>=0.15.0,<0.19.0: the releases judged
    with the tree are those it admits (config/releases.py reads a tree's [project] dependencies)."""
    roll_tree(tmp_path, "qwen2.5-7B-sft_megatron", SFT, "sft_config", kind="sft")
    tree = sources.resolve(str(tmp_path / "mcore_adapter"))
    assert (tree.name, tree.version) == ("mcore-adapter", "0.10.0.dev0")
    assert [str(r) for r in requirements(tree, ["megatron-core"])] == ["megatron-core<0.19.0,>=0.15.0"]


def _role_doc(role: str, status: str, pp: int) -> dict:
    return {"verdict": {"status": status, "headline": status.upper()},
            "config": {"effective": {"pipeline_model_parallel_size": pp}}, "launch": {"path": "run.sh", "line": 5},
            "sites": [], "findings": [{"kind": "launch.config-file", "detail": {"role": role}}]}


def test_roles_are_named_where_each_is_judged():
    doc = commandcases.merged([_role_doc("actor_train", "clean", 8), _role_doc("reference", "findings", 4)])
    basis = doc["config"]["command_basis"]
    assert [c["role"] for c in basis["commands"]] == ["actor_train", "reference"] and basis["shown"] == 1
    assert commandcases.words(basis).startswith("Judged on each of the 2 roles its config runs a pipeline for "
                                                "(actor_train: clean at pipeline_model_parallel_size 8")
    note = next(f for f in doc["findings"] if f["kind"] == "launch.several-commands")
    assert "role reference's" in note["message"]


# --- a run whose Megatron roles only infer, in one stage -----------------------------------------
# After alibaba/ROLL@8eb27cc2dc examples/qwen3-8B-rlvr_fsdp2/rlvr_config.yaml: actor_train on
# fsdp2_train (fsdp_size 16, :126-135), actor_infer on vllm (:151-157), reference on megatron_infer
# at TP=1 PP=1 EP=1 (:167-173); run by that folder's run_rlvr_pipeline.sh. Before, the reference
# was judged as the run's one configuration: CLEAN, 0 sites, while training is FSDP2.
FSDP2 = """exp_name: "qwen3-8B-rlvr-config"
num_gpus_per_node: 8
actor_train:
  strategy_args:
    strategy_name: fsdp2_train
    strategy_config:
      fsdp_size: 16
      param_dtype: bf16
  device_mapping: list(range(0,16))
actor_infer:
  strategy_args:
    strategy_name: vllm
    strategy_config:
      gpu_memory_utilization: 0.8
  device_mapping: list(range(0,12))
reference:
  strategy_args:
    strategy_name: megatron_infer
    strategy_config:
      tensor_model_parallel_size: 1
      pipeline_model_parallel_size: {pp}
      expert_model_parallel_size: 1
  device_mapping: list(range(0,16))
"""


def test_fsdp2_training_with_a_one_stage_megatron_reference_is_not_a_pipeline_run(tmp_path):
    script = roll_tree(tmp_path, "qwen3-8B-rlvr_fsdp2", FSDP2.format(pp=1), "rlvr_config")
    with pytest.raises(NotAPipelineRun) as caught:
        refuse_not_pipeline(_read(script))
    assert ("trains with a strategy that pipelines (megatron_train): actor_train (fsdp2_train), actor_infer "
            "(vllm) run none; those that run one only infer, each at pipeline_model_parallel_size 1 "
            "(reference (megatron_infer))") in caught.value.what


@pytest.mark.parametrize("change", [
    ("      pipeline_model_parallel_size: 1\n", "      pipeline_model_parallel_size: 2\n"),  # its forward pass pipelines
    ("      pipeline_model_parallel_size: 1\n", ""),  # not stated: the checkpoint's
    ("strategy_name: fsdp2_train", "strategy_name: megatron_train"),  # a Megatron trainer: judged
])
def test_a_reference_that_may_pipeline_or_a_megatron_trainer_is_judged(tmp_path, change):
    script = roll_tree(tmp_path, "qwen3-8B-rlvr_fsdp2", FSDP2.format(pp=1).replace(*change), "rlvr_config")
    config = _read(script)
    assert not any(d.kind == "launch.not-pipeline" for d in config.diagnostics)
    assert config.commands >= 1 and config.case_name in ("actor_train", "reference")


# --- which roles the pipeline class builds ----------------------------------------------------
# After alibaba/ROLL@8eb27cc2dc examples/qwen2.5-7B-rlvr_megatron/run_rlvr_rollout_pipeline.sh:
# examples/start_rlvr_rollout_pipeline.py runs RLVRRolloutPipeline, which calls
# BasePipeline.__init__ (not its parent RLVRPipeline's) and builds Clusters for actor_infer and
# each of `self.pipeline_config.rewards.items()` only (roll/pipeline/rlvr/rlvr_rollout_pipeline.py:
# 28-90); its rlvr_config_8gpus.yaml still names actor_train (megatron_train, :127-135) and
# reference (megatron_infer, :161-169). Before, actor_train was judged: CLEAN at PP 1.
ENTRY = """from dacite import from_dict
from roll.pipeline.rlvr.rlvr_config import RLVRConfig
from roll.pipeline.rlvr.{module} import {cls}


def main():
    pipeline = {cls}(pipeline_config=from_dict(data_class=RLVRConfig, data={{}}))
    pipeline.run()
"""
PIPELINES = {
    "base_pipeline.py": "class BasePipeline:\n    def __init__(self, pipeline_config):\n"
                        "        self.pipeline_config = pipeline_config\n",
    "rlvr/rlvr_pipeline.py": """from roll.pipeline.base_pipeline import BasePipeline
from roll.distributed.executor.cluster import Cluster


class RLVRPipeline(BasePipeline):
    def __init__(self, pipeline_config):
        super().__init__(pipeline_config)
        self.actor_train = Cluster(name="a", worker_config=self.pipeline_config.actor_train)
        self.actor_infer = Cluster(name="b", worker_config=self.pipeline_config.actor_infer)
""",
    "rlvr/rlvr_rollout_pipeline.py": """from roll.pipeline.base_pipeline import BasePipeline
from roll.pipeline.rlvr.rlvr_pipeline import RLVRPipeline
from roll.distributed.executor.cluster import Cluster


class RLVRRolloutPipeline(RLVRPipeline):
    def __init__(self, pipeline_config):
        BasePipeline.__init__(self, pipeline_config)
        self.actor_infer = Cluster(name="b", worker_config=self.pipeline_config.actor_infer)
        self.rewards = {
            key: Cluster(name=key, worker_config=worker_config)
            for key, worker_config in self.pipeline_config.rewards.items()
        }
""",
    "rlvr/rlvr_config.py": "class RLVRConfig:\n    pass\n",
}
ROLLOUT = FSDP2.format(pp=1).replace("strategy_name: fsdp2_train", "strategy_name: megatron_train") + """rewards:
  math_rule:
    strategy_args:
      strategy_name: hf_infer
"""


def _rollout_tree(root: Path, module: str, cls: str, yaml: str = ROLLOUT) -> Path:
    script = roll_tree(root, "qwen2.5-7B-rlvr_megatron", yaml, "rlvr_config_8gpus", kind="rlvr_rollout")
    (root / "examples/start_rlvr_rollout_pipeline.py").write_text(ENTRY.format(module=module, cls=cls))
    for rel, text in PIPELINES.items():
        (root / "roll/pipeline" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "roll/pipeline" / rel).write_text(text)
    return script


def test_a_rollout_pipeline_that_builds_no_trainer_is_not_a_pipeline_run(tmp_path):
    script = _rollout_tree(tmp_path, "rlvr_rollout_pipeline", "RLVRRolloutPipeline")
    with pytest.raises(NotAPipelineRun) as caught:
        refuse_not_pipeline(_read(script))
    assert ("RLVRRolloutPipeline (roll/pipeline/rlvr/rlvr_rollout_pipeline.py:6) builds workers for "
            "actor_infer, rewards.* only, never for actor_train (megatron_train), reference (megatron_infer)"
            ) in caught.value.what


@pytest.mark.parametrize("change", [
    None,  # the training pipeline builds actor_train
    ("worker_config=self.pipeline_config.actor_infer)\n        self.rewards",
     "worker_config=self.cfgs[0])\n        self.rewards"),  # a role not read: every role may be built
    ("        BasePipeline.__init__(self, pipeline_config)\n", "        super().__init__(pipeline_config)\n"),
    # a Cluster built in a module function handed self, or imported under another name
    ("        self.rewards = {", "        self.actor_train = _build_trainer(self)\n        self.rewards = {"),
    ("        self.rewards = {", "        self.actor_train = TrainCluster(name='t', "
     "worker_config=self.pipeline_config.actor_train)\n        self.rewards = {"),
])
def test_a_pipeline_that_may_build_the_trainer_is_judged(tmp_path, change):
    module, cls = ("rlvr_pipeline", "RLVRPipeline") if change is None else ("rlvr_rollout_pipeline",
                                                                           "RLVRRolloutPipeline")
    script = _rollout_tree(tmp_path, module, cls)
    if change is not None:
        path = tmp_path / "roll/pipeline/rlvr/rlvr_rollout_pipeline.py"
        path.write_text(path.read_text().replace(*change) + "\n\ndef _build_trainer(pipeline):\n"
                        "    return Cluster(name='t', worker_config=pipeline.pipeline_config.actor_train)\n")
    config = _read(script)
    assert not any(d.kind == "launch.not-pipeline" for d in config.diagnostics)
    assert config.case_name == "actor_train"


@pytest.mark.parametrize("built", [
    # a class named in the config (examples/start_agentic_pipeline.py:30-34 at the commit read)
    "safe_import_class(getattr(cfg, 'pipeline_cls'))(pipeline_config=None)",
    # a class reached through a module of the pipeline packages
    "rp.RLVRPipeline(pipeline_config=None)",
])
def test_an_entry_that_may_build_another_pipeline_is_judged(tmp_path, built):
    script = _rollout_tree(tmp_path, "rlvr_rollout_pipeline", "RLVRRolloutPipeline")
    entry = tmp_path / "examples/start_rlvr_rollout_pipeline.py"
    entry.write_text("import roll.pipeline.rlvr.rlvr_pipeline as rp\n"
                     "from roll.utils.import_utils import safe_import_class\n" + entry.read_text().replace(
                         "    pipeline.run()", f"    if cfg is not None:\n        pipeline = {built}\n    pipeline.run()"))
    config = _read(script)
    assert not any(d.kind == "launch.not-pipeline" for d in config.diagnostics)
    assert config.case_name == "actor_train"


@pytest.mark.skipif(not (CHECKOUT / "roll/pipeline").is_dir(),
                    reason="the ROLL checkout (benchmarks/real_scripts/fetch.py) is not here")
def test_the_checkouts_pipelines_build_the_roles_their_source_names():
    """Read from the checkout: the rollout pipelines build no trainer, the training ones do."""
    rule = next(e for e in RULES["hydra_compose"] if "builds" in e)["builds"]
    built = {name: built_roles(CHECKOUT / f"examples/start_{name}_pipeline.py", rule)
             for name in ("rlvr_rollout", "agentic_rollout", "rlvr", "sft", "dpo")}
    assert built["rlvr_rollout"] is not None and built["rlvr_rollout"].roles == {"actor_infer", "rewards.*"}
    assert built["agentic_rollout"] is not None and built["agentic_rollout"].roles == {"actor_infer"}
    assert all(b is not None and b.builds(role) for b, role in
               [(built["rlvr"], "actor_train"), (built["sft"], "sft_train"), (built["dpo"], "actor_train")])
