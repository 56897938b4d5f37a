"""`p2paudit scan` on the seed script and its variants, against the real releases it names
(megatron-core 0.17.0, ms-swift 4.3.0, mcore-bridge 1.4.1, in the script's `name==X` comments)."""

from __future__ import annotations

import importlib

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from auditor import rulebook, sources
from auditor.errors import InputError
from auditor.scan import ScanInputs, read_config, run_scan
from auditor.rulebook import interpreter

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "examples" / "glm5_1_lora_pp4.sh"
P2P = "megatron/core/pipeline_parallel/p2p_communication.py"


def scan(config: Path, **kw) -> dict:
    return run_scan(ScanInputs(str(config), **kw))


def by_function(doc: dict, path: str = P2P) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for s in doc["sites"]:
        if s["path"] == path:
            out.setdefault(s["function"], []).append(s)
    return out


def variant(tmp_path: Path, name: str, edit) -> Path:
    p = tmp_path / name
    p.write_text(edit(SEED.read_text()))
    return p


@pytest.fixture(scope="module")
def seed_210(real_sources) -> dict:
    return scan(SEED, torch_version="2.10.0")


def test_seed_effective_config_with_provenance(seed_210):
    eff, prov = seed_210["config"]["effective"], seed_210["config"]["provenance"]
    expected = {
        "batch_p2p_comm": True, "overlap_p2p_comm": False, "variable_seq_lengths": True,
        "pipeline_model_parallel_size": 4, "tensor_model_parallel_size": 4,
        "expert_model_parallel_size": 8, "data_parallel_size": 8,
    }
    assert {k: eff[k] for k in expected} == expected
    assert seed_210["launch"]["world_size"] == 128
    assert "no virtual pipeline" in prov["overlap_p2p_comm"]
    assert {t["name"]: t["version"] for t in seed_210["targets"]} == {
        "megatron-core": "0.17.0", "ms-swift": "4.3.0", "mcore-bridge": "1.4.1",
    }


def test_batched_pipeline_sites_reachable_from_the_trainer_with_full_paths(seed_210):
    fns = by_function(seed_210)
    for function in ("_batched_p2p_ops", "P2PCommunicator._communicate_shapes"):
        reached = [s for s in fns[function] if s["api"] != "ring_exchange"]
        assert len(reached) == 5
        for s in reached:
            assert s["reachable"] == "yes", s
            path = s["paths"][0]
            assert path[0] == "base.BaseMegatronTrainer.train_step"
            assert path[1] == "schedules.forward_backward_pipelining_without_interleaving"
            assert path[-1].endswith(function.split(".")[-1])
    assert "config.variable_seq_lengths or config.mtp_standalone" in fns["_batched_p2p_ops"][0]["guards"]


def test_p2p_ops_unreachable_with_the_guard_shown(seed_210):
    for s in by_function(seed_210)["_p2p_ops"]:
        assert s["reachable"] == "no" and s["verdict"] == "unreachable"
        assert s["guards"][-1] == "not (config.batch_p2p_comm)  [no]"
        assert "P2PCommunicator._communicate" in s["reason"]


def test_swift_patch_found_and_its_effect_on_the_group(seed_210):
    patches = {p["target"]: p for p in seed_210["patches"]}
    patch = patches["megatron.core.pipeline_parallel.p2p_communication._batched_p2p_ops"]
    assert patch["replacement"] == "swift.megatron.init._patch__batched_p2p_ops.<locals>._batched_p2p_ops"
    assert patch["installed_in"] == "init._patch__batched_p2p_ops"
    fns = by_function(seed_210)
    # The wrapper sets group=None: activations go over the default group, shapes over the PP group.
    assert {g for s in fns["_batched_p2p_ops"][:4] for g in s["groups"]} == {"default group"}
    assert {g for s in fns["P2PCommunicator._communicate_shapes"][1:5] for g in s["groups"]} == {"pp group"}
    assert "init._patch__batched_p2p_ops.<locals>._batched_p2p_ops" in fns["_batched_p2p_ops"][0]["paths"][0]
    split = [f for f in seed_210["findings"] if f["kind"] == "split-communicators"]
    assert len(split) == 1 and "_patch__batched_p2p_ops" in split[0]["message"]


def test_context_parallel_only_sites_unreachable(seed_210):
    mtp = by_function(seed_210, "megatron/core/transformer/multi_token_prediction.py")
    bridge = by_function(seed_210, "mcore_bridge/utils/megatron_utils.py")
    for s in [*sum(mtp.values(), []), *sum(bridge.values(), [])]:
        assert s["reachable"] == "no", s
        assert "cp_" in s["reason"]


