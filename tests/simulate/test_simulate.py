"""`p2paudit simulate`: megatron-core 0.17.0's real schedule run on CPU (gloo) at the shipped
scripts' pipeline sizes, with ms-swift 4.3.0's patch where the scan finds it, and the recorded
order replayed under each script's conditions.

Each schedule run takes 15-30 s on two cores, so every script runs once; the conditions that do
not change the order (another torch, DETAIL off, an unknown torch) are replayed from the kept
trace of the PP=4 run through the same plan and replay code the command uses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from auditor.analysis.waitfor import transports
from auditor.dynamic.trace import read_trace_dir
from auditor.scan import ScanInputs, read_config, run_scan
from auditor.simulate import predict
from auditor.simulate.plan import SimulationPlan, plan

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
GLM4 = EXAMPLES / "glm5_1_lora_pp4.sh"
MLM = EXAMPLES / "megatron_lm_gpt_pp2.sh"
MiB = 1 << 20

pytestmark = pytest.mark.wheels


def simulate(*args: str, cwd: Path = ROOT) -> tuple[int, str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "auditor", "simulate", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)
    return done.returncode, done.stdout, done.stderr


def simulate_json(*args: str) -> tuple[int, dict, str]:
    rc, out, err = simulate(*args, "--format", "json")
    assert out, err
    return rc, json.loads(out), err


@pytest.fixture(scope="module")
def glm4(tmp_path_factory, real_sources) -> tuple[int, dict, str, Path]:
    trace = tmp_path_factory.mktemp("glm4") / "run"
    rc, doc, err = simulate_json("--config", str(GLM4), "--torch", "2.10.0", "--trace-dir",
                                 str(trace))
    return rc, doc, err, trace / "trace"


def scan_and_plan(config: Path, torch: str | None = None) -> tuple[dict, SimulationPlan]:
    """The scan document and the simulation plan of `config`, as the command makes them."""
    launch, srcs = read_config(str(config), None)
    doc = run_scan(ScanInputs(str(config), torch_version=torch), (launch, srcs))
    return doc, plan(doc, launch, srcs)


def replay_kept(config: Path, trace: Path, torch: str, transport: str | None = None) -> dict:
    """The kept PP=4 order under another script's or torch's conditions, as the command does."""
    doc, p = scan_and_plan(config, torch)
    p = predict.with_transport(p, transport)
    recorded = read_trace_dir(trace)
    results = predict.replays(doc, recorded, p)
    joined = predict.joined(doc, recorded, predict.pick(results))
    return predict.simulation(joined, p, results, "replayed", 0.0)


@pytest.mark.heavy
def test_glm_pp4_torch_210_detail_can_deadlock_and_over_the_network_it_depends_on_ib(glm4):
    """16 nodes: the network, NET/Socket or NET/IB. 24 MiB sends, both neighbours sending first:
    can deadlock; NET/Socket hangs at 16 MiB (measured); NET/IB's derived bound (2 MiB per
    channel) leaves it to the channels per peer: "will deadlock here" is undecided, exit 1."""
    rc, doc, err, _ = glm4
    sim = doc["simulation"]
    assert rc == 1, err
    assert sim["verdict"] == "inconclusive" and sim["hang"] is None
    d = sim["deadlock"]
    assert d["can_deadlock"] is True and d["will_deadlock"] is None and d["transport"] == "net"
    assert [(t["transport"]["name"], t["will_deadlock"]) for t in d["transports"]] == [
        ("NET/Socket", True), ("NET/IB", None)]
    assert "--transport net-socket or net-ib" in d["decide"]
    assert d["nccl"].startswith("2.27.5")  # torch 2.10.0's pin
    assert doc["verdict"]["status"] == "inconclusive" and doc["verdict"]["deadlock"] == d
    assert doc["verdict"]["undecided"][0]["decide"] == d["decide"]
    assert sim["schedule"] == "forward_backward_pipelining_without_interleaving"
    assert [r["rank"] for r in sim["ranks"]] == [0, 1, 2, 3]
    assert [r["global_rank"] for r in sim["ranks"]] == [0, 32, 64, 96]
    assert sim["microbatches"] == 4 and sim["message_bytes"] == 24 * MiB
    assert sim["conditions"] | {"words": ""} == {
        "init": "lazy", "coalesce": False, "buffer_bytes": 12 * MiB, "transport": "net", "backend": "nccl",
        "words": ""}
    a, b = sim["cycle_ranks"]
    assert b == a + 1, sim["cycle_ranks"]  # two neighbouring stages
    assert "ISEND" in sim["blocked"][str(a)] and "ISEND" in sim["blocked"][str(b)]
    assert sim["hypothetical"].startswith("this op order can deadlock; whether it will under lazy")
    assert "INCONCLUSIVE" in err and "can deadlock: yes" in doc_text(doc)
    schema = json.loads((ROOT / "docs" / "schema" / "scan-document.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)


def doc_text(doc: dict) -> str:
    from auditor.report.text import verdict_line
    return verdict_line(doc)


def test_glm_pp4_torch_210_detail_hangs_over_sockets(glm4):
    sim = replay_kept(GLM4, glm4[3], "2.10.0", "net-socket")
    assert sim["verdict"] == "hang" and sim["hang"] is True
    assert sim["deadlock"]["will_deadlock"] is True
    a, b = sim["cycle_ranks"]
    assert b == a + 1 and "ISEND" in sim["blocked"][str(a)]
    assert sim["hypothetical"].startswith("under lazy init, batch_isend_irecv runs op by op, "
                                          "net-socket transport")
    assert "24 MiB > the 12 MiB the net-socket transport buffers" in sim["cycle"]


def test_glm_pp4_applies_swift_patch_and_every_fired_site_was_predicted(glm4):
    _, doc, _, _ = glm4
    sim = doc["simulation"]
    (patch,) = sim["patches"]
    assert patch["installer"] == "swift.megatron.init._patch__batched_p2p_ops"
    assert patch["applied"] and patch["path"].endswith("swift/megatron/init.py")
    assert sim["unpredicted"] == []
    fired = set(sim["fired"])
    p2p = "megatron-core:megatron.core.pipeline_parallel.p2p_communication."
    assert f"{p2p}_batched_p2p_ops:batch_isend_irecv:0" in fired
    assert f"{p2p}P2PCommunicator._communicate_shapes:batch_isend_irecv:0" in fired
    # The patch sends the activations on the default group: ranks 2 and 3 use its pair
    # communicator, as the report's cycle says.
    assert "default_pg:2-3" in sim["cycle"]


def test_glm_pp4_torch_211_completes(glm4):
    sim = replay_kept(GLM4, glm4[3], "2.11.0")
    assert sim["verdict"] == "completes" and sim["hang"] is False
    assert sim["conditions"]["coalesce"] is True and sim["cycle_ranks"] == []


def test_glm_pp4_without_detail_completes(glm4, tmp_path):
    script = tmp_path / "no_detail.sh"
    script.write_text(GLM4.read_text().replace("export TORCH_DISTRIBUTED_DEBUG=DETAIL\n", ""))
    sim = replay_kept(script, glm4[3], "2.10.0")
    assert sim["verdict"] == "completes" and sim["conditions"]["coalesce"] is True


def test_unknown_torch_is_inconclusive_and_names_what_decides_it(glm4):
    sim = replay_kept(GLM4, glm4[3], "2.3.0")  # no torch rule covers 2.3
    assert sim["verdict"] == "inconclusive" and sim["hang"] is None
    assert {r["can_deadlock"] for r in sim["replays"]} == {True, False}  # coalesced: it cannot
    assert sim["deadlock"]["open_conditions"] is True
    assert "--torch" in sim["hypothetical"]


def test_one_node_layout_brackets_p2p_and_shm(glm4, tmp_path):
    """Inside a node NCCL takes P2P (NVLink) or SHM: 24 MiB sends fit what NVLink buffers
    (32 MiB measured) but lie between SHM's derived bounds (1 MiB completes, 128 MiB hangs), so
    whether the order hangs there is the transport's to decide, not NVLink's alone."""
    script = tmp_path / "one_node.sh"
    script.write_text(GLM4.read_text().replace("NNODES=${NNODES:-16}", "NNODES=${NNODES:-1}")
                      .replace("NPROC_PER_NODE=${NPROC_PER_NODE:-8}", "NPROC_PER_NODE=16"))
    sim = replay_kept(script, glm4[3], "2.10.0")
    assert [r["node"] for r in sim["ranks"]] == [0, 0, 0, 0]
    assert sim["conditions"]["transport"] == "node"
    assert "one node (P2P over NVLink or PCIe, or SHM)" in sim["inputs"]["transport"]["provenance"]
    verdicts = {v["transport"]["model_name"]: v["will_deadlock"]
                for v in sim["deadlock"]["transports"]}
    assert verdicts == {"nvlink": False, "shm": None}
    assert sim["verdict"] == "inconclusive" and sim["deadlock"]["can_deadlock"] is True
    assert "--transport nvlink or shm" in sim["deadlock"]["decide"]
    # Where the cluster says NVLink (--transport nvlink), the order completes op by op.
    assert replay_kept(script, glm4[3], "2.10.0", "nvlink")["verdict"] == "completes"


def test_unknown_layout_replays_both_topologies(glm4, tmp_path):
    """Nodes unknown: both topologies of rules/nccl.toml are replayed, each with its transports."""
    script = tmp_path / "nodes_unknown.sh"
    script.write_text(GLM4.read_text().replace("NNODES=${NNODES:-16}", "NNODES=${SLURM_NNODES}"))
    sim = replay_kept(script, glm4[3], "2.10.0")
    assert {r["conditions"]["transport"] for r in sim["replays"]} == {"net", "node"}
    assert sim["inputs"]["transport"]["value"] is None
    assert {"net", "node"} <= set(transports.transport_names())


def test_two_nodes_one_crossing_pair_is_replayed_on_the_network_transport(glm4, tmp_path):
    script = tmp_path / "two_nodes.sh"
    script.write_text(GLM4.read_text().replace("NNODES=${NNODES:-16}", "NNODES=${NNODES:-2}"))
    sim = replay_kept(script, glm4[3], "2.10.0")
    assert [r["node"] for r in sim["ranks"]] == [0, 0, 1, 1]
    assert sim["conditions"]["transport"] == "net"
    assert "stage pairs 1-2 cross nodes" in sim["inputs"]["transport"]["provenance"]


@pytest.mark.heavy
def test_megatron_lm_interleaved_fires_p2p_ops_and_completes(real_sources):
    rc, doc, err = simulate_json("--config", str(MLM), "--set",
                                 "virtual_pipeline_model_parallel_size=2", "--microbatches", "4")
    sim = doc["simulation"]
    assert rc == 0, err
    assert sim["schedule"] == "forward_backward_pipelining_with_interleaving"
    assert sim["virtual_stages"] == 2 and sim["verdict"] == "completes"
    assert sim["message_bytes"] == 1024 * 2048 * 2  # --seq-length 2048 / TP 2, hidden 2048, bf16
    assert any(".p2p_communication._p2p_ops:isend:" in s for s in sim["fired"])
    assert not any("_batched_p2p_ops" in s for s in sim["fired"])
    assert sim["unpredicted"] == [] and sim["patches"] == []


@pytest.mark.heavy
def test_glm_pp2_runs_and_hangs_between_its_two_stages_over_sockets(real_sources):
    rc, doc, err = simulate_json("--config", str(EXAMPLES / "glm5_1_lora_pp2.sh"), "--torch",
                                 "2.10.0", "--transport", "net-socket")
    sim = doc["simulation"]
    assert rc == 1 and sim["verdict"] == "hang" and sim["cycle_ranks"] == [0, 1]
    assert sim["inputs"]["transport"] == {"value": "net-socket", "provenance": "--transport net-socket"}
    assert [t["transport"]["name"] for t in sim["deadlock"]["transports"]] == ["NET/Socket"]
    assert sim["unpredicted"] == [] and sim["startup_errors"] == []


def test_glm_pp8_is_not_simulated_the_real_run_never_starts(real_sources):
    """A run the scan knows cannot start is not simulated (issue 22 item 13)."""
    rc, doc, err = simulate_json("--config", str(EXAMPLES / "glm5_1_lora_pp8.sh"), "--torch",
                                 "2.11.0")
    sim = doc["simulation"]
    assert sim["ranks"] == [] and sim["not_run"] == "startup" and sim["verdict"] == "inconclusive"
    (error,) = sim["startup_errors"]
    assert "78 layers with PP=8" in error
    assert rc == 1 and doc["verdict"]["headline"].startswith("DOES NOT START: not simulated")
    assert sim["hypothetical"].startswith("not simulated; megatron-core stops the run")


def test_unknown_hidden_size_is_inconclusive_without_running(tmp_path, real_sources):
    script = tmp_path / "no_hidden.sh"
    script.write_text(MLM.read_text().replace("    --hidden-size 2048\n", ""))
    rc, out, err = simulate("--config", str(script))
    assert rc == 1
    assert "INCONCLUSIVE" in err and "--set hidden_size=N" in err


def test_unknown_pipeline_size_is_inconclusive_without_running(tmp_path, real_sources):
    script = tmp_path / "pp_var.sh"
    script.write_text(MLM.read_text().replace("--pipeline-model-parallel-size 2",
                                              "--pipeline-model-parallel-size ${PP}"))
    rc, out, err = simulate("--config", str(script))
    assert rc == 1 and "INCONCLUSIVE" in err
    assert "--set pipeline_model_parallel_size=N" in err


def test_megatron_lm_without_bf16_exchanges_float32(tmp_path, real_sources):
    script = tmp_path / "fp32.sh"
    script.write_text(MLM.read_text().replace("    --bf16\n", ""))
    _, p = scan_and_plan(script)
    assert p.get("dtype") == "float32" and "--bf16" in p.values["dtype"].provenance
    assert p.message_bytes == 1024 * 2048 * 4
    assert p.get("microbatches") == 128  # --global-batch-size 256 // (1 x DP 2)


@pytest.mark.heavy
@pytest.mark.parametrize("args, subject", [
    (["--config", str(EXAMPLES / "glm5_1_lora_pp1.sh")], "pipeline_model_parallel_size is 1"),
    (["--config", str(GLM4), "--microbatches", "0"], "--microbatches: must be >= 1"),
    (["--config", str(GLM4), "--trace-dir", str(ROOT / "examples")], "must be an empty directory"),
])
def test_bad_input_is_exit_2_with_one_line(args, subject, real_sources):
    rc, out, err = simulate(*args)
    assert rc == 2 and subject in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.heavy
def test_a_script_stating_no_release_is_planned_on_the_newest(real_sources):
    """The seed report's verbatim command states no release (it once exited 2, "which
    ms-swift"): planned on the newest releases the rules verify, said in the output, and
    INCONCLUSIVE naming the sizes the command leaves unknown."""
    rc, out, err = simulate("--config", str(EXAMPLES / "seed_report_verbatim.sh"))
    assert rc == 1 and err.startswith("p2paudit simulate: INCONCLUSIVE: not simulated; unknown")
    assert "no release stated: simulated on the newest releases the rules verify" in " ".join(out.split())
    assert "--microbatches N" in err


@pytest.mark.heavy
def test_a_script_on_stdin_stating_no_release_is_read_once(real_sources):
    """`--config /dev/stdin` gives the script once: choosing the newest releases must not read
    it a second time (it once did, and the second read was empty)."""
    text = (EXAMPLES / "seed_report_verbatim.sh").read_text()
    done = subprocess.run([sys.executable, "-m", "auditor", "simulate", "--config", "/dev/stdin"],
                          input=text, cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("p2paudit simulate: INCONCLUSIVE: not simulated; unknown")


def test_html_is_the_record_report_of_the_simulated_run(glm4):
    from auditor.report.html import render_html

    doc, p = scan_and_plan(GLM4, "2.10.0")
    recorded = read_trace_dir(glm4[3])
    html = render_html(predict.joined(doc, recorded, predict.pick(predict.replays(doc, recorded, p))))
    # Every op of the simulated (gloo) run completed: the cycle is what NCCL would do with it.
    # Over the network: NET/Socket would hang, NET/IB's bound leaves it open: it *can* hang.
    assert "default_pg:2-3" in html and "replay-can-hang" in html and "wait-for-cycle" not in html
    assert '<ul id="deadlock"' in html and "can deadlock: yes" in html
    assert "will deadlock here: undecided (over net" in html


@pytest.mark.heavy
def test_megatron_lm_1450_prev_and_next_swap_at_pp2_with_a_virtual_pipeline(real_sources):
    """Megatron-LM #1450 (benchmarks/ppbugs): PP=2, VPP=2, overlap off, batched, variable
    lengths: one batch sends to prev and next (the same rank), and issue order pairs send_prev
    with the peer's recv_prev. Byte counts agree; only the roles say the tensors swap. With
    overlap on (Megatron-LM's default under a virtual pipeline) the pairs agree."""
    case = ROOT / "benchmarks" / "ppbugs" / "cases" / "megatron-lm-1450" / "launch_pp2_vpp2.sh"
    rc, doc, err = simulate_json("--config", str(case), "--torch", "2.11.0", "--set",
                                 "overlap_p2p_comm=false", "--set", "batch_p2p_comm=true",
                                 "--set", "variable_seq_lengths=true")
    pairs = doc["simulation"]["mismatched_pairs"]
    assert rc == 1 and pairs and {p["what"] for p in pairs} == {"role"}, err
    first = pairs[0]
    assert (first["send"]["role"], first["recv"]["role"]) == ("prev", "prev")
    assert first["send"]["bytes"] == first["recv"]["bytes"]
    assert "MISMATCH" in doc["verdict"]["headline"]
    rc, doc, err = simulate_json("--config", str(case), "--torch", "2.11.0", "--set",
                                 "variable_seq_lengths=true")
    assert rc == 0 and doc["simulation"]["mismatched_pairs"] == [], err
