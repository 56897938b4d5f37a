"""What a Megatron-Bridge generate program decides beyond the sizes it writes
(config/generate_entry.py; rules/megatron-bridge.toml [entry_defaults], [[entry_setter]]).

After NVIDIA-NeMo/Megatron-Bridge@067f987df03b8355b03192d88d70f1709fedf51a
examples/conversion/hf_to_megatron_generate_text.py: with `--megatron_model_path` (:182-243) the
model is load_megatron_model's, built from the checkpoint's run_config.yaml (its saved layout
set on the provider at PP > 1, :208-221, before initialize_model_parallel takes the provider's
virtual pipeline size, :225-226); else (:248-267) from the HF model's provider, with
`--pipeline-model-parallel-layout` (:422-425) written onto it. A layout implies virtual stages
(megatron-core TransformerConfig.__post_init__), and Sarvam-MoE's provider sets one itself at
PP 2/4/8 (src/megatron/bridge/models/sarvam/sarvam_provider.py:137-150). Each of these was
CLEAN (or DOES NOT START on an even split the layout avoids) from megatron-core's defaults.
"""

from __future__ import annotations

import pytest
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

GENERATE = '''import argparse

from megatron.bridge import AutoBridge
from megatron.core.pipeline_parallel.schedules import get_forward_backward_func


def main(args):
    tp = args.tp
    pp = args.pp
    bridge = AutoBridge.from_hf_pretrained(args.hf_model_path)
    if args.megatron_model_path:
        model_provider = bridge.to_megatron_provider(load_weights=False)
        model_provider.tensor_model_parallel_size = tp
        model_provider.pipeline_model_parallel_size = pp
        if args.pipeline_model_parallel_layout is not None:
            model_provider.pipeline_model_parallel_layout = args.pipeline_model_parallel_layout
        elif pp > 1:
            from pathlib import Path

            import yaml

            ckpt_path = Path(args.megatron_model_path)
            for candidate in [ckpt_path, *ckpt_path.glob("iter_*")]:
                rc = candidate / "run_config.yaml"
                if rc.exists():
                    with open(rc) as f:
                        cfg = yaml.safe_load(f)
                    saved_layout = cfg.get("model", {}).get("pipeline_model_parallel_layout")
                    if isinstance(saved_layout, list):
                        model_provider.pipeline_model_parallel_layout = saved_layout
                        break
        model_provider.finalize()
        model_provider.initialize_model_parallel(seed=0)
        mp_overrides = {"tensor_model_parallel_size": tp, "pipeline_model_parallel_size": pp}
        model = bridge.load_megatron_model(args.megatron_model_path, mp_overrides=mp_overrides,
                                           wrap_with_ddp=False)
    else:
        model_provider = bridge.to_megatron_provider(load_weights=True)
        model_provider.tensor_model_parallel_size = tp
        model_provider.pipeline_model_parallel_size = pp
        if args.pipeline_model_parallel_layout is not None:
            model_provider.pipeline_model_parallel_layout = args.pipeline_model_parallel_layout
        model_provider.finalize()
        model = model_provider.provide_distributed_model(wrap_with_ddp=False)
    fwd_bwd_function = get_forward_backward_func()
    return fwd_bwd_function(forward_step_func=None, data_iterator=None, model=model, num_microbatches=1,
                            forward_only=True, seq_length=8, micro_batch_size=1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--hf_model_path", type=str, required=True)
    parser.add_argument("--tp", type=int, default=1)
    parser.add_argument("--pp", type=int, default=1)
    parser.add_argument("--pipeline-model-parallel-layout")
    parser.add_argument("--megatron_model_path", type=str, default=None)
    main(parser.parse_args())
'''

RUN = ("torchrun --nproc_per_node=4 examples/conversion/hf_to_megatron_generate_text.py "
       "--tp 1 --pp 2 {extra}\n")
TARGET = ("--target", "megatron-core==0.17.0", "--torch", "2.10.0", "--set", "distributed_backend=nccl")


