"""The first screen answers "why did my job hang and what do I change" (issue 25): at 80 columns
the cause and its line are within the first 15 lines, each cause is shown once with what it
explains under it, no line is wider than the terminal, and --verbose still shows everything."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.analysis import causes
from auditor.config.launch import read_launch

ROOT = Path(__file__).resolve().parents[2]
CAUSE_LINE = re.compile(r"^  (ERROR|WARNING|INFO)\s+(\S+)")


def scan(config: str | Path, *args: str, columns: int = 80) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(config), *args],
                          capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env={**os.environ, "COLUMNS": str(columns)})


def first_screen(proc: subprocess.CompletedProcess) -> str:
    return "\n".join(proc.stdout.splitlines()[:15])


def assert_screen_rules(proc: subprocess.CompletedProcess, width: int = 80) -> None:
    lines = proc.stdout.splitlines()
    assert [line for line in lines if len(line) > width] == []
    kinds = [m[2] for line in lines if (m := CAUSE_LINE.match(line))]
    assert len(kinds) == len(set(kinds)), f"a cause shown twice: {kinds}"


@pytest.fixture(scope="module")
def glm(real_sources) -> dict:
    seed = "examples/glm5_1_lora_pp4.sh"
    return {"text": scan(seed, "--torch", "2.10.0"),
            "verbose": scan(seed, "--torch", "2.10.0", "--verbose"),
            "doc": json.loads(scan(seed, "--torch", "2.10.0", "--format", "json").stdout)}


@pytest.mark.heavy
def test_the_seed_cause_and_fix_are_on_the_first_screen(glm):
    proc = glm["text"]
    assert proc.returncode == 1, proc.stderr
    top = first_screen(proc)
    assert "TORCH_DISTRIBUTED_DEBUG=DETAIL" in top and "glm5_1_lora_pp4.sh:17" in top
    assert "torch 2.10.0" in top
    assert "\nfix: remove TORCH_DISTRIBUTED_DEBUG=DETAIL" in top
    assert_screen_rules(proc)


def test_one_error_per_cause_its_consequences_under_it(glm):
    proc, doc = glm["text"], glm["doc"]
    errors = [m[2] for line in proc.stdout.splitlines()
              if (m := CAUSE_LINE.match(line)) and m[1] == "ERROR"]
    assert errors == ["batch-runs-unbatched"]
    assert doc["verdict"]["errors"] == 1
    first = doc["verdict"]["causes"][0]
    assert first["kind"] == "batch-runs-unbatched"
    assert first["consequences"] == ["unbatched-contradiction", "split-communicators",
                                     "lazy-init-unbounded"]
    explains = next(line for line in proc.stdout.splitlines() if "explains:" in line)
    assert "unbatched-contradiction (10 site(s)" in explains


def test_only_p2p_monkeypatches_by_default_all_with_verbose(glm):
    text, verbose, doc = glm["text"].stdout, glm["verbose"].stdout, glm["doc"]
    assert "_patch__batched_p2p_ops" in text
    assert "TELinear.__repr__" not in text
    assert f"({len(doc['patches']) - 1} other monkeypatch(es), off the P2P path" in text
    for p in doc["patches"]:
        assert p["replacement"] in verbose.replace("\n    ", "")


def test_verbose_still_says_everything(glm):
    verbose = "".join(glm["verbose"].stdout.split())  # unwrapped (a long name may break anywhere)
    for f in glm["doc"]["findings"]:
        assert "".join(f["message"].split()) in verbose, f["kind"]
    quiet = [s for s in glm["doc"]["sites"] if s["verdict"] == "unknown" and not s["paths"]]
    assert len(quiet) > 3
    default = " ".join(glm["text"].stdout.split())
    assert f"(+{len(quiet) - 3} more: --verbose)" in default
    for s in quiet:
        assert f"{s['path']}:{s['line']}".replace(" ", "") in verbose


def test_a_run_that_cannot_start_says_so_first(real_sources):
    proc = scan("examples/glm5_1_lora_pp8.sh", "--torch", "2.10.0")
    assert proc.returncode == 1
    top = first_screen(proc)
    assert top.split("\n\n")[1].startswith("DOES NOT START: 78 layers with PP=8")
    assert "glm5_1_lora_pp8.sh:42" in top
    assert_screen_rules(proc)


def test_megatron_lm_script_with_detail(real_sources, tmp_path):
    """The construct of Megatron-LM's examples/gpt3/train_gpt3_175b_distributed.sh (NVIDIA/
    Megatron-LM@core_v0.17.0): flags in bash arrays expanded into torchrun's command line, with
    DETAIL exported above them, as the seed report did."""
    text = (ROOT / "examples/megatron_lm_gpt_pp2.sh").read_text()
    shebang, rest = text.split("\n", 1)
    script = tmp_path / "train_gpt_pp2_detail.sh"
    script.write_text(f"{shebang}\nexport TORCH_DISTRIBUTED_DEBUG=DETAIL\n{rest}")
    proc = scan(script, "--torch", "2.10.0")
    assert proc.returncode == 1, proc.stderr
    top = "".join(first_screen(proc).split())  # a long temporary path wraps anywhere
    assert "TORCH_DISTRIBUTED_DEBUG=DETAIL" in top and "train_gpt_pp2_detail.sh:2" in top
    assert_screen_rules(proc)


def test_wide_terminals_get_whole_lines(glm, real_sources):
    wide = scan("examples/glm5_1_lora_pp4.sh", "--torch", "2.10.0", columns=400)
    head = next(line for line in wide.stdout.splitlines() if line.startswith("FINDINGS: "))
    assert head.endswith("(examples/glm5_1_lora_pp4.sh:17).")


def _finding(kind: str, severity: str = "error", explains: tuple[str, ...] = (),
             category: str = "") -> dict:
    detail = {"explains": list(explains)} if explains else {}
    if category:
        detail["category"] = category
    return {"kind": kind, "severity": severity, "message": f"{kind} happened. More.",
            "detail": detail}


def test_causes_group_transitively_and_take_the_gravest_severity():
    findings = [_finding("lazy", "warning"),
                _finding("contradiction", "error", ("split",)),
                _finding("detail", "warning", ("contradiction", "lazy")),
                _finding("split", "warning"),
                _finding("timeout", "warning")]
    grouped = causes.group(findings)
    assert [(findings[c.index]["kind"], c.severity) for c in grouped] == [
        ("detail", "error"), ("timeout", "warning")]
    assert [findings[i]["kind"] for i in grouped[0].consequences] == ["contradiction", "lazy", "split"]


def test_a_start_up_failure_is_the_first_cause_and_a_cycle_still_shows_once():
    findings = [_finding("a", "error", ("b",)), _finding("b", "error", ("a",)),
                _finding("layers", "error", category="config")]
    grouped = causes.group(findings)
    assert findings[grouped[0].index]["kind"] == "layers" and grouped[0].startup
    rest = grouped[1]
    assert sorted([rest.index, *rest.consequences]) == [0, 1] and len(grouped) == 2
    assert causes.headline_of(findings[0]) == "a happened"


def test_a_world_size_megatron_lm_rejects_is_one_cause(real_sources, tmp_path):
    """Megatron-LM's examples/gpt3/train_gpt3_175b_distributed.sh (NVIDIA/Megatron-LM@core_v0.17.0)
    asks TP=8 x PP=16 of one node of 8 GPUs: validate_args stops the run, and megatron-core's two
    later world-size checks (TP*PP*CP, then the experts' ETP*EP*PP of a dense model) never run."""
    text = (ROOT / "examples/megatron_lm_gpt_pp2.sh").read_text()
    text = text.replace("--tensor-model-parallel-size 2", "--tensor-model-parallel-size 8")
    text = text.replace("--pipeline-model-parallel-size 2", "--pipeline-model-parallel-size 16")
    script = tmp_path / "train_gpt3_175b.sh"
    script.write_text(text)
    proc = scan(script, "--torch", "2.11.0")
    doc = json.loads(scan(script, "--torch", "2.11.0", "--format", "json").stdout)
    sizes = [f for f in doc["findings"] if f["kind"] == "parallel-sizes"]
    assert len(sizes) == 1 and "TP*PP*CP = 128" in sizes[0]["message"], sizes
    assert first_screen(proc).split("\n\n")[1].startswith("DOES NOT START: world size 8")
    assert_screen_rules(proc)


def test_a_flag_in_a_multi_line_string_is_placed_at_its_own_line(tmp_path):
    """Flags written one per line inside a quoted string (GPT_ARGS="..." in NVIDIA/Megatron-LM@
    23.06 examples/pretrain_gpt.sh, here with plain newlines): each flag's provenance names its
    own line, not the line the string starts on."""
    script = tmp_path / "run.sh"
    script.write_text('#!/bin/bash\nMODEL_ARGS="\n    --num-layers 24\n'
                      '    --tensor-model-parallel-size 2\n    --pipeline-model-parallel-size 2\n"\n'
                      "torchrun --nproc_per_node 8 pretrain_gpt.py $MODEL_ARGS\n")
    config = read_launch(script)
    assert (config.flags["tensor_model_parallel_size"].line,
            config.flags["pipeline_model_parallel_size"].line) == (4, 5)


def test_a_variable_only_the_script_uses_is_not_reported_unexported(tmp_path):
    """NVIDIA/Megatron-LM@core_v0.17.0 examples/gpt3/train_gpt3_175b_distributed.sh sets
    NODE_RANK=0 and WORLD_SIZE=... that nothing reads (torchrun takes --node_rank); a variable a
    rule reads (TORCH_DISTRIBUTED_DEBUG) set without export is still said."""
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\nNODE_RANK=0\nWORLD_SIZE=8\nTORCH_DISTRIBUTED_DEBUG=DETAIL\n"
                      "torchrun --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size 2\n")
    config = read_launch(script)
    said = [d.message.split()[0] for d in config.diagnostics if d.kind == "launch.not-exported"]
    assert said == ["TORCH_DISTRIBUTED_DEBUG"]


def test_a_default_the_script_never_states_is_placed_at_the_command(glm):
    """ms-swift's 18000000 s default timeout is no line of the script: the finding points at the
    `megatron sft` line, where `--ddp_timeout` goes, not at `NPROC_PER_NODE=` (the first line of
    the command's environment prefix)."""
    where = next(f["where"] for f in glm["doc"]["findings"] if f["kind"] == "timeout-too-large")
    line = int(where.rsplit(":", 1)[1])
    text = (ROOT / "examples/glm5_1_lora_pp4.sh").read_text().splitlines()
    assert text[line - 1].startswith("megatron sft")