def test_torch_210_detail_flags_the_batched_sites_as_contradictions(seed_210):
    bad = {(s["function"], s["line"]) for s in seed_210["sites"] if s["verdict"] == "contradiction"}
    assert bad == {(s["function"], s["line"]) for f in ("_batched_p2p_ops", "P2PCommunicator._communicate_shapes")
                   for s in by_function(seed_210)[f] if s["api"] != "ring_exchange"}
    reasons = {s["unbatched_reason"] for s in seed_210["sites"] if s["verdict"] == "contradiction"}
    assert len(reasons) == 1 and "torch 2.10.0" in reasons.pop()
    kinds = {f["kind"] for f in seed_210["findings"] if f["severity"] == "error"}
    assert {"unbatched-contradiction", "batch-runs-unbatched"} <= kinds


def test_torch_211_has_no_contradiction(real_sources):
    doc = scan(SEED, torch_version="2.11.0")
    assert not [s for s in doc["sites"] if s["verdict"] == "contradiction"]
    assert len([s for s in doc["sites"] if s["verdict"] == "ok"]) == 10


def test_without_detail_no_contradiction(real_sources, tmp_path):
    script = variant(tmp_path, "nodetail.sh", lambda t: t.replace("export TORCH_DISTRIBUTED_DEBUG=DETAIL\n", ""))
    doc = scan(script, torch_version="2.10.0")
    assert doc["config"]["effective"]["torch_batch_coalesces"] is True
    assert not [s for s in doc["sites"] if s["verdict"] == "contradiction"]


def test_overlap_with_virtual_pipeline_makes_p2p_ops_reachable(real_sources, tmp_path):
    script = variant(tmp_path, "vpp.sh", lambda t: t.replace(
        "    --pipeline_model_parallel_size 4 \\\n",
        "    --pipeline_model_parallel_size 4 \\\n    --overlap_p2p_comm true \\\n"
        "    --virtual_pipeline_model_parallel_size 2 \\\n"))
    doc = scan(script, torch_version="2.11.0")
    assert doc["config"]["effective"]["batch_p2p_comm"] is False
    p2p_ops = by_function(doc)["_p2p_ops"]
    assert [s["reachable"] for s in p2p_ops] == ["yes"] * 8
    assert all("schedules.forward_backward_pipelining_with_interleaving" in s["paths"][0] for s in p2p_ops)
    assert all(s["verdict"] == "ok" for s in p2p_ops)  # unbatched, as the config says


def test_pp1_reaches_no_pipeline_site(real_sources):
    doc = scan(ROOT / "examples" / "glm5_1_lora_pp1.sh", torch_version="2.10.0")
    pipeline = [s for s in doc["sites"] if s["path"] == P2P]
    assert pipeline and not [s for s in pipeline if s["reachable"] == "yes"]
    assert [s for s in pipeline if s["function"] == "_batched_p2p_ops"][0]["reason"].endswith(
        "`pp_size > 1` is false")
    assert not [s for s in doc["sites"] if s["verdict"] == "contradiction"]


