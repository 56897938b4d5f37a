"""A front end the rules do not read takes the words it is given: a word that sets the pipeline
size in a form the rules do not parse (a Hydra-style `model.pipeline_model_parallel_size=2`)
leaves that size unknown, never megatron-core's default of 1 (which read every command of the
loop below as PP=1 and, with DETAIL, gave a false CLEAN once nothing else was undecided).

Written after NVIDIA-NeMo/Megatron-Bridge @ 067f987df0 examples/models/gemma/gemma3_vl/sft.sh:
a loop over `TP,PP` pairs running `python -m torch.distributed.run scripts/training/run_recipe.py
--recipe ... --step_func vlm_step ... model.pipeline_model_parallel_size=$PP`; run_recipe.py is
read now (rules/megatron-bridge.toml), so the entry here is a recipe runner of the user's own.
"""

from __future__ import annotations

import pytest
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOOP = """\
export TORCH_DISTRIBUTED_DEBUG=DETAIL
for config in "2,1" "1,2"; do
    IFS=',' read -r TP PP <<< "$config"
    python -m torch.distributed.run --nproc_per_node=8 scripts/training/our_recipe_runner.py \\
        --recipe gemma3_vl_4b_sft_config \\
        --step_func vlm_step \\
        train.train_iters=50 \\
        {sizes}
done
"""

# an entry on megatron-core that steps its schedule (a recipe runner of the user's own)
ENTRY = ("from megatron.core.pipeline_parallel import get_forward_backward_func\n"
         "get_forward_backward_func()(forward_step_func=None, data_iterator=None, model=None,\n"
         "                            num_microbatches=1, seq_length=1, micro_batch_size=1)\n")


def scan(tmp_path: Path, sizes: str) -> dict:
    script = tmp_path / "sft.sh"
    script.write_text(LOOP.format(sizes=sizes))
    runner = tmp_path / "scripts/training/our_recipe_runner.py"  # read: an entry not found is
    runner.parent.mkdir(parents=True, exist_ok=True)  # INCONCLUSIVE on its own (unread_entry)
    runner.write_text(ENTRY)
    out = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script),
                          "--torch", "2.10.0", "--format", "json"],
                         check=False, capture_output=True, text=True, cwd=ROOT, timeout=300)
    return json.loads(out.stdout)


def not_defaulted(config: dict) -> str:
    """The pipeline size is never the default 1 as if stated: "unknown", or "judged" at each of
    its cases (the document shown is then a case that stays undecided, naming its own step)."""
    if config["effective"]["pipeline_model_parallel_size"] == "unknown":
        return "unknown"
    basis = config.get("setting_basis") or {}
    assert basis.get("key") == "pipeline_model_parallel_size" and len(basis["cases"]) > 1, config
    assert "judged at each of" in config["provenance"]["pipeline_model_parallel_size"]
    return "judged"


@pytest.mark.heavy
def test_a_size_set_in_a_word_the_rules_do_not_read_is_unknown(tmp_path):
    doc = scan(tmp_path, "model.tensor_model_parallel_size=$TP model.pipeline_model_parallel_size=$PP")
    verdict = doc["verdict"]
    assert verdict["status"] == "inconclusive", verdict["headline"]
    if not_defaulted(doc["config"]) == "unknown":
        assert any(u["decide"].startswith("--set pipeline_model_parallel_size=")
                   for u in verdict["undecided"])


@pytest.mark.heavy
def test_a_size_no_word_names_keeps_megatron_cores_default(tmp_path):
    doc = scan(tmp_path, "model.tensor_model_parallel_size=$TP")
    assert doc["config"]["effective"]["pipeline_model_parallel_size"] == 1


@pytest.mark.heavy
def test_an_entry_scripts_own_short_pp_flag_leaves_the_size_unknown(tmp_path):
    """NVIDIA-NeMo/Megatron-Bridge @ 067f987df0 examples/models/gemma/gemma3_vl/conversion.sh runs
    `hf_megatron_roundtrip_multi_gpu.py --tp 2 --pp 2` (now read as a conversion by
    rules/megatron-bridge.toml); an entry of the user's own spelled so is unread here."""
    script = tmp_path / "convert.sh"
    script.write_text("python -m torch.distributed.run --nproc_per_node=4 "
                      "tools/our_trainer.py --hf-model-id m --tp 2 --pp 2\n")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools/our_trainer.py").write_text(ENTRY)
    out = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script),
                          "--torch", "2.10.0", "--format", "json"],
                         check=False, capture_output=True, text=True, cwd=ROOT, timeout=300)
    not_defaulted(json.loads(out.stdout)["config"])
