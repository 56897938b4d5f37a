"""torchtitan's job config read from the release the run uses (auditor/config/titan.py): the
TOML `--job.config_file` of 0.1.0-0.2.2 over the release's dataclass defaults, the 0.3.0
config-registry function (`--module M --config NAME`) read statically, the model's dim from the
flavor table, and the command line's `--section.key` overrides winning."""

from __future__ import annotations

import pytest

from auditor.scan import ScanInputs, read_config, run_scan

pytestmark = pytest.mark.wheels

# run_train.sh's torchrun line (pytorch/torchtitan v0.2.2 73a0e697, run_train.sh) with CONFIG_FILE
# given as torchtitan's README gives it and "$@" spelled out.
RUN_TRAIN_022 = """\
NGPU=${NGPU:-"8"}
CONFIG_FILE=${CONFIG_FILE:-"./train_configs/llama3_8b.toml"}
torchrun --nproc_per_node=${NGPU} --rdzv_backend c10d --rdzv_endpoint="localhost:0" \\
  --local-ranks-filter 0 --role rank --tee 3 \\
  -m torchtitan.train --job.config_file ${CONFIG_FILE} {overrides}
"""
# The settings of pytorch/torchtitan v0.2.2 torchtitan/models/llama3/train_configs/llama3_8b.toml
# that the pipeline reads (its other tables left out).
LLAMA3_8B_TOML = """\
[model]
name = "llama3"
flavor = "8B"

[training]
local_batch_size = 1
seq_len = 8192
steps = 1000

[parallelism]
data_parallel_shard_degree = -1
pipeline_parallel_degree = 1
"""
# run_train.sh of pytorch/torchtitan main b5bcd76c (the 0.3.0 form).
RUN_TRAIN_030 = """\
NGPU=${NGPU:-"8"}
MODULE=${MODULE:-"{module}"}
CONFIG=${CONFIG:-"{config}"}
torchrun --nproc_per_node=${NGPU} --rdzv_backend c10d --rdzv_endpoint="localhost:0" \\
  --local-ranks-filter 0 --role rank --tee 3 \\
  -m torchtitan.train --module ${MODULE} --config ${CONFIG} {overrides}
"""


def toml_launch(tmp_path, overrides: str, toml: str | None = LLAMA3_8B_TOML):
    if toml is not None:
        (tmp_path / "train_configs").mkdir()
        (tmp_path / "train_configs" / "llama3_8b.toml").write_text(toml)
    script = tmp_path / "run_train.sh"
    script.write_text(RUN_TRAIN_022.replace("{overrides}", overrides))
    return str(script)


def registry_launch(tmp_path, module: str, config: str, overrides: str) -> str:
    script = tmp_path / "run_train.sh"
    script.write_text(RUN_TRAIN_030.replace("{module}", module).replace("{config}", config)
                      .replace("{overrides}", overrides))
    return str(script)


def flags(path: str, release: str) -> dict:
    launch, _ = read_config(path, [f"torchtitan=={release}", "torch"])
    return {k: f.value for k, f in launch.flags.items()}, launch


def test_the_toml_settings_join_the_command_line_which_wins(tmp_path):
    got, launch = flags(toml_launch(tmp_path, "--parallelism.pipeline_parallel_degree 4 "
                                              "--training.seq_len 2048"), "0.2.2")
    assert got["parallelism.pipeline_parallel_degree"] == "4"  # the command line's, not the TOML's 1
    assert got["training.seq_len"] == "2048"
    assert got["training.local_batch_size"] == "1"  # the TOML's
    assert got["parallelism.pipeline_parallel_schedule"] == "1F1B"  # the release's default
    assert got["parallelism.pipeline_parallel_schedule_csv"] == ""
    assert got["model.dim"] == "4096"  # llama3 8B in torchtitan 0.2.2 models/llama3/__init__.py
    assert "llama3_8b.toml" in launch.flags["training.local_batch_size"].spelling


def test_a_toml_not_found_leaves_its_settings_unknown_and_says_why(tmp_path):
    path = toml_launch(tmp_path, "--parallelism.pipeline_parallel_degree 4", toml=None)
    got, launch = flags(path, "0.2.2")
    assert "training.local_batch_size" not in got
    assert any(d.kind == "launch.config-file-unread" and "llama3_8b.toml" in d.message
               for d in launch.diagnostics)


@pytest.mark.parametrize("module,config,schedule,dim,seq", [
    ("llama3", "llama3_8b", "1F1B", "4096", "8192"),
    ("deepseek_v3", "deepseek_v3_16b", "Interleaved1F1B", "2048", "4096"),
])
def test_the_0_3_0_registry_function_is_read_from_the_release(tmp_path, module, config, schedule, dim, seq):
    got, launch = flags(registry_launch(tmp_path, module, config,
                                        "--parallelism.pipeline_parallel_degree 4"), "0.3.0")
    assert got["parallelism.pipeline_parallel_degree"] == "4"
    assert got["parallelism.pipeline_parallel_schedule"] == schedule
    assert (got["model.dim"], got["training.seq_len"]) == (dim, seq)
    assert f"{config}()" in launch.flags["training.seq_len"].spelling


def test_a_registry_function_the_reader_does_not_understand_is_unknown_not_defaults(tmp_path):
    # torchtitan 0.3.0 llama3_8b_first_85_pct_layers_nvfp4 computes n_layers = len(...) first.
    got, launch = flags(registry_launch(tmp_path, "llama3", "llama3_8b_first_85_pct_layers_nvfp4",
                                        "--parallelism.pipeline_parallel_degree 4"), "0.3.0")
    assert "parallelism.pipeline_parallel_schedule" not in got
    assert any(d.kind == "launch.config-file-unread" and "not read statically" in d.message
               for d in launch.diagnostics)


def test_the_scan_decides_the_schedule_the_registry_gives(tmp_path):
    doc = run_scan(ScanInputs(registry_launch(tmp_path, "deepseek_v3", "deepseek_v3_16b",
                                              "--parallelism.pipeline_parallel_degree 4"),
                              targets=["torchtitan==0.3.0", "torch"], torch_version="2.13.0", jobs=1))
    effective = doc["config"]["effective"]
    assert (effective["pipeline_parallel_degree"], effective["pipeline_parallel_schedule"],
            effective["local_batch_size"], effective["pipeline_parallel_schedule_csv"]) == (
        4, "Interleaved1F1B", 4, "")
    assert "deepseek_v3_16b()" in doc["config"]["provenance"]["pipeline_parallel_schedule"]


@pytest.mark.heavy
def test_simulate_of_the_toml_s_one_micro_batch_at_pp4_1f1b_does_not_start(tmp_path):
    """llama3_8b.toml's local_batch_size = 1 at PP=4 is one micro-batch for four stages: torch's
    Schedule1F1B refuses it at construction (pytorch/torchtitan #775's run, guarded since)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    path = toml_launch(tmp_path, "--parallelism.pipeline_parallel_degree 4 --training.seq_len 64")
    out = tmp_path / "sim.json"
    done = subprocess.run([sys.executable, "-m", "auditor", "simulate", "--config", path,
                           "--target", "torchtitan==0.2.2", "--target", "torch", "--torch", "2.13.0",
                           "--format", "json", "-o", str(out)], cwd=Path(__file__).resolve().parents[2],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr[-3000:]
    sim = json.loads(out.read_text())["simulation"]
    assert sim["not_run"] == "startup" and sim["microbatches"] == 1
    assert "Number of microbatches (1) must be greater than or equal to the number of stages (4)" \
        in sim["hypothetical"]
    assert sim["inputs"]["hidden_size"]["value"] == 4096
