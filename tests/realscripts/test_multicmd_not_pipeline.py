"""A script that runs the same forward-only generate program at several pipeline sizes is no
pipeline run only where every command is none: the commands at PP 2 send activations between
stages (forward_backward_pipelining_without_interleaving's recv_forward/send_forward) and are
judged; one at PP 1 (forward_backward_no_pipelining) is that command's class, beside them.

After Megatron-Bridge (NVIDIA-NeMo/Megatron-Bridge, commit
067f987df03b8355b03192d88d70f1709fedf51a) examples/models/qwen/qwen3_vl/inference.sh: six runs of
examples/conversion/hf_to_megatron_generate_vlm.py, :20-26, :29-36, :39-45 with `--tp 2 --pp 2`,
:48-53, :56-62, :65-70 with `--ep 8` and no `--pp` (its argparse default, 1). The generator sets
`model_provider.pipeline_model_parallel_size = pp` from `--pp` (:167, :204, :235) and calls
get_forward_backward_func()(..., forward_only=True) (:368-377). The scan answered NOT A PIPELINE
RUN for the whole script from the fourth command's note.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.realscripts.test_forward_only_detail import GENERATE

ROOT = Path(__file__).resolve().parents[2]

RUN = ("uv run python -m torch.distributed.run --nproc_per_node={n} "
       "examples/conversion/hf_to_megatron_generate_text.py --hf_model_path x/y {sizes}\n")
TARGET = ("--target", "megatron-core==0.17.0", "--torch", "2.10.0",
          "--set", "batch_p2p_comm=False", "--set", "distributed_backend=nccl",
          "--set", "virtual_pipeline_model_parallel_size=None")


def _scan(tmp_path: Path, *sizes: str) -> tuple[int, dict]:
    conversion = tmp_path / "examples" / "conversion"
    conversion.mkdir(parents=True, exist_ok=True)
    (conversion / "hf_to_megatron_generate_text.py").write_text(GENERATE)
    script = tmp_path / "inference.sh"
    script.write_text("".join(RUN.format(n=4 if "--pp" in s else 8, sizes=s) for s in sizes))
    proc = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script), *TARGET,
                           "--format", "json"], check=False, capture_output=True, text=True, cwd=ROOT,
                          timeout=600)
    return proc.returncode, json.loads(proc.stdout)


def test_a_script_is_no_pipeline_run_only_where_every_command_is(tmp_path: Path) -> None:
    code, doc = _scan(tmp_path, "--tp 2 --pp 2", "--ep 8")
    assert doc["verdict"]["status"] != "not-pipeline", doc["verdict"]["headline"]
    commands = doc["config"]["command_basis"]["commands"]
    assert [c["pipeline_model_parallel_size"] for c in commands] == [2, 1], commands
    assert commands[0]["status"] != "not-pipeline" and commands[1]["status"] == "not-pipeline", commands
    assert doc["config"]["command_basis"]["shown"] == 0
    summary = next(f["message"] for f in doc["findings"] if f["kind"] == "launch.several-commands")
    assert "2: line 2, pipeline_model_parallel_size 1, not-pipeline" in summary, summary
    assert "not-pipeline at pipeline_model_parallel_size 1" in doc["verdict"]["headline"]
    # every command at one stage: the script runs no pipeline
    code, doc = _scan(tmp_path, "--ep 8", "--tp 2 --pp 1")
    assert code == 0 and doc["verdict"]["status"] == "not-pipeline", doc["verdict"]
    assert "pipeline size 1" in doc["verdict"]["headline"]


def test_the_order_of_the_commands_does_not_matter(tmp_path: Path) -> None:
    """The one-stage command first (the scan stopped at the first command that runs none)."""
    code, doc = _scan(tmp_path, "--ep 8", "--tp 2 --pp 2")
    assert doc["verdict"]["status"] != "not-pipeline", doc["verdict"]["headline"]
    commands = doc["config"]["command_basis"]["commands"]
    assert [c["status"] == "not-pipeline" for c in commands] == [True, False], commands
    assert doc["config"]["command_basis"]["shown"] == 1


# A command that runs no pipeline whose launcher refuses it (a port past 65535: torch's
# rendezvous utils.py:102): the script does not start, whatever the other commands do.
REFUSED = "--master_port 70000 "


def _scan_lines(tmp_path: Path, *runs: str) -> tuple[int, dict]:
    conversion = tmp_path / "examples" / "conversion"
    conversion.mkdir(parents=True, exist_ok=True)
    (conversion / "hf_to_megatron_generate_text.py").write_text(GENERATE)
    script = tmp_path / "inference.sh"
    script.write_text("".join(runs))
    proc = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script), *TARGET,
                           "--format", "json"], check=False, capture_output=True, text=True, cwd=ROOT,
                          timeout=600)
    return proc.returncode, json.loads(proc.stdout)


def _run(sizes: str, launcher: str = "") -> str:
    return RUN.format(n=4 if "--pp" in sizes else 8, sizes=sizes).replace(
        "--nproc_per_node=", f"{launcher}--nproc_per_node=")


def test_a_refused_one_stage_command_beside_a_pipeline_does_not_start(tmp_path: Path) -> None:
    """Its document, decided before any scan, was re-judged as an inventory (exit 0)."""
    code, doc = _scan_lines(tmp_path, _run("--tp 2 --pp 2"), _run("--ep 8", REFUSED))
    assert code == 1 and doc["verdict"]["status"] == "findings", doc["verdict"]
    assert doc["verdict"]["headline"].startswith("DOES NOT START"), doc["verdict"]["headline"]
    assert f"{tmp_path / 'inference.sh'}:2" in doc["verdict"]["headline"]
    assert doc["config"]["command_basis"]["shown"] == 1
    assert "launch.launcher-refuses" in {f["kind"] for f in doc["findings"]}


def test_every_command_one_stage_one_refused_does_not_start(tmp_path: Path) -> None:
    """Not the first command's NOT A PIPELINE RUN."""
    code, doc = _scan_lines(tmp_path, _run("--ep 8"), _run("--ep 8", REFUSED))
    assert code == 1 and doc["verdict"]["headline"].startswith("DOES NOT START"), doc["verdict"]
    assert f"{tmp_path / 'inference.sh'}:2" in doc["verdict"]["headline"]
