"""The line a user can act on (issue 23 item 4): a recorded op keeps its site (the line that called
torch, the static inventory's key) and names the framework line that chose it (`chosen`: the first
frame outside the comm wrappers that rules/*.toml list), in the trace line, the report's text and
SARIF. On real gloo recordings: torch.distributed.pipelining's Schedule1F1B, megatron-core 0.17.0's
own 1F1B schedule (`p2paudit simulate`, under ms-swift's _batched_p2p_ops patch) and DeepSpeed
0.18.4's PipelineEngine."""

from __future__ import annotations

import ast
import copy
import fnmatch
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.report.test_sarif import errors as sarif_errors
from tests.dynamic.test_trace_schema import VALIDATOR, assert_valid, lines

from auditor.dynamic import callsite
from auditor.rulebook.frameworks import frameworks

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "record_fixtures"
MCORE = "megatron/core/pipeline_parallel/"


def record(tmp_path: Path, script: str, timeout: int = 240) -> Path:
    out = tmp_path / "trace"
    proc = subprocess.run(
        [sys.executable, "-m", "auditor", "record", "--out", str(out), "--",
         sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
         str(FIXTURES / script)], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
        env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def starts(out: Path) -> list[dict]:
    return [line for _, _, line in lines(out) if line["phase"] == "start"]


def test_the_rules_name_each_frameworks_comm_wrappers():
    assert callsite.is_comm_wrapper("deepspeed/comm/torch.py", "TorchBackend.send")
    assert callsite.is_comm_wrapper("deepspeed/runtime/pipe/p2p.py", "send")
    assert not callsite.is_comm_wrapper("deepspeed/runtime/pipe/engine.py",
                                        "PipelineEngine._exec_send_activations")
    assert callsite.is_comm_wrapper(MCORE + "p2p_communication.py", "_batched_p2p_ops")
    assert not callsite.is_comm_wrapper(MCORE + "schedules.py",
                                        "forward_backward_pipelining_without_interleaving")
    # A function of a module, not the whole module: the schedule that calls _batch_p2p chose.
    schedules = "torch/distributed/pipelining/schedules.py"
    assert callsite.is_comm_wrapper(schedules, "_batch_p2p")
    assert not callsite.is_comm_wrapper(schedules, "Schedule1F1B._step_microbatches")
    # torch's DeviceMesh makes a mesh's groups: the mesh's caller (torchtitan's build_mesh) chose.
    assert callsite.is_comm_wrapper("torch/distributed/device_mesh.py",
                                    "DeviceMesh._init_one_process_group")


@pytest.mark.heavy
def test_torch_pipelining_ops_name_the_schedule_line_that_chose_them(tmp_path):
    out = record(tmp_path, "pipelining_1f1b.py")
    assert assert_valid(out) == len(lines(out))
    ops = [s for s in starts(out) if s["kind"] == "p2p"]
    assert ops
    for op in ops:  # the site stays the user's schedule.step line: the inventory's key
        assert (op["site"]["path"], op["site"]["function"]) == ("pipelining_1f1b.py", "main")
    chosen = {(op["api"], op["chosen"]["path"], op["chosen"]["function"]) for op in ops}
    assert ("isend", "torch/distributed/pipelining/schedules.py",
            "Schedule1F1B._step_microbatches") in chosen
    assert ("send_object_list", "torch/distributed/pipelining/stage.py",
            "PipelineStage._send_meta") in chosen
    assert not any(c[2].startswith(("_batch_p2p", "_sorted_batch_p2p")) for c in chosen)
    # The script's own call: its site is the line that chose it, said once.
    inits = [s for s in starts(out) if s["api"] == "init_process_group"]
    assert inits and all(i["site"]["path"] == "pipelining_1f1b.py" and "chosen" not in i
                         for i in inits)


@pytest.fixture(scope="module")
def megatron_run(tmp_path_factory) -> Path:
    """megatron-core 0.17.0's own 1F1B schedule on 2 gloo ranks, recorded by simulate."""
    work = tmp_path_factory.mktemp("mcore")
    proc = subprocess.run(
        [sys.executable, "-m", "auditor", "simulate", "--config", "examples/glm5_1_lora_pp2.sh",
         "--torch", "2.10.0", "--microbatches", "2", "--trace", str(work / "sim")],
        cwd=ROOT, capture_output=True, text=True, timeout=500)
    assert (work / "sim" / "trace" / "rank-0.jsonl").is_file(), proc.stdout + proc.stderr
    return work / "sim" / "trace"


@pytest.mark.heavy
def test_megatron_ops_name_the_schedule_line_past_p2p_communication(megatron_run):
    assert assert_valid(megatron_run) > 0
    ops = [s for s in starts(megatron_run) if s["kind"] == "p2p"]
    assert ops and all(op["site"]["path"] == MCORE + "p2p_communication.py" for op in ops)
    # Past ms-swift's _batched_p2p_ops patch too (rules/ms-swift.toml): megatron's schedule chose.
    assert all(op["chosen"]["path"] == MCORE + "schedules.py" for op in ops)
    assert {op["chosen"]["function"] for op in ops} == {
        "forward_backward_pipelining_without_interleaving"}


@pytest.mark.heavy
def test_report_text_and_sarif_show_the_chosen_line(megatron_run, tmp_path):
    def scan(fmt: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "auditor", "scan", "--config", "examples/glm5_1_lora_pp2.sh",
             "--torch", "2.10.0", "--trace", str(megatron_run), "--format", fmt],
            cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert proc.stdout, proc.stderr
        return proc.stdout

    text = " ".join(scan("text").split())
    assert f"unbatched-run at {MCORE}p2p_communication.py:49, chosen at {MCORE}schedules.py:" in text
    assert f"at {MCORE}p2p_communication.py:49, chosen at {MCORE}schedules.py:" in scan("html")
    log = json.loads(scan("sarif"))
    assert not sarif_errors(log)
    related = [loc for r in log["runs"][0]["results"] if r["ruleId"] == "unbatched-run"
               for loc in r.get("relatedLocations", [])]
    chosen = [loc for loc in related if "chose" in loc["message"]["text"]]
    assert chosen
    artifact = chosen[0]["physicalLocation"]["artifactLocation"]
    assert artifact["uri"] == MCORE + "schedules.py"
    assert artifact["uriBaseId"] == "megatron-core"


@pytest.mark.heavy
@pytest.mark.skipif(importlib.util.find_spec("deepspeed") is None, reason="deepspeed not installed")
def test_deepspeed_pipeline_engine_ops_name_the_engine_lines(tmp_path):
    """DeepSpeed 0.18.4's own PipelineEngine on 3 gloo ranks (PP-BugBench diffusion-pipe-511's
    driver, buggy side: an int64 activation received into a float buffer): every P2P op's site is
    deepspeed/comm/torch.py, and it names the engine's instruction that chose it; the report's
    mismatch says both, in JSON, HTML and SARIF."""
    case = ROOT / "benchmarks" / "ppbugs" / "cases" / "diffusion-pipe-511"
    out = tmp_path / "trace"
    subprocess.run(
        [sys.executable, "-m", "auditor", "record", "--hang-after", "20", "--out", str(out), "--",
         sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "3",
         "driver.py", "buggy"], cwd=case, capture_output=True, text=True, timeout=400,
        env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert assert_valid(out) > 0
    p2p = [s for s in starts(out) if s["api"] in ("send", "recv")]
    assert p2p and {s["site"]["path"] for s in p2p} == {"deepspeed/comm/torch.py"}
    chosen = {s["chosen"]["path"] for s in p2p}
    assert chosen == {"deepspeed/runtime/pipe/engine.py"}
    assert {"PipelineEngine._exec_send_activations", "PipelineEngine._exec_recv_activations"} <= {
        s["chosen"]["function"] for s in p2p}

    def report(fmt: str) -> str:
        return subprocess.run([sys.executable, "-m", "auditor", "report", "--trace", str(out),
                               "--format", fmt], cwd=ROOT, capture_output=True, text=True,
                              timeout=300).stdout

    doc = json.loads(report("json"))
    (mismatch,) = [f for f in doc["findings"] if f["kind"] == "p2p-mismatch"]
    assert mismatch["where"].startswith("deepspeed/comm/torch.py:")
    assert mismatch["chosen"] and all(c.startswith("deepspeed/runtime/pipe/engine.py:")
                                      for c in mismatch["chosen"])
    assert f"(chosen at {mismatch['chosen'][0]})" in mismatch["message"]
    assert f"{mismatch['where']}, chosen at {', '.join(mismatch['chosen'])}" in report("html")
    log = json.loads(report("sarif"))
    assert not sarif_errors(log)
    (result,) = [r for r in log["runs"][0]["results"] if r["ruleId"] == "p2p-mismatch"]
    assert [(loc["physicalLocation"]["artifactLocation"]["uri"],
             loc["physicalLocation"]["region"]["startLine"]) for loc in result["relatedLocations"]
            ] == [(path, int(line)) for path, line in (c.split(":") for c in mismatch["chosen"])]


def test_the_schema_refuses_a_chosen_frame_that_is_not_a_site():
    line = copy.deepcopy(next(x for _, _, x in lines(FIXTURES / "pipeline")
                              if x.get("kind") == "p2p"))
    line["chosen"] = dict(line["site"])
    assert VALIDATOR.is_valid(line)
    for broken in ({"line": 3}, "schedules.py:3", {"path": "a.py", "line": "3", "function": "f"}):
        line["chosen"] = broken
        assert not VALIDATOR.is_valid(line)


def qualnames(source: str) -> set[str]:
    """Every function's qualified name in a module, as CPython names its code objects."""
    out: set[str] = set()

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.add(prefix + child.name)
                walk(child, f"{prefix}{child.name}.<locals>.")
            elif isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}{child.name}.")
            else:
                walk(child, prefix)
    walk(ast.parse(source), "")
    return out


@pytest.mark.heavy
@pytest.mark.parametrize("framework", [f for f in frameworks() if f.comm_wrappers],
                         ids=lambda f: f.name)
def test_each_comm_wrapper_is_in_the_releases_its_rules_name(framework, release):
    """Each `comm_wrappers` entry names a module (and function) of every verified release (torch:
    the installed one, the release these entries were read in)."""
    pins = ["torch"] if framework.name == "torch" else [
        f"{framework.distribution}=={v}" for v in framework.verified]
    for pin in pins:
        found = release(pin)
        for entry in framework.comm_wrappers:
            pattern, _, function = entry.partition(":")
            files = [f for f in found.files if fnmatch.fnmatchcase(f, pattern)]
            assert files, f"{pin}: no file matches {pattern}"
            if function:
                (path,) = files
                assert function in qualnames((found.root / path).read_text(encoding="utf-8")), \
                    f"{pin}: {path} has no {function}"