# The script writes the checkpoint it then loads: `convert.sh import` (as
# NVIDIA-NeMo/Megatron-Bridge@067f987df0 examples/models/qwen/qwen3_asr/inference.sh:49-58 and
# examples/models/vlm/ernie_vl/conversion.sh:28-37), whose run_config.yaml holds the HF model's
# provider (AutoBridge.import_ckpt -> save_megatron_model at iteration 0).
IMPORT = ("WORKSPACE=${{WORKSPACE:-/workspace}}\n./scripts/conversion/convert.sh import \\\n"
          "    --hf-model {model} \\\n    --megatron-path ${{WORKSPACE}}/models/GLM-4.5V {more}\n")


def _scan(tmp_path: Path, extra: str, *more: str, before: str = "") -> tuple[int, dict]:
    conversion = tmp_path / "examples" / "conversion"
    conversion.mkdir(parents=True, exist_ok=True)
    (conversion / "hf_to_megatron_generate_text.py").write_text(GENERATE)
    script = tmp_path / "inference.sh"
    script.write_text(before + RUN.format(extra=extra))
    proc = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script), *TARGET, *more,
                           "--format", "json"], check=False, capture_output=True, text=True, cwd=ROOT,
                          timeout=600)
    return proc.returncode, json.loads(proc.stdout)


def _why(doc: dict, key: str) -> str:
    return doc["config"]["provenance"].get(key) or ""


def test_the_hf_branch_keeps_megatron_core_s_defaults(tmp_path: Path) -> None:
    code, doc = _scan(tmp_path, "--hf_model_path zai-org/GLM-4.5V")
    effective = doc["config"]["effective"]
    assert effective["virtual_pipeline_model_parallel_size"] is None
    assert effective["overlap_p2p_comm"] is False and effective["batch_p2p_comm"] is True
    assert doc["verdict"]["status"] == "clean", doc["verdict"]["headline"]


def test_a_layout_flag_opens_the_virtual_pipeline(tmp_path: Path) -> None:
    """Four layout stages over PP 2: virtual size 2, the interleaved schedule, which refuses the
    call's one micro-batch before any exchange (mcore.interleaved-microbatches): whether the run
    starts is undecided, and the non-interleaved schedule's forward-only exchanges are one-way."""
    code, doc = _scan(tmp_path, "--hf_model_path x/y --pipeline-model-parallel-layout 'Et*2|t*2|t*2|t*2L'")
    effective = doc["config"]["effective"]
    assert effective["virtual_pipeline_model_parallel_size"] == "unknown", effective
    assert "--pipeline-model-parallel-layout" in _why(doc, "virtual_pipeline_model_parallel_size")
    assert effective["pipeline_exchanges_one_way"] is True
    startup = [u["what"] for u in doc["verdict"].get("startup_undecided", [])]
    assert any("mcore.interleaved-microbatches" in u for u in startup), startup
    assert doc["verdict"]["status"] == "clean", doc["verdict"]["headline"]
    # --set decides it
    code, doc = _scan(tmp_path, "--hf_model_path x/y --pipeline-model-parallel-layout 'Et*2|t*2|t*2|t*2L'",
                      "--set", "virtual_pipeline_model_parallel_size=2",
                      "--set", "pipeline_model_parallel_layout=None")
    assert doc["config"]["effective"]["virtual_pipeline_model_parallel_size"] == 2


def test_a_checkpoint_gives_the_comm_settings(tmp_path: Path) -> None:
    code, doc = _scan(tmp_path, "--hf_model_path x/y --megatron_model_path /ckpt/run")
    effective = doc["config"]["effective"]
    for key in ("overlap_p2p_comm", "virtual_pipeline_model_parallel_size", "pipeline_model_parallel_layout"):
        assert effective[key] == "unknown", (key, effective[key])
        assert "--megatron_model_path" in _why(doc, key), _why(doc, key)
    assert effective["tensor_model_parallel_size"] == 1 and effective["pipeline_model_parallel_size"] == 2
    assert doc["verdict"]["status"] == "inconclusive", doc["verdict"]["headline"]


