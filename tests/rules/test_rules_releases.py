"""The megatron-core rules on every release from 0.12.0 on, against what those releases do.

tests/rules/test_rules_agree.py holds each entry to the source text of every release it claims; here
the layer-split checks are held to behaviour: megatron-core's own TransformerConfig, imported
from the wheels of the first and last release of every span the rules split (CPU, in a
subprocess; from 0.18.0 on megatron.core imports triton, which a CPU-only machine lacks, so those
releases are held to the text alone), is built for a
set of pipeline splits of GLM-5.1's 78 layers, and `derive` must report a start-up error exactly
where that release raises one, naming the same exception. The scan of the shipped GLM-5.1 script
must be decided on the releases the rules now cover and stay inconclusive outside them.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from functools import cache
from pathlib import Path

import pytest

from auditor import rulebook as rules, sources
from auditor.analysis.verdict import judge
from auditor.config.derive import derive
from auditor.config.expr import UNKNOWN
from auditor.config.launch import parse_launch
from auditor.scan import ScanInputs, run_scan

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "examples" / "glm5_1_lora_pp4.sh"
# The first and last release of each span whose TransformerConfig the rules split by (0.12.x,
# 0.13-0.15, 0.16-0.17; 0.18 on needs triton to import): megatron takes ~20 s to import here.
IMPORTED = ["0.12.0", "0.12.3", "0.13.0", "0.15.3", "0.16.0", "0.17.1"]
FRONT_END = {"ms-swift": "4.3.0", "mcore-bridge": "1.4.1"}

# (PP, VPP, first stage layers, last stage layers) for 78 layers.
SPLITS = [
    (4, None, None, 18),   # 60 layers for 3 middle stages: fine everywhere
    (8, None, None, 18),   # 60 for 7: not divisible
    (2, None, 40, 38),     # no middle stage, no layer left: 0.12 divides by 0
    (2, None, 40, 30),     # no middle stage, 8 layers left: 0.16 calls it a mismatch
    (3, None, 40, 38),     # one middle stage, no layer for it
    (4, None, 0, None),    # an empty first stage
    (4, 2, None, 18),      # 20 per middle stage, 10 per virtual stage
    (4, 2, None, 15),      # last stage not divisible by VPP
    (4, 2, 9, None),       # first stage not divisible by VPP
    (5, 2, None, 18),      # 15 per middle stage, not divisible by VPP
]

ORACLE = textwrap.dedent("""
    import json, sys, warnings
    warnings.simplefilter("ignore")
    import torch
    from megatron.core.transformer.transformer_config import TransformerConfig
    out = []
    for pp, vpp, first, last in json.loads(sys.argv[1]):
        try:
            TransformerConfig(num_layers=78, hidden_size=64, num_attention_heads=4,
                              pipeline_dtype=torch.bfloat16, pipeline_model_parallel_size=pp,
                              virtual_pipeline_model_parallel_size=vpp,
                              num_layers_in_first_pipeline_stage=first,
                              num_layers_in_last_pipeline_stage=last)
            out.append(None)
        except Exception as exc:
            out.append(type(exc).__name__)
    try:  # does the release know the keyword at all
        TransformerConfig(num_layers=78, hidden_size=64, num_attention_heads=4,
                          pipeline_model_parallel_layout=None)
        out.append(None)
    except TypeError:
        out.append("TypeError")
    print(json.dumps(out))
