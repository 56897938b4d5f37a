"""`p2paudit simulate` of torchtitan launches: torch's own pipelining schedule at the launch's
`[parallelism]` settings, as torchtitan's builder makes it (torchtitan 0.3.0
torchtitan/distributed/pipeline_parallel.py `_build_pipeline_schedule`), recorded on gloo ranks,
replayed and joined as megatron-core's schedule is.

The launch is torchtitan's README's (`MODULE=llama3 CONFIG=llama3_8b ./run_train.sh` with the
settings on the command line): run_train.sh's torchrun line (pytorch/torchtitan main b5bcd76c,
run_train.sh) with its `"$@"` spelled out.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
RUN_TRAIN = """\
NGPU=${NGPU:-"{ngpu}"}
MODULE=${MODULE:-"llama3"}
CONFIG=${CONFIG:-"llama3_8b"}
torchrun --nproc_per_node=${NGPU} --rdzv_backend c10d --rdzv_endpoint="localhost:0" \\
  --local-ranks-filter 0 --role rank --tee 3 \\
  -m torchtitan.train --module ${MODULE} --config ${CONFIG} {overrides}
"""
SETTINGS = ("--parallelism.pipeline_parallel_degree {pp} --parallelism.pipeline_parallel_schedule {schedule} "
            "--parallelism.pipeline_parallel_microbatch_size 1 --parallelism.pipeline_parallel_schedule_csv '{csv}' "
            "--parallelism.pipeline_parallel_layers_per_stage None --training.local_batch_size {batch} "
            "--training.seq_len {seq} --training.mixed_precision_param {dtype}")


def simulate(tmp_path: Path, pp: int, schedule: str, batch: int, *extra: str, seq: int = 16,
             dtype: str = "float32", csv: str = "", hidden: int | None = 32, config: str = "llama3_8b"
             ) -> tuple[subprocess.CompletedProcess, dict]:
    script = tmp_path / "run_train.sh"
    script.write_text(RUN_TRAIN.replace("{ngpu}", str(pp)).replace("llama3_8b", config).replace(
        "{overrides}", SETTINGS.format(
        pp=pp, schedule=schedule, batch=batch, seq=seq, dtype=dtype, csv=csv)))
    out = tmp_path / "sim.json"
    sizes = ["--set", f"hidden_size={hidden}"] if hidden else []
    done = subprocess.run([sys.executable, "-m", "auditor", "simulate", "--config", str(script),
                           "--target", "torchtitan==0.3.0", "--target", "torch", "--torch", "2.13.0",
                           *sizes, *extra, "--format", "json", "-o", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    return done, json.loads(out.read_text())["simulation"] if out.exists() else {}


pytestmark = pytest.mark.wheels


@pytest.mark.heavy
def test_1f1b_runs_torch_s_schedule_at_the_launch_s_settings_and_completes(tmp_path):
    done, sim = simulate(tmp_path, 2, "1F1B", 4)  # --set hidden_size=32 wins over llama3_8b's 4096
    assert done.returncode == 0, done.stderr[-3000:]
    assert (sim["verdict"], sim["schedule"], sim["microbatches"]) == ("completes", "Schedule1F1B", 4)
    assert sim["runner"] == "torch.distributed.pipelining"
    assert sim["message_bytes"] == 16 * 1 * 32 * 4
    assert "--parallelism.pipeline_parallel_degree 2" in sim["inputs"]["pipeline_size"]["provenance"]
    assert "local_batch_size // pipeline_parallel_microbatch_size" in sim["inputs"]["microbatches"]["provenance"]
    assert sim["unpredicted"] == [] and sim["replays"]
    assert "CLEAN" in done.stderr
    schema = json.loads((ROOT / "docs" / "schema" / "scan-document.schema.json").read_text())
    jsonschema.validate(json.loads((tmp_path / "sim.json").read_text()), schema)


@pytest.mark.heavy
def test_fewer_micro_batches_than_stages_in_1f1b_does_not_start_with_torch_s_reason(tmp_path):
    done, sim = simulate(tmp_path, 4, "1F1B", 2)
    assert done.returncode == 1, done.stderr[-3000:]
    assert sim["not_run"] == "startup"
    assert "Number of microbatches (2) must be greater than or equal to the number of stages (4)" \
        in sim["hypothetical"]
    assert "DOES NOT START" in done.stderr
    assert sim["runner"] == "torch.distributed.pipelining"


@pytest.mark.heavy
def test_the_text_names_torch_s_schedule_not_megatron_core_s(tmp_path):
    simulate(tmp_path, 4, "1F1B", 2)  # writes run_train.sh (a run that does not start)
    done = subprocess.run([sys.executable, "-m", "auditor", "simulate", "--config",
                           str(tmp_path / "run_train.sh"), "--target", "torchtitan==0.3.0",
                           "--target", "torch", "--torch", "2.13.0", "--set", "hidden_size=32"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    first = " ".join(done.stdout.split()[:12])
    assert "torch.distributed.pipelining's own schedule on CPU" in first, done.stdout[:400]


@pytest.mark.heavy
def test_fewer_micro_batches_than_stages_in_gpipe_runs(tmp_path):
    done, sim = simulate(tmp_path, 4, "GPipe", 2)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (sim["verdict"], sim["schedule"], sim["microbatches"]) == ("completes", "ScheduleGPipe", 2)


@pytest.mark.heavy
def test_a_csv_order_runs_in_torch_s_pipeline_schedule_runtime(tmp_path):
    # torch 2.13.0 PipelineScheduleMulti._load_csv: one row per rank of compute actions
    # (`{stage}{F|B}{microbatch}`), lowered to sends and receives by _PipelineScheduleRuntime.
    order = tmp_path / "order.csv"
    order.write_text("0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n")
    done, sim = simulate(tmp_path, 2, "1F1B", 2, csv=str(order))
    assert done.returncode == 0, done.stderr[-3000:]
    assert (sim["verdict"], sim["schedule"]) == ("completes", "_PipelineScheduleRuntime")


def test_an_unknown_model_width_is_inconclusive_with_the_step_that_decides_it(tmp_path):
    # torchtitan 0.3.0's llama3_8b_first_85_pct_layers_nvfp4 computes `n_layers = len(...)`:
    # the registry reader leaves its model (and so the width) unknown.
    done, sim = simulate(tmp_path, 2, "1F1B", 4, hidden=None, config="llama3_8b_first_85_pct_layers_nvfp4")
    assert done.returncode == 1
    assert sim["verdict"] == "inconclusive" and sim["not_run"] == "unknown"
    assert any("--set hidden_size=N" in u for u in sim["unknown"])


@pytest.mark.heavy
def test_pp4_interleaved_1f1b_8_micro_batches_at_llama3_8b_width_within_60_s(tmp_path):
    start = time.monotonic()
    done, sim = simulate(tmp_path, 4, "Interleaved1F1B", 8, seq=2048, dtype="bfloat16", hidden=4096)
    assert done.returncode == 0, done.stderr[-3000:]
    assert time.monotonic() - start <= 60
    assert (sim["schedule"], sim["microbatches"], sim["message_bytes"]) == (
        "ScheduleInterleaved1F1B", 8, 2048 * 4096 * 2)
    assert sim["verdict"] == "completes"