def test_a_provider_layout_leaves_the_split_undecided(tmp_path: Path) -> None:
    """19 layers over PP 2: Sarvam-MoE's provider sets a layout, so get_num_layers_to_build's
    even-split assertion is not the one that runs: not DOES NOT START, the split left undecided
    among the start-up checks. The call's one micro-batch is fewer than the 2 stages, so whichever
    schedule the layout picks exchanges one way or not at all: CLEAN, whether it starts aside."""
    code, doc = _scan(tmp_path, "--hf_model_path sarvamai/sarvam-moe", "--set", "num_layers=19")
    assert doc["config"]["effective"]["pipeline_model_parallel_layout"] == "unknown"
    assert "layer-split" not in {f["kind"] for f in doc["findings"]}
    assert any(u.startswith("mcore.even-split") for u in doc["config"]["undecided"]), doc["config"]["undecided"]
    startup = [u["what"] for u in doc["verdict"].get("startup_undecided", [])]
    assert any("mcore.even-split" in u for u in startup), startup
    assert doc["verdict"]["status"] == "clean", doc["verdict"]["headline"]


def test_a_checkpoint_the_script_imports_has_the_hf_settings(tmp_path: Path) -> None:
    """Imported by the same script from the same HF model at PP 1: the HF branch's settings."""
    loaded = "--hf_model_path zai-org/GLM-4.5V --megatron_model_path ${WORKSPACE}/models/GLM-4.5V/iter_0000000"
    code, doc = _scan(tmp_path, loaded, before=IMPORT.format(model="zai-org/GLM-4.5V", more=""))
    effective = doc["config"]["effective"]
    assert effective["virtual_pipeline_model_parallel_size"] is None, effective
    assert effective["overlap_p2p_comm"] is False and effective["batch_p2p_comm"] is True
    assert doc["verdict"]["status"] == "clean", doc["verdict"]["headline"]


@pytest.mark.heavy
def test_a_checkpoint_imported_otherwise_stays_the_checkpoint_s(tmp_path: Path) -> None:
    """Another HF model, another directory, or an import at PP 2 (a generated layout): unknown."""
    loaded = "--hf_model_path zai-org/GLM-4.5V --megatron_model_path ${WORKSPACE}/models/GLM-4.5V/iter_0000000"
    for model, more, path in (("other/Model", "", loaded), ("zai-org/GLM-4.5V", "--pp 2", loaded),
                              ("zai-org/GLM-4.5V", "", loaded.replace("GLM-4.5V/iter", "GLM-4.5V-b/iter"))):
        code, doc = _scan(tmp_path, path, before=IMPORT.format(model=model, more=more))
        assert doc["config"]["effective"]["overlap_p2p_comm"] == "unknown", (model, more, path)


def test_a_checkpoint_s_undecided_names_its_own_setting(tmp_path: Path) -> None:
    """#22: the step that decides it is a setting the checkpoint states (its comm settings, its
    layout and the virtual size the entry takes from it), never a derived one (mtp_standalone,
    the schedule)."""
    code, doc = _scan(tmp_path, "--hf_model_path x/y --megatron_model_path /ckpt/run")
    steps = [u["decide"] for u in doc["verdict"]["undecided"]]
    assert steps == ["--set overlap_p2p_comm=VALUE --set virtual_pipeline_model_parallel_size=VALUE"], steps
    provenance = doc["config"]["provenance"]
    for key in ("overlap_p2p_comm", "virtual_pipeline_model_parallel_size"):
        assert "--megatron_model_path" in provenance[key] and "run_config.yaml" in provenance[key], provenance[key]


def test_a_case_that_stays_undecided_ends_the_split(tmp_path: Path) -> None:
    """With overlap_p2p_comm_warmup_flush set, batch_p2p_comm=False stays undecided on the
    checkpoint's overlap_p2p_comm (mcore.warmup-flush-needs-overlap), which no setting's cases
    split: True cannot settle the verdict, and is not scanned (the time bridge-gptoss-inference
    doubled by, when the checkpoint's layout behind mtp_standalone kept False undecided)."""
    code, doc = _scan(tmp_path, "--hf_model_path x/y --megatron_model_path /ckpt/run",
                      "--set", "overlap_p2p_comm_warmup_flush=true")
    basis = doc["config"]["setting_basis"]
    assert basis["key"] == "batch_p2p_comm", basis["key"]
    assert [c.get("skipped", False) for c in basis["cases"]] == [False, True], basis["cases"]
    assert doc["verdict"]["status"] == "inconclusive", doc["verdict"]["headline"]
