"""`p2paudit gate` on the real releases against the seed script's baseline: 0.17.0 passes against
itself, 0.16.1 and 0.19.2 (the newest when written) pass with the differences their sources show,
and a copy of 0.17.0 with batched sites rewritten as unbatched fails, one finding per new copy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from auditor import cli, sources
from auditor.analysis.gate import gate
from auditor.errors import EXIT_FINDINGS, EXIT_INPUT, EXIT_OK
from auditor.scan import ScanInputs, run_scan

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "examples" / "glm5_1_lora_pp4.sh"
COMMITTED = ROOT / "ci" / "baseline" / "glm5_1_lora_pp4.megatron-core-0.17.0.json"
P2P = "megatron/core/pipeline_parallel/p2p_communication.py"
COPY = "megatron/core/resharding/copy_services/nccl_copy_service.py"
SNIFF = "megatron/training/gpu_sniff_test.py"


def gate_cli(capsys, baseline: Path, *argv: str) -> tuple[int, dict]:
    code = cli.main(["gate", "--config", str(SEED), "--baseline", str(baseline),
                     "--format", "json", *argv])
    out = capsys.readouterr().out
    return code, json.loads(out)


@pytest.fixture(scope="module")
def baseline(real_sources, tmp_path_factory) -> Path:
    """The seed script scanned at megatron-core 0.17.0 as the report ran it (torch 2.10.0)."""
    doc = run_scan(ScanInputs(str(SEED), torch_version="2.10.0"))
    path = tmp_path_factory.mktemp("baseline") / "baseline.json"
    path.write_text(json.dumps(doc))
    return path


def source_line(target: str, path: str, line: int) -> str:
    return (sources.resolve(target).root / path).read_text().splitlines()[line - 1]


def test_0_17_0_passes_against_its_own_baseline(baseline, capsys):
    code, doc = gate_cli(capsys, baseline, "--target", "megatron-core==0.17.0")
    assert code == EXIT_OK and doc["gate"]["passed"] and doc["gate"]["new"] == []
    # The seed's known problems (torch 2.10 + DETAIL runs every batch op by op) stay known.
    assert doc["gate"]["known"] == sum(1 for s in doc["sites"] if s["verdict"] == "contradiction") > 0
    d = doc["gate"]["diff"]
    assert d["sites"] == {"added": [], "removed": [], "moved": [], "changed": []}


def test_committed_baseline_is_current(real_sources, capsys):
    """ci/baseline is what CI gates against; when the scan's verdicts change it must be rewritten
    (ci/gate.sh --rebaseline)."""
    code, doc = gate_cli(capsys, COMMITTED, "--target", "megatron-core==0.17.0")
    assert code == EXIT_OK, [f["message"] for f in doc["gate"]["new"]]
    assert doc["gate"]["diff"]["sites"]["changed"] == []


def test_0_16_1_differences_from_the_sources(baseline, capsys):
    code, doc = gate_cli(capsys, baseline, "--target", "megatron-core==0.16.1")
    assert code == EXIT_OK and doc["gate"]["new"] == []
    d = doc["gate"]["diff"]
    assert d["targets"] == [{"name": "megatron-core", "before": "0.17.0", "after": "0.16.1"}]
    assert d["sites"]["added"] == [] and d["sites"]["removed"] == []
    # NCCLCopyService.run: 0.17.0 passes group=self.group, 0.16.1 no group (the default group).
    changed = {c["id"].split(":", 1)[1]: c for c in d["sites"]["changed"]}
    run = "megatron.core.resharding.copy_services.nccl_copy_service.NCCLCopyService.run"
    assert set(changed) == {f"{run}:P2POp:0", f"{run}:P2POp:1", f"{run}:batch_isend_irecv:0"}
    before = {s["id"]: s for s in json.loads(baseline.read_text())["sites"]}
    for sid, c in changed.items():
        assert c["fields"]["group"] == ["self.group", "default"]
        if ":P2POp:" in sid:  # the batch's group is its P2POps'
            line = int(c["where"].rsplit(":", 1)[1])
            assert "group=" not in source_line("megatron-core==0.16.1", COPY, line)
            line = before[f"megatron-core:{sid}"]["line"]
            assert "group=self.group" in source_line("megatron-core==0.17.0", COPY, line)
    # p2p_communication.py: 0.17.0 has one more import line above _batched_p2p_ops.
    moved = {m["id"]: m for m in d["sites"]["moved"]}
    first = moved["megatron-core:megatron.core.pipeline_parallel.p2p_communication._batched_p2p_ops:P2POp:0"]
    assert first == {"id": first["id"], "before": f"{P2P}:29", "after": f"{P2P}:28"}
    extra = "from megatron.core.pipeline_parallel.utils import is_pp_first_stage, is_pp_last_stage"
    assert extra in source_line("megatron-core==0.17.0", P2P, 10)
    assert extra not in sources.resolve("megatron-core==0.16.1").root.joinpath(P2P).read_text()


def test_newest_release_0_19_2_differences_from_the_sources(baseline, capsys):
    code, doc = gate_cli(capsys, baseline, "--target", "megatron-core==0.19.2")
    assert code == EXIT_OK and doc["gate"]["new"] == []
    d = doc["gate"]["diff"]
    added = d["sites"]["added"]
    # megatron/training/gpu_sniff_test.py is new in 0.19.2: a batched exchange in bench_sendrecv.
    assert not sources.resolve("megatron-core==0.17.0").root.joinpath(SNIFF).exists()
    text = sources.resolve("megatron-core==0.19.2").root.joinpath(SNIFF).read_text().splitlines()
    expected = sorted(n for n, t in enumerate(text, 1)
                      if "dist.P2POp(" in t or "dist.batch_isend_irecv(" in t)
    assert [(s["path"], s["line"]) for s in added] == [(SNIFF, n) for n in expected]
    assert all(s["batched"] and s["function"] == "bench_sendrecv.<locals>._run" for s in added)
    # Nothing reaches it from the trainer's entry points: a note, not a failure.
    notes = [f for f in doc["findings"] if f["kind"] == "gate-new-site-unresolved"]
    assert sorted(f["where"] for f in notes) == sorted(f"{SNIFF}:{n}" for n in expected)
    assert all(f["detail"]["baseline"] == "new" for f in notes)
    # BridgeCommunicator: every op now names group=self.bridge_pg (0.17.0: the default group).
    bridge = [c for c in d["sites"]["changed"] if ".bridge_communicator." in c["id"]]
    assert len(bridge) == 15
    for c in bridge:
        assert c["fields"]["group"] == ["default", "self.bridge_pg"]
    sends = [c for c in bridge if c["id"].endswith(":send:0")]
    for c in sends:
        path, line = c["where"].rsplit(":", 1)
        assert "group=self.bridge_pg" in source_line("megatron-core==0.19.2", path, int(line))


REWRITE_BATCHED = """\
    if tensor_send_next is not None:
        send_next_op = torch.distributed.P2POp(
            torch.distributed.isend, tensor_send_next, next_pipeline_rank, group
        )
        ops.append(send_next_op)