""")


@cache
def real_outcomes(version: str) -> list[str | None]:
    """The exception each split raises in `version`'s TransformerConfig (None: accepted)."""
    root = sources.resolve(f"megatron-core=={version}").root
    done = subprocess.run([sys.executable, "-c", ORACLE, json.dumps(SPLITS)], cwd=root,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def script(pp: int, vpp: int | None, first: int | None, last: int | None) -> str:
    flags = [f"--pipeline_model_parallel_size {pp}"]
    for flag, value in (("virtual_pipeline_model_parallel_size", vpp),
                        ("decoder_first_pipeline_num_layers", first),
                        ("decoder_last_pipeline_num_layers", last)):
        if value is not None:
            flags.append(f"--{flag} {value}")
    return ("NPROC_PER_NODE=8 NNODES=16 megatron sft --model ZhipuAI/GLM-5.1 "
            "--tensor_model_parallel_size 4 --expert_model_parallel_size 8 "
            "--global_batch_size 32 " + " ".join(flags) + "\n")


def derived_errors(version: str, split: tuple) -> list[str]:
    """The effect of every TransformerConfig check `derive` reports for this split."""
    checks = {e["id"]: e for e in rules.load("megatron-core", version).table("check")
              if e.get("function") == "TransformerConfig.__post_init__"}
    config = derive(parse_launch(script(*split), "run.sh"),
                    {"megatron-core": version, **FRONT_END}, torch_version="2.11.0")
    assert not [u for u in config.undecided if u.startswith("mcore.")], config.undecided
    return [checks[f.detail["rule"]]["effect"] for f in config.findings
            if f.detail.get("rule") in checks and f.severity == "error"]


@pytest.mark.heavy
@pytest.mark.wheels
@pytest.mark.parametrize("version", IMPORTED)
def test_layer_split_checks_match_the_release(version):
    for split, raised in zip(SPLITS, real_outcomes(version)):
        effects = derived_errors(version, split)
        if raised is None:
            assert not effects, (version, split, effects)
        else:
            assert effects and all(e.startswith(raised) for e in effects), (version, split, raised, effects)


@pytest.mark.wheels
@pytest.mark.parametrize("version", IMPORTED)
def test_layout_check_exactly_where_the_release_has_no_layout(version):
    refused = real_outcomes(version)[len(SPLITS)] == "TypeError"
    admitted = [e for e in rules.load("megatron-core", version).table("check")
                if e["id"] == "mcore.layout-needs-0.13"]
    assert bool(admitted) is refused, version


@pytest.mark.wheels
def test_releases_really_differ():
    """The variants are not cosmetic: one split, three behaviours across the covered span."""
    split = (2, None, 40, 30)
    seen = {v: real_outcomes(v)[SPLITS.index(split)] for v in ("0.12.3", "0.15.3", "0.16.0")}
    assert seen == {"0.12.3": "ZeroDivisionError", "0.15.3": None, "0.16.0": "ValueError"}


# --- the shipped GLM-5.1 script: decided where the rules cover the releases --------------------
# Each megatron-core release with a front end whose metadata accepts it: ms-swift 4.1.x asks for
# megatron-core>=0.12 and mcore-bridge>=1.0.2 (1.2.x: megatron-core>=0.12); ms-swift 4.3.0 and
# mcore-bridge 1.4.1 (the report's) ask for megatron-core>=0.15.


def scan(megatron: str, swift: str, bridge: str) -> dict:
    targets = [f"megatron-core=={megatron}", f"ms-swift=={swift}", f"mcore-bridge=={bridge}"]
    return run_scan(ScanInputs(str(SEED), targets=targets, torch_version="2.10.0"))


@pytest.mark.wheels
@pytest.mark.parametrize("megatron,swift,bridge", [("0.12.0", "4.1.3", "1.2.3"),
                                                   ("0.13.1", "4.1.3", "1.2.3"),
                                                   ("0.15.3", "4.3.0", "1.4.1")])
def test_seed_scan_is_decided_on_covered_releases(megatron, swift, bridge):
    doc = scan(megatron, swift, bridge)
    verdict = judge(doc)
    assert verdict.status == "findings", verdict.headline
    assert not doc["config"].get("outside_rules"), doc["config"]["outside_rules"]
    effective = doc["config"]["effective"]
    assert effective["batch_p2p_comm"] is True and effective["pipeline_model_parallel_size"] == 4
    assert any(f["kind"] == "batch-runs-unbatched" for f in doc["findings"])


@pytest.mark.wheels
def test_seed_scan_outside_the_rules_stays_inconclusive():
    verdict = judge(scan("0.11.0", "4.1.3", "1.2.3"))
    assert verdict.status == "inconclusive", verdict.headline
    assert "megatron-core 0.11.0 is outside the releases the rules cover" in verdict.headline


@pytest.mark.parametrize("outside", [{"ms-swift": "4.0.4"}, {"mcore-bridge": "1.0.0"}])
def test_front_ends_outside_the_rules_leave_batching_unknown(outside):
    """ms-swift 4.0.x and mcore-bridge 1.0.0 handle batch_p2p_comm otherwise (or not at all)."""
    versions = {"megatron-core": "0.12.0", "ms-swift": "4.1.3", "mcore-bridge": "1.2.3", **outside}
    config = derive(parse_launch(SEED.read_text(), str(SEED)), versions, torch_version="2.10.0")
    (name, version), = outside.items()
    assert "batch_p2p_comm" in config.outside_rules[f"{name} {version}"]
    assert config.value("batch_p2p_comm") is UNKNOWN


def test_megatron_lm_front_end_before_0_17_stays_outside():
    """megatron/training ships in the megatron-core wheels from 0.17.0 on: older runs of
    Megatron-LM's own scripts are not covered, although megatron-core's rules are."""
    script = ROOT / "examples" / "megatron_lm_gpt_pp2.sh"
    launch = parse_launch(script.read_text(), str(script))
    old = derive(launch, {"megatron-core": "0.16.1"}, torch_version="2.10.0")
    assert old.outside_rules.get("megatron-lm 0.16.1") and "megatron-core 0.16.1" not in old.outside_rules
    assert not derive(launch, {"megatron-core": "0.17.1"}, torch_version="2.10.0").outside_rules