def test_user_entry_points_in_order_find_their_patch(real_sources, tmp_path):
    """A user's own loop: an init entry that patches, then the step that runs the schedule."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "mytrain.py").write_text(
        "from megatron.core.pipeline_parallel import get_forward_backward_func\n"
        "from megatron.core.pipeline_parallel import p2p_communication\n\n\n"
        "def init():\n"
        "    original = p2p_communication._batched_p2p_ops\n\n"
        "    def on_world(**kwargs):\n"
        "        kwargs['group'] = None\n"
        "        return original(**kwargs)\n\n"
        "    p2p_communication._batched_p2p_ops = on_world\n\n\n"
        "def step(model, data):\n"
        "    fb = get_forward_backward_func()\n"
        "    return fb(forward_step_func=None, data_iterator=data, model=model,\n"
        "              num_microbatches=4, seq_length=128, micro_batch_size=1)\n"
    )
    script = tmp_path / "run.sh"
    # the entry the launch runs is read (proj/mytrain.py beside run.sh): one not read leaves the stack unknown
    script.write_text("torchrun --nproc_per_node 8 proj/mytrain.py --pipeline-model-parallel-size 2\n")
    doc = scan(script, targets=[str(project), "megatron-core==0.17.0"], torch_version="2.11.0",
               entries=["mytrain:init", "mytrain:step"],
               overrides={"batch_p2p_comm": "true", "variable_seq_lengths": "false",
                          "mtp_standalone": "false", "pipeline_model_parallel_size": "2",
                          "virtual_pipeline_model_parallel_size": "none"})
    assert doc["entries"] == ["mytrain:init", "mytrain:step"]
    assert [p["target"] for p in doc["patches"]] == [
        "megatron.core.pipeline_parallel.p2p_communication._batched_p2p_ops"]
    fns = by_function(doc)
    assert fns["_batched_p2p_ops"][0]["reachable"] == "yes"
    assert fns["_batched_p2p_ops"][0]["paths"][0][0] == "mytrain.step"
    assert fns["_batched_p2p_ops"][0]["groups"] == ["default group"]
    # variable_seq_lengths and mtp_standalone off: no shape exchange
    assert {s["reachable"] for s in fns["P2PCommunicator._communicate_shapes"]} == {"no"}


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "auditor", "scan", *args], capture_output=True,
                          text=True, timeout=600, cwd=ROOT, env=dict(os.environ))


@pytest.mark.heavy
def test_cli_exit_codes_and_json(real_sources, tmp_path):
    out = tmp_path / "scan.json"
    proc = _cli("--config", str(SEED), "--torch", "2.10.0", "--format", "json", "-o", str(out))
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(out.read_text())
    for site in doc["sites"]:
        assert {"id", "reachable", "guards", "paths", "verdict", "groups"} <= set(site)
    assert _cli("--config", str(SEED), "--torch", "2.11.0").returncode == 0
    bad = _cli("--config", str(tmp_path / "missing.sh"))
    assert bad.returncode == 2 and "missing.sh" in bad.stderr
    quote = tmp_path / "quote.sh"
    quote.write_text("megatron sft \\\n  --model 'GLM\n")
    proc = _cli("--config", str(quote))
    assert proc.returncode == 2 and "quote.sh:2" in proc.stderr
    proc = _cli("--config", str(SEED), "--entry", "not a module")
    assert proc.returncode == 2 and "--entry" in proc.stderr


@pytest.mark.heavy
def test_matrix_over_pipeline_sizes(real_sources):
    proc = _cli("--config", str(SEED), "--torch", "2.10.0", "--matrix",
                "pipeline_model_parallel_size=1,2,4,8")
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    assert out.splitlines()[0].split()[1:] == ["1", "2", "4", "8"]
    contradictions = next(line for line in out.splitlines() if "sites contradiction" in line)
    assert contradictions.split()[-4:] == ["0", "10", "10", "10"]
    assert "errors at pipeline_model_parallel_size=8: " in out
    pp8 = next(line for line in out.splitlines() if line.strip().startswith("errors at pipeline_model_parallel_size=8"))
    assert "pipeline" in pp8  # 78 layers with 18 on the last stage do not split over 8 stages


def test_graph_rules_name_real_code(real_sources):
    """Every symbol function and every module an entry imports exists in the release it claims."""
    from auditor.static.interp.program import Program

    versions = {n: s.version for n, s in real_sources.items()}
    program = Program(list(real_sources.values()), jobs=0)
    try:
        r, bound, generic = interpreter.load(versions)
        for function in r.symbols:
            module, _, name = function.rpartition(".")
            if module.split(".")[0] == "torch":  # torch's own (rules/torch.toml): the installed torch
                assert callable(getattr(importlib.import_module(module), name, None)), function
                continue
            assert name in program.module(module).functions, function
        for entry in [*bound, *generic]:
            for line in entry.code.splitlines():
                if line.startswith(("import ", "from ")):
                    assert program.has_module(line.split()[1]), (entry.name, line)
        assert rulebook.load("ms-swift", "4.3.0").table("entry_point")
    finally:
        program.close()


def test_a_target_given_twice_is_one_target_and_two_copies_of_one_distribution_are_bad_input(release, tmp_path):
    """VALID: a wheel and a copy of it (they unpack to one folder) are one target, not twice
    the sites. INVALID: two releases of megatron-core: which one does the run use?"""
    wheel = release("megatron-core==0.17.0").origin
    cached = next((sources.cache_dir() / "downloads" / "megatron-core-0.17.0").glob("*.whl"))
    copy = tmp_path / cached.name
    copy.write_bytes(cached.read_bytes())
    _, srcs = read_config(str(SEED), [wheel, str(copy)])
    assert [(s.name, s.version) for s in srcs] == [("megatron-core", "0.17.0")]
    with pytest.raises(InputError, match="is a second copy of megatron-core"):
        read_config(str(SEED), ["megatron-core==0.17.0", "megatron-core==0.19.2"])