"""
UNBATCHED = """\
    if tensor_send_next is not None:
        torch.distributed.isend(tensor_send_next, next_pipeline_rank, group)
"""
REWRITE_SHAPES = """\
            if send_next_shape_tensor is not None:
                send_next_op = torch.distributed.P2POp(
                    torch.distributed.isend, send_next_shape_tensor, self.next_rank, self.pp_group
                )
                ops.append(send_next_op)
"""
THREE_COPIES = """\
            if send_next_shape_tensor is not None:
                torch.distributed.isend(send_next_shape_tensor, self.next_rank, self.pp_group)
                torch.distributed.isend(send_next_shape_tensor, self.next_rank, self.pp_group)
                torch.distributed.isend(send_next_shape_tensor, self.next_rank, self.pp_group)
"""


def test_batched_sites_rewritten_as_unbatched_fail_the_gate(baseline, capsys, tmp_path):
    tree = tmp_path / "megatron-core-0.17.0-unbatched"
    shutil.copytree(sources.resolve("megatron-core==0.17.0").root, tree)
    f = tree / P2P
    text = f.read_text()
    assert text.count(REWRITE_BATCHED) == 1 and text.count(REWRITE_SHAPES) == 1
    f.write_text(text.replace(REWRITE_BATCHED, UNBATCHED).replace(REWRITE_SHAPES, THREE_COPIES))
    code, doc = gate_cli(capsys, baseline, "--target", str(tree))
    assert code == EXIT_FINDINGS and not doc["gate"]["passed"]
    new = doc["gate"]["new"]
    lines = f.read_text().splitlines()
    unbatched = [n for n, t in enumerate(lines, 1) if t.strip().startswith("torch.distributed.isend(")]
    assert len(unbatched) == 4
    # One finding per new unbatched copy, each at its own line: count-aware, by family.
    assert sorted((x["where"] for x in new), key=lambda w: int(w.rsplit(":", 1)[1])) == \
        [f"{P2P}:{n}" for n in unbatched]
    assert {x["kind"] for x in new} == {"gate-new-contradiction"}
    families = {x["detail"]["family"]: (x["detail"]["baseline_count"], x["detail"]["count"])
                for x in new}
    assert families == {
        "megatron-core:megatron.core.pipeline_parallel.p2p_communication._batched_p2p_ops:isend": (0, 1),
        "megatron-core:megatron.core.pipeline_parallel.p2p_communication.P2PCommunicator._communicate_shapes:isend": (0, 3),
    }
    path = next(x for x in new if "_batched_p2p_ops" in x["detail"]["family"])["detail"]["paths"][0]
    assert path[:2] == ["base.BaseMegatronTrainer.train_step",
                        "schedules.forward_backward_pipelining_without_interleaving"]
    # The P2POps they replaced are one fewer each: reported as fixed, not failing.
    fixed = [x for x in doc["findings"] if x["kind"] == "gate-fixed"]
    assert len(fixed) == 2 and all(x["detail"]["baseline"] == "absent" for x in fixed)


def test_a_baseline_judged_across_torch_releases_gates(real_sources, capsys, tmp_path):
    """A script stating no torch is judged across the covered releases; its baseline's torch is
    "unknown", which gate once passed on as --torch (exit 2 on every such script)."""
    script = tmp_path / "run.sh"
    script.write_text(SEED.read_text().replace("# torch==2.10.0", "")
                      .replace("export TORCH_DISTRIBUTED_DEBUG=DETAIL", ""))
    doc = run_scan(ScanInputs(str(script)))
    assert doc["config"]["torch_basis"]["version"] is None
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(doc))
    code = cli.main(["gate", "--config", str(script), "--baseline", str(path), "--format", "json"])
    gated = json.loads(capsys.readouterr().out)
    assert code == EXIT_OK and gated["gate"]["passed"]
    assert gated["config"]["torch_basis"]["releases"] == doc["config"]["torch_basis"]["releases"]


def test_a_run_that_stops_at_start_up_fails_the_gate_only_when_new(baseline, capsys, tmp_path):
    """A release (or setting) under which the run no longer starts fails the gate; a start-up
    error the baseline shares passes, and the headline says the run does not start."""
    code, doc = gate_cli(capsys, baseline, "--target", "megatron-core==0.17.0",
                         "--set", "world_size=100")
    assert code == EXIT_FINDINGS and not doc["gate"]["passed"]
    stop = [f for f in doc["gate"]["new"] if f["kind"] == "gate-does-not-start"]
    assert stop and "not divisible" in stop[0]["message"]
    stopped = run_scan(ScanInputs(str(SEED), torch_version="2.10.0",
                                  overrides={"world_size": "100"}))
    path = tmp_path / "stopped.json"
    path.write_text(json.dumps(stopped))
    code, doc = gate_cli(capsys, path, "--target", "megatron-core==0.17.0",
                         "--set", "world_size=100")
    assert code == EXIT_OK and doc["gate"]["passed"]
    assert "the run does not start, as in the baseline: " in doc["verdict"]["headline"]


def test_count_aware_matching_on_documents():
    """Three more copies of a known unbatched site are three findings, whatever their ordinals."""
    def site(ordinal: int, line: int) -> dict:
        return {"id": f"pkg:mod.f:isend:{ordinal}", "package": "pkg", "path": "mod.py",
                "line": line, "function": "f", "api": "isend", "batched": False,
                "reachable": "yes", "verdict": "contradiction", "paths": [["mod.f"]]}
    config = {"effective": {"pipeline_model_parallel_size": 2, "batch_p2p_comm": True}}
    base = {"targets": [{"name": "pkg", "version": "1"}], "sites": [site(0, 10)], "config": config}
    new = {"targets": [{"name": "pkg", "version": "2"}], "config": config,
           "sites": [site(0, 8), site(1, 9), site(2, 10), site(3, 11)]}
    result = gate(base, new)
    assert result.exit_code == EXIT_FINDINGS and len(result.new) == 3 and result.known == 1
    assert gate(new, base).exit_code == EXIT_OK and len(gate(new, base).fixed) == 1


def test_bad_baselines_exit_2(capsys, tmp_path, real_sources):
    missing = tmp_path / "none.json"
    assert cli.main(["gate", "--config", str(SEED), "--baseline", str(missing)]) == EXIT_INPUT
    assert f"{missing}: cannot read" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text('{"sites": [\n  {"id": 1,\n}')
    assert cli.main(["gate", "--config", str(SEED), "--baseline", str(broken)]) == EXIT_INPUT
    assert f"{broken}:3: not JSON" in capsys.readouterr().err
    inventory = tmp_path / "sites.json"
    assert cli.main(["sites", "megatron-core==0.17.0", "--format", "json", "-o", str(inventory)]) == 0
    capsys.readouterr()
    assert cli.main(["gate", "--config", str(SEED), "--baseline", str(inventory)]) == EXIT_INPUT
    assert "a site inventory, not a scan" in capsys.readouterr().err


@pytest.mark.heavy
def test_ci_script_gates_a_release_and_writes_every_format(real_sources, tmp_path):
    out = tmp_path / "gate"
    proc = subprocess.run(["bash", str(ROOT / "ci" / "gate.sh"), "0.17.0"], capture_output=True,
                          text=True, env=dict(os.environ, P2PAUDIT_GATE_OUT=str(out)), timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("megatron-core 0.17.0: exit 0: PASS: ")
    for ext in ("json", "sarif", "html", "txt"):
        assert (out / f"megatron-core-0.17.0.{ext}").stat().st_size > 0, ext
    assert json.loads((out / "megatron-core-0.17.0.json").read_text())["gate"]["passed"] is True


def test_a_megatron_lm_checkout_is_megatron_core_at_its_version(baseline, capsys, tmp_path):
    """A directory with `megatron/core/package_info.py` and no package metadata (a Megatron-LM
    git checkout) is megatron-core at that version: the rules apply, the entry points reach
    it, and a batched site rewritten unbatched fails the gate (it used to pass as `None`)."""
    checkout = tmp_path / "Megatron-LM"
    shutil.copytree(sources.resolve("megatron-core==0.17.0").root / "megatron", checkout / "megatron")
    f = checkout / P2P
    f.write_text(f.read_text().replace(REWRITE_BATCHED, UNBATCHED))
    code, doc = gate_cli(capsys, baseline, "--target", str(checkout))
    target = next(t for t in doc["targets"] if t["source"] == "dir")
    assert (target["name"], target["version"]) == ("megatron-core", "0.17.0")
    assert code == EXIT_FINDINGS and not doc["gate"]["passed"]
    assert {x["kind"] for x in doc["gate"]["new"]} == {"gate-new-contradiction"}
