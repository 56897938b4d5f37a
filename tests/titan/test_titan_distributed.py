"""How torchtitan sets up torch.distributed, as rules/torchtitan.toml's `titan-distributed`
stage states it for each release (torchtitan/distributed/utils.py init_distributed: backend
"nccl" from _get_distributed_backend, no device_id in 0.1.0/0.2.2, device_id only with
--comm.mode torchcomms in 0.3.0; ParallelDims' pp = pipeline_parallel_degree): torch's checks
that read these settings are decided for a torchtitan launch, not left to --set."""

from __future__ import annotations

import pytest

from auditor.config.derive import derive
from auditor.config.expr import UNKNOWN
from auditor.scan import read_config

pytestmark = pytest.mark.wheels

# run_train.sh's torchrun line: pytorch/torchtitan main b5bcd76c (0.3.0 form) and v0.2.2
# 73a0e697 / v0.1.0 f7084fc7 (the TOML form), "$@" spelled out as torchtitan's README does.
RUN_TRAIN_030 = """\
NGPU=${NGPU:-"8"}
torchrun --nproc_per_node=${NGPU} --rdzv_backend c10d --rdzv_endpoint="localhost:0" \\
  --local-ranks-filter 0 --role rank --tee 3 \\
  -m torchtitan.train --module llama3 --config llama3_8b {overrides}
"""
RUN_TRAIN_TOML = """\
NGPU=${NGPU:-"8"}
torchrun --nproc_per_node=${NGPU} --rdzv_backend c10d --rdzv_endpoint="localhost:0" \\
  --local-ranks-filter 0 --role rank --tee 3 \\
  -m torchtitan.train --job.config_file ./llama3_8b.toml {overrides}
"""
PP4 = "--parallelism.pipeline_parallel_degree 4 --parallelism.pipeline_parallel_schedule Interleaved1F1B"


def effective(tmp_path, template: str, overrides: str, release: str):
    script = tmp_path / "run_train.sh"
    script.write_text(template.replace("{overrides}", overrides))
    (tmp_path / "llama3_8b.toml").write_text('[model]\nname = "llama3"\nflavor = "8B"\n')
    launch, srcs = read_config(str(script), [f"torchtitan=={release}", "torch"])
    return derive(launch, {s.name: s.version for s in srcs}, None, "2.13.0")


@pytest.mark.parametrize("release,template", [
    ("0.1.0", RUN_TRAIN_TOML), ("0.2.2", RUN_TRAIN_TOML), ("0.3.0", RUN_TRAIN_030)])
def test_the_backend_device_id_and_pp_size_come_from_the_release(tmp_path, release, template):
    eff = effective(tmp_path, template, PP4, release)
    assert eff.value("distributed_backend") == "nccl"
    assert eff.value("init_device_id_given") is False
    assert eff.value("pipeline_model_parallel_size") == 4
    assert "torchtitan" in eff.get("distributed_backend").provenance
    # No torchtitan setting is left unknown for want of a rule of this release (0.3.0: --module,
    # --config; 0.1.0: no comm.mode at all).
    outside = [k for r, keys in eff.outside_rules.items() if r.startswith("torchtitan") for k in keys]
    assert all(eff.value(k) is not UNKNOWN for k in outside), outside


def test_0_3_0_gives_device_id_with_torchcomms(tmp_path):
    eff = effective(tmp_path, RUN_TRAIN_030, f"{PP4} --comm.mode torchcomms", "0.3.0")
    assert eff.value("init_device_id_given") is True


def test_torch_s_lazy_init_check_is_decided_for_a_torchtitan_run(tmp_path):
    """torch.lazy-init-unbounded (rules/torch.toml) reads the PP size, the backend and eager
    init: all three known, it holds (torchtitan creates NCCL communicators lazily)."""
    eff = effective(tmp_path, RUN_TRAIN_030, PP4, "0.3.0")
    assert not any(u.startswith("torch.lazy-init-unbounded") for u in eff.undecided), eff.undecided
    assert any(f.kind == "lazy-init-unbounded" for f in eff.findings)
    assert eff.value("model_flavor") == "8B"  # llama3_8b()'s model_registry("8B")


def test_the_stage_ops_order_is_left_to_simulate_which_runs_it(tmp_path):
    """torchtitan's stack has no batching setting, so scan does not decide the order of the
    schedule's own P2P ops; `p2paudit simulate` runs torch's schedule for this launch
    (rules/torchtitan.toml `simulated`), so the step that decides it is simulate, not only a
    recorded run."""
    from auditor.scan import ScanInputs, run_scan
    script = tmp_path / "run_train.sh"
    script.write_text(RUN_TRAIN_030.replace("{overrides}", PP4))
    doc = run_scan(ScanInputs(str(script), ["torchtitan==0.3.0", "torch"], torch_version="2.13.0"))
    order = [u for u in doc["verdict"]["undecided"] if "issued on its own" in u["what"]]
    assert order and order[0]["decide"].startswith(f"`p2paudit simulate --config {script}`")
